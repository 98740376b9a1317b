//===- kiln-run.cpp - Runs a model artifact and checks its outputs --------===//
//
// kiln-run model.kiln [--inputs DIR | --input NAME=FILE ... | --seed N]
//                     [--dims NAME=N,...]
//                     [--expected DIR] [--rtol R] [--atol A] [--threads N]
//                     [--warmup N] [--iterations N | --duration S]
//                     [--reference OTHER.kiln] [--save-outputs DIR]
//                     [--profile] [--trace FILE] [--json FILE] [--info]
//                     [--device cpu|cuda[:N]] [--no-cuda-graphs]
// kiln-run --list-devices
//
// Exit status: 0 every compared output passed (or nothing to compare, unless
// --require-expected), 1 an output mismatched, 2 an error (usage, files,
// load, run). docs/kiln-run.md
// has the details (random generator, tolerance rule, JSON schema).
//
//===----------------------------------------------------------------------===//
#include "kiln/Run/DataParallel.h"
#include "kiln/Run/Measurement.h"
#include "kiln/distributed.hpp"
#include "kiln/runtime.h"

#include <chrono>
#include <climits>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>

using namespace kiln;
using namespace kiln::run;

namespace {

const char *kUsage = R"(usage: kiln-run MODEL.kiln [options]

Runs a Kiln model artifact on the CPU or a CUDA GPU and compares its
outputs.

Inputs (in the model's input order; default: --seed 0):
  --inputs DIR         an ONNX test data folder: input_0.pb, input_1.pb, ...
                       (TensorProto) or input_N.npy; expected outputs are
                       read from output_N.pb / output_N.npy there too
  --input NAME=FILE    one input from a .npy or .pb file (repeatable); with
                       --seed, the inputs not given are random
  --seed N             random inputs: input k gets a splitmix64 stream
                       seeded with N + k; floats uniform in [-1, 1),
                       integers uniform in [0, 10), bools 0/1
  --dims NAME=N,...    symbolic dims' values for random inputs (default 1;
                       input files give theirs)
Checking:
  --expected DIR       expected outputs output_N.pb / output_N.npy
  --reference M.kiln   expected outputs from another artifact (e.g. the
                       same model at fp32) run on the same inputs
  --require-expected   every output must have an expected value: an output
                       with none (or nothing to compare) is an error,
                       exit status 2 (test runners)
  --rtol R --atol A    pass when |actual - expected| <= A + R * |expected|
                       (default 1e-3 and 1e-7; NaN matches NaN, infinities
                       must match exactly)
                       Quality (max abs/rel error, cosine similarity, top-1
                       agreement along the last axis) is printed as well.
Running:
  --device D           cpu, cuda or cuda:N (default: the artifact's target);
                       without a CUDA device: "no CUDA device: <reason>",
                       exit status 2
  --no-cuda-graphs     CUDA: launch every kernel each run instead of
                       capturing the first run into a CUDA graph and
                       replaying it
  --list-devices       print this machine's CUDA devices (or why there are
                       none) and exit
  --threads N          threads of the model's parallel loops (0: all cores)
  --warmup N           untimed runs after the first (cold) run (default 0)
  --iterations N       timed runs after the warmup (default 0)
  --duration S         timed runs until S seconds have passed (at least
                       --iterations runs when both are given)
  --batch N            samples per run for the throughput figure (default:
                       dimension 0 of the first input, 1 for a scalar)
  --consistency-runs N extra runs whose outputs must be bit-identical to
                       the first run's (default 3; 0: no check)
  --profile            time every kernel of the timed runs (at least one)
                       and print per-kernel and per-category tables
  --trace FILE         write those runs' kernel timeline as a Chrome trace
                       (JSON for Perfetto / chrome://tracing); implies
                       --profile
Under mpirun -n N or srun (docs/cluster.md), every rank measures the model
on its own device (CUDA: the GPU of its local rank); between the warm-up
and the timed runs rank 0 runs them once alone (the scaling baseline),
then all ranks together; rank 0 prints and writes the result with every
rank's figures and their aggregation. "{rank}" in MODEL and in the paths
of --inputs, --input, --expected and --save-outputs is replaced by the rank
(one artifact per rank: tensor-parallel models).
  --no-solo            skip rank 0's runs alone (no scaling efficiency)
Output:
  --save-outputs DIR   write output_N.npy into DIR (usable as --expected)
  --json FILE          machine-readable results (schema kiln.run-result v2:
                       docs/schemas/kiln.run-result.v2.schema.json)
  --info               print the artifact's metadata and exit
  --help               this text

Exit status: 0 pass (or nothing compared, without --require-expected),
1 an output mismatched, 2 error.
)";

int fail(const std::string &message) {
  std::fprintf(stderr, "kiln-run: error: %s\n", message.c_str());
  return 2;
}

/// The command line: the measurement's options and what to do with it.
struct Options : RunOptions {
  std::string saveDir, jsonPath, tracePath;
  bool info = false;
  bool listDevices = false;
  bool requireExpected = false;
  bool solo = true;
  bool savePerRank = false; ///< --save-outputs named {rank}
};

// Returns -1 to go on, else an exit status.
int parseArgs(int argc, char **argv, Options &o) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](const char *&out) {
      if (i + 1 >= argc)
        return false;
      out = argv[++i];
      return true;
    };
    const char *v = nullptr;
    long long n;
    std::string e;
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (a == "--info") {
      o.info = true;
    } else if (a == "--device" && value(v)) {
      o.device = v;
    } else if (a == "--no-cuda-graphs") {
      o.cudaGraphs = false;
    } else if (a == "--list-devices") {
      o.listDevices = true;
    } else if (a == "--inputs" && value(v)) {
      o.inputsDir = v;
    } else if (a == "--expected" && value(v)) {
      o.expectedDir = v;
    } else if (a == "--reference" && value(v)) {
      o.referenceModel = v;
    } else if (a == "--duration" && value(v)) {
      if (!parseRealOption(a, v, true, o.duration, e))
        return fail(e);
    } else if (a == "--batch" && value(v)) {
      if (!parseCountOption(a, v, 1, LLONG_MAX, n, e))
        return fail(e);
      o.batch = long(n);
    } else if (a == "--consistency-runs" && value(v)) {
      if (!parseCountOption(a, v, 0, LLONG_MAX, n, e))
        return fail(e);
      o.consistencyRuns = long(n);
    } else if (a == "--save-outputs" && value(v)) {
      o.saveDir = v;
    } else if (a == "--json" && value(v)) {
      o.jsonPath = v;
    } else if (a == "--profile") {
      o.profile = true;
    } else if (a == "--no-solo") {
      o.solo = false;
    } else if (a == "--require-expected") {
      o.requireExpected = true;
    } else if (a == "--trace" && value(v)) {
      o.tracePath = v;
      o.profile = true;
    } else if (a == "--input" && value(v)) {
      std::string s = v;
      size_t eq = s.find('=');
      if (eq == std::string::npos || eq == 0)
        return fail("--input wants NAME=FILE, got '" + s + "'");
      o.inputFiles.emplace_back(s.substr(0, eq), s.substr(eq + 1));
    } else if (a == "--dims" && value(v)) {
      if (!parseDimsOption(v, o.dims, e))
        return fail(e);
    } else if (a == "--seed" && value(v)) {
      if (!parseCountOption(a, v, 0, LLONG_MAX, n, e))
        return fail(e);
      o.haveSeed = true;
      o.seed = uint64_t(n);
    } else if ((a == "--rtol" || a == "--atol") && value(v)) {
      if (!parseRealOption(a, v, false, a == "--rtol" ? o.rtol : o.atol, e))
        return fail(e);
    } else if (a == "--threads" && value(v)) {
      if (!parseCountOption(a, v, 0, 4096, n, e))
        return fail(e);
      o.threads = int(n);
    } else if ((a == "--warmup" || a == "--iterations") && value(v)) {
      if (!parseCountOption(a, v, 0, LLONG_MAX, n, e))
        return fail(e);
      (a == "--warmup" ? o.warmup : o.iterations) = long(n);
    } else if (!a.empty() && a[0] == '-') {
      std::fputs(kUsage, stderr);
      return fail("unknown or incomplete option '" + a + "'");
    } else if (o.model.empty()) {
      o.model = a;
    } else {
      return fail("more than one model given ('" + o.model + "', '" + a +
                  "')");
    }
  }
  if (o.listDevices)
    return -1; // needs no model
  if (o.model.empty()) {
    std::fputs(kUsage, stderr);
    return fail("no model given");
  }
  if (!o.inputsDir.empty() && (!o.inputFiles.empty() || o.haveSeed))
    return fail("--inputs cannot be combined with --input or --seed");
  if (!o.expectedDir.empty() && !o.referenceModel.empty())
    return fail("--expected cannot be combined with --reference");
  if (o.profile && o.iterations == 0)
    o.iterations = 1; // the profile is of the timed runs
  return -1;
}


