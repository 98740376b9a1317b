#===- scripts/bench_cpu.py - Kiln vs ONNX Runtime (and IREE) on the CPU --===#
#
# Compiles models with the kiln package (kiln.compile) for each batch size
# and kernel strategy, and times them against ONNX Runtime (the pinned
# `onnxruntime` wheel, CPU provider, all graph optimizations) and, when the
# pinned iree-base-compiler / iree-base-runtime are importable, IREE
# (llvm-cpu, target CPU "host", local-task driver with --threads workers),
# with the same inputs and thread count. Repetitions are interleaved: every
# round runs each Kiln artifact of the model and batch
# (kiln.InferenceSession.benchmark, kiln-run's timing core in C++: warm-up,
# then N timed runs, median), then ONNX Runtime, then IREE (same warm-up
# and N), so that a noisy neighbour slows all of them; the figure reported
# is the median over rounds of each side's per-round median, and the ratios
# Kiln / ORT and Kiln / IREE (< 1: Kiln faster). Per (batch, kernels) it
# prints the geometric mean of Kiln / ORT (and Kiln / IREE) over the models
# that ran and how many models are above 1.5x ORT. Also prints the
# compiles' wall times (ResNet-18 included), and checks Kiln's and IREE's
# outputs against ONNX Runtime's on the benchmark inputs. A model that
# fails to export, compile or run (in Kiln or IREE) is a row with its error;
# the run goes on.
#
# Models (--models, comma-separated):
#   transformer_block, small_cnn, mlp   the demo models
#                                       (models/generate_demo_models.py)
#   resnet18, resnet50, mobilenet_v3_large, efficientnet_b0, squeezenet1_1,
#   densenet121, vit_b_16, bert_base, gpt_block, decoder_block
#                                       real architectures, random weights,
#                                       dynamic batch
#                                       (models/export_torch_zoo.py, run with
#                                       /usr/bin/python3: needs Debian's
#                                       python3-torch / torchvision; without
#                                       them they are skipped, with a row
#                                       saying so)
#   real                                all of the real architectures
#
# --kernels takes strings passed as they are to kiln.compile(kernels=...)
# ("codegen", "library", or whatever kiln-compile accepts); "default" (the
# default) passes no kernels= at all, so that Kiln's default is measured.
# IREE: --iree (default: when importable), --no-iree.
#
#   scripts/bench_cpu.py [--threads 2] [--rounds 5] [--iterations 20]
#                        [--batches 1,8] [--models transformer_block,small_cnn]
#                        [--kernels default|codegen,library|...]
#                        [--iree | --no-iree] [--markdown docs/results/cpu.md]
#                        [--json FILE] [--workdir DIR] [--no-resnet]
#
# The real-architecture benchmark (roughly an hour on 2 cores, estimated
# from batch-1 runs: each Kiln compile takes 1-50 s, each IREE one 6-25 s,
# and IREE's ViT-B/16 runs for seconds at batch 8; the exports in
# --workdir are reused when it is run again):
#
#   scripts/bench_cpu.py --models real --batches 1,8 --rounds 3 \
#       --iterations 5 --warmup 1 --kernels default,codegen,library \
#       --workdir /tmp/kiln-bench-real --markdown real.md --json real.json
#
#===----------------------------------------------------------------------===#

import argparse
import datetime
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# model -> (input name, shape for batch b)
MODELS = {
    "transformer_block": ("hidden_states", lambda b: (b, 64, 256)),
    "small_cnn": ("input", lambda b: (b, 3, 32, 32)),
    "mlp": ("input", lambda b: (b, 784)),
}


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def ort_session(path, threads):
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(path, options,
                                providers=["CPUExecutionProvider"])


def time_ort(session, feeds, warmup, iterations):
    for _ in range(warmup):
        session.run(None, feeds)
    times = []
    for _ in range(iterations):
        start = time.perf_counter()
        session.run(None, feeds)
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def time_kiln(session, feeds, warmup, iterations, profile=False):
    """The median of `iterations` timed runs after `warmup`, measured by
    kiln-run's timing core in C++ (kiln.InferenceSession.benchmark), so the
    Python interpreter is not in the timed loop."""
    result = session.benchmark(feeds, warmup=warmup, iterations=iterations,
                               profile=profile)
    return result["time_ms"]["median"]


