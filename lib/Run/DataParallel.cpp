//===- DataParallel.cpp - One measurement over the ranks of a world -------===//
//
// include/kiln/Run/DataParallel.h.
//
//===----------------------------------------------------------------------===//
#include "kiln/Run/DataParallel.h"
#include "kiln/Json.h"

#include <algorithm>
#include <cmath>

using namespace kiln;
using namespace kiln::run;

namespace {

std::string num(double v) { return json::number(v); }

std::string numbers(const std::vector<double> &v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i)
    s += (i ? ", " : "") + num(v[i]);
  return s + "]";
}

bool readNumbers(const json::Value *v, std::vector<double> &out) {
  if (!v || !v->isArray())
    return false;
  out.clear();
  for (const json::Value &e : v->getArray()) {
    if (!e.isNumber())
      return false;
    out.push_back(e.getNumber());
  }
  return true;
}

std::string timingJson(const TimingSummary &t) {
  return "{\"runs\": " + std::to_string(t.count) + ", \"min_ms\": " +
         num(t.min) + ", \"median_ms\": " + num(t.median) + ", \"mean_ms\": " +
         num(t.mean) + ", \"p90_ms\": " + num(t.p90) + ", \"p99_ms\": " +
         num(t.p99) + ", \"max_ms\": " + num(t.max) + "}";
}

double perSecond(double samples, double ms) {
  return ms > 0 ? samples * 1e3 / ms : 0;
}

} // namespace

std::string kiln::run::classifyRun(bool onCpu, int ranksPerNode,
                                   int threadsPerRank, int coresPerNode) {
  std::vector<std::string> why;
  if (onCpu)
    why.push_back("CPU ranks share one node's cores and memory bandwidth");
  if (coresPerNode > 0 &&
      long(ranksPerNode) * long(std::max(threadsPerRank, 1)) > coresPerNode)
    why.push_back("oversubscribed: " + std::to_string(ranksPerNode) +
                  " rank(s) x " + std::to_string(std::max(threadsPerRank, 1)) +
                  " thread(s) on " + std::to_string(coresPerNode) +
                  " core(s)");
  if (why.empty())
    return "performance";
  std::string s = "functional only (";
  for (size_t i = 0; i < why.size(); ++i)
    s += (i ? "; " : "") + why[i];
  return s + ")";
}

std::string kiln::run::encodeRankReport(const RankReport &r) {
  return "{\"rank\": " + std::to_string(r.rank) +
         ", \"local_rank\": " + std::to_string(r.localRank) +
         ", \"host\": " + json::quote(r.host) +
         ", \"device\": " + json::quote(r.device) +
         ", \"batch\": " + std::to_string(r.batch) +
         ", \"samples_ms\": " + numbers(r.ms) +
         ", \"elapsed_ms\": " + num(r.elapsedMs) +
         ", \"solo_samples_ms\": " + numbers(r.soloMs) +
         ", \"solo_elapsed_ms\": " + num(r.soloElapsedMs) +
         ", \"compared\": " + (r.compared ? "true" : "false") +
         ", \"pass\": " + (r.pass ? "true" : "false") + "}";
}

bool kiln::run::decodeRankReport(const std::string &text, RankReport &r,
                                 std::string &error) {
  json::Value v;
  if (!json::parse(text, v, error))
    return false;
  auto integer = [&](const char *key, long &out) {
    const json::Value *m = v.find(key);
    if (!m || !m->isInteger())
      return false;
    out = long(m->getInteger());
    return true;
  };
  auto str = [&](const char *key, std::string &out) {
    const json::Value *m = v.find(key);
    if (!m || !m->isString())
      return false;
    out = m->getString();
    return true;
  };
  auto real = [&](const char *key, double &out) {
    const json::Value *m = v.find(key);
    if (!m || !m->isNumber())
      return false;
    out = m->getNumber();
    return true;
  };
  auto flag = [&](const char *key, bool &out) {
    const json::Value *m = v.find(key);
    if (!m || !m->isBool())
      return false;
    out = m->getBool();
    return true;
  };
  long rank = 0, local = 0;
  if (!v.isObject() || !integer("rank", rank) ||
      !integer("local_rank", local) || !str("host", r.host) ||
      !str("device", r.device) || !integer("batch", r.batch) ||
      !readNumbers(v.find("samples_ms"), r.ms) ||
      !real("elapsed_ms", r.elapsedMs) ||
      !readNumbers(v.find("solo_samples_ms"), r.soloMs) ||
      !real("solo_elapsed_ms", r.soloElapsedMs) ||
      !flag("compared", r.compared) || !flag("pass", r.pass)) {
    error = "a rank's report is incomplete: " + text.substr(0, 200);
    return false;
  }
  r.rank = int(rank);
  r.localRank = int(local);
  return true;
}