/// kiln-run under a launcher: the measurement on every rank, the barriers
/// and rank 0's solo runs around the timed runs, every rank's samples on
/// rank 0, which prints and writes the result (include/kiln/Run/
/// DataParallel.h). Every rank exits with the same status.
int runDistributed(Options &o, dist::World &world) {
  const int rank = world.rank(), size = world.size();
  // A tensor-parallel shard cannot run alone (its all-reduces wait for the
  // other ranks): no solo baseline then.
  int64_t tensorParallel = 1;
  {
    kiln_model *m = nullptr;
    if (kiln_model_load(o.model.c_str(), &m) == KILN_OK) {
      kiln_model_tensor_parallel(m, &tensorParallel, nullptr);
      if (tensorParallel > 1)
        o.solo = false;
      kiln_model_free(m);
    }
  }
  std::vector<double> soloMs;
  double soloElapsedMs = 0;
  o.beforeTimed = [&](const std::function<bool(double &)> &runOnce) {
    world.barrier();
    if (o.solo && size > 1) {
      if (rank == 0) {
        long n = o.iterations > 0 ? o.iterations : 1;
        auto t0 = std::chrono::steady_clock::now();
        for (long i = 0; i < n || (o.duration > 0 && soloElapsedMs <
                                                     o.duration * 1e3);
             ++i) {
          double ms;
          if (!runOnce(ms))
            return false;
          soloMs.push_back(ms);
          soloElapsedMs = std::chrono::duration<double, std::milli>(
                              std::chrono::steady_clock::now() - t0)
                              .count();
        }
      }
      // The others wait without spinning while rank 0 runs alone.
      world.idleBarrier();
    }
    return true;
  };
  RunResult r;
  std::string err;
  if (!measure(o, r, err))
    world.abortJob("kiln-run", err);

  if (!o.saveDir.empty() && o.savePerRank && !saveOutputs(o.saveDir, r, err))
    world.abortJob("kiln-run", err);
  RankReport mine;
  mine.rank = rank;
  mine.localRank = world.localRank();
  mine.host = world.hostname();
  mine.device = r.onCuda ? r.device : "cpu";
  mine.batch = r.batch;
  mine.ms = r.timed.milliseconds;
  mine.elapsedMs = r.timed.elapsedMs;
  mine.soloMs = soloMs;
  mine.soloElapsedMs = soloElapsedMs;
  mine.compared = r.compared > 0;
  mine.pass = r.allPass;
  std::vector<std::string> all = world.gather(encodeRankReport(mine));
  int status = 0;
  if (rank == 0) {
    std::vector<RankReport> reports(all.size());
    for (size_t i = 0; i < all.size(); ++i)
      if (!decodeRankReport(all[i], reports[i], err))
        world.abortJob("kiln-run", err);
    DataParallelSummary summary;
    if (!aggregate(reports, summary, err, tensorParallel > 1))
      world.abortJob("kiln-run", err);
    WorldDescription wd;
    wd.launcher = world.launcher();
    wd.library = world.launcherVersion();
    wd.size = size;
    wd.tensorParallel = tensorParallel;
    wd.nodes = world.numNodes();
    wd.runClass = classifyRun(!r.onCuda, world.localSize(), r.threads,
                              int(std::thread::hardware_concurrency()));
    std::printf("rank 0 of %d (%s, local rank %d):\n", size,
                world.hostname().c_str(), world.localRank());
    printResult(stdout, o, r);
    if (o.profile)
      printProfile(stdout, r.profile);
    printDataParallel(stdout, wd, summary);
    if (!o.saveDir.empty() && !o.savePerRank &&
        !saveOutputs(o.saveDir, r, err))
      world.abortJob("kiln-run", err);
    if (!o.jsonPath.empty()) {
      std::string j = resultJson(o, r);
      size_t end = j.rfind('}');
      while (end > 0 && (j[end - 1] == '\n' || j[end - 1] == ' '))
        --end;
      j = j.substr(0, end) + ",\n  \"distributed\": " +
          dataParallelJson(wd, summary) + "\n}\n";
      std::ofstream f(o.jsonPath, std::ios::trunc);
      f << j;
      if (!f)
        world.abortJob("kiln-run", o.jsonPath + ": cannot write");
    }
    if (o.requireExpected && r.compared < r.outputs.size())
      world.abortJob("kiln-run",
                     std::to_string(r.outputs.size() - r.compared) + " of " +
                         std::to_string(r.outputs.size()) +
                         " outputs have no expected value "
                         "(--require-expected)");
    status = summary.allPass ? 0 : 1;
    if (!summary.allPass)
      for (const RankReport &rep : summary.ranks)
        if (rep.compared && !rep.pass)
          std::printf("rank %d (%s): outputs mismatched\n", rep.rank,
                      rep.host.c_str());
  }
  std::fflush(stdout);
  // Every rank exits with rank 0's verdict.
  std::string verdict = world.broadcast(std::to_string(status));
  return std::atoi(verdict.c_str());
}

