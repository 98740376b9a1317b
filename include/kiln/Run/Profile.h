//===- Profile.h - kiln-run --profile and --trace ---------------*- C++ -*-===//
//
// The per-kernel and per-category tables of a profiled session, the
// "profile" object of --json, and the Chrome trace (Trace Event Format, the
// JSON Perfetto and chrome://tracing open) of --trace. kiln-run.cpp calls
// enableProfiling before the timed runs and reportProfile after them.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RUN_PROFILE_H
#define KILN_RUN_PROFILE_H

#include "kiln/runtime.h"

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace kiln::run {

/// One kernel's line of the table.
struct KernelRow {
  int32_t id = 0;
  std::string name, category;
  std::vector<std::string> onnxNodes;
  uint64_t launches = 0, totalNs = 0, minNs = 0, maxNs = 0;
  double share = 0; ///< percent of the profiled runs' time
};

/// One category's line.
struct CategoryRow {
  std::string category;
  uint64_t kernels = 0, launches = 0, totalNs = 0;
  double share = 0;
};

struct ProfileReport {
  uint64_t runs = 0, runNs = 0, kernelNs = 0, droppedEvents = 0;
  std::vector<KernelRow> kernels;       ///< by total time, largest first
  std::vector<CategoryRow> categories;  ///< the seven, by total time
  double outsideShare = 0; ///< percent of run time outside every kernel
  std::vector<kiln_profile_event> events;
};

/// The categories every report lists (docs/kiln-run.md).
const std::vector<std::string> &profileCategories();

/// Builds the report from the kernel table and the session's numbers:
/// sorts, sums the categories and computes the shares (of the run time, so
/// that with the time outside the kernels they add up to 100%). Kernels of
/// a category outside the seven count as "other".
ProfileReport buildProfileReport(const std::vector<KernelRow> &kernels,
                                 const kiln_profile_summary &summary);

/// Reads the kernel table, the stats and the events of `session`.
ProfileReport collectProfile(const kiln_model *model,
                             const kiln_session *session);

/// The two tables, as kiln-run prints them.
void printProfile(FILE *out, const ProfileReport &report);

/// The "profile" object of kiln-run's --json (without a trailing newline).
std::string profileJson(const ProfileReport &report);

/// Writes the Chrome trace: one complete ("ph": "X") event per profiled run
/// (cat "run") and per kernel launch (cat = its category), ts/dur in
/// microseconds from the first run's start. Returns "" or an error.
std::string writeChromeTrace(const std::string &path,
                             const ProfileReport &report,
                             const std::string &modelPath);

} // namespace kiln::run

#endif // KILN_RUN_PROFILE_H
