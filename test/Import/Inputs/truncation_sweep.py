"""Runs kiln-compile on every prefix of a model (and on byte-flipped copies)
and fails if any run crashes or writes output after failing.

    truncation_sweep.py KILN_COMPILE MODEL WORKDIR
"""

import os
import subprocess
import sys


def run(tool, path, out):
    if os.path.exists(out):
        os.remove(out)
    r = subprocess.run([tool, path, "-o", out], capture_output=True, text=True,
                       errors="replace")
    if r.returncode not in (0, 1):
        sys.exit(f"{path}: exit status {r.returncode}\n{r.stderr}")
    if r.returncode == 1:
        if os.path.exists(out):
            sys.exit(f"{path}: failed but wrote {out}")
        if r.stderr.count("error:") != 1:
            sys.exit(f"{path}: expected one diagnostic, got\n{r.stderr}")
    return r.returncode


def main():
    tool, model, work = sys.argv[1:4]
    data = open(model, "rb").read()
    cut = os.path.join(work, "cut.onnx")
    out = os.path.join(work, "out.mlir")
    failures = 0
    step = max(1, len(data) // 40)
    for n in list(range(0, len(data), step)) + [len(data) - 1]:
        open(cut, "wb").write(data[:n])
        failures += run(tool, cut, out)
    for i in range(0, len(data), max(1, len(data) // 25)):
        flipped = bytearray(data)
        flipped[i] ^= 0xFF
        open(cut, "wb").write(bytes(flipped))
        run(tool, cut, out)
    print(f"prefixes rejected: {failures}")


if __name__ == "__main__":
    main()
