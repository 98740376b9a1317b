//===- Profile.cpp - kiln-run --profile and --trace -----------------------===//
#include "kiln/Run/Profile.h"

#include "kiln/Json.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <fstream>
#include <map>

using namespace kiln;
using namespace kiln::run;

const std::vector<std::string> &kiln::run::profileCategories() {
  static const std::vector<std::string> names = {
      "gemm", "attention", "quantize", "reduction", "elementwise", "copy",
      "other"};
  return names;
}

namespace {

double percent(uint64_t part, uint64_t whole) {
  return whole ? 100.0 * double(part) / double(whole) : 0.0;
}

std::string num(double v) {
  if (std::isnan(v) || std::isinf(v))
    return "null";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.6g", v);
  return buf;
}

std::string ms(uint64_t ns) { return num(double(ns) / 1e6); }

std::string joinNodes(const std::vector<std::string> &nodes, size_t width) {
  std::string s;
  for (const std::string &n : nodes)
    s += (s.empty() ? "" : ", ") + n;
  if (s.size() > width && width > 3)
    s = s.substr(0, width - 3) + "...";
  return s;
}

} // namespace

ProfileReport kiln::run::buildProfileReport(
    const std::vector<KernelRow> &kernels,
    const kiln_profile_summary &summary) {
  ProfileReport r;
  r.runs = summary.runs;
  r.runNs = summary.run_ns;
  r.droppedEvents = summary.dropped_events;
  r.kernels = kernels;
  std::map<std::string, CategoryRow> byName;
  for (const std::string &c : profileCategories())
    byName[c].category = c;
  for (KernelRow &k : r.kernels) {
    r.kernelNs += k.totalNs;
    std::string c = byName.count(k.category) ? k.category : "other";
    CategoryRow &row = byName[c];
    ++row.kernels;
    row.launches += k.launches;
    row.totalNs += k.totalNs;
  }
  // The shares are of the runs' wall time. The hooks' own calls and the
  // work between kernels (allocation) make the rest; with kernels running
  // on several sessions' threads the run time is summed the same way.
  uint64_t whole = std::max(r.runNs, r.kernelNs);
  for (KernelRow &k : r.kernels)
    k.share = percent(k.totalNs, whole);
  for (auto &entry : byName) {
    entry.second.share = percent(entry.second.totalNs, whole);
    r.categories.push_back(entry.second);
  }
  r.outsideShare = percent(whole - r.kernelNs, whole);
  auto order = [](const auto &a, const auto &b) {
    return a.totalNs != b.totalNs ? a.totalNs > b.totalNs
                                  : a.share > b.share;
  };
  std::stable_sort(r.kernels.begin(), r.kernels.end(),
                   [&](const KernelRow &a, const KernelRow &b) {
                     return a.totalNs != b.totalNs ? a.totalNs > b.totalNs
                                                   : a.id < b.id;
                   });
  std::stable_sort(r.categories.begin(), r.categories.end(), order);
  return r;
}

ProfileReport kiln::run::collectProfile(const kiln_model *model,
                                        const kiln_session *session) {
  std::vector<KernelRow> rows;
  for (size_t i = 0, n = kiln_model_num_kernels(model); i < n; ++i) {
    kiln_kernel_info info;
    kiln_kernel_stats stats;
    if (kiln_model_kernel_info(model, i, &info) != KILN_OK ||
        kiln_session_kernel_stats(session, i, &stats) != KILN_OK)
      continue;
    KernelRow row;
    row.id = int32_t(i);
    row.name = info.name;
    row.category = info.category;
    row.onnxNodes.assign(info.onnx_nodes,
                         info.onnx_nodes + info.num_onnx_nodes);
    row.launches = stats.launches;
    row.totalNs = stats.total_ns;
    row.minNs = stats.min_ns;
    row.maxNs = stats.max_ns;
    rows.push_back(std::move(row));
  }
  kiln_profile_summary summary{};
  kiln_session_profile_summary(session, &summary);
  ProfileReport report = buildProfileReport(rows, summary);
  report.events.resize(summary.num_events);
  size_t got = 0;
  kiln_session_profile_events(session, 0, report.events.size(),
                              report.events.data(), &got);
  report.events.resize(got);
  return report;
}

