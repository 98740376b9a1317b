#===- kilnbench/runner.py - Prepare, compile and measure configurations ---===#
#
# The steps of a study, each isolated so that one configuration that fails
# (a model Kiln rejects, a crash, a peer that cannot load it) is recorded
# with its error and the others go on:
#   1. models: the seed variants per (batch, seq_len) from
#      models/generate_seed_variants.py (ONNX, token ids, numpy reference
#      logits), or the study's ONNX files with seeded random inputs and ONNX
#      Runtime's fp32 outputs as the reference;
#   2. compile: kiln.compile (the kiln package, in a forked child so a
#      compiler crash fails one configuration) per Kiln configuration, wall
#      time recorded;
#   3. rounds: every configuration once per round, the order rotated each
#      round, so that drifting machine load hits all alike (the reports quote
#      ratios of the pooled samples); Kiln through kiln-run (warm-up, timed
#      runs, its JSON), ONNX Runtime in-process with the same inputs,
#      threads, warm-up and iterations;
#   4. after the rounds, untimed: one kiln-run per configuration against the
#      variant's own-precision numpy reference (is the compiled code right?)
#      with --profile (time per kernel and category).
#
#===----------------------------------------------------------------------===#

import json
import os
import shutil
import subprocess
import sys
import time

import numpy as np

from . import stats

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))


def _in_child(fn, *args):
    """fn(*args) in a forked child: a compiler crash (or a hang past an
    hour) becomes an error of that configuration, not of the study.
    Returns fn's result, or raises RuntimeError with the child's error."""
    import multiprocessing
    import traceback
    ctx = multiprocessing.get_context("fork")
    receive, send = ctx.Pipe(duplex=False)

    def child():
        try:
            send.send(("ok", fn(*args)))
        except BaseException as e:  # noqa: BLE001 (sent to the parent)
            send.send(("error", f"{type(e).__name__}: {e}" if str(e) else
                       traceback.format_exc(limit=3)))
        finally:
            send.close()

    proc = ctx.Process(target=child)
    proc.start()
    send.close()
    status, value = "error", None
    if receive.poll(3600):
        try:
            status, value = receive.recv()
        except EOFError:
            pass
    proc.join(5)
    if proc.is_alive():
        proc.kill()
        proc.join()
        raise RuntimeError("the compile did not finish within an hour")
    if value is None and status == "error":
        raise RuntimeError(f"the compiler crashed (exit code {proc.exitcode})")
    if status != "ok":
        raise RuntimeError(value)
    return value


def _compile_to(model, path, kwargs):
    """kiln.compile(model, **kwargs), saved at path (in the child)."""
    import kiln
    try:
        kiln.compile(model, **kwargs).save(path)
    except kiln.CompileError as e:
        errors = [str(d) for d in e.diagnostics if d.severity == "error"]
        raise RuntimeError(" | ".join(errors[-3:]) or str(e)) from None
    return path


class Tools:
    """Kiln as a study uses it: the kiln package (build/python) to compile,
    kiln-run to measure (one process per measurement, its JSON record)."""

    def __init__(self, build_dir):
        self.build = build_dir
        self.run = os.path.join(build_dir, "bin", "kiln-run")
        package = os.path.join(build_dir, "python")
        if not os.access(self.run, os.X_OK) or not os.path.isdir(
                os.path.join(package, "kiln")):
            raise SystemExit(f"kiln-bench: kiln-run or the kiln package not "
                             f"found in {build_dir}: build Kiln first "
                             f"(scripts/build.sh) or give --build-dir")
        if package not in sys.path:
            sys.path.insert(0, package)
        import kiln
        self.kiln = kiln

    def version(self):
        return "Kiln " + self.kiln.__version__

    def pipeline_passes(self, model, flags=()):
        """The passes of the -O3 graph pipeline for this model, in the
        order they ran, without repeats (the pass report's records)."""
        report = self.kiln.pass_report(model, opt_level=3, flags=list(flags))
        passes = []
        for record in report["passes"]:
            name = record["pass"]
            if name not in passes:
                passes.append(name)
        # Canonicalization is the pipeline's glue (and a pattern driver
        # every other pass relies on), not an optimization to ablate.
        return [p for p in passes if p != "kiln-canonicalize"]

    def compile(self, model, path, **kwargs):
        """kiln.compile in a child process; the artifact saved at path."""
        return _in_child(_compile_to, model, path, kwargs)


