//===- ProgressPrinter.h - A long compile's progress on stderr --*- C++ -*-===//
//
// What kiln-compile shows while a compile runs (Invocation's progress
// callback): nothing for the first seconds (most compiles end before), then
// on a terminal one line rewritten in place (stage, step, pass or layer,
// elapsed time), elsewhere one plain line per stage. Disabled: nothing.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_DRIVER_PROGRESSPRINTER_H
#define KILN_DRIVER_PROGRESSPRINTER_H

#include "kiln/Driver/Invocation.h"

#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace kiln {

class ProgressPrinter {
public:
  /// `delaySeconds`: how long a compile runs before anything is shown.
  ProgressPrinter(llvm::raw_ostream &os, bool enabled,
                  double delaySeconds = 3.0);
  ~ProgressPrinter();
  ProgressPrinter(const ProgressPrinter &) = delete;
  ProgressPrinter &operator=(const ProgressPrinter &) = delete;

  /// The compile's latest stage (any thread).
  void update(const Progress &progress);
  /// Stops the ticker and clears the line on a terminal.
  void finish();

private:
  void draw(std::unique_lock<std::mutex> &lock);

  llvm::raw_ostream &os;
  bool enabled, terminal;
  double delay;
  std::chrono::steady_clock::time_point start, lastDraw;
  Progress current;
  bool haveCurrent = false;
  std::string shownStage;
  unsigned shownStep = 0;
  size_t lastWidth = 0;
  bool drawn = false;
  bool stopping = false;
  std::mutex mutex;
  std::condition_variable wake;
  std::thread ticker;
};

} // namespace kiln

#endif // KILN_DRIVER_PROGRESSPRINTER_H