def kiln_session(artifact, threads):
    import kiln
    return kiln.InferenceSession(artifact, threads=threads)


# The real architectures of models/export_torch_zoo.py ("real": all).
ZOO = ["resnet18", "resnet50", "mobilenet_v3_large", "efficientnet_b0",
       "squeezenet1_1", "densenet121", "vit_b_16", "bert_base", "gpt_block",
       "decoder_block"]
TORCH_PYTHON = "/usr/bin/python3"


def export_zoo(names, out):
    """Runs models/export_torch_zoo.py with Debian's python3 into `out`.
    Returns {name: (input name, shape for batch b)} for the models it wrote
    and {name: error} for the others."""
    ok, failed = {}, {}
    if not names:
        return ok, failed
    probe = subprocess.run([TORCH_PYTHON, "-c", "import torch, torchvision"],
                           capture_output=True, text=True) \
        if os.path.exists(TORCH_PYTHON) else None
    if probe is None or probe.returncode != 0:
        why = (f"skipped: {TORCH_PYTHON} cannot import torch/torchvision "
               "(install Debian's python3-torch python3-torchvision) to "
               "export the real architectures")
        print(why)
        return ok, {n: why for n in names}
    print(f"exporting {', '.join(names)} with {TORCH_PYTHON} into {out}",
          flush=True)
    result = subprocess.run(
        [TORCH_PYTHON, os.path.join(ROOT, "models", "export_torch_zoo.py"),
         "--out", out, "--only", ",".join(names)],
        stderr=subprocess.PIPE, text=True)
    sys.stdout.write(result.stderr)
    for name in names:
        meta_path = os.path.join(out, name + ".json")
        if os.path.exists(meta_path) and \
                os.path.exists(os.path.join(out, name + ".onnx")):
            with open(meta_path) as f:
                meta = json.load(f)
            ok[name] = (meta["input"],
                        lambda b, s=tuple(meta["shape"][1:]): (b,) + s)
        else:
            lines = [l for l in result.stderr.splitlines()
                     if l.startswith(name + " ")]
            failed[name] = "export failed: " + (
                lines[-1].split(":", 1)[-1].strip() if lines
                else result.stderr.strip()[-300:])
    return ok, failed


class Iree:
    """IREE through the pinned iree-base-compiler / iree-base-runtime:
    the model with its batch dim made static (onnx), iree-import-onnx,
    iree-compile for llvm-cpu on the host CPU, the local-task driver with
    `threads` workers."""

    FLAGS = ["--iree-hal-target-device=local",
             "--iree-hal-local-target-device-backends=llvm-cpu",
             "--iree-llvmcpu-target-cpu=host"]

    def __init__(self, threads, workdir, timeout, extra_flags=()):
        import iree.compiler  # noqa: F401 - importable or ImportError
        import iree.runtime as rt
        from iree.compiler.tools.binaries import find_tool
        self.rt = rt
        self.compiler = find_tool("iree-compile")
        self.version = getattr(iree.compiler, "__version__", None) or \
            _dist_version("iree-base-compiler")
        rt.flags.parse_flags(f"--task_topology_max_group_count={threads}")
        self.config = rt.Config("local-task")
        self.workdir = os.path.join(workdir, "iree")
        self.timeout = timeout
        self.flags = self.FLAGS + list(extra_flags)
        os.makedirs(self.workdir, exist_ok=True)

    def compile(self, onnx_path, batch, tag):
        """Returns (IreeModel, compile seconds); raises RuntimeError with the
        tool's last words."""
        import onnx
        start = time.perf_counter()
        static = os.path.join(self.workdir, f"{tag}.onnx")
        model = onnx.load(onnx_path)
        graph = model.graph
        for value in list(graph.input) + list(graph.output) + \
                list(graph.value_info):
            for dim in value.type.tensor_type.shape.dim:
                if dim.HasField("dim_param") and dim.dim_param in (
                        "batch", "batch_size", "N"):
                    dim.dim_value = batch
        onnx.save(model, static)
        del model
        mlir = os.path.join(self.workdir, f"{tag}.mlir")
        vmfb = os.path.join(self.workdir, f"{tag}.vmfb")
        try:
            for step, cmd in (
                    ("iree-import-onnx",
                     [sys.executable, "-m", "iree.compiler.tools.import_onnx",
                      static, "-o", mlir]),
                    ("iree-compile",
                     [self.compiler, mlir] + self.flags + ["-o", vmfb])):
                try:
                    r = subprocess.run(cmd, capture_output=True, text=True,
                                       timeout=self.timeout)
                except subprocess.TimeoutExpired:
                    raise RuntimeError(f"{step}: timed out after "
                                       f"{self.timeout} s")
                if r.returncode != 0:
                    tail = [l for l in (r.stderr or r.stdout).splitlines()
                            if l.strip()]
                    first_error = next(
                        (l for l in tail if "error" in l), None)
                    raise RuntimeError(
                        f"{step} exit {r.returncode}: "
                        + (first_error or " / ".join(tail[-3:]))[:400])
        finally:
            for path in (static, mlir):
                if os.path.exists(path):
                    os.remove(path)
        seconds = time.perf_counter() - start
        context = self.rt.SystemContext(config=self.config)
        vm_module = self.rt.VmModule.mmap(context.instance, vmfb)
        context.add_vm_module(vm_module)
        names = [n for n in vm_module.function_names
                 if not n.startswith("__") and not n.endswith("$async")]
        function = context.modules[vm_module.name][names[0]]
        return IreeModel(self.rt, self.config, context, function), seconds