class Models:
    """Model files, inputs and references per (variant, batch, seq_len)."""

    def __init__(self, study, out_dir, python=sys.executable, log=None):
        self.study = study
        self.dir = os.path.join(out_dir, "models")
        self.python = python
        self.cache = {}
        self.log = log or (lambda s: None)
        self.manifests = {}

    def _seed_folder(self, batch, seq_len, variants):
        folder = os.path.join(self.dir, f"b{batch}_s{seq_len}")
        manifest = os.path.join(folder, "manifest.json")
        have = set()
        if os.path.exists(manifest):
            with open(manifest) as f:
                have = {v["name"] for v in json.load(f)["variants"]}
        want = set(variants)
        for v in variants:  # the fp32 baseline of each attention kind
            want.add(v.split("_")[0] + "_fp32")
        if not want <= have:
            attentions = sorted({v.split("_")[0] for v in want})
            precisions = sorted({v.split("_")[1] for v in want})
            m = self.study["models"]
            cmd = [self.python,
                   os.path.join(ROOT, "models", "generate_seed_variants.py"),
                   "--out", folder, "--preset", m["preset"],
                   "--batch", str(batch), "--seq-len", str(seq_len),
                   "--attention", ",".join(attentions),
                   "--precision", ",".join(precisions),
                   "--seed", str(self.study["study"]["seed"])]
            for key, value in m.get("config", {}).items():
                cmd += ["--" + key.replace("_", "-"), str(value)]
            proc = subprocess.run(cmd, text=True, capture_output=True)
            if proc.returncode != 0:
                raise RuntimeError("generate_seed_variants.py failed: " +
                                   (proc.stderr or proc.stdout)[-800:])
        with open(manifest) as f:
            return folder, json.load(f)

    def prepare(self, configs):
        """Generates what the configurations need; returns {key: info}
        where info has onnx, inputs {name: npy}, reference (npy of the fp32
        baseline), self_reference (own-precision reference), meta."""
        if self.study["models"]["source"] == "onnx":
            return self._prepare_onnx(configs)
        shapes = {}
        for c in configs:
            shapes.setdefault((c.batch, c.seq_len), set()).add(c.variant)
        for (b, s), variants in sorted(shapes.items()):
            try:
                folder, manifest = self._seed_folder(b, s, sorted(variants))
            except Exception as e:  # recorded on each configuration
                for v in variants:
                    self.cache[(v, b, s)] = {"error": str(e)}
                continue
            self.manifests[(b, s)] = manifest
            byname = {v["name"]: v for v in manifest["variants"]}
            for v in variants:
                if v not in byname:
                    self.cache[(v, b, s)] = {
                        "error": f"the generator wrote no variant '{v}' "
                                 f"(it has {', '.join(sorted(byname))})"}
                    continue
                e = byname[v]
                data = os.path.join(folder, e["data"])
                base = byname.get(e.get("baseline", ""))
                self.cache[(v, b, s)] = {
                    "onnx": os.path.join(folder, e["file"]),
                    "inputs": {"input_ids": os.path.join(data,
                                                         "input_0.npy")},
                    "self_reference": data if e.get("reference") else None,
                    "reference": (os.path.join(folder, base["data"])
                                  if base and base.get("reference") else
                                  None),
                    "reference_name": base["name"] if base else None,
                    "meta": {k: e.get(k) for k in (
                        "role", "attention", "precision", "weight_bytes",
                        "nodes", "tolerance", "baseline")},
                    "config": manifest.get("config", {}),
                }
        for c in configs:
            c.info = self.cache.get((c.variant, c.batch, c.seq_len),
                                    {"error": "not prepared"})
        return self.cache

    def _prepare_onnx(self, configs):
        import onnx
        from onnx import numpy_helper  # noqa: F401 (keeps onnx's helpers)
        files = {f["name"]: f for f in self.study["models"]["files"]}
        rng_seed = self.study["study"]["seed"]
        for c in configs:
            key = (c.variant, c.batch, c.seq_len)
            if key in self.cache:
                c.info = self.cache[key]
                continue
            entry = files[c.variant]
            folder = os.path.join(self.dir, f"{c.variant}_b{c.batch}")
            os.makedirs(folder, exist_ok=True)
            info = {"onnx": entry["path"], "inputs": {}, "meta": {
                "role": entry.get("role", ""), "attention": "",
                "precision": entry.get("precision", "")}}
            try:
                model = onnx.load(entry["path"], load_external_data=False)
                inits = {i.name for i in model.graph.initializer}
                shapes = {}
                for spec in entry.get("input_shapes", "").split(","):
                    if spec.strip():
                        name, _, dims = spec.strip().rpartition(":")
                        shapes[name] = [int(d) for d in dims.format(
                            batch=c.batch).split("x")]
                for inp in model.graph.input:
                    if inp.name in inits:
                        continue
                    t = inp.type.tensor_type
                    dims = shapes.get(inp.name)
                    if dims is None:
                        dims = [d.dim_value if d.HasField("dim_value")
                                else None for d in t.shape.dim]
                        if dims and dims[0] is None:
                            dims[0] = c.batch
                        if any(d is None for d in dims):
                            raise RuntimeError(
                                f"input '{inp.name}' has a dynamic "
                                f"dimension: give input_shapes")
                    dtype = onnx.helper.tensor_dtype_to_np_dtype(
                        t.elem_type)
                    rng = np.random.default_rng(rng_seed)
                    if np.issubdtype(dtype, np.floating):
                        x = rng.uniform(-1, 1, dims).astype(dtype)
                    else:
                        x = rng.integers(0, 10, dims).astype(dtype)
                    path = os.path.join(folder, f"{inp.name}.npy")
                    np.save(path, x)
                    info["inputs"][inp.name] = path
                if shapes:
                    info["input_shapes"] = ",".join(
                        f"{n}:{'x'.join(map(str, d))}"
                        for n, d in shapes.items())
                # The reference: ONNX Runtime's outputs of the same model.
                import onnxruntime as ort
                sess = ort.InferenceSession(
                    entry["path"], providers=["CPUExecutionProvider"])
                feeds = {n: np.load(p) for n, p in info["inputs"].items()}
                outs = sess.run(None, feeds)
                ref = os.path.join(folder, "reference")
                os.makedirs(ref, exist_ok=True)
                for i, o in enumerate(outs):
                    np.save(os.path.join(ref, f"output_{i}.npy"), o)
                info["reference"] = ref
                info["reference_name"] = "onnxruntime"
                info["self_reference"] = ref
            except Exception as e:
                info = {"error": f"{entry['path']}: {e}"}
            self.cache[key] = info
            c.info = info
        return self.cache


