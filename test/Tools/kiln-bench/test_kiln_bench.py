#!/usr/bin/env python3
#===- test_kiln_bench.py - Unit tests of kiln-bench's parts ----------------===#
#
# Statistics on synthetic timings with known answers (numpy's percentiles,
# the seed's own table: 6.8 min per task is 8.82 tasks/hour), ratios and
# their bootstrap interval, study files and the configurations they plan,
# the SVG charts, the progress lines, and a report written from synthetic
# configurations: every section present, the crossover found where the
# timings put it, results.json valid against its schema, one CSV row per
# configuration.
#
#   python test_kiln_bench.py [-v]
#
#===----------------------------------------------------------------------===#

import csv
import io
import json
import os
import sys
import tempfile
import unittest
import xml.dom.minidom

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(ROOT, "tools", "kiln-bench"))

from kilnbench import progress, report, stats, study, svg  # noqa: E402


def read(path):
    with open(path) as f:
        return f.read()


class Stats(unittest.TestCase):
    def test_summary_known_values(self):
        s = stats.summarize([5, 1, 4, 2, 3, 10, 7, 6, 9, 8, 100])
        self.assertEqual(s["count"], 11)
        self.assertEqual(s["min"], 1)
        self.assertEqual(s["median"], 6)
        self.assertAlmostEqual(s["mean"], 14.090909090909092, places=12)
        self.assertAlmostEqual(s["p90"], 10, places=12)
        self.assertAlmostEqual(s["p99"], 91, places=9)
        self.assertEqual(s["max"], 100)
        self.assertAlmostEqual(s["stddev"], 28.637229424141385, places=12)

    def test_percentiles_match_numpy(self):
        rng = np.random.default_rng(3)
        for n in (1, 2, 7, 20, 101):
            x = rng.lognormal(size=n)
            for q in (0, 10, 50, 90, 99, 100):
                self.assertAlmostEqual(stats.percentile(sorted(x), q),
                                       float(np.percentile(x, q)), places=12)
        self.assertEqual(stats.summarize([]), {"count": 0})
        self.assertEqual(stats.summarize([3.0])["stddev"], 0)

    def test_ratio_of_medians(self):
        a = [1.0, 1.1, 0.9, 1.05, 0.95, 1.0, 1.2]
        r, lo, hi = stats.ratio_of_medians([2 * x for x in a], a)
        # Every resample of a scaled copy has the same ratio... no: the two
        # sides resample independently, so the interval brackets 2.
        self.assertAlmostEqual(r, 2.0)
        self.assertLessEqual(lo, 2.0)
        self.assertGreaterEqual(hi, 2.0)
        # Constant samples: no spread, the interval is the point.
        r, lo, hi = stats.ratio_of_medians([3.0] * 5, [1.5] * 4)
        self.assertEqual((r, lo, hi), (2.0, 2.0, 2.0))
        # Deterministic: the same samples give the same interval.
        self.assertEqual(stats.ratio_of_medians(a, a[::-1]),
                         stats.ratio_of_medians(a, a[::-1]))
        # Well-separated distributions: the interval excludes 1.
        rng = np.random.default_rng(0)
        slow = list(rng.normal(10, 0.3, 40))
        fast = list(rng.normal(5, 0.3, 40))
        r, lo, hi = stats.ratio_of_medians(slow, fast)
        self.assertGreater(lo, 1.8)
        self.assertLess(hi, 2.2)
        with self.assertRaises(ValueError):
            stats.ratio_of_medians([], [1.0])

    def test_seed_table_throughput(self):
        # The seed's table: 6.8 min -> 8.82 tasks/hour, 14.4 min -> 4.17.
        self.assertAlmostEqual(stats.tasks_per_hour(6.8 * 60), 8.82, places=2)
        self.assertAlmostEqual(stats.tasks_per_hour(14.4 * 60), 4.17,
                               places=2)


