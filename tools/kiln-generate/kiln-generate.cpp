//===- kiln-generate.cpp - Text generation with a compiled decoder --------===//
//
// kiln-generate MODEL.kiln [--prompt FILE.npy | --prompt-len N [--batch B]]
//                          [--new-tokens N] [--stop ID,...] [--temperature T
//                          --top-k K --top-p P] [--seed S] [--threads N]
//                          [--warmup N] [--repeat N] [--expected FILE.npy]
//                          [--save-ids FILE.npy] [--json FILE] [--print-ids]
//
// Runs the runtime's generation loop (kiln_generate, docs/generation.md)
// and reports the field's metrics (../shared/GENERATION.md): time to first
// token, time per output token, inter-token latency, end-to-end latency,
// prompt and generated tokens per second, with p50/p90/p99 over the
// repeats, and the bytes of the KV cache or state.
//
//===----------------------------------------------------------------------===//

#include "kiln/Json.h"
#include "kiln/Run/DataParallel.h"
#include "kiln/Run/Measure.h"
#include "kiln/distributed.hpp"
#include "kiln/Run/TensorIO.h"
#include "kiln/runtime.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

using namespace kiln::run;

namespace {

const char *kUsage = R"(usage: kiln-generate MODEL.kiln [options]

Generates with a decoder that carries a KV cache or a recurrent state
(inputs input_ids, attention_mask, position_ids, past...; outputs logits,
present...: docs/generation.md), one prefill then one step per token.

Prompts:
  --prompt FILE.npy    int64 token ids [batch, len] or [len]
  --prompt-len N       random ids (uniform in [0, vocab), seeded by --seed)
  --batch B            prompts of --prompt-len (default 1)
Decoding:
  --new-tokens N       tokens to generate per prompt (default 64)
  --stop ID,...        a sequence ends after one of these ids
  --temperature T      0 (default): greedy; > 0: sampling
  --top-k K --top-p P  sampling: keep the K most likely / the smallest set
                       of probability >= P
  --seed S             prompt ids and sampling (default 0)
  --max-length N       refuse prompt + new tokens beyond N
Serving (in-flight batching, docs/generation.md "Serving"):
  --serve N            N requests instead of one static batch: prompt
                       lengths uniform in [L/2, L] of --prompt-len L, new
                       tokens uniform in [M/2, M] of --new-tokens M (seeded)
  --rate R             Poisson arrivals at R requests/s (default 0: all at
                       t = 0, an offline run)
  --max-batch B        sequences decoded together (default 8)
  --max-tokens T       tokens per step (default 4096)
  --check-alone        also generate each request alone and require the
                       same ids (exit status 1 otherwise)
Under mpirun -n N (docs/cluster.md): with a tensor-parallel model
(kiln-compile --tensor-parallel=N -o m.rank{rank}.kiln; "{rank}" in MODEL
is each rank's number) every rank runs the same generations on its shard
and their ids must be identical; with any other model each rank runs its
own generations (data parallel). Rank 0 prints every rank's figures and
their aggregation (and writes --json and --save-ids).
Measuring:
  --threads N          threads of the model's parallel loops (0: all cores)
  --warmup N           untimed generations first (default 1)
  --repeat N           timed generations (default 3)
Checking and output:
  --expected FILE.npy  int64 [batch, N]: the ids every generation must give
                       (exit status 1 when they differ)
  --save-ids FILE.npy  the last generation's ids (int64 [batch, N]; -1 after
                       a sequence's stop id)
  --print-ids          print the ids
  --json FILE          the results (schema kiln.generate-result v1,
                       docs/schemas/kiln.generate-result.v1.schema.json)

Metrics (per generation; percentiles over the repeats): TTFT (prefill and
the first token), TPOT = (E2E - TTFT) / (tokens - 1), ITL (the gaps between
steps), E2E, prompt tokens/s = batch * prompt / TTFT, output tokens/s =
tokens of all sequences / E2E. Sampling is inside the timing; tokenization
does not exist here (ids in, ids out).

Exit status: 0 done (and equal to --expected), 1 ids differ, 2 error.
)";

int fail(const std::string &message) {
  std::fprintf(stderr, "kiln-generate: error: %s\n", message.c_str());
  return 2;
}

struct Options {
  std::string model, promptPath, expectedPath, saveIds, jsonPath;
  int64_t promptLen = 0, batch = 1, threads = 0, warmup = 1, repeat = 3;
  bool printIds = false, checkAlone = false;
  int64_t serve = 0, maxBatch = 8, maxTokens = 4096;
  double rate = 0;
  kiln_generate_options gen;
  std::vector<int64_t> stops;
};

bool parseInt(const char *text, int64_t lo, int64_t &out) {
  char *end = nullptr;
  long long v = std::strtoll(text, &end, 10);
  if (!*text || *end || v < lo)
    return false;
  out = v;
  return true;
}

bool parseFloat(const char *text, double &out) {
  char *end = nullptr;
  out = std::strtod(text, &end);
  return *text && !*end && std::isfinite(out) && out >= 0;
}

// Returns -1 to go on, else an exit status.
int parseArgs(int argc, char **argv, Options &o) {
  kiln_generate_options_init(&o.gen);
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : nullptr;
    auto needs = [&]() {
      if (!v)
        return false;
      ++i;
      return true;
    };
    int64_t n;
    double f;
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (a == "--prompt" && needs()) {
      o.promptPath = v;
    } else if (a == "--prompt-len" && needs() && parseInt(v, 1, n)) {
      o.promptLen = n;
    } else if (a == "--batch" && needs() && parseInt(v, 1, n)) {
      o.batch = n;
    } else if (a == "--new-tokens" && needs() && parseInt(v, 1, n) &&
               n <= 1 << 20) {
      o.gen.max_new_tokens = int32_t(n);
    } else if (a == "--stop" && needs()) {
      std::string list = v;
      size_t start = 0;
      while (start <= list.size()) {
        size_t comma = list.find(',', start);
        std::string item = list.substr(start, comma - start);
        if (!parseInt(item.c_str(), 0, n))
          return fail("--stop wants ids >= 0, got '" + list + "'");
        o.stops.push_back(n);
        if (comma == std::string::npos)
          break;
        start = comma + 1;
      }
    } else if (a == "--temperature" && needs() && parseFloat(v, f)) {
      o.gen.temperature = float(f);
    } else if (a == "--top-k" && needs() && parseInt(v, 0, n) &&
               n <= INT32_MAX) {
      o.gen.top_k = int32_t(n);
    } else if (a == "--top-p" && needs() && parseFloat(v, f) && f <= 1) {
      o.gen.top_p = float(f);
    } else if (a == "--seed" && needs() && parseInt(v, 0, n)) {
      o.gen.seed = uint64_t(n);
    } else if (a == "--max-length" && needs() && parseInt(v, 1, n)) {
      o.gen.max_length = n;
    } else if (a == "--threads" && needs() && parseInt(v, 0, n) &&
               n <= 4096) {
      o.threads = n;
    } else if (a == "--warmup" && needs() && parseInt(v, 0, n)) {
      o.warmup = n;
    } else if (a == "--repeat" && needs() && parseInt(v, 1, n)) {
      o.repeat = n;
    } else if (a == "--expected" && needs()) {
      o.expectedPath = v;
    } else if (a == "--save-ids" && needs()) {
      o.saveIds = v;
    } else if (a == "--json" && needs()) {
      o.jsonPath = v;
    } else if (a == "--serve" && needs() && parseInt(v, 1, n)) {
      o.serve = n;
    } else if (a == "--rate" && needs() && parseFloat(v, f)) {
      o.rate = f;
    } else if (a == "--max-batch" && needs() && parseInt(v, 1, n) &&
               n <= INT32_MAX) {
      o.maxBatch = n;
    } else if (a == "--max-tokens" && needs() && parseInt(v, 1, n)) {
      o.maxTokens = n;
    } else if (a == "--check-alone") {
      o.checkAlone = true;
    } else if (a == "--print-ids") {
      o.printIds = true;
    } else if (!a.empty() && a[0] != '-' && o.model.empty()) {
      o.model = a;
    } else {
      return fail("bad argument '" + a + "'" +
                  (v && a[0] == '-' ? " (or its value)" : "") +
                  "; see --help");
    }
  }
  if (o.model.empty())
    return fail("no model given; see --help");
  if (o.serve && o.promptLen == 0)
    return fail("--serve needs --prompt-len");
  if (o.promptPath.empty() == (o.promptLen == 0))
    return fail("give exactly one of --prompt FILE.npy and --prompt-len N");
  o.gen.stop_ids = o.stops.data();
  o.gen.num_stop_ids = o.stops.size();
  return -1;
}