def compile_config(tools, c, out_dir):
    """kiln.compile for one configuration; records time or error."""
    from .study import pass_flags
    art = os.path.join(out_dir, "artifacts", c.slug() + ".kiln")
    os.makedirs(os.path.dirname(art), exist_ok=True)
    flags = [f"--kernels={c.kernels}", *pass_flags(c.passes)]
    if c.info.get("input_shapes"):
        flags.append(f"--input-shapes={c.info['input_shapes']}")
    kwargs = {"target": c.target, "opt_level": None, "flags": flags}
    # What a user would type for the same artifact.
    c.compile_cmd = " ".join(["kiln-compile", c.info["onnx"], "-o", art,
                              f"--target={c.target}", *flags])
    start = time.monotonic()
    try:
        tools.compile(c.info["onnx"], art, **kwargs)
    except RuntimeError as e:
        c.compile_s = time.monotonic() - start
        c.status = "compile-failed"
        c.error = f"kiln.compile: {e}"
        return False
    c.compile_s = time.monotonic() - start
    c.artifact = art
    c.status = "compiled"
    return True


def _kiln_run(tools, c, study, out_json, extra, timed=True):
    s = study["study"]
    cmd = [tools.run, c.artifact, "--threads", str(s["threads"]),
           "--batch", str(c.batch), "--json", out_json]
    for name, path in c.info["inputs"].items():
        cmd += ["--input", f"{name}={path}"]
    if timed:
        cmd += ["--warmup", str(s["warmup"]), "--iterations",
                str(s["iterations"])]
        if s["duration"]:
            cmd += ["--duration", str(s["duration"])]
    cmd += extra
    proc = subprocess.run(cmd, text=True, capture_output=True)
    # 0: passed or nothing compared; 1: outputs outside kiln-run's default
    # tolerance (expected against a higher-precision reference): measured.
    if proc.returncode not in (0, 1) or not os.path.exists(out_json):
        msg = (proc.stderr or proc.stdout).strip().splitlines()
        raise RuntimeError("kiln-run: " + (" | ".join(msg[-3:]) if msg else
                                           f"exit {proc.returncode}"))
    with open(out_json) as f:
        return json.load(f)


