//===- MeasureTest.cpp - Tests of kiln-run's statistics, quality, energy --===//
//
// Synthetic timings whose statistics numpy gives exactly (percentiles with
// numpy's default linear method, the sample standard deviation), output
// quality on tensors with known cosine/argmax, and the RAPL reader on a fake
// powercap folder (wrap-around, unreadable counters, subzones ignored).
//
//===----------------------------------------------------------------------===//
#include "kiln/Run/Measure.h"

#include "kiln/artifact_format.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sys/stat.h>

using namespace kiln::run;

namespace {

HostTensor floats(std::vector<int64_t> dims, std::vector<float> values) {
  HostTensor t;
  t.dtype = KILN_DTYPE_FLOAT32;
  t.dims = std::move(dims);
  t.allocate();
  for (size_t i = 0; i < values.size(); ++i)
    static_cast<float *>(t.data())[i] = values[i];
  return t;
}

TEST(Measure, SummaryMatchesNumpy) {
  // numpy: x = [5,1,4,2,3,10,7,6,9,8,100]; min 1, median 6, mean
  // 14.0909..., percentile(x, 90) 10, percentile(x, 99) 91, std(ddof=1)
  // 28.637229424141385.
  TimingSummary s = summarize({5, 1, 4, 2, 3, 10, 7, 6, 9, 8, 100});
  EXPECT_EQ(s.count, 11u);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.median, 6);
  EXPECT_NEAR(s.mean, 14.090909090909092, 1e-12);
  EXPECT_NEAR(s.p90, 10, 1e-12);
  EXPECT_NEAR(s.p99, 91, 1e-9);
  EXPECT_DOUBLE_EQ(s.max, 100);
  EXPECT_NEAR(s.stddev, 28.637229424141385, 1e-12);
}

TEST(Measure, SummaryEdgeCases) {
  TimingSummary empty = summarize({});
  EXPECT_EQ(empty.count, 0u);
  EXPECT_EQ(empty.median, 0);
  TimingSummary one = summarize({2.5});
  EXPECT_EQ(one.min, 2.5);
  EXPECT_EQ(one.p99, 2.5);
  EXPECT_EQ(one.stddev, 0); // undefined for n = 1: reported as 0
  // Even count: the median is the mean of the two middle values.
  EXPECT_DOUBLE_EQ(summarize({4, 1, 3, 2}).median, 2.5);
  std::vector<double> sorted = {10, 20, 30, 40, 50};
  EXPECT_DOUBLE_EQ(percentileSorted(sorted, 0), 10);
  EXPECT_DOUBLE_EQ(percentileSorted(sorted, 100), 50);
  EXPECT_DOUBLE_EQ(percentileSorted(sorted, 90), 46); // rank 3.6
  EXPECT_DOUBLE_EQ(percentileSorted(sorted, 37.5), 25); // rank 1.5
}

TEST(Measure, QualityKnownValues) {
  // numpy: cosine of [[1,2,3],[3,2,1]] and [[1,2,4],[1,2,3]] is
  // 0.8624833627499188; max abs error 2, max rel error 2 (|3-1|/1).
  HostTensor a = floats({2, 3}, {1, 2, 3, 3, 2, 1});
  HostTensor r = floats({2, 3}, {1, 2, 4, 1, 2, 3});
  Quality q = assessQuality(a, r);
  ASSERT_TRUE(q.comparable);
  EXPECT_EQ(q.count, 6u);
  EXPECT_NEAR(q.cosineSimilarity, 0.8624833627499188, 1e-12);
  EXPECT_DOUBLE_EQ(q.maxAbsError, 2);
  EXPECT_DOUBLE_EQ(q.maxRelError, 2);
  // Row 0: argmax 2 in both; row 1: 0 vs 2.
  EXPECT_EQ(q.top1Rows, 2u);
  EXPECT_EQ(q.top1Agree, 1u);
  EXPECT_DOUBLE_EQ(q.top1Agreement(), 0.5);
}

