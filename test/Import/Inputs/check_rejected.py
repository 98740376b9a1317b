"""Runs kiln-compile (--emit=graph -O2) on every .onnx file of a folder and
fails unless each exits with status 1, exactly one `error:` diagnostic and
no crash output. Prints `NAME: MESSAGE` per file (the message without the
file's path) for FileCheck.

    check_rejected.py KILN_COMPILE FOLDER OUTDIR [SECONDS]

SECONDS (default 120) bounds each compile: a file that takes longer fails.
"""

import os
import subprocess
import sys


def main():
    tool, folder, out = sys.argv[1:4]
    seconds = float(sys.argv[4]) if len(sys.argv) > 4 else 120.0
    bad = 0
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".onnx"):
            continue
        path = os.path.join(folder, name)
        try:
            proc = subprocess.run([tool, path, "--emit=graph", "-O2", "-o",
                                   os.path.join(out, name + ".mlir")],
                                  capture_output=True, text=True,
                                  errors="replace", timeout=seconds)
        except subprocess.TimeoutExpired:
            print(f"BAD {name}: no exit after {seconds:g} s")
            bad += 1
            continue
        errors = [l for l in proc.stderr.splitlines() if "error:" in l]
        if proc.returncode != 1 or len(errors) != 1 or \
                "Stack dump" in proc.stderr:
            print(f"BAD {name}: exit {proc.returncode}\n{proc.stderr[-2000:]}")
            bad += 1
            continue
        print(f"{name}: {errors[0].split(path + ': ', 1)[-1]}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