class IreeModel:
    def __init__(self, rt, config, context, function):
        self.rt, self.config = rt, config
        self.context, self.function = context, function

    def run(self, x):
        """The first output as numpy."""
        y = self.function(self.rt.asdevicearray(self.config.device, x))
        if isinstance(y, (tuple, list)):
            y = y[0]
        return np.asarray(y.to_host())

    def time(self, x, warmup, iterations):
        dx = self.rt.asdevicearray(self.config.device, x)
        for _ in range(warmup):
            _first(self.function(dx)).to_host()
        times = []
        for _ in range(iterations):
            start = time.perf_counter()
            _first(self.function(dx)).to_host()
            times.append((time.perf_counter() - start) * 1e3)
        return statistics.median(times)


def _first(y):
    return y[0] if isinstance(y, (tuple, list)) else y


def _dist_version(name):
    try:
        from importlib.metadata import version
        return version(name)
    except Exception:  # noqa: BLE001
        return "?"


def geomean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values))


def summarize(rows, batches, kernel_list, iree):
    """Per (batch, kernels): geometric means of Kiln / ORT (and Kiln /
    IREE) over the models that ran, and the models above 1.5x ORT."""
    out = []
    for batch in batches:
        for kernels in kernel_list:
            done = [r for r in rows if r["batch"] == batch and
                    r["kernels"] == kernels and "ratio" in r]
            failed = [r for r in rows if r["batch"] == batch and
                      r["kernels"] == kernels and "ratio" not in r]
            entry = {"batch": batch, "kernels": kernels, "models": len(done),
                     "failed": len(failed)}
            if done:
                entry["geomean_kiln_over_ort"] = geomean(
                    [r["ratio"] for r in done])
                slow = [r["model"] for r in done if r["ratio"] > 1.5]
                entry["above_1_5x_ort"] = len(slow)
                entry["above_1_5x_ort_models"] = slow
            with_iree = [r for r in done if "ratio_iree" in r]
            if iree and with_iree:
                entry["geomean_kiln_over_iree"] = geomean(
                    [r["ratio_iree"] for r in with_iree])
                entry["iree_models"] = len(with_iree)
            out.append(entry)
    return out