bool kiln::run::aggregate(std::vector<RankReport> reports,
                          DataParallelSummary &s, std::string &error,
                          bool groupServesOne) {
  s = DataParallelSummary();
  std::sort(reports.begin(), reports.end(),
            [](const RankReport &a, const RankReport &b) {
              return a.rank < b.rank;
            });
  for (size_t i = 0; i < reports.size(); ++i)
    if (reports[i].rank != int(i)) {
      error = "the ranks' reports are not ranks 0.." +
              std::to_string(reports.size() - 1) + " (found rank " +
              std::to_string(reports[i].rank) + " at position " +
              std::to_string(i) + ")";
      return false;
    }
  if (reports.empty()) {
    error = "no rank reported";
    return false;
  }
  std::vector<double> pooled;
  for (const RankReport &r : reports) {
    s.perRank.push_back(summarize(r.ms));
    pooled.insert(pooled.end(), r.ms.begin(), r.ms.end());
    if (!groupServesOne || r.rank == 0)
      s.globalSamples += double(r.ms.size()) * double(r.batch);
    if (r.elapsedMs > s.slowestElapsedMs) {
      s.slowestElapsedMs = r.elapsedMs;
      s.slowestRank = r.rank;
    }
    s.anyCompared |= r.compared;
    s.allPass &= !r.compared || r.pass;
  }
  s.pooled = summarize(pooled);
  s.samplesPerSecond = perSecond(s.globalSamples, s.slowestElapsedMs);
  const RankReport &first = reports.front();
  if (!first.soloMs.empty() && first.soloElapsedMs > 0) {
    s.haveSolo = true;
    s.solo = summarize(first.soloMs);
    s.soloSamplesPerSecond = perSecond(
        double(first.soloMs.size()) * double(first.batch), first.soloElapsedMs);
    if (s.soloSamplesPerSecond > 0)
      s.scalingEfficiency = s.samplesPerSecond /
                            (double(reports.size()) * s.soloSamplesPerSecond);
  }
  s.ranks = std::move(reports);
  return true;
}

void kiln::run::printDataParallel(FILE *out, const WorldDescription &w,
                                  const DataParallelSummary &s) {
  std::fprintf(out, "\n%s: %d rank(s) on %d node(s), launcher %s (%s)\n",
               w.tensorParallel > 1 ? "Tensor parallel" : "Data parallel",
               w.size, w.nodes, w.launcher.c_str(), w.library.c_str());
  if (w.tensorParallel > 1)
    std::fprintf(out, "  the ranks are the %lld shards of one model: the "
                      "group serves one request per run\n",
                 (long long)w.tensorParallel);
  std::fprintf(out, "  run: %s\n", w.runClass.c_str());
  std::fprintf(out, "  %-5s %-16s %-5s %-10s %6s %10s %10s %10s %10s %12s\n",
               "rank", "host", "local", "device", "runs", "median ms",
               "mean ms", "p99 ms", "wall s", "samples/s");
  for (size_t i = 0; i < s.ranks.size(); ++i) {
    const RankReport &r = s.ranks[i];
    const TimingSummary &t = s.perRank[i];
    std::fprintf(out,
                 "  %-5d %-16s %-5d %-10s %6zu %10.3f %10.3f %10.3f %10.3f "
                 "%12.2f\n",
                 r.rank, r.host.c_str(), r.localRank, r.device.c_str(),
                 t.count, t.median, t.mean, t.p99, r.elapsedMs / 1e3,
                 perSecond(double(r.ms.size()) * double(r.batch),
                           r.elapsedMs));
  }
  std::fprintf(out,
               "  all ranks: %zu runs, latency median %.3f ms, mean %.3f ms, "
               "p99 %.3f ms (samples of every rank pooled)\n",
               s.pooled.count, s.pooled.median, s.pooled.mean, s.pooled.p99);
  std::fprintf(out,
               "  throughput: %.2f samples/s = %.0f samples (%s) / %.3f s "
               "(rank %d, the slowest)\n",
               s.samplesPerSecond, s.globalSamples,
               w.tensorParallel > 1 ? "the group's" : "all ranks",
               s.slowestElapsedMs / 1e3, s.slowestRank);
  if (s.haveSolo)
    std::fprintf(out,
                 "  scaling: rank 0 alone %.2f samples/s (median %.3f ms); "
                 "efficiency %.1f%% = %.2f / (%d x %.2f)\n",
                 s.soloSamplesPerSecond, s.solo.median,
                 100 * s.scalingEfficiency, s.samplesPerSecond, w.size,
                 s.soloSamplesPerSecond);
}

