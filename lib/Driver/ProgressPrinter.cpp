//===- ProgressPrinter.cpp - A long compile's progress on stderr ----------===//

#include "kiln/Driver/ProgressPrinter.h"

#include "llvm/Support/Format.h"

using namespace kiln;

ProgressPrinter::ProgressPrinter(llvm::raw_ostream &os, bool enabled,
                                 double delaySeconds)
    : os(os), enabled(enabled), terminal(os.is_displayed()),
      delay(delaySeconds), start(std::chrono::steady_clock::now()) {
  if (!enabled)
    return;
  // A stage can run for long without a step (LLVM's code generation of a
  // large model is one call): a ticker shows it and keeps the time moving.
  ticker = std::thread([this] {
    std::unique_lock<std::mutex> lock(mutex);
    while (!stopping) {
      wake.wait_for(lock, std::chrono::milliseconds(250));
      if (!stopping && haveCurrent)
        draw(lock);
    }
  });
}

ProgressPrinter::~ProgressPrinter() { finish(); }

void ProgressPrinter::update(const Progress &progress) {
  if (!enabled)
    return;
  std::unique_lock<std::mutex> lock(mutex);
  current = progress;
  haveCurrent = true;
  draw(lock);
}

void ProgressPrinter::draw(std::unique_lock<std::mutex> &) {
  auto now = std::chrono::steady_clock::now();
  double elapsed = std::chrono::duration<double>(now - start).count();
  if (elapsed < delay)
    return;
  // A stage not shown yet (it may have begun before the delay passed).
  bool newStage = current.stage != shownStage ||
                  (current.steps && current.step != shownStep);
  std::string line = "kiln-compile: [";
  {
    llvm::raw_string_ostream s(line);
    s << llvm::format("%.0fs", elapsed) << "] " << current.stage;
    if (current.steps)
      s << " " << current.step << "/" << current.steps;
    else if (current.step)
      s << " #" << current.step;
    if (!current.detail.empty())
      s << ": " << current.detail;
  }
  if (!terminal) {
    // Plain lines: one per stage, and one per step of a counted stage (a
    // layer of the precision analyses, seconds each).
    if (newStage) {
      os << line << "\n";
      os.flush();
      drawn = false;
    }
    shownStage = current.stage;
    shownStep = current.step;
    return;
  }
  // At most ten redraws a second.
  if (!newStage && drawn &&
      std::chrono::duration<double>(now - lastDraw).count() < 0.1)
    return;
  shownStage = current.stage;
  shownStep = current.step;
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
  if (!enabled)
    return;
  {
    std::lock_guard<std::mutex> lock(mutex);
    stopping = true;
  }
  wake.notify_all();
  if (ticker.joinable())
    ticker.join();
  if (terminal && drawn) {
    os << "\r";
    os.indent(lastWidth);
    os << "\r";
    os.flush();
  }
  drawn = false;
}