TEST(Measure, QualityAcrossDtypesAndEdgeCases) {
  // A float16 output against a float32 reference: values are compared.
  HostTensor h;
  h.dtype = KILN_DTYPE_FLOAT16;
  h.dims = {4};
  h.allocate();
  float vals[] = {0.5f, -1, 2, 0.1f};
  for (int i = 0; i < 4; ++i)
    static_cast<uint16_t *>(h.data())[i] = floatToHalf(vals[i]);
  Quality q = assessQuality(h, floats({4}, {0.5f, -1, 2, 0.1f}));
  ASSERT_TRUE(q.comparable);
  EXPECT_NEAR(q.maxAbsError, std::fabs(halfToFloat(floatToHalf(0.1f)) - 0.1f),
              1e-9);
  EXPECT_GT(q.cosineSimilarity, 0.999999);
  EXPECT_EQ(q.top1Rows, 1u);
  EXPECT_EQ(q.top1Agree, 1u);
  // Shapes differ: not comparable.
  EXPECT_FALSE(assessQuality(floats({2, 2}, {1, 2, 3, 4}),
                             floats({4}, {1, 2, 3, 4}))
                   .comparable);
  // NaN/inf pairs are counted apart; ties take the first maximum.
  Quality n = assessQuality(floats({1, 3}, {NAN, 1, 1}),
                            floats({1, 3}, {0, 1, 1}));
  EXPECT_EQ(n.nonFinite, 1u);
  EXPECT_DOUBLE_EQ(n.cosineSimilarity, 1);
  EXPECT_EQ(n.top1Agree, 1u); // argmax 1 in both (NaN never wins)
  // All zeros on both sides: identical, cosine 1; one side zero: 0.
  EXPECT_DOUBLE_EQ(
      assessQuality(floats({2}, {0, 0}), floats({2}, {0, 0})).cosineSimilarity,
      1);
  EXPECT_DOUBLE_EQ(
      assessQuality(floats({2}, {0, 0}), floats({2}, {1, 0})).cosineSimilarity,
      0);
  // A last axis of 1 is not a distribution: no top-1 figure.
  EXPECT_EQ(assessQuality(floats({3, 1}, {1, 2, 3}),
                          floats({3, 1}, {1, 2, 3}))
                .top1Rows,
            0u);
}

void writeFile(const std::string &path, const std::string &text) {
  std::ofstream(path) << text << "\n";
}

std::string fakePowercap() {
  char tmpl[] = "/tmp/kiln-rapl-test-XXXXXX";
  std::string root = mkdtemp(tmpl);
  for (const char *zone : {"intel-rapl:0", "intel-rapl:1", "intel-rapl:0:0"}) {
    std::string d = root + "/" + zone;
    mkdir(d.c_str(), 0777);
  }
  writeFile(root + "/intel-rapl:0/name", "package-0");
  writeFile(root + "/intel-rapl:0/energy_uj", "1000000");
  writeFile(root + "/intel-rapl:0/max_energy_range_uj", "262143328850");
  writeFile(root + "/intel-rapl:1/name", "package-1");
  writeFile(root + "/intel-rapl:1/energy_uj", "262143000000");
  writeFile(root + "/intel-rapl:1/max_energy_range_uj", "262143328850");
  // A subzone (core of package 0) must not be counted twice.
  writeFile(root + "/intel-rapl:0:0/name", "core");
  writeFile(root + "/intel-rapl:0:0/energy_uj", "5");
  return root;
}

TEST(Measure, RaplReadsPackagesAndHandlesWrap) {
  std::string root = fakePowercap();
  RaplEnergy rapl;
  ASSERT_TRUE(rapl.open(root)) << rapl.reason();
  EXPECT_EQ(rapl.domainNames(),
            (std::vector<std::string>{"package-0", "package-1"}));
  std::vector<uint64_t> before = rapl.read();
  ASSERT_EQ(before.size(), 2u);
  EXPECT_EQ(before[0], 1000000u);
  // Package 0 uses 2.5 J; package 1's counter wraps after 1 J in all:
  // 328850 uJ up to the range, then 671150 uJ from zero.
  writeFile(root + "/intel-rapl:0/energy_uj", "3500000");
  writeFile(root + "/intel-rapl:1/energy_uj", "671150");
  EXPECT_NEAR(rapl.joulesBetween(before, rapl.read()), 3.5, 1e-9);
}

TEST(Measure, RaplUnavailableSaysWhy) {
  RaplEnergy missing;
  EXPECT_FALSE(missing.open("/nonexistent-powercap"));
  EXPECT_FALSE(missing.available());
  EXPECT_NE(missing.reason().find("does not exist"), std::string::npos);
  // The counter exists but cannot be read (as for non-root users).
  std::string root = fakePowercap();
  std::string counter = root + "/intel-rapl:1/energy_uj";
  std::remove(counter.c_str());
  mkdir(counter.c_str(), 0777); // a folder: open succeeds, reading fails
  RaplEnergy unreadable;
  EXPECT_FALSE(unreadable.open(root));
  EXPECT_NE(unreadable.reason().find("not readable"), std::string::npos);
  EXPECT_TRUE(unreadable.read().empty());
}

} // namespace