class Studies(unittest.TestCase):
    def write(self, text):
        f = tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False)
        f.write(text)
        f.close()
        self.addCleanup(os.unlink, f.name)
        return f.name

    def test_defaults_and_file(self):
        s = study.load(self.write(
            '[study]\nname = "x"\nrounds = 2\n[grid]\nbatch = [1, 8]\n'
            'kernels = ["codegen", "library"]\n'))
        self.assertEqual(s["study"]["rounds"], 2)
        self.assertEqual(s["grid"]["batch"], [1, 8])
        self.assertEqual(s["ablation"]["variant"], "softmax_fp16")

    def test_errors_name_the_problem(self):
        cases = [
            ('[nosuch]\na = 1\n', "unknown section"),
            ('[study]\nthreds = 2\n', "unknown key"),
            ('[grid]\nkernels = ["fast"]\n', "unknown strategy 'fast'"),
            ('[grid]\npasses = ["O7"]\n', "unknown pass configuration"),
            ('[study]\nrounds = 0\n', "study.rounds"),
            ('[baseline]\nvariant = "nope"\n', "baseline.variant"),
            ('[study\n', "Expected"),
        ]
        for text, message in cases:
            with self.assertRaises(study.StudyError) as e:
                study.load(self.write(text))
            self.assertIn(message, str(e.exception), text)

    def test_pass_flags(self):
        self.assertEqual(study.pass_flags("O0"), ["-O0"])
        self.assertEqual(study.pass_flags("O3-no-cse"),
                         ["-O3", "--disable-pass=cse"])
        with self.assertRaises(ValueError):
            study.pass_flags("fast")

    def test_plan(self):
        s = study.load(None, {
            "grid": {"batch": [1, 8], "kernels": ["codegen", "library"]},
            "sweep": {"variants": ["softmax_fp16"], "batch": [1, 2],
                      "seq_len": [64, 128]},
            "peers": {"torch": False}})
        configs = study.plan(s, ablation_passes=["cse", "kiln-dce"])
        keys = [c.key() for c in configs]
        self.assertEqual(len(keys), len(set(keys)))  # deduplicated
        main = [c for c in configs if "main" in c.groups]
        # 4 variants x 2 batches x (2 kernel strategies + ORT)
        self.assertEqual(len(main), 4 * 2 * 3)
        abl = [c.passes for c in configs if "ablation" in c.groups]
        self.assertEqual(abl, ["O3", "O3-no-cse", "O3-no-kiln-dce", "O0"])
        # The ablation's O3 is the main grid's first point: one config, two
        # groups.
        shared = [c for c in configs if c.groups >= {"main", "ablation"}]
        self.assertEqual(len(shared), 1)
        seq = sorted(c.seq_len for c in configs if "sweep-seq" in c.groups)
        self.assertEqual(seq, [64, 128])


class Charts(unittest.TestCase):
    def parse(self, text):
        return xml.dom.minidom.parseString(text)

    def test_charts_are_wellformed_and_complete(self):
        d = self.parse(svg.grouped_bars("t", ["a", "b", "c"],
                                        {"x": [1, 2, 3], "y": [3, None, 1]},
                                        "ms"))
        bars = [r for r in d.getElementsByTagName("rect")
                if r.getElementsByTagName("title")]
        self.assertEqual(len(bars), 5)  # None leaves a gap
        d = self.parse(svg.stacked_bars("t", ["v1", "v2"],
                                        {"gemm": [1, 2], "copy": [0.5, 0]},
                                        "ms"))
        parts = [r for r in d.getElementsByTagName("rect")
                 if r.getElementsByTagName("title")]
        self.assertEqual(len(parts), 3)  # zero parts are not drawn
        d = self.parse(svg.line_chart("t", [32, 64, 128],
                                      {"a": [1, 2, 4], "b": [2, None, 2]},
                                      "seq", "ms", log_x=True))
        self.assertEqual(len(d.getElementsByTagName("polyline")), 2)
        self.assertEqual(len(d.getElementsByTagName("circle")), 5)
        d = self.parse(svg.box_plot("Latency & <stuff>", {"a": [1, 2, 3],
                                                          "b": [5]}, "ms"))
        texts = [t.firstChild.data for t in d.getElementsByTagName("text")]
        self.assertIn("Latency & <stuff>", texts)  # escaped, round-trips

    def test_ticks_cover_the_range(self):
        for lo, hi in ((0, 1), (0, 7.3), (0, 1234), (0, 0.0042)):
            t = svg.nice_ticks(lo, hi)
            self.assertLessEqual(t[0], lo)
            self.assertGreaterEqual(t[-1], hi)
            self.assertLessEqual(len(t), 12)


