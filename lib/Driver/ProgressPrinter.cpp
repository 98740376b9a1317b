//===- ProgressPrinter.cpp - A long compile's progress on stderr ----------===//

#include "kiln/Driver/ProgressPrinter.h"

#include "llvm/Support/Format.h"

using namespace kiln;

ProgressPrinter::ProgressPrinter(llvm::raw_ostream &os, bool enabled,
                                 double delaySeconds)
    : os(os), enabled(enabled), terminal(os.is_displayed()),
      delay(delaySeconds), start(std::chrono::steady_clock::now()) {}

void ProgressPrinter::update(const Progress &progress) {
  if (!enabled)
    return;
  std::lock_guard<std::mutex> lock(mutex);
  auto now = std::chrono::steady_clock::now();
  double elapsed = std::chrono::duration<double>(now - start).count();
  bool newStage = progress.stage != lastStage;
  lastStage = progress.stage;
  if (elapsed < delay)
    return;
  std::string line = "kiln-compile: [";
  {
    llvm::raw_string_ostream s(line);
    s << llvm::format("%.0fs", elapsed) << "] " << progress.stage;
    if (progress.steps)
      s << " " << progress.step << "/" << progress.steps;
    else if (progress.step)
      s << " #" << progress.step;
    if (!progress.detail.empty())
      s << ": " << progress.detail;
  }
  if (!terminal) {
    // Plain lines: one per stage, and a layer of the precision analyses
    // (seconds each) is worth its own line too.
    if (newStage || progress.steps) {
      os << line << "\n";
      os.flush();
      drawn = true;
    }
    return;
  }
  // At most ten redraws a second.
  if (!newStage && drawn &&
      std::chrono::duration<double>(now - lastDraw).count() < 0.1)
    return;
  lastDraw = now;
  if (line.size() > 100)
    line = line.substr(0, 97) + "...";
  os << "\r" << line;
  if (line.size() < lastWidth)
    os.indent(lastWidth - line.size());
  lastWidth = line.size();
  os.flush();
  drawn = true;
}

void ProgressPrinter::finish() {
  std::lock_guard<std::mutex> lock(mutex);
  if (enabled && terminal && drawn) {
    os << "\r";
    os.indent(lastWidth);
    os << "\r";
    os.flush();
  }
  drawn = false;
}