def measure_kiln(tools, c, study, out_dir, round_index):
    out = os.path.join(out_dir, "runs", f"{c.slug()}.r{round_index}.json")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    extra = ["--consistency-runs", "3" if round_index == 0 else "0"]
    if c.info.get("reference"):
        extra += ["--expected", c.info["reference"]]
    r = _kiln_run(tools, c, study, out, extra)
    c.runs.append(r)
    c.samples.append(list(r["timing"].get("samples_ms", [])))
    if round_index == 0:
        c.cold = {k: r["timing"][k] for k in ("load_ms", "session_ms",
                                             "cold_ms")}
        c.consistency = r.get("consistency")
        if c.info.get("reference") and r["outputs"]:
            o = r["outputs"][0]
            c.quality = {
                "reference": c.info.get("reference_name"),
                "max_abs_error": o.get("max_abs_error"),
                "max_rel_error": o.get("max_rel_error"),
                "cosine": o.get("cosine_similarity"),
                "top1_agreement": o.get("top1_agreement"),
            }
    mem = r["memory"]
    prev = c.memory or {}
    c.memory = {k: max(prev.get(k) or 0, mem.get(k) or 0)
                for k in ("session_peak_bytes", "process_peak_bytes",
                          "peak_rss_bytes")}
    c.energy = r.get("energy")


def check_and_profile(tools, c, study, out_dir, profile):
    """Untimed: outputs against the own-precision reference, and the
    per-kernel profile."""
    out = os.path.join(out_dir, "runs", f"{c.slug()}.check.json")
    extra = ["--consistency-runs", "0"]
    if c.info.get("self_reference"):
        extra += ["--expected", c.info["self_reference"]]
    if profile:
        extra += ["--profile", "--trace",
                  os.path.join(out_dir, "traces", c.slug() + ".trace.json")]
        os.makedirs(os.path.join(out_dir, "traces"), exist_ok=True)
    # A few timed runs so the profile has steady-state kernels to average.
    s = dict(study)
    s["study"] = dict(study["study"], warmup=1, iterations=5, duration=0)
    try:
        r = _kiln_run(tools, c, s, out, extra)
    except RuntimeError as e:
        if not profile:
            raise
        # A kiln-run (or artifact) without profiling support still gets its
        # outputs checked; the profile is reported missing with the reason.
        c.profile_error = str(e)
        r = _kiln_run(tools, c, s, out, [x for x in extra if x not in (
            "--profile", "--trace") and not x.endswith(".trace.json")])
    if c.info.get("self_reference") and r["outputs"]:
        o = r["outputs"][0]
        tol = (c.info.get("meta") or {}).get("tolerance") or {}
        ref_max = None
        try:
            ref_max = float(np.abs(np.load(os.path.join(
                c.info["self_reference"], "output_0.npy"))).max())
        except (OSError, ValueError):
            pass
        ok = True
        reasons = []
        if tol.get("cosine_min") is not None and \
                (o.get("cosine_similarity") or 0) < tol["cosine_min"]:
            ok = False
            reasons.append(f"cosine {o.get('cosine_similarity')} < "
                           f"{tol['cosine_min']}")
        if tol.get("top1_min") is not None and \
                o.get("top1_agreement") is not None and \
                o["top1_agreement"] < tol["top1_min"]:
            ok = False
            reasons.append(f"top-1 {o['top1_agreement']} < "
                           f"{tol['top1_min']}")
        if tol.get("max_abs_error_rel") is not None and ref_max and \
                (o.get("max_abs_error") or 0) > tol["max_abs_error_rel"] * \
                ref_max:
            ok = False
            reasons.append(f"max abs error {o.get('max_abs_error'):.3g} > "
                           f"{tol['max_abs_error_rel']} x max|ref|")
        c.self_check = {"pass": ok, "reasons": reasons,
                        "max_abs_error": o.get("max_abs_error"),
                        "cosine": o.get("cosine_similarity"),
                        "top1_agreement": o.get("top1_agreement"),
                        "tolerance": tol}
    if profile and "profile" in r:
        c.profile = r["profile"]
        kernels = c.profile.get("kernels")
        if isinstance(kernels, list):
            c.kernel_count = len(kernels)


