#!/usr/bin/env python3
"""Runs (or reads) the onnx backend suite through kiln.backend and prints
the counts: passed, failed, skipped, and the failures grouped by reason
(the first line of the compiler's error or the assertion).

    .venv/bin/python test/Python/backend_report.py            # runs pytest
    .venv/bin/python test/Python/backend_report.py --xml r.xml  # reads a run
"""

import argparse
import collections
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))


def reason(message: str) -> str:
    text = message.strip()
    m = re.search(r"not supported yet: ([^\n]*?)(?: \(|$|\n)", text)
    if m:
        return "unsupported: " + re.sub(r"'[^']*'", "'...'", m.group(1))[:70]
    m = re.search(r"kiln-compile: ([^\n]*)", text)
    if m:
        # Leave out the model's name and the node: group by what is missing.
        line = re.sub(r"^test_[^:]*: ", "", m.group(1))
        line = re.sub(r"node '[^']*' \(\w+\): ", "", line)
        line = re.sub(r"'[^']*'", "'...'", line)
        line = re.sub(r"\d+", "N", line)
        return "compile: " + line[:80]
    m = re.search(r"error: ([^\n]*)", text)
    if m:
        line = re.sub(r"^test_[^:]*: ", "", m.group(1))
        line = re.sub(r"node '[^']*' \(\w+\): ", "", line)
        line = re.sub(r"'[^']*'", "'...'", line)
        return "compile: " + re.sub(r"\d+", "N", line)[:80]
    if "Not equal to tolerance" in text or "Mismatched elements" in text:
        return "outputs differ beyond onnx's tolerance"
    if "shape" in text.lower() and "mismatch" in text.lower():
        return "output shape mismatch"
    first = text.splitlines()[0] if text else "?"
    return re.sub(r"\d+", "N", first)[:90]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--xml", help="a pytest --junitxml file to read")
    parser.add_argument("--xml-out", help="where the run writes its junit xml")
    parser.add_argument("--min-passed", type=int, default=0,
                        help="fail when fewer tests pass (a regression)")
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    xml = args.xml
    if not xml:
        xml = args.xml_out or os.path.join(os.environ.get("TMPDIR", "/tmp"),
                                           "kiln-backend.xml")
        run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p",
                        "no:cacheprovider",
                        os.path.join(HERE, "test_onnx_backend.py"),
                        f"--junitxml={xml}"], check=False,
                       stdout=subprocess.DEVNULL)
        # 0: all passed, 1: some failed; anything else is the harness.
        if run.returncode not in (0, 1):
            print(f"pytest exited with {run.returncode}", file=sys.stderr)
            return 2
    counts = collections.Counter()
    reasons = collections.Counter()
    examples = {}
    for case in ET.parse(xml).getroot().iter("testcase"):
        failure = case.find("failure")
        error = case.find("error")
        if case.find("skipped") is not None:
            counts["skipped"] += 1
        elif failure is not None or error is not None:
            counts["failed"] += 1
            node = failure if failure is not None else error
            r = reason((node.get("message") or "") + "\n" + (node.text or ""))
            reasons[r] += 1
            examples.setdefault(r, case.get("name"))
        else:
            counts["passed"] += 1
    total = sum(counts.values())
    print(f"onnx backend tests through kiln.backend: {total} collected, "
          f"{counts['passed']} passed, {counts['failed']} failed, "
          f"{counts['skipped']} skipped")
    print("failures by reason:")
    for r, n in reasons.most_common(args.top):
        print(f"  {n:5d}  {r}   (e.g. {examples[r]})")
    rest = sum(reasons.values()) - sum(n for _, n in reasons.most_common(args.top))
    if rest:
        print(f"  {rest:5d}  other reasons")
    if counts["passed"] < args.min_passed:
        print(f"FAIL: {counts['passed']} passed, fewer than {args.min_passed}",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