/// "{rank}" in a model path becomes the rank's number.
std::string perRankPath(std::string path, int rank) {
  for (size_t at; (at = path.find("{rank}")) != std::string::npos;)
    path.replace(at, 6, std::to_string(rank));
  return path;
}

} // namespace

int main(int argc, char **argv) {
  Options o;
  int st = parseArgs(argc, argv, o);
  if (st >= 0)
    return st;
  dist::World &world = dist::World::get();
  std::string err;
  if (!world.init(err))
    return fail(err);
  // "{rank}" in any path: each rank's own file (one artifact, input or
  // expected output per rank: a tensor-parallel model's KV-cache shards).
  o.model = perRankPath(o.model, world.rank());
  o.referenceModel = perRankPath(o.referenceModel, world.rank());
  o.inputsDir = perRankPath(o.inputsDir, world.rank());
  o.expectedDir = perRankPath(o.expectedDir, world.rank());
  o.savePerRank = o.saveDir.find("{rank}") != std::string::npos;
  o.saveDir = perRankPath(o.saveDir, world.rank());
  for (auto &file : o.inputFiles)
    file.second = perRankPath(file.second, world.rank());

  if (o.listDevices) { // exit status 0 either way: "no CUDA device" is an
    printDevices(stdout); // answer here
    return 0;
  }
  if (o.info)
    return printArtifactInfo(stdout, o.model, err) ? 0 : fail(err);
  if (world.usesMpi())
    return runDistributed(o, world);

  RunResult r;
  if (!measure(o, r, err))
    return fail(err);
  printResult(stdout, o, r);
  if (o.profile) {
    printProfile(stdout, r.profile);
    if (!o.tracePath.empty()) {
      std::string e = writeChromeTrace(o.tracePath, r.profile, o.model);
      if (!e.empty())
        return fail(e);
    }
  }
  if (!o.saveDir.empty() && !saveOutputs(o.saveDir, r, err))
    return fail(err);
  if (!o.jsonPath.empty() && !writeResultJson(o.jsonPath, o, r, err))
    return fail(err);
  size_t numOutputs = r.outputs.size();
  if (o.requireExpected && r.compared < numOutputs)
    return fail(std::to_string(numOutputs - r.compared) + " of " +
                std::to_string(numOutputs) +
                " outputs have no expected value (--require-expected)");
  return r.allPass ? 0 : 1;
}