def main():
    parser = argparse.ArgumentParser(
        description="Kiln vs ONNX Runtime (and IREE), CPU")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--settle", type=float, default=0.3,
                        help="seconds of pause before each timed block (the "
                        "previous runtime's spinning threads stop)")
    parser.add_argument("--batches", default="1,8")
    parser.add_argument("--models", default="transformer_block,small_cnn",
                        help="demo models (" + ", ".join(MODELS) + "), "
                        "real architectures (" + ", ".join(ZOO) + "), or "
                        "'real' for all of the latter")
    parser.add_argument("--kernels", default="default",
                        help="comma-separated kernels= values for "
                        "kiln.compile, passed as they are; 'default' passes "
                        "none (Kiln's default)")
    parser.add_argument("--opt", type=int, default=3,
                        help="the graph pipeline's -O level")
    parser.add_argument("--iree", dest="iree", action="store_true",
                        default=None,
                        help="also time IREE (default: when importable)")
    parser.add_argument("--no-iree", dest="iree", action="store_false")
    parser.add_argument("--iree-timeout", type=int, default=3600,
                        help="seconds for each of IREE's import and compile")
    parser.add_argument("--iree-flag", action="append", default=[],
                        help="one more iree-compile flag (repeatable)")
    parser.add_argument("--no-resnet", action="store_true",
                        help="skip ResNet-18's compile-time measurement")
    parser.add_argument("--markdown", help="also write the tables here")
    parser.add_argument("--json", help="write the figures as JSON here")
    parser.add_argument("--workdir")
    args = parser.parse_args()

    import onnxruntime
    import kiln
    workdir = args.workdir or tempfile.mkdtemp(prefix="kiln-bench-")
    os.makedirs(workdir, exist_ok=True)
    models = []
    for m in args.models.split(","):
        for name in (ZOO if m == "real" else [m]):
            if name not in models:
                models.append(name)
    unknown = [m for m in models if m not in MODELS and m not in ZOO]
    if unknown:
        parser.error(f"unknown model(s) {', '.join(unknown)}")
    batches = [int(b) for b in args.batches.split(",")]
    kernel_list = args.kernels.split(",")

    iree = None
    if args.iree is not False:
        try:
            iree = Iree(args.threads, workdir, args.iree_timeout,
                        args.iree_flag)
        except Exception as e:  # noqa: BLE001 - ImportError and the like
            if args.iree:
                print(f"--iree: IREE not usable: {type(e).__name__}: {e}",
                      file=sys.stderr)
                return 1
            print(f"IREE not usable ({type(e).__name__}: {e}); without it "
                  "(pip install the iree-base-* pins of "
                  "scripts/requirements.txt)")

    demo = [m for m in models if m in MODELS]
    gen = demo + ([] if args.no_resnet else ["resnet18"])
    if gen:
        subprocess.run([sys.executable,
                        os.path.join(ROOT, "models", "generate_demo_models.py"),
                        "--out", workdir, "--only", ",".join(gen)],
                       check=True, stdout=subprocess.DEVNULL)
    zoo_dir = os.path.join(workdir, "zoo")
    zoo_ok, zoo_failed = export_zoo([m for m in models if m in ZOO], zoo_dir)
    specs = dict(MODELS)
    specs.update(zoo_ok)

    header = (f"CPU: {cpu_name()}, {os.cpu_count()} logical CPUs; threads: "
              f"{args.threads}; onnxruntime {onnxruntime.__version__}"
              + (f"; IREE {iree.version} (llvm-cpu, host, local-task"
                 + "".join(" " + f for f in args.iree_flag) + ")"
                 if iree else "") +
              f"; {args.rounds} interleaved rounds x {args.iterations} timed "
              f"runs after {args.warmup} warm-up; Kiln -O{args.opt}; "
              f"{datetime.date.today().isoformat()}")
    print(header)
    rows, compile_rows = [], []
    rng = np.random.default_rng(0)

    def fail(model, batch, kernels, error):
        print(f"{model} b{batch} {kernels}: {error}", flush=True)
        rows.append({"model": model, "batch": batch, "kernels": kernels,
                     "error": error})

    for model in models:
        if model in zoo_failed:
            for batch in batches:
                for kernels in kernel_list:
                    fail(model, batch, kernels, zoo_failed[model])
            continue
        name, shape = specs[model]
        onnx_path = os.path.join(zoo_dir if model in ZOO else workdir,
                                 f"{model}.onnx")
        for batch in batches:
            dims = shape(batch)
            x = rng.standard_normal(dims).astype(np.float32)
            feeds = {name: x}
            try:
                session = ort_session(onnx_path, args.threads)
                ort_out = session.run(None, feeds)[0]
            except Exception as e:  # noqa: BLE001 - a row, not an abort
                for kernels in kernel_list:
                    fail(model, batch, kernels,
                         f"onnxruntime: {str(e)[:300]}")
                continue
            # Kiln: one artifact per kernel strategy.
            kiln_sessions = {}
            for kernels in kernel_list:
                artifact = os.path.join(workdir,
                                        f"{model}-b{batch}-{kernels}.kiln")
                options = {} if kernels == "default" else {"kernels": kernels}
                start = time.perf_counter()
                try:
                    kiln.compile(onnx_path, opt_level=args.opt,
                                 input_shapes={name: dims},
                                 **options).save(artifact)
                except Exception as e:  # noqa: BLE001 - CompileError & co
                    fail(model, batch, kernels,
                         f"compile failed: {str(e)[:300]}")
                    continue
                compile_s = time.perf_counter() - start
                compile_rows.append((f"{model} b{batch} {kernels}", compile_s))
                try:
                    ks = kiln_session(artifact, args.threads)
                    kiln_out = ks.run(None, feeds)[0]
                except Exception as e:  # noqa: BLE001
                    fail(model, batch, kernels, f"run failed: {str(e)[:300]}")
                    continue
                kiln_sessions[kernels] = {
                    "session": ks, "compile_s": compile_s, "ms": [],
                    "err": float(np.abs(kiln_out - ort_out).max())}
            # IREE: one module per batch.
            iree_model, iree_error, iree_err, iree_compile_s = \
                None, None, None, None
            if iree and kiln_sessions:
                try:
                    iree_model, iree_compile_s = iree.compile(
                        onnx_path, batch, f"{model}-b{batch}")
                    compile_rows.append((f"{model} b{batch} IREE",
                                         iree_compile_s))
                    iree_out = iree_model.run(x)
                    iree_err = float(np.abs(iree_out - ort_out).max())
                except Exception as e:  # noqa: BLE001
                    iree_model = None
                    iree_error = str(e)[:400]
                    print(f"{model} b{batch} IREE: {iree_error}", flush=True)
            if not kiln_sessions:
                continue
            ort_ms, iree_ms = [], []
            # Each runtime's threads spin for a while after its last run
            # (libomp 200 ms, ONNX Runtime's pool likewise) and take the cores
            # from the next one: each timed block starts after a pause.
            def settle():
                time.sleep(args.settle)

            for _ in range(args.rounds):
                for kernels, k in list(kiln_sessions.items()):
                    try:
                        settle()
                        k["ms"].append(time_kiln(k["session"], feeds,
                                                 args.warmup,
                                                 args.iterations))
                    except Exception as e:  # noqa: BLE001
                        fail(model, batch, kernels,
                             f"run failed: {str(e)[:300]}")
                        del kiln_sessions[kernels]
                settle()
                ort_ms.append(time_ort(session, feeds, args.warmup,
                                       args.iterations))
                if iree_model is not None:
                    try:
                        settle()
                        iree_ms.append(iree_model.time(x, args.warmup,
                                                       args.iterations))
                    except Exception as e:  # noqa: BLE001
                        iree_model, iree_ms = None, []
                        iree_error = f"run failed: {str(e)[:300]}"
            o = statistics.median(ort_ms)
            i = statistics.median(iree_ms) if iree_ms else None
            for kernels, ks in kiln_sessions.items():
                k = statistics.median(ks["ms"])
                row = {"model": model, "batch": batch, "kernels": kernels,
                       "kiln_ms": k, "ort_ms": o, "ratio": k / o,
                       "max_abs_diff_vs_ort": ks["err"],
                       "compile_s": ks["compile_s"],
                       "kiln_rounds_ms": ks["ms"], "ort_rounds_ms": ort_ms}
                text = (f"{model:18} batch {batch:2} {kernels:8} kiln "
                        f"{k:9.3f} ms  ort {o:9.3f} ms  ratio {k / o:6.2f}x"
                        f"  |kiln-ort| {ks['err']:.2g}")
                if i is not None:
                    row.update({"iree_ms": i, "ratio_iree": k / i,
                                "iree_rounds_ms": iree_ms,
                                "iree_max_abs_diff_vs_ort": iree_err,
                                "iree_compile_s": iree_compile_s})
                    text += (f"  iree {i:9.3f} ms  kiln/iree {k / i:6.2f}x"
                             f"  |iree-ort| {iree_err:.2g}")
                elif iree_error:
                    row["iree_error"] = iree_error
                    text += "  iree failed"
                rows.append(row)
                print(text, flush=True)
            del kiln_sessions, iree_model, session
    if not args.no_resnet:
        artifact = os.path.join(workdir, "resnet18.kiln")
        start = time.perf_counter()
        try:
            kiln.compile(os.path.join(workdir, "resnet18.onnx"),
                         opt_level=args.opt,
                         input_shapes={"input": (1, 3, 224, 224)}).save(artifact)
            status = "ok"
        except kiln.CompileError as e:
            status = "FAILED: " + str(e)[:200]
        seconds = time.perf_counter() - start
        compile_rows.append(("resnet18 (demo) b1 default kernels (11.7M "
                             "parameters)", seconds))
        print(f"resnet18 (demo) compile: {seconds:.2f} s ({status})")

    summary = summarize(rows, batches, kernel_list, iree is not None)
    summary_lines = []
    for s in summary:
        if "geomean_kiln_over_ort" not in s:
            line = (f"batch {s['batch']} {s['kernels']}: no model ran "
                    f"({s['failed']} failed)")
        else:
            line = (f"batch {s['batch']} {s['kernels']}: geomean Kiln/ORT "
                    f"{s['geomean_kiln_over_ort']:.2f}x over {s['models']} "
                    f"models")
            if "geomean_kiln_over_iree" in s:
                line += (f", Kiln/IREE {s['geomean_kiln_over_iree']:.2f}x "
                         f"over {s['iree_models']}")
            line += (f"; {s['above_1_5x_ort']} above 1.5x ORT"
                     + (f" ({', '.join(s['above_1_5x_ort_models'])})"
                        if s["above_1_5x_ort_models"] else "")
                     + (f"; {s['failed']} failed" if s["failed"] else ""))
        summary_lines.append(line)
        print(line)
    failures = [r for r in rows if "error" in r]
    failures += [dict(r, error="IREE: " + r["iree_error"]) for r in rows
                 if "iree_error" in r]
    if failures:
        print("failures:")
        for r in failures:
            print(f"  {r['model']} b{r['batch']} {r['kernels']}: "
                  f"{r['error']}")

    with_iree = iree is not None
    lines = [f"# Kiln vs ONNX Runtime on the CPU", "", header, "",
             "| model | batch | kernels | Kiln median (ms) | ORT median (ms) "
             "| Kiln / ORT | max abs diff vs ORT |"
             + (" IREE median (ms) | Kiln / IREE |" if with_iree else ""),
             "|---|---:|---|---:|---:|---:|---:|"
             + ("---:|---:|" if with_iree else "")]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['model']} | {r['batch']} | {r['kernels']} | "
                         f"failed: {r['error'][:120]} | | | |"
                         + (" | |" if with_iree else ""))
            continue
        line = (f"| {r['model']} | {r['batch']} | {r['kernels']} | "
                f"{r['kiln_ms']:.3f} | {r['ort_ms']:.3f} | "
                f"{r['ratio']:.2f}x | {r['max_abs_diff_vs_ort']:.2g} |")
        if with_iree:
            if "iree_ms" in r:
                line += f" {r['iree_ms']:.3f} | {r['ratio_iree']:.2f}x |"
            else:
                line += (f" failed: {r.get('iree_error', '')[:120]} | |")
        lines.append(line)
    lines += [""] + [f"- {l}" for l in summary_lines]
    lines += ["", "| compile (kiln.compile / IREE import + compile wall "
              "time) | seconds |", "|---|---:|"]
    lines += [f"| {n} | {s:.2f} |" for n, s in compile_rows]
    text = "\n".join(lines) + "\n"
    if args.markdown:
        os.makedirs(os.path.dirname(os.path.abspath(args.markdown)),
                    exist_ok=True)
        with open(args.markdown, "w") as f:
            f.write(text)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"schema": "kiln.cpu-bench", "version": 1,
                       "header": header, "rows": rows, "summary": summary,
                       "compile": compile_rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