class ProgressLines(unittest.TestCase):
    def test_plain_lines_with_eta(self):
        out = io.StringIO()
        p = progress.Progress(10, stream=out, tty=False)
        now = [0.0]
        p.clock = lambda: now[0]
        p.start = 0.0
        now[0] = 2.0
        p.end("compile a", 2)
        now[0] = 4.0
        p.end("run a", 3, "median 1.0 ms")
        lines = out.getvalue().splitlines()
        self.assertEqual(lines[0], "kiln-bench: [ 20%, 2s elapsed, ETA 8s] "
                                   "compile a")
        # 4 s for 5 of 10 units: 4 s left.
        self.assertEqual(lines[1], "kiln-bench: [ 50%, 4s elapsed, ETA 4s] "
                                   "run a: median 1.0 ms")
        self.assertEqual(progress.format_seconds(3725), "1h02m")


def fake_config(variant, batch, seq, passes="O3", groups=("main",),
                engine="kiln", median=1.0, role="", categories=None,
                failed=None):
    c = study.Config(variant, batch, seq, engine, "cpu", "codegen", passes,
                     groups)
    att, prec = variant.split("_")
    c.info = {"meta": {"role": role, "attention": att, "precision": prec}}
    if failed:
        c.status, c.error = "compile-failed", failed
        return c
    c.status = "measured"
    c.compile_s = 1.5
    c.samples = [[median * f for f in (0.98, 1.0, 1.02)],
                 [median * f for f in (0.99, 1.0, 1.01)]]
    c.cold = {"load_ms": 1.0, "session_ms": 0.1, "cold_ms": 3 * median}
    c.memory = {"session_peak_bytes": 2**20, "process_peak_bytes": 2**20,
                "peak_rss_bytes": 2**25}
    c.energy = {"available": False, "reason": "test"}
    c.consistency = {"runs": 3, "bit_identical": True}
    c.quality = {"reference": variant.split("_")[0] + "_fp32",
                 "max_abs_error": 0.01, "max_rel_error": 0.1,
                 "cosine": 0.999, "top1_agreement": 0.97}
    if engine == "kiln":
        c.self_check = {"pass": True, "reasons": []}
        if categories:
            c.profile = {"runs": 5, "categories": [
                {"category": k, "total_ms": v * 5} for k, v in
                categories.items()], "kernels": [
                {"name": f"{k}_0", "category": k, "onnx_nodes": ["n1", "n2"],
                 "launches": 5, "total_ms": v * 5, "share": 50.0}
                for k, v in categories.items()]}
            c.kernel_count = len(categories)
    return c