void kiln::run::printProfile(FILE *out, const ProfileReport &r) {
  std::fprintf(out,
               "profile: %" PRIu64 " runs, %.3f ms per run, %.1f%% of it in "
               "%zu kernels\n",
               r.runs, r.runs ? double(r.runNs) / 1e6 / double(r.runs) : 0.0,
               100.0 - r.outsideShare, r.kernels.size());
  if (r.kernels.empty()) {
    std::fprintf(out, "  (the model has no kernel table: compiled without "
                      "the profiling hooks)\n");
    return;
  }
  std::fprintf(out, "%7s %10s %10s %8s  %-11s %-28s %s\n", "share",
               "total ms", "mean us", "launches", "category", "kernel",
               "ONNX nodes");
  for (const KernelRow &k : r.kernels)
    std::fprintf(out, "%6.2f%% %10.3f %10.2f %8" PRIu64 "  %-11s %-28s %s\n",
                 k.share, double(k.totalNs) / 1e6,
                 k.launches ? double(k.totalNs) / 1e3 / double(k.launches)
                            : 0.0,
                 k.launches, k.category.c_str(), k.name.c_str(),
                 joinNodes(k.onnxNodes, 100).c_str());
  std::fprintf(out, "%6.2f%% %10.3f %10s %8s  %-11s %s\n", r.outsideShare,
               double(r.runNs > r.kernelNs ? r.runNs - r.kernelNs : 0) / 1e6,
               "", "", "", "(outside kernels)");
  std::fprintf(out, "by category:\n");
  std::fprintf(out, "%7s %10s %8s %8s  %s\n", "share", "total ms", "kernels",
               "launches", "category");
  for (const CategoryRow &c : r.categories)
    if (c.kernels)
      std::fprintf(out, "%6.2f%% %10.3f %8" PRIu64 " %8" PRIu64 "  %s\n",
                   c.share, double(c.totalNs) / 1e6, c.kernels, c.launches,
                   c.category.c_str());
  std::fprintf(out, "%6.2f%% %10.3f %8s %8s  %s\n", r.outsideShare,
               double(r.runNs > r.kernelNs ? r.runNs - r.kernelNs : 0) / 1e6,
               "", "", "(outside kernels)");
  if (r.droppedEvents)
    std::fprintf(out, "note: %" PRIu64 " timeline events over the cap were "
                      "not kept (the tables count them)\n",
                 r.droppedEvents);
}

std::string kiln::run::profileJson(const ProfileReport &r) {
  std::string j = "{\"runs\": " + std::to_string(r.runs) +
                  ", \"run_ms\": " + ms(r.runNs) +
                  ", \"kernel_ms\": " + ms(r.kernelNs) +
                  ", \"outside_kernels_share\": " + num(r.outsideShare) +
                  ", \"dropped_events\": " + std::to_string(r.droppedEvents) +
                  ",\n    \"kernels\": [";
  for (size_t i = 0; i < r.kernels.size(); ++i) {
    const KernelRow &k = r.kernels[i];
    j += std::string(i ? "," : "") + "\n      {\"id\": " +
         std::to_string(k.id) + ", \"name\": " + json::quote(k.name) +
         ", \"category\": " + json::quote(k.category) + ", \"onnx_nodes\": [";
    for (size_t n = 0; n < k.onnxNodes.size(); ++n)
      j += (n ? ", " : "") + json::quote(k.onnxNodes[n]);
    j += "], \"launches\": " + std::to_string(k.launches) +
         ", \"total_ms\": " + ms(k.totalNs) + ", \"mean_ms\": " +
         num(k.launches ? double(k.totalNs) / 1e6 / double(k.launches) : 0) +
         ", \"min_ms\": " + ms(k.minNs) + ", \"max_ms\": " + ms(k.maxNs) +
         ", \"share\": " + num(k.share) + "}";
  }
  j += r.kernels.empty() ? "],\n" : "\n    ],\n";
  j += "    \"categories\": [";
  for (size_t i = 0; i < r.categories.size(); ++i) {
    const CategoryRow &c = r.categories[i];
    j += std::string(i ? "," : "") + "\n      {\"category\": " +
         json::quote(c.category) + ", \"kernels\": " +
         std::to_string(c.kernels) + ", \"launches\": " +
         std::to_string(c.launches) + ", \"total_ms\": " + ms(c.totalNs) +
         ", \"share\": " + num(c.share) + "}";
  }
  j += "\n    ]}";
  return j;
}