std::string kiln::run::dataParallelJson(const WorldDescription &w,
                                        const DataParallelSummary &s) {
  std::string j = std::string("{\"mode\": ") +
                  (w.tensorParallel > 1 ? "\"tensor_parallel\"" :
                                          "\"data_parallel\"") +
                  ", \"tensor_parallel\": " +
                  std::to_string(w.tensorParallel) + ", \"launcher\": " +
                  json::quote(w.launcher) + ", \"library\": " +
                  json::quote(w.library) +
                  ", \"world_size\": " + std::to_string(w.size) +
                  ", \"nodes\": " + std::to_string(w.nodes) +
                  ", \"run_class\": " + json::quote(w.runClass) +
                  ",\n    \"aggregation\": " +
                  json::quote(w.tensorParallel > 1
                                  ? "latency: every rank's samples pooled; "
                                    "throughput: the group's samples (one "
                                    "rank's: the shards serve one request "
                                    "together) / the slowest rank's wall time"
                                  : "latency: every rank's samples pooled; "
                                    "throughput: samples of all ranks / the "
                                    "slowest rank's wall time; scaling "
                                    "efficiency: throughput / (world size x "
                                    "rank 0's throughput alone)") +
                  ",\n    \"ranks\": [";
  for (size_t i = 0; i < s.ranks.size(); ++i) {
    const RankReport &r = s.ranks[i];
    j += std::string(i ? "," : "") + "\n      {\"rank\": " +
         std::to_string(r.rank) + ", \"host\": " + json::quote(r.host) +
         ", \"local_rank\": " + std::to_string(r.localRank) +
         ", \"device\": " + json::quote(r.device) +
         ", \"batch\": " + std::to_string(r.batch) +
         ", \"elapsed_s\": " + num(r.elapsedMs / 1e3) +
         ", \"samples_per_s\": " +
         num(perSecond(double(r.ms.size()) * double(r.batch), r.elapsedMs)) +
         ", \"pass\": " + (r.compared ? (r.pass ? "true" : "false") : "null") +
         ", \"timing\": " + timingJson(s.perRank[i]) +
         ", \"samples_ms\": " + numbers(r.ms) + "}";
  }
  j += "],\n    \"aggregate\": {\"timing\": " + timingJson(s.pooled) +
       ", \"global_samples\": " + num(s.globalSamples) +
       ", \"slowest_rank\": " + std::to_string(s.slowestRank) +
       ", \"slowest_elapsed_s\": " + num(s.slowestElapsedMs / 1e3) +
       ", \"samples_per_s\": " + num(s.samplesPerSecond) +
       ", \"pass\": " + (s.anyCompared ? (s.allPass ? "true" : "false") : "null");
  if (s.haveSolo)
    j += ", \"solo\": {\"rank\": 0, \"timing\": " + timingJson(s.solo) +
         ", \"samples_per_s\": " + num(s.soloSamplesPerSecond) +
         ", \"samples_ms\": " + numbers(s.ranks.front().soloMs) +
         "}, \"scaling_efficiency\": " + num(s.scalingEfficiency);
  j += "}}";
  return j;
}
