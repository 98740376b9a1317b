//===- DataParallelTest.cpp - kiln-run's aggregation over ranks ----------===//
//
// include/kiln/Run/DataParallel.h on reports whose answers are worked out
// by hand: pooled latency, throughput over the slowest rank, scaling
// efficiency, the round trip of a rank's report, and the run class.
//
//===----------------------------------------------------------------------===//
#include "kiln/Run/DataParallel.h"
#include "kiln/distributed.hpp"

#include <gtest/gtest.h>

#include <cstdlib>

using namespace kiln::run;

namespace {

RankReport report(int rank, std::vector<double> ms, double elapsedMs,
                  long batch = 2) {
  RankReport r;
  r.rank = rank;
  r.localRank = rank;
  r.host = "h" + std::to_string(rank);
  r.device = "cpu";
  r.batch = batch;
  r.ms = std::move(ms);
  r.elapsedMs = elapsedMs;
  return r;
}

TEST(DataParallel, AggregatesOverTheSlowestRank) {
  // Rank 0: 3 runs in 30 ms; rank 1: 3 runs in 60 ms; 2 samples per run.
  std::vector<RankReport> reports = {report(1, {20, 20, 20}, 60),
                                     report(0, {10, 10, 10}, 30)};
  reports[1].soloMs = {10, 10, 10};
  reports[1].soloElapsedMs = 30;
  DataParallelSummary s;
  std::string error;
  ASSERT_TRUE(aggregate(reports, s, error)) << error;
  ASSERT_EQ(s.ranks.size(), 2u);
  EXPECT_EQ(s.ranks[0].rank, 0); // sorted by rank
  EXPECT_EQ(s.pooled.count, 6u);
  EXPECT_DOUBLE_EQ(s.pooled.median, 15); // (10 + 20) / 2
  EXPECT_DOUBLE_EQ(s.globalSamples, 12);
  EXPECT_EQ(s.slowestRank, 1);
  EXPECT_DOUBLE_EQ(s.samplesPerSecond, 12 / 0.060); // 200/s
  ASSERT_TRUE(s.haveSolo);
  EXPECT_DOUBLE_EQ(s.soloSamplesPerSecond, 6 / 0.030); // 200/s
  EXPECT_DOUBLE_EQ(s.scalingEfficiency, 200.0 / (2 * 200.0));
}

TEST(DataParallel, RejectsReportsThatAreNotOneWorld) {
  std::vector<RankReport> reports = {report(0, {1}, 1), report(0, {1}, 1)};
  DataParallelSummary s;
  std::string error;
  EXPECT_FALSE(aggregate(reports, s, error));
  EXPECT_NE(error.find("not ranks 0..1"), std::string::npos) << error;
}

TEST(DataParallel, FailsWhenAnyComparedRankFails) {
  std::vector<RankReport> reports = {report(0, {1}, 1), report(1, {1}, 1)};
  reports[1].compared = true;
  reports[1].pass = false;
  DataParallelSummary s;
  std::string error;
  ASSERT_TRUE(aggregate(reports, s, error));
  EXPECT_TRUE(s.anyCompared);
  EXPECT_FALSE(s.allPass);
}

TEST(DataParallel, RankReportsRoundTrip) {
  RankReport r = report(3, {1.5, 2.25}, 3.75, 8);
  r.host = "node \"7\"";
  r.soloMs = {1.0};
  r.soloElapsedMs = 1.0;
  r.compared = true;
  r.pass = false;
  RankReport back;
  std::string error;
  ASSERT_TRUE(decodeRankReport(encodeRankReport(r), back, error)) << error;
  EXPECT_EQ(back.rank, 3);
  EXPECT_EQ(back.host, "node \"7\"");
  EXPECT_EQ(back.batch, 8);
  EXPECT_EQ(back.ms, r.ms);
  EXPECT_DOUBLE_EQ(back.elapsedMs, 3.75);
  EXPECT_EQ(back.soloMs, r.soloMs);
  EXPECT_TRUE(back.compared);
  EXPECT_FALSE(back.pass);
  EXPECT_FALSE(decodeRankReport("{\"rank\": 1}", back, error));
}

TEST(DataParallel, ClassifiesRuns) {
  EXPECT_EQ(classifyRun(false, 8, 4, 64), "performance");
  EXPECT_NE(classifyRun(true, 2, 1, 2).find("functional only (CPU ranks"),
            std::string::npos);
  std::string over = classifyRun(false, 4, 2, 4);
  EXPECT_NE(over.find("oversubscribed: 4 rank(s) x 2 thread(s) on 4 core(s)"),
            std::string::npos)
      << over;
}

TEST(DataParallel, ReadsTheLauncherEnvironment) {
  setenv("OMPI_COMM_WORLD_RANK", "3", 1);
  setenv("OMPI_COMM_WORLD_SIZE", "8", 1);
  setenv("OMPI_COMM_WORLD_LOCAL_RANK", "1", 1);
  kiln::dist::LaunchEnvironment e = kiln::dist::readLaunchEnvironment();
  EXPECT_EQ(e.launcher, "Open MPI");
  EXPECT_EQ(e.rank, 3);
  EXPECT_EQ(e.size, 8);
  EXPECT_EQ(e.localRank, 1);
  unsetenv("OMPI_COMM_WORLD_RANK");
  unsetenv("OMPI_COMM_WORLD_SIZE");
  unsetenv("OMPI_COMM_WORLD_LOCAL_RANK");
  setenv("SLURM_PROCID", "5", 1);
  setenv("SLURM_NTASKS", "16", 1);
  setenv("SLURM_LOCALID", "2", 1);
  e = kiln::dist::readLaunchEnvironment();
  EXPECT_EQ(e.launcher, "Slurm");
  EXPECT_EQ(e.rank, 5);
  EXPECT_EQ(e.size, 16);
  EXPECT_EQ(e.localRank, 2);
  unsetenv("SLURM_PROCID");
  unsetenv("SLURM_NTASKS");
  unsetenv("SLURM_LOCALID");
  e = kiln::dist::readLaunchEnvironment();
  EXPECT_EQ(e.launcher, "");
  EXPECT_EQ(e.size, 1);
}

} // namespace
