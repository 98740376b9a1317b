//===- DeviceMemory.h - Device memory bookkeeping of a session --*- C++ -*-===//
//
// Which device pointers a session holds and their sizes, with the current
// and peak totals kiln_session_get_stats reports. Pure bookkeeping (no
// driver calls), so the unit tests check it without a device. Two kinds:
// resident blocks (weights, input/output buffers: allocated at session
// creation, held until it ends) and pool blocks (the code's intermediates,
// allocated and freed stream-ordered during runs); the peak is of their
// sum.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_CUDA_DEVICEMEMORY_H
#define KILN_RUNTIME_CUDA_DEVICEMEMORY_H

#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace kiln {
namespace cuda {

class DeviceMemory {
public:
  /// Records a block. False (nothing recorded) when `ptr` is 0 or already
  /// live: the driver never hands out one address twice, so that is a bug
  /// of the caller.
  bool add(uint64_t ptr, uint64_t bytes, bool resident = false) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!ptr || !live_.emplace(ptr, Block{bytes, resident}).second)
      return false;
    current_ += bytes;
    (resident ? resident_ : pool_) += bytes;
    if (current_ > peak_)
      peak_ = current_;
    if (pool_ > poolPeak_)
      poolPeak_ = pool_;
    ++allocations_;
    return true;
  }

  /// Forgets a block; returns its size, or -1 for a pointer not live (a
  /// double free, or memory this session did not allocate).
  int64_t remove(uint64_t ptr) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = live_.find(ptr);
    if (it == live_.end())
      return -1;
    uint64_t bytes = it->second.bytes;
    current_ -= bytes;
    (it->second.resident ? resident_ : pool_) -= bytes;
    live_.erase(it);
    return int64_t(bytes);
  }

  /// The live pool (non-resident) blocks, e.g. to free them after a run
  /// that failed halfway.
  std::vector<uint64_t> livePoolBlocks() const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<uint64_t> out;
    for (const auto &kv : live_)
      if (!kv.second.resident)
        out.push_back(kv.first);
    return out;
  }

  bool isLive(uint64_t ptr) const {
    std::lock_guard<std::mutex> lock(mutex_);
    return live_.count(ptr) != 0;
  }

  uint64_t current() const { return get(current_); }
  uint64_t peak() const { return get(peak_); }
  uint64_t residentBytes() const { return get(resident_); }
  uint64_t poolBytes() const { return get(pool_); }
  uint64_t poolPeak() const { return get(poolPeak_); }
  uint64_t allocations() const { return get(allocations_); }

private:
  struct Block {
    uint64_t bytes;
    bool resident;
  };
  uint64_t get(const uint64_t &v) const {
    std::lock_guard<std::mutex> lock(mutex_);
    return v;
  }
  mutable std::mutex mutex_;
  std::unordered_map<uint64_t, Block> live_;
  uint64_t current_ = 0, peak_ = 0, resident_ = 0, pool_ = 0, poolPeak_ = 0;
  uint64_t allocations_ = 0;
};

} // namespace cuda
} // namespace kiln

#endif // KILN_RUNTIME_CUDA_DEVICEMEMORY_H