double percentile(std::vector<double> v, double p) {
  if (v.empty())
    return NAN;
  std::sort(v.begin(), v.end());
  double at = p / 100.0 * double(v.size() - 1);
  size_t lo = size_t(at);
  size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (at - double(lo));
}

struct Stat {
  std::vector<double> values;
  std::string json() const {
    if (values.empty())
      return "null";
    char buf[200];
    std::snprintf(buf, sizeof buf,
                  "{\"p50\": %.6g, \"p90\": %.6g, \"p99\": %.6g, \"min\": "
                  "%.6g, \"max\": %.6g}",
                  percentile(values, 50), percentile(values, 90),
                  percentile(values, 99), percentile(values, 0),
                  percentile(values, 100));
    return buf;
  }
  std::string text(const char *unit) const {
    char buf[200];
    std::snprintf(buf, sizeof buf, "p50 %.3f, p90 %.3f, p99 %.3f %s",
                  percentile(values, 50), percentile(values, 90),
                  percentile(values, 99), unit);
    return buf;
  }
};

// The static vocab of the output 'logits' [batch, seq, vocab], or -1.
int64_t staticVocab(const kiln_model *model) {
  for (size_t i = 0; i < kiln_model_num_outputs(model); ++i) {
    kiln_tensor_info info;
    kiln_model_output_info(model, i, &info);
    if (std::string(info.name) == "logits" && info.rank == 3)
      return info.dims[2];
  }
  return -1;
}

