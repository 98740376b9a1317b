//===- ProfileReportTest.cpp - kiln-run's profile tables ------------------===//
//
// tools/kiln-run/Profile.cpp: sorting, category sums, shares that add up to
// 100% with the time outside the kernels, and the JSON it writes.
//
//===----------------------------------------------------------------------===//
#include "kiln/Run/Profile.h"

#include "kiln/Json.h"

#include <gtest/gtest.h>

using namespace kiln;
using namespace kiln::run;

namespace {

KernelRow row(int32_t id, const char *name, const char *category,
              uint64_t launches, uint64_t totalNs) {
  KernelRow r;
  r.id = id;
  r.name = name;
  r.category = category;
  r.onnxNodes = {std::string("node_") + name};
  r.launches = launches;
  r.totalNs = totalNs;
  r.minNs = launches ? totalNs / launches : 0;
  r.maxNs = r.minNs;
  return r;
}

TEST(ProfileReport, SortsSumsAndShares) {
  kiln_profile_summary s{};
  s.runs = 2;
  s.run_ns = 1000;
  std::vector<KernelRow> rows = {row(0, "add_0", "elementwise", 2, 100),
                                 row(1, "matmul_0", "gemm", 2, 600),
                                 row(2, "exp_0", "elementwise", 2, 200),
                                 row(3, "odd_0", "no-such-category", 2, 50)};
  ProfileReport r = buildProfileReport(rows, s);
  ASSERT_EQ(r.kernels.size(), 4u);
  EXPECT_EQ(r.kernels[0].name, "matmul_0");
  EXPECT_EQ(r.kernels[1].name, "exp_0");
  EXPECT_EQ(r.kernels[3].name, "odd_0");
  EXPECT_DOUBLE_EQ(r.kernels[0].share, 60.0);
  EXPECT_EQ(r.kernelNs, 950u);
  EXPECT_DOUBLE_EQ(r.outsideShare, 5.0);

  // All seven categories, largest first; unknown ones count as other.
  ASSERT_EQ(r.categories.size(), profileCategories().size());
  EXPECT_EQ(r.categories[0].category, "gemm");
  EXPECT_EQ(r.categories[1].category, "elementwise");
  EXPECT_EQ(r.categories[1].kernels, 2u);
  EXPECT_EQ(r.categories[1].launches, 4u);
  EXPECT_EQ(r.categories[1].totalNs, 300u);
  EXPECT_EQ(r.categories[2].category, "other");
  EXPECT_EQ(r.categories[2].totalNs, 50u);
  double sum = r.outsideShare;
  for (const CategoryRow &c : r.categories)
    sum += c.share;
  EXPECT_NEAR(sum, 100.0, 1e-9);
}

TEST(ProfileReport, KernelTimeAboveRunTimeStillAddsUp) {
  // Clock granularity can make the kernels' sum exceed the runs' time.
  kiln_profile_summary s{};
  s.runs = 1;
  s.run_ns = 90;
  ProfileReport r = buildProfileReport({row(0, "k", "copy", 1, 100)}, s);
  EXPECT_DOUBLE_EQ(r.kernels[0].share, 100.0);
  EXPECT_DOUBLE_EQ(r.outsideShare, 0.0);
}

TEST(ProfileReport, JsonParses) {
  kiln_profile_summary s{};
  s.runs = 1;
  s.run_ns = 1000;
  ProfileReport r =
      buildProfileReport({row(0, "a\"b", "gemm", 1, 500)}, s);
  json::Value v;
  std::string err;
  ASSERT_TRUE(json::parse(profileJson(r), v, err)) << err;
  const json::Value *kernels = v.find("kernels");
  ASSERT_TRUE(kernels && kernels->isArray());
  ASSERT_EQ(kernels->getArray().size(), 1u);
  EXPECT_EQ(kernels->getArray()[0].find("name")->getString(), "a\"b");
  EXPECT_DOUBLE_EQ(kernels->getArray()[0].find("share")->getNumber(), 50.0);
  const json::Value *categories = v.find("categories");
  ASSERT_TRUE(categories && categories->isArray());
  EXPECT_EQ(categories->getArray().size(), 7u);
}

TEST(ProfileReport, EmptyTable) {
  kiln_profile_summary s{};
  ProfileReport r = buildProfileReport({}, s);
  EXPECT_TRUE(r.kernels.empty());
  EXPECT_DOUBLE_EQ(r.outsideShare, 0.0);
  json::Value v;
  std::string err;
  EXPECT_TRUE(json::parse(profileJson(r), v, err)) << err;
}

} // namespace
