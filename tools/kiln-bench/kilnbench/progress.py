#===- kilnbench/progress.py - A progress bar with ETA, or plain lines -----===#
#
# On a terminal: one line redrawn in place, `[#####.....] 12/40 30% ETA
# 1m05s  what is running`. Otherwise (CI logs, pipes): one plain line per
# step, so logs stay readable. The ETA is the mean time of the steps done so
# far times the steps left, weighted by each step's declared cost.
#
#===----------------------------------------------------------------------===#

import sys
import time


def format_seconds(s):
    s = int(round(s))
    if s >= 3600:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    if s >= 60:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s}s"


class Progress:
    def __init__(self, total_cost, stream=None, width=30, tty=None):
        self.total = max(total_cost, 1e-9)
        self.done = 0.0
        self.steps = 0
        self.stream = stream or sys.stderr
        self.width = width
        self.tty = self.stream.isatty() if tty is None else tty
        self.start = time.monotonic()
        self.clock = time.monotonic

    def eta(self):
        if self.done <= 0:
            return None
        elapsed = self.clock() - self.start
        return elapsed / self.done * (self.total - self.done)

    def line(self, label):
        frac = min(self.done / self.total, 1.0)
        filled = int(round(frac * self.width))
        eta = self.eta()
        eta_text = "ETA " + format_seconds(eta) if eta is not None else "ETA ?"
        return (f"[{'#' * filled}{'.' * (self.width - filled)}] "
                f"{frac * 100:3.0f}% {eta_text}  {label}")

    def begin(self, label):
        if self.tty:
            text = self.line(label)[:max(20, 118)]
            self.stream.write("\r\033[K" + text)
            self.stream.flush()

    def end(self, label, cost=1.0, note=""):
        self.done += cost
        self.steps += 1
        if self.tty:
            self.stream.write("\r\033[K" + self.line(label)[:118])
            self.stream.flush()
        else:
            elapsed = format_seconds(self.clock() - self.start)
            eta = self.eta()
            self.stream.write(
                f"kiln-bench: [{self.done / self.total * 100:3.0f}%, "
                f"{elapsed} elapsed, ETA "
                f"{format_seconds(eta) if eta is not None else '?'}] "
                f"{label}{(': ' + note) if note else ''}\n")
            self.stream.flush()

    def finish(self):
        if self.tty:
            self.stream.write("\r\033[K")
            self.stream.flush()