// --serve: N requests through kiln_serve, their metrics.
int serveMain(const Options &o, kiln_model *model, kiln_session *session) {
  int64_t vocab = staticVocab(model);
  if (vocab < 1)
    return fail("the model has no output 'logits' [batch, seq, vocab] with "
                "a static vocab");
  uint64_t state = o.gen.seed * 0x9e3779b97f4a7c15ull + 7;
  auto next = [&] {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
  };
  auto uniform = [&](int64_t lo, int64_t hi) {
    return lo + int64_t(next() % uint64_t(hi - lo + 1));
  };
  std::vector<std::vector<int64_t>> prompts(size_t(o.serve));
  std::vector<kiln_request> requests(size_t(o.serve));
  double arrival = 0;
  for (size_t r = 0; r < requests.size(); ++r) {
    int64_t len = uniform((o.promptLen + 1) / 2, o.promptLen);
    for (int64_t i = 0; i < len; ++i)
      prompts[r].push_back(int64_t(next() % uint64_t(vocab)));
    if (o.rate > 0 && r > 0) // exponential gaps: a Poisson stream
      arrival += -std::log(1.0 - double(next() >> 11) * 0x1.0p-53) /
                 o.rate * 1e3;
    requests[r] = {prompts[r].data(), prompts[r].size(),
                   int32_t(uniform((o.gen.max_new_tokens + 1) / 2,
                                   o.gen.max_new_tokens)),
                   arrival};
  }
  kiln_serve_options so;
  kiln_serve_options_init(&so);
  so.max_batch = int32_t(o.maxBatch);
  so.max_tokens = o.maxTokens;
  so.stop_ids = o.gen.stop_ids;
  so.num_stop_ids = o.gen.num_stop_ids;
  so.pad_id = o.gen.pad_id;

  Stat ttft, tpot, e2e, throughput, batchSize;
  size_t mismatches = 0;
  std::vector<std::vector<int64_t>> last;
  double elapsed = 0;
  size_t totalTokens = 0;
  for (int64_t run = 0; run < o.warmup + o.repeat; ++run) {
    kiln_serving *s = nullptr;
    if (kiln_serve(session, requests.data(), requests.size(), &so, &s) !=
        KILN_OK)
      return fail(kiln_last_error());
    last.assign(requests.size(), {});
    totalTokens = 0;
    std::vector<double> runTtft, runTpot, runE2e;
    for (size_t r = 0; r < requests.size(); ++r) {
      size_t n = kiln_serving_num_tokens(s, r);
      const double *ms = kiln_serving_token_ms(s, r);
      const int64_t *t = kiln_serving_tokens(s, r);
      last[r].assign(t, t + n);
      totalTokens += n;
      runTtft.push_back(ms[0] - requests[r].arrival_ms);
      runE2e.push_back(ms[n - 1] - requests[r].arrival_ms);
      if (n > 1)
        runTpot.push_back((ms[n - 1] - ms[0]) / double(n - 1));
    }
    elapsed = kiln_serving_elapsed_ms(s);
    size_t steps = kiln_serving_num_steps(s);
    double sum = 0;
    for (size_t k = 0; k < steps; ++k)
      sum += kiln_serving_step_batch(s)[k];
    kiln_serving_free(s);
    if (run < o.warmup)
      continue;
    ttft.values.insert(ttft.values.end(), runTtft.begin(), runTtft.end());
    tpot.values.insert(tpot.values.end(), runTpot.begin(), runTpot.end());
    e2e.values.insert(e2e.values.end(), runE2e.begin(), runE2e.end());
    throughput.values.push_back(double(totalTokens) / elapsed * 1e3);
    if (steps)
      batchSize.values.push_back(sum / double(steps));
  }
  if (o.checkAlone) {
    for (size_t r = 0; r < requests.size(); ++r) {
      kiln_generate_options g = o.gen;
      g.max_new_tokens = requests[r].max_new_tokens;
      g.temperature = 0;
      kiln_generation *alone = nullptr;
      const int64_t *p = prompts[r].data();
      size_t len = prompts[r].size();
      if (kiln_generate(session, &p, &len, 1, &g, &alone) != KILN_OK)
        return fail(kiln_last_error());
      const int64_t *t = kiln_generation_tokens(alone, 0);
      std::vector<int64_t> ids(t, t + kiln_generation_num_tokens(alone, 0));
      kiln_generation_free(alone);
      if (ids != last[r])
        ++mismatches;
    }
  }
  char rateText[64];
  std::snprintf(rateText, sizeof rateText, "%g", o.rate);
  std::string arrivals = o.rate > 0 ? std::string("Poisson arrivals at ") +
                                          rateText + " requests/s"
                                    : "all at t = 0 (offline)";
  std::printf("model: %s\n", o.model.c_str());
  std::printf("serving: %lld requests, prompts %lld..%lld tokens, %d..%d new "
              "tokens, %s, max batch %lld, max tokens %lld\n",
              (long long)o.serve, (long long)(o.promptLen + 1) / 2,
              (long long)o.promptLen, (o.gen.max_new_tokens + 1) / 2,
              o.gen.max_new_tokens,
              arrivals.c_str(),
              (long long)o.maxBatch, (long long)o.maxTokens);
  std::printf("threads: %d; %lld warmup, %lld timed runs\n",
              kiln_session_num_threads(session), (long long)o.warmup,
              (long long)o.repeat);
  std::printf("throughput: %.1f output tokens/s, %.2f requests/s (p50; %zu "
              "tokens in %.1f ms, mean decode batch %.2f)\n",
              percentile(throughput.values, 50),
              double(o.serve) / elapsed * 1e3, totalTokens, elapsed,
              percentile(batchSize.values, 50));
  std::printf("TTFT: %s\n", ttft.text("ms").c_str());
  std::printf("TPOT: %s\n", tpot.text("ms").c_str());
  std::printf("E2E: %s\n", e2e.text("ms").c_str());
  if (o.checkAlone)
    std::printf("alone: %zu of %lld requests give the ids they give alone%s\n",
                size_t(o.serve) - mismatches, (long long)o.serve,
                mismatches ? "" : " (all)");
  if (!o.jsonPath.empty()) {
    std::ofstream f(o.jsonPath);
    f << "{\"schema\": \"kiln.serve-result\", \"version\": 1,\n"
      << " \"model\": " << kiln::json::quote(o.model)
      << ", \"threads\": " << kiln_session_num_threads(session)
      << ",\n \"requests\": " << o.serve << ", \"rate\": " << o.rate
      << ", \"max_batch\": " << o.maxBatch
      << ", \"max_tokens\": " << o.maxTokens << ", \"warmup\": "
      << o.warmup << ", \"repeat\": " << o.repeat
      << ",\n \"output_tokens\": " << totalTokens
      << ", \"elapsed_ms\": " << elapsed
      << ",\n \"output_tokens_per_s\": " << throughput.json()
      << ",\n \"mean_decode_batch\": " << batchSize.json()
      << ",\n \"ttft_ms\": " << ttft.json() << ",\n \"tpot_ms\": "
      << tpot.json() << ",\n \"e2e_ms\": " << e2e.json()
      << ",\n \"alone\": ";
    if (o.checkAlone)
      f << "{\"checked\": " << o.serve
        << ", \"equal\": " << size_t(o.serve) - mismatches << "}";
    else
      f << "null";
    f << "}\n";
    if (!f)
      return fail("cannot write " + o.jsonPath);
  }
  return mismatches ? 1 : 0;
}

} // namespace