class Report(unittest.TestCase):
    def test_report_is_complete(self):
        s = study.load(None, {"study": {"name": "synthetic", "rounds": 2,
                                        "iterations": 3},
                              "peers": {"torch": False},
                              "sweep": {"batch": [1, 2],
                                        "seq_len": [64, 128, 256, 512]}})
        cfgs = [
            fake_config("softmax_fp16", 1, 128, median=10, role="standard",
                        categories={"gemm": 6, "attention": 3,
                                    "elementwise": 1}),
            fake_config("linear_int8", 1, 128, median=20, role="flash",
                        categories={"gemm": 6, "attention": 4,
                                    "quantize": 9, "elementwise": 1}),
            fake_config("softmax_int8", 1, 128, median=18, role="crossed",
                        categories={"gemm": 6, "quantize": 9,
                                    "attention": 3}),
            fake_config("linear_fp16", 1, 128, median=11, role="crossed",
                        categories={"gemm": 6, "attention": 5}),
        ]
        for c in list(cfgs):
            p = fake_config(c.variant, 1, 128, engine="onnxruntime",
                            median=8)
            cfgs.append(p)
        cfgs += [fake_config("softmax_fp16", 1, 128, "O3-no-cse",
                             ("ablation",), median=12),
                 fake_config("softmax_fp16", 1, 128, "O3-no-kiln-dce",
                             ("ablation",), failed="kiln-compile: boom"),
                 fake_config("softmax_fp16", 1, 128, "O0", ("ablation",),
                             median=30)]
        cfgs[0].groups.add("ablation")
        # Sweeps: linear wins from 256 on.
        seq_times = {"softmax_fp32": [2, 4, 9, 30],
                     "linear_fp32": [3, 5, 7, 12]}
        for v, ts in seq_times.items():
            for sl, t in zip([64, 128, 256, 512], ts):
                cfgs.append(fake_config(v, 1, sl, groups=("sweep-seq",),
                                        median=t))
            for b, t in zip([1, 2], ts[:2]):
                cfgs.append(fake_config(v, b, 128, groups=("sweep-batch",),
                                        median=t * 1.5))

        class Peer:
            def __init__(self, name, version, skip):
                self.name, self.version, self.skip = name, version, skip
        peers = {"onnxruntime": Peer("onnxruntime", "1.0", None),
                 "torch": Peer("torch", None, "not installed")}
        env = {"cpu": "test CPU", "cores": 2, "threads": 2, "os": "Linux",
               "python": "3", "onnxruntime": "1.0", "kiln_version": "k 0",
               "commit": "abc", "date": "today", "load_before": "0",
               "load_after": "0", "energy": "unavailable", "wall_s": 1.0,
               "memory_gib": 1}
        out = tempfile.mkdtemp()
        result = report.write(out, s, cfgs, env, peers, ["cse", "kiln-dce"],
                              "one forward pass of a test task")
        md = read(os.path.join(out, "report.md"))
        for heading in ("## The variants (the seed's table)",
                        "## What makes the difference",
                        "## Kiln against the peers",
                        "## Where the time goes",
                        "## Ablation: each pass's effect on softmax_fp16",
                        "## Sweep over the batch size",
                        "## Sweep over the sequence length",
                        "## All configurations",
                        "## How this was measured",
                        "## Configurations that did not run"):
            self.assertIn(heading, md)
        # The seed table: every variant with its duration, quality and
        # tasks/hour (3600 s / 10 ms = 360000).
        self.assertIn("| softmax_fp16 | standard | 10.0 | 97.0 | 360000 |",
                      md)
        self.assertIn("| linear_int8 | flash | 20.0 | 97.0 | 180000 |", md)
        self.assertIn("| Flash / Standard (both factors) | 2.00×", md)
        self.assertIn("| attention at int8: linear / softmax | 1.11×", md)
        # Where Flash loses its time against Standard: quantize first.
        self.assertIn("**linear_int8 against softmax_fp16**: +10.000 ms per "
                      "task in all; by category: quantize/dequantize "
                      "+9.000 ms, attention +1.000 ms", md)
        self.assertIn("torch: skipped — not installed", md)
        self.assertIn("| O3-no-kiln-dce | failed: kiln-compile: boom", md)
        self.assertIn("| O0 | 30.0 | 3.00×", md)
        self.assertIn("linear attention is faster from sequence length 256 "
                      "on (and stays faster up to 512)", md)
        self.assertEqual(result["tables"]["crossover"][
            "linear_fp32 vs softmax_fp32"]["wins_from"], 256)
        # Plots exist, parse, and the report links them.
        for p in result["plots"]:
            xml.dom.minidom.parse(os.path.join(out, p))
            self.assertIn(f"]({p})", md)
        self.assertEqual(len(result["plots"]), 5)
        # results.json against its schema.
        import jsonschema
        schema = json.loads(read(os.path.join(
            ROOT, "docs", "schemas", "kiln.bench-results.v1.schema.json")))
        data = json.loads(read(os.path.join(out, "results.json")))
        jsonschema.Draft202012Validator(schema).validate(data)
        broken = dict(data, version=2)
        self.assertFalse(jsonschema.Draft202012Validator(schema).is_valid(
            broken))
        # One CSV row per configuration, the failed one with its error.
        rows = list(csv.DictReader(io.StringIO(read(os.path.join(
            out, "results.csv")))))
        self.assertEqual(len(rows), len(cfgs))
        failed = [r for r in rows if r["status"] == "compile-failed"]
        self.assertEqual(failed[0]["error"], "kiln-compile: boom")


if __name__ == "__main__":
    unittest.main()
