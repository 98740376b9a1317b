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
#include <mutex>
#include <string>

namespace kiln {

class ProgressPrinter {
public:
  /// `delaySeconds`: how long a compile runs before anything is shown.
  ProgressPrinter(llvm::raw_ostream &os, bool enabled,
                  double delaySeconds = 3.0);
  void update(const Progress &progress);
  /// Ends the line on a terminal.
  void finish();

private:
  llvm::raw_ostream &os;
  bool enabled, terminal;
  double delay;
  std::chrono::steady_clock::time_point start, lastDraw;
  std::string lastStage;
  size_t lastWidth = 0;
  bool drawn = false;
  std::mutex mutex;
};

} // namespace kiln

#endif // KILN_DRIVER_PROGRESSPRINTER_H
