//===- DataParallel.h - One measurement over the ranks of a world -*- C++ -*-===//
//
// kiln-run under `mpirun -n N` (docs/cluster.md): every rank measures the
// same artifact on its own device; between the warm-up and the timed runs
// the ranks meet at a barrier, rank 0 runs the timed runs once alone (the
// one-rank baseline of the scaling efficiency) while the others wait at a
// second barrier, and then all ranks run them together. Each rank's samples
// (steady clock, per rank) go to rank 0, which alone reports:
//
//  * per rank: host, local rank, device, runs, latency statistics, the wall
//    time of its timed runs and its throughput;
//  * aggregated: latency statistics of all ranks' samples pooled;
//    throughput = global work (the sum over ranks of runs x samples per
//    run) / the slowest rank's wall time; the scaling efficiency =
//    throughput / (N x the throughput of rank 0 alone).
//
// The rank reports travel as JSON strings (encodeRankReport), so the
// aggregation is a pure function that the unit tests check on known
// samples.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RUN_DATAPARALLEL_H
#define KILN_RUN_DATAPARALLEL_H

#include "kiln/Run/Measure.h"

#include <cstdio>
#include <string>
#include <vector>

namespace kiln {
namespace run {

/// What one rank measured.
struct RankReport {
  int rank = 0, localRank = 0;
  std::string host, device;
  long batch = 1;              ///< samples per run
  std::vector<double> ms;      ///< the timed runs, all ranks together
  double elapsedMs = 0;        ///< wall time of those runs
  std::vector<double> soloMs;  ///< rank 0: the timed runs alone
  double soloElapsedMs = 0;
  bool compared = false, pass = true;
};

std::string encodeRankReport(const RankReport &report);
bool decodeRankReport(const std::string &text, RankReport &report,
                      std::string &error);

/// The world the reports came from, as the report states it.
struct WorldDescription {
  std::string launcher, library;
  int size = 1, nodes = 1;
  /// "performance", or "functional only (<why>)": ranks on CPUs, or more
  /// ranks on a node than it has devices or cores (functionalOnly()).
  std::string runClass = "performance";
  /// > 1: the ranks are the shards of one tensor-parallel model; the group
  /// serves one request per run (the global work is one rank's).
  int64_t tensorParallel = 1;
};

/// The run's class: functional only when the ranks run on CPUs (they share
/// the node's cores and memory bandwidth) or when a node has more ranks
/// than `coresPerNode` x their threads allow; else "performance".
std::string classifyRun(bool onCpu, int ranksPerNode, int threadsPerRank,
                        int coresPerNode);

struct DataParallelSummary {
  std::vector<RankReport> ranks; ///< in rank order
  std::vector<TimingSummary> perRank;
  TimingSummary pooled;          ///< every rank's samples together
  double globalSamples = 0;      ///< sum over ranks of runs x batch
  int slowestRank = 0;
  double slowestElapsedMs = 0;
  double samplesPerSecond = 0;   ///< globalSamples / slowest wall time
  bool haveSolo = false;
  TimingSummary solo;
  double soloSamplesPerSecond = 0;
  double scalingEfficiency = 0;  ///< samplesPerSecond / (N x solo)
  bool allPass = true, anyCompared = false;
};

/// Aggregates the ranks' reports (any order). False with `error` when they
/// are not one world's (duplicate or missing ranks). With
/// `groupServesOne` (tensor parallelism) the global work is rank 0's
/// samples, not their sum.
bool aggregate(std::vector<RankReport> reports, DataParallelSummary &summary,
               std::string &error, bool groupServesOne = false);

/// The human-readable section kiln-run prints on rank 0.
void printDataParallel(FILE *out, const WorldDescription &world,
                       const DataParallelSummary &summary);

/// The "distributed" member of kiln-run's JSON (schema kiln.run-result v2).
std::string dataParallelJson(const WorldDescription &world,
                             const DataParallelSummary &summary);

} // namespace run
} // namespace kiln

#endif // KILN_RUN_DATAPARALLEL_H