/// The numbers of a JSON array.
static std::vector<double> jsonNumbers(const kiln::json::Value *v) {
  std::vector<double> out;
  if (v && v->isArray())
    for (const kiln::json::Value &e : v->getArray())
      if (e.isNumber())
        out.push_back(e.getNumber());
  return out;
}

static std::string jsonArray(const std::vector<double> &v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i)
    s += (i ? ", " : "") + kiln::json::number(v[i]);
  return s + "]";
}

/// kiln-generate under mpirun: every rank's figures (and ids) go to rank
/// 0, which checks that a tensor-parallel group's ranks generated the same
/// ids, or aggregates a data-parallel run (throughput = all ranks' output
/// tokens / the slowest rank's wall time of the timed generations), prints
/// the section and fills `json` (the result's "distributed" member).
/// Returns the exit status every rank exits with.
static int gatherRanks(const Options &o, kiln::dist::World &world,
                       int64_t tpRanks, size_t batch, size_t tokensPerRun,
                       double timedMs, const Stat &ttft, const Stat &tpot,
                       const Stat &e2e,
                       const std::vector<std::vector<int64_t>> &ids,
                       std::string &json) {
  namespace js = kiln::json;
  std::string mine = "{\"rank\": " + std::to_string(world.rank()) +
                     ", \"host\": " + js::quote(world.hostname()) +
                     ", \"local_rank\": " + std::to_string(world.localRank()) +
                     ", \"generations\": " +
                     std::to_string(size_t(o.repeat) * batch) +
                     ", \"output_tokens\": " +
                     std::to_string(size_t(o.repeat) * tokensPerRun) +
                     ", \"wall_ms\": [" + kiln::json::number(timedMs) + "]";
  mine += ", \"ttft_ms\": " + jsonArray(ttft.values) +
          ", \"tpot_ms\": " + jsonArray(tpot.values) +
          ", \"e2e_ms\": " + jsonArray(e2e.values) + ", \"ids\": [";
  for (size_t b = 0; b < ids.size(); ++b) {
    mine += b ? ", [" : "[";
    for (size_t i = 0; i < ids[b].size(); ++i)
      mine += (i ? ", " : "") + std::to_string(ids[b][i]);
    mine += "]";
  }
  mine += "]}";
  std::vector<std::string> all = world.gather(mine);
  int status = 0;
  if (world.rank() == 0) {
    const bool tp = tpRanks > 1;
    std::vector<js::Value> reports(all.size());
    for (size_t r = 0; r < all.size(); ++r) {
      std::string e;
      if (!js::parse(all[r], reports[r], e))
        world.abortJob("kiln-generate", "rank " + std::to_string(r) +
                                            "'s report: " + e);
    }
    auto idsOf = [](const js::Value &v) {
      std::vector<std::vector<double>> out;
      if (const js::Value *a = v.find("ids"))
        for (const js::Value &row : a->getArray())
          out.push_back(jsonNumbers(&row));
      return out;
    };
    bool identical = true;
    if (tp)
      for (size_t r = 1; r < reports.size(); ++r)
        if (idsOf(reports[r]) != idsOf(reports[0])) {
          identical = false;
          std::fprintf(stderr,
                       "kiln-generate: error: rank %zu generated other ids "
                       "than rank 0 (the shards of a tensor-parallel model "
                       "must agree)\n",
                       r);
          status = 2;
        }
    double generations = 0, tokens = 0, slowest = 0;
    size_t slowestRank = 0;
    std::vector<double> allTtft, allTpot, allE2e;
    for (size_t r = 0; r < reports.size(); ++r) {
      const js::Value &v = reports[r];
      double wall = jsonNumbers(v.find("wall_ms")).at(0);
      if (!tp || r == 0) {
        generations += v.find("generations")->getNumber();
        tokens += v.find("output_tokens")->getNumber();
      }
      if (wall > slowest) {
        slowest = wall;
        slowestRank = r;
      }
      for (auto [key, pool] :
           {std::pair<const char *, std::vector<double> *>{"ttft_ms", &allTtft},
            {"tpot_ms", &allTpot},
            {"e2e_ms", &allE2e}}) {
        std::vector<double> x = jsonNumbers(v.find(key));
        pool->insert(pool->end(), x.begin(), x.end());
      }
    }
    double tokensPerS = slowest > 0 ? tokens / slowest * 1e3 : 0;
    double tasksPerHour = slowest > 0 ? generations / slowest * 3.6e6 : 0;
    std::string runClass = kiln::run::classifyRun(
        /*onCpu=*/true, world.localSize(), o.threads,
        int(std::thread::hardware_concurrency()));
    std::printf("%s: %d rank(s) on %d node(s), launcher %s (%s)\n",
                tp ? "Tensor parallel" : "Data parallel", world.size(),
                world.numNodes(), world.launcher().c_str(),
                world.launcherVersion().c_str());
    std::printf("  run: %s\n", runClass.c_str());
    if (tp)
      std::printf("  every rank ran the same %g generation(s) on its shard; "
                  "ids %s on every rank\n",
                  generations, identical ? "identical" : "DIFFERENT");
    std::printf("  %-5s %-16s %-5s %6s %8s %10s %10s %10s %9s\n", "rank",
                "host", "local", "gens", "tokens", "TTFT p50", "TPOT p50",
                "E2E p50", "wall s");
    for (const js::Value &v : reports)
      std::printf("  %-5lld %-16s %-5lld %6g %8g %10.3f %10.3f %10.3f %9.3f\n",
                  (long long)v.find("rank")->getInteger(),
                  v.find("host")->getString().c_str(),
                  (long long)v.find("local_rank")->getInteger(),
                  v.find("generations")->getNumber(),
                  v.find("output_tokens")->getNumber(),
                  percentile(jsonNumbers(v.find("ttft_ms")), 50),
                  percentile(jsonNumbers(v.find("tpot_ms")), 50),
                  percentile(jsonNumbers(v.find("e2e_ms")), 50),
                  jsonNumbers(v.find("wall_ms")).at(0) / 1e3);
    std::printf("  all ranks: %g generation(s), %g output tokens in %.3f s "
                "(rank %zu, the slowest): %.1f output tokens/s, %.1f "
                "tasks/hour; TTFT p50 %.3f ms, TPOT p50 %.3f ms (pooled)\n",
                generations, tokens, slowest / 1e3, slowestRank, tokensPerS,
                tasksPerHour, percentile(allTtft, 50),
                percentile(allTpot, 50));
    const char *rule =
        tp ? "tensor parallel: the group serves one rank's generations; "
             "throughput = those output tokens / the slowest rank's wall "
             "time; latencies pooled over the ranks"
           : "data parallel: throughput = the output tokens of all ranks / "
             "the slowest rank's wall time of the timed generations; "
             "latencies pooled over the ranks";
    std::printf("  aggregation: %s\n\n", rule);
    auto statJson = [](const std::vector<double> &v) {
      Stat s;
      s.values = v;
      return s.json();
    };
    json = "{\"mode\": " +
           js::quote(tp ? "tensor_parallel" : "data_parallel") +
           ", \"launcher\": " + js::quote(world.launcher()) +
           ", \"library\": " + js::quote(world.launcherVersion()) +
           ", \"world_size\": " + std::to_string(world.size()) +
           ", \"nodes\": " + std::to_string(world.numNodes()) +
           ", \"tensor_parallel\": " + std::to_string(tpRanks) +
           ", \"run_class\": " + js::quote(runClass) +
           ", \"aggregation\": " + js::quote(rule) + ",\n  \"ranks\": [";
    for (size_t r = 0; r < all.size(); ++r)
      json += std::string(r ? ",\n    " : "\n    ") + all[r];
    json += "],\n  \"aggregate\": {\"generations\": " +
            kiln::json::number(generations);
    json += ", \"output_tokens\": " + kiln::json::number(tokens);
    json += ", \"slowest_rank\": " + std::to_string(slowestRank) +
            ", \"slowest_wall_ms\": " + kiln::json::number(slowest);
    json += ", \"output_tokens_per_s\": " + kiln::json::number(tokensPerS);
    json += ", \"tasks_per_hour\": " + kiln::json::number(tasksPerHour);
    json += ", \"ttft_ms\": " + statJson(allTtft) +
            ", \"tpot_ms\": " + statJson(allTpot) +
            ", \"e2e_ms\": " + statJson(allE2e) +
            ", \"ids_identical\": " +
            (tp ? (identical ? "true" : "false") : "null") + "}}";
  }
  std::fflush(stdout);
  std::string verdict = world.broadcast(std::to_string(status));
  return std::atoi(verdict.c_str());
}

