//===- Profile.cpp - A session's kernel profile ---------------------------===//
#include "Profile.h"

#include <algorithm>

using namespace kiln;

Profile::Profile(size_t numKernels, size_t maxEvents)
    : kernels_(numKernels), maxEvents_(maxEvents) {
  reset();
}

void Profile::reset() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (kiln_kernel_stats &k : kernels_)
    k = {0, 0, UINT64_MAX, 0};
  events_.clear();
  runs_ = runNs_ = kernelNs_ = dropped_ = 0;
}

void Profile::addRun(const std::vector<kiln_profile_event> &kernelEvents,
                     uint64_t runStart, uint64_t runEnd, uint32_t thread) {
  std::lock_guard<std::mutex> lock(mutex_);
  uint64_t run = runs_++;
  runNs_ += runEnd >= runStart ? runEnd - runStart : 0;
  auto keep = [&](kiln_profile_event e) {
    if (events_.size() >= maxEvents_) {
      ++dropped_;
      return;
    }
    try {
      events_.push_back(e);
    } catch (...) {
      ++dropped_;
    }
  };
  keep({-1, thread, run, runStart, runEnd});
  for (kiln_profile_event e : kernelEvents) {
    if (e.kernel < 0 || size_t(e.kernel) >= kernels_.size() ||
        e.end_ns < e.start_ns)
      continue;
    uint64_t ns = e.end_ns - e.start_ns;
    kiln_kernel_stats &k = kernels_[size_t(e.kernel)];
    ++k.launches;
    k.total_ns += ns;
    k.min_ns = std::min(k.min_ns, ns);
    k.max_ns = std::max(k.max_ns, ns);
    kernelNs_ += ns;
    e.run = run;
    e.thread = thread;
    keep(e);
  }
}

void Profile::summary(kiln_profile_summary &out) const {
  std::lock_guard<std::mutex> lock(mutex_);
  out.runs = runs_;
  out.run_ns = runNs_;
  out.kernel_ns = kernelNs_;
  out.num_events = events_.size();
  out.dropped_events = dropped_;
}

bool Profile::kernelStats(size_t kernel, kiln_kernel_stats &out) const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (kernel >= kernels_.size())
    return false;
  out = kernels_[kernel];
  if (out.launches == 0)
    out.min_ns = 0;
  return true;
}

size_t Profile::numEvents() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return events_.size();
}

size_t Profile::events(size_t first, size_t count,
                       kiln_profile_event *out) const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (first >= events_.size())
    return 0;
  size_t n = std::min(count, events_.size() - first);
  std::copy(events_.begin() + long(first), events_.begin() + long(first + n),
            out);
  return n;
}