# --- Peers -------------------------------------------------------------------

class OrtPeer:
    name = "onnxruntime"

    def __init__(self, threads):
        self.threads = threads
        self.sessions = {}
        try:
            import onnxruntime
            self.ort = onnxruntime
            self.version = onnxruntime.__version__
            self.skip = None
        except ImportError as e:
            self.ort = None
            self.version = None
            self.skip = f"onnxruntime is not installed ({e})"

    def session(self, c):
        key = c.info["onnx"]
        if key not in self.sessions:
            so = self.ort.SessionOptions()
            so.intra_op_num_threads = self.threads
            so.inter_op_num_threads = 1
            so.execution_mode = self.ort.ExecutionMode.ORT_SEQUENTIAL
            so.graph_optimization_level = \
                self.ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            start = time.monotonic()
            sess = self.ort.InferenceSession(
                key, so, providers=["CPUExecutionProvider"])
            feeds = {n: np.load(p) for n, p in c.info["inputs"].items()}
            t0 = time.perf_counter()
            outs = sess.run(None, feeds)
            first = (time.perf_counter() - t0) * 1e3
            self.sessions[key] = (sess, feeds, {
                "load_ms": (time.monotonic() - start) * 1e3 - first,
                "session_ms": 0.0, "cold_ms": first}, outs)
        return self.sessions[key]

    def measure(self, c, study, round_index):
        sess, feeds, cold, outs = self.session(c)
        s = study["study"]
        for _ in range(s["warmup"]):
            sess.run(None, feeds)
        times = []
        start = time.perf_counter()
        while len(times) < s["iterations"] or (
                s["duration"] and (not times or time.perf_counter() - start
                                   < s["duration"])):
            t0 = time.perf_counter()
            sess.run(None, feeds)
            times.append((time.perf_counter() - t0) * 1e3)
        c.samples.append(times)
        if round_index == 0:
            c.cold = cold
            again = sess.run(None, feeds)
            c.consistency = {"runs": 1, "bit_identical": all(
                np.array_equal(a, b) for a, b in zip(outs, again))}
            if c.info.get("reference"):
                c.quality = quality(
                    outs[0], np.load(os.path.join(c.info["reference"],
                                                  "output_0.npy")),
                    c.info.get("reference_name"))


class TorchPeer:
    """PyTorch eager, where installed: in this project's venv or Debian's
    python3-torch. Kiln has no PyTorch version of the study's models yet, so
    an installed torch is reported, and the configurations say why they were
    not run, rather than timing something else."""
    name = "torch"

    def __init__(self):
        self.version = None
        try:
            import torch  # noqa: F401
            self.version = torch.__version__
        except ImportError:
            try:
                out = subprocess.run(
                    ["/usr/bin/python3", "-c",
                     "import torch; print(torch.__version__)"],
                    text=True, capture_output=True, timeout=120)
                if out.returncode == 0:
                    self.version = out.stdout.strip() + " (/usr/bin/python3)"
            except (OSError, subprocess.SubprocessError):
                pass
        if self.version is None:
            self.skip = ("PyTorch is not installed (neither in .venv nor "
                         "Debian's python3-torch)")
        else:
            self.skip = (f"PyTorch {self.version} is installed, but Kiln has "
                         f"no PyTorch definition of these models to run "
                         f"(the ONNX files cannot be executed by PyTorch)")


def quality(got, ref, ref_name=None):
    got = np.asarray(got, np.float64)
    ref = np.asarray(ref, np.float64)
    diff = np.abs(got - ref)
    g, r = got.ravel(), ref.ravel()
    denom = np.linalg.norm(g) * np.linalg.norm(r)
    nz = ref != 0
    return {
        "reference": ref_name,
        "max_abs_error": float(diff.max()) if diff.size else 0.0,
        "max_rel_error": float((diff[nz] / np.abs(ref[nz])).max())
        if nz.any() else 0.0,
        "cosine": float(g @ r / denom) if denom else 0.0,
        "top1_agreement": float((got.argmax(-1) == ref.argmax(-1)).mean())
        if got.ndim and got.shape[-1] > 1 else None,
    }


def summarize_config(c):
    pooled = [x for rnd in c.samples for x in rnd]
    summary = stats.summarize(pooled)
    summary["round_medians"] = [stats.median(r) for r in c.samples if r]
    return pooled, summary