int main(int argc, char **argv) {
  Options o;
  if (int status = parseArgs(argc, argv, o); status >= 0)
    return status;
  kiln::dist::World &world = kiln::dist::World::get();
  {
    std::string e;
    if (!world.init(e))
      return fail(e);
    for (size_t at; (at = o.model.find("{rank}")) != std::string::npos;)
      o.model.replace(at, 6, std::to_string(world.rank()));
  }
  const bool distributed = world.usesMpi();
  auto failRank = [&](const std::string &message) {
    if (distributed)
      world.abortJob("kiln-generate", message);
    return fail(message);
  };

  kiln_model *model = nullptr;
  if (kiln_model_load(o.model.c_str(), &model) != KILN_OK)
    return failRank(kiln_last_error());
  kiln_session_options so;
  kiln_session_options_init(&so);
  so.num_threads = int32_t(o.threads);
  kiln_session *session = nullptr;
  if (kiln_session_create(model, &so, &session) != KILN_OK) {
    std::string e = kiln_last_error();
    kiln_model_free(model);
    return failRank(e);
  }
  struct Cleanup {
    kiln_model *m;
    kiln_session *s;
    ~Cleanup() {
      kiln_session_free(s);
      kiln_model_free(m);
    }
  } cleanup{model, session};

  // The prompts.
  std::vector<std::vector<int64_t>> prompts;
  std::string error;
  if (!o.promptPath.empty()) {
    HostTensor t;
    if (!readNpy(o.promptPath, t, error))
      return failRank(error);
    if (t.dtype != KILN_DTYPE_INT64 || t.dims.empty() || t.dims.size() > 2)
      return fail(o.promptPath + ": want int64 ids [batch, len] or [len], "
                                 "got " +
                  dtypeString(t.dtype) + " " + shapeString(t.dims));
    int64_t rows = t.dims.size() == 2 ? t.dims[0] : 1;
    int64_t len = t.dims.back();
    const int64_t *ids = static_cast<const int64_t *>(t.data());
    for (int64_t r = 0; r < rows; ++r)
      prompts.emplace_back(ids + r * len, ids + (r + 1) * len);
  } else {
    // The vocab from the logits output; random ids seeded by --seed.
    int64_t vocab = staticVocab(model);
    if (vocab < 1)
      return fail("the model has no output 'logits' [batch, seq, vocab] "
                  "with a static vocab (give --prompt FILE.npy)");
    uint64_t state = o.gen.seed * 0x9e3779b97f4a7c15ull + 1;
    for (int64_t b = 0; b < o.batch; ++b) {
      std::vector<int64_t> p;
      for (int64_t i = 0; i < o.promptLen; ++i) {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        p.push_back(int64_t(state % uint64_t(vocab)));
      }
      prompts.push_back(std::move(p));
    }
  }
  std::vector<const int64_t *> starts;
  std::vector<size_t> lengths;
  for (const auto &p : prompts) {
    starts.push_back(p.data());
    lengths.push_back(p.size());
  }
  size_t batch = prompts.size();

  HostTensor expected;
  if (!o.expectedPath.empty()) {
    if (!readNpy(o.expectedPath, expected, error))
      return fail(error);
    if (expected.dtype != KILN_DTYPE_INT64 || expected.dims.size() != 2 ||
        expected.dims[0] != int64_t(batch))
      return fail(o.expectedPath + ": want int64 ids [" +
                  std::to_string(batch) + ", N], got " +
                  dtypeString(expected.dtype) + " " +
                  shapeString(expected.dims));
  }

  Stat ttft, tpot, itl, e2e, promptRate, outputRate;
  uint64_t stateBytes = 0, peakStateBytes = 0, copiedBytes = 0;
  size_t tokensPerRun = 0, promptLength = 0;
  std::vector<std::vector<int64_t>> last;
  size_t mismatches = 0, compared = 0;
  int64_t tpRanks = 1, tpRank = 0;
  kiln_model_tensor_parallel(model, &tpRanks, &tpRank);
  if (distributed && world.size() > 1 && o.serve)
    return failRank("--serve under mpirun is not supported yet (the ranks' "
                    "schedules would have to agree step by step)");
  // Under mpirun: the ranks start the timed generations together.
  auto timedStart = std::chrono::steady_clock::now();
  for (int64_t run = 0; run < o.warmup + o.repeat; ++run) {
    if (run == o.warmup) {
      world.barrier();
      timedStart = std::chrono::steady_clock::now();
    }
    kiln_generation *g = nullptr;
    if (kiln_generate(session, starts.data(), lengths.data(), batch, &o.gen,
                      &g) != KILN_OK)
      return failRank(kiln_last_error());
    std::vector<std::vector<int64_t>> tokens(batch);
    size_t total = 0;
    for (size_t b = 0; b < batch; ++b) {
      const int64_t *t = kiln_generation_tokens(g, b);
      tokens[b].assign(t, t + kiln_generation_num_tokens(g, b));
      total += tokens[b].size();
    }
    size_t steps = kiln_generation_num_steps(g);
    std::vector<uint64_t> ns(kiln_generation_step_ns(g),
                             kiln_generation_step_ns(g) + steps);
    promptLength = kiln_generation_prompt_length(g);
    stateBytes = kiln_generation_state_bytes(g);
    peakStateBytes = kiln_generation_peak_state_bytes(g);
    copiedBytes = kiln_generation_copied_bytes(g);
    kiln_generation_free(g);
    if (!o.expectedPath.empty()) {
      const int64_t *want = static_cast<const int64_t *>(expected.data());
      int64_t n = expected.dims[1];
      for (size_t b = 0; b < batch; ++b)
        for (int64_t i = 0; i < n; ++i) {
          ++compared;
          bool have = size_t(i) < tokens[b].size();
          if (!have || tokens[b][size_t(i)] != want[int64_t(b) * n + i])
            ++mismatches;
        }
    }
    last = tokens;
    tokensPerRun = total;
    if (run < o.warmup)
      continue;
    double first = double(ns[0]) * 1e-6, end = double(ns[steps - 1]) * 1e-6;
    ttft.values.push_back(first);
    e2e.values.push_back(end);
    if (steps > 1)
      tpot.values.push_back((end - first) / double(steps - 1));
    for (size_t s = 1; s < steps; ++s)
      itl.values.push_back(double(ns[s] - ns[s - 1]) * 1e-6);
    promptRate.values.push_back(double(batch * promptLength) / first * 1e3);
    outputRate.values.push_back(double(total) / end * 1e3);
  }

  double timedMs = std::chrono::duration<double, std::milli>(
                       std::chrono::steady_clock::now() - timedStart)
                       .count();
  if (o.serve)
    return serveMain(o, model, session);
  std::string distributedJson;
  if (distributed) {
    int status = gatherRanks(o, world, tpRanks, batch, tokensPerRun, timedMs,
                             ttft, tpot, e2e, last, distributedJson);
    if (world.rank() != 0)
      return status;
    if (status)
      return status;
  }
  kiln_session_stats stats;
  kiln_session_get_stats(session, &stats);
  std::printf("model: %s\n", o.model.c_str());
  std::printf("prompts: %zu x %zu tokens (left-padded), %d new tokens, %s\n",
              batch, promptLength, o.gen.max_new_tokens,
              o.gen.temperature > 0 ? "sampling" : "greedy");
  std::printf("threads: %d; %lld warmup, %lld timed generations\n",
              kiln_session_num_threads(session), (long long)o.warmup,
              (long long)o.repeat);
  std::printf("TTFT: %s\n", ttft.text("ms").c_str());
  if (!tpot.values.empty()) {
    std::printf("TPOT: %s\n", tpot.text("ms").c_str());
    std::printf("ITL: %s (%zu gaps)\n", itl.text("ms").c_str(),
                itl.values.size());
  }
  std::printf("E2E: %s\n", e2e.text("ms").c_str());
  std::printf("prompt: %.1f tokens/s; output: %.1f tokens/s (p50, %zu "
              "tokens per generation)\n",
              percentile(promptRate.values, 50),
              percentile(outputRate.values, 50), tokensPerRun);
  std::printf("memory: state %llu bytes (peak %llu), session peak %llu "
              "bytes\n",
              (unsigned long long)stateBytes,
              (unsigned long long)peakStateBytes,
              (unsigned long long)stats.peak_bytes);
  std::printf("state copied per decode step: %llu bytes%s\n",
              (unsigned long long)copiedBytes,
              copiedBytes ? " (the most of any step)" : " (in place)");
  if (o.printIds)
    for (size_t b = 0; b < batch; ++b) {
      std::printf("ids[%zu]:", b);
      for (int64_t t : last[b])
        std::printf(" %lld", (long long)t);
      std::printf("\n");
    }
  if (!o.expectedPath.empty())
    std::printf("expected: %zu of %zu ids equal%s\n", compared - mismatches,
                compared, mismatches ? "" : " (exact)");

  if (!o.saveIds.empty()) {
    HostTensor t;
    t.dtype = KILN_DTYPE_INT64;
    size_t width = 0;
    for (const auto &l : last)
      width = std::max(width, l.size());
    t.dims = {int64_t(batch), int64_t(width)};
    t.allocate();
    int64_t *p = static_cast<int64_t *>(t.data());
    for (size_t b = 0; b < batch; ++b)
      for (size_t i = 0; i < width; ++i)
        p[b * width + i] = i < last[b].size() ? last[b][i] : -1;
    if (!writeNpy(o.saveIds, t, error))
      return fail(error);
  }
  if (!o.jsonPath.empty()) {
    std::ofstream f(o.jsonPath);
    f << "{\"schema\": \"kiln.generate-result\", \"version\": 1,\n"
      << " \"model\": " << kiln::json::quote(o.model) << ",\n"
      << " \"device\": " << kiln::json::quote(kiln_session_device(session))
      << ", \"threads\": " << kiln_session_num_threads(session) << ",\n"
      << " \"batch\": " << batch << ", \"prompt_tokens\": " << promptLength
      << ", \"max_new_tokens\": " << o.gen.max_new_tokens
      << ", \"sampling\": " << (o.gen.temperature > 0 ? "true" : "false")
      << ", \"warmup\": " << o.warmup << ", \"repeat\": " << o.repeat
      << ",\n \"output_tokens\": " << tokensPerRun << ",\n"
      << " \"ttft_ms\": " << ttft.json() << ",\n"
      << " \"tpot_ms\": " << tpot.json() << ",\n"
      << " \"itl_ms\": " << itl.json() << ",\n"
      << " \"e2e_ms\": " << e2e.json() << ",\n"
      << " \"prompt_tokens_per_s\": " << promptRate.json() << ",\n"
      << " \"output_tokens_per_s\": " << outputRate.json() << ",\n"
      << " \"state_bytes\": " << stateBytes
      << ", \"peak_state_bytes\": " << peakStateBytes
      << ", \"session_peak_bytes\": " << stats.peak_bytes
      << ", \"state_copied_bytes\": " << copiedBytes << ",\n"
      << " \"expected\": ";
    if (o.expectedPath.empty())
      f << "null";
    else
      f << "{\"compared\": " << compared
        << ", \"equal\": " << compared - mismatches << "}";
    if (!distributedJson.empty())
      f << ",\n \"distributed\": " << distributedJson;
    f << ",\n \"ids\": [";
    for (size_t b = 0; b < batch; ++b) {
      f << (b ? ", [" : "[");
      for (size_t i = 0; i < last[b].size(); ++i)
        f << (i ? ", " : "") << last[b][i];
      f << "]";
    }
    f << "]}\n";
    if (!f)
      return fail("cannot write " + o.jsonPath);
  }
  return mismatches ? 1 : 0;
}
