//===- Profile.h - A session's kernel profile -------------------*- C++ -*-===//
//
// What kiln_session_run records while profiling is on: per kernel the
// launches and total, minimum and maximum time; the timeline of kernel and
// run events, up to a cap. A run's events are collected on its own thread
// (no locking per kernel) and added here when the run ends.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_LIB_PROFILE_H
#define KILN_RUNTIME_LIB_PROFILE_H

#include "kiln/runtime.h"

#include <cstdint>
#include <mutex>
#include <vector>

namespace kiln {

class Profile {
public:
  /// At most this many events are kept (32 bytes each); later ones are
  /// counted as dropped, the aggregates still count them.
  static constexpr size_t kDefaultMaxEvents = size_t(1) << 20;

  explicit Profile(size_t numKernels, size_t maxEvents = kDefaultMaxEvents);

  /// Adds one run: `kernelEvents` are its kernels' events (kernel >= 0,
  /// start <= end) in any order, [runStart, runEnd] the run on `thread`.
  /// Events of unknown kernels are ignored. Thread-safe.
  void addRun(const std::vector<kiln_profile_event> &kernelEvents,
              uint64_t runStart, uint64_t runEnd, uint32_t thread);

  void reset();
  void summary(kiln_profile_summary &out) const;
  bool kernelStats(size_t kernel, kiln_kernel_stats &out) const;
  size_t numEvents() const;
  /// Copies events [first, first + count) (clamped); returns how many.
  size_t events(size_t first, size_t count, kiln_profile_event *out) const;

private:
  mutable std::mutex mutex_;
  std::vector<kiln_kernel_stats> kernels_;
  std::vector<kiln_profile_event> events_;
  size_t maxEvents_;
  uint64_t runs_ = 0, runNs_ = 0, kernelNs_ = 0, dropped_ = 0;
};

} // namespace kiln

#endif // KILN_RUNTIME_LIB_PROFILE_H