std::string kiln::run::writeChromeTrace(const std::string &path,
                                        const ProfileReport &r,
                                        const std::string &modelPath) {
  std::map<int32_t, const KernelRow *> byId;
  for (const KernelRow &k : r.kernels)
    byId[k.id] = &k;
  uint64_t origin = UINT64_MAX;
  for (const kiln_profile_event &e : r.events)
    origin = std::min(origin, e.start_ns);
  auto us = [&](uint64_t ns) {
    char buf[48];
    std::snprintf(buf, sizeof(buf), "%.3f", double(ns - origin) / 1e3);
    return std::string(buf);
  };
  auto dur = [](uint64_t ns) {
    char buf[48];
    std::snprintf(buf, sizeof(buf), "%.3f", double(ns) / 1e3);
    return std::string(buf);
  };
  std::string j = "{\"displayTimeUnit\": \"ms\",\n \"otherData\": {\"model\": " +
                  json::quote(modelPath) + ", \"runs\": " +
                  std::to_string(r.runs) + "},\n \"traceEvents\": [\n";
  j += "  {\"name\": \"process_name\", \"ph\": \"M\", \"pid\": 1, \"tid\": 0, "
       "\"args\": {\"name\": " +
       json::quote("kiln-run " + modelPath) + "}}";
  std::map<uint32_t, bool> threads;
  for (const kiln_profile_event &e : r.events) {
    if (!threads.count(e.thread)) {
      threads[e.thread] = true;
      j += ",\n  {\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": 1, "
           "\"tid\": " +
           std::to_string(e.thread) + ", \"args\": {\"name\": " +
           json::quote("session thread " + std::to_string(e.thread)) + "}}";
    }
    j += ",\n  {\"ph\": \"X\", \"pid\": 1, \"tid\": " +
         std::to_string(e.thread) + ", \"ts\": " + us(e.start_ns) +
         ", \"dur\": " + dur(e.end_ns - e.start_ns);
    if (e.kernel < 0) {
      j += ", \"name\": " + json::quote("run " + std::to_string(e.run)) +
           ", \"cat\": \"run\", \"args\": {\"run\": " + std::to_string(e.run) +
           "}}";
      continue;
    }
    auto it = byId.find(e.kernel);
    std::string name = it != byId.end() ? it->second->name
                                        : "kernel " + std::to_string(e.kernel);
    std::string category = it != byId.end() ? it->second->category : "other";
    j += ", \"name\": " + json::quote(name) + ", \"cat\": " +
         json::quote(category) + ", \"args\": {\"kernel_id\": " +
         std::to_string(e.kernel) + ", \"category\": " + json::quote(category) +
         ", \"run\": " + std::to_string(e.run) + ", \"onnx_nodes\": [";
    if (it != byId.end())
      for (size_t n = 0; n < it->second->onnxNodes.size(); ++n)
        j += (n ? ", " : "") + json::quote(it->second->onnxNodes[n]);
    j += "]}}";
  }
  j += "\n ]}\n";
  std::ofstream f(path, std::ios::trunc);
  f << j;
  f.close();
  if (!f)
    return path + ": cannot write the trace";
  return "";
}
