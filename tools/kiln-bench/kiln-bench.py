#!/usr/bin/env python3
#===- kiln-bench.py - Compile and measure a study, write its report --------===#
#
#   kiln-bench [STUDY.toml] [--out DIR] [flags that override the study]
#
# Compiles every configuration of a study (models x targets x kernel
# strategies x pass configurations x batch sizes x sequence lengths, plus
# the ablation and the sweeps), measures them in interleaved rounds with
# kiln-run and the peers (ONNX Runtime; PyTorch where it can), and writes
# results.json, results.csv, report.md and SVG plots into the report folder.
# Prints the seed's table at the end. docs/kiln-bench.md is the manual.
#
#===----------------------------------------------------------------------===#

import argparse
import datetime
import os
import platform
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from kilnbench import cluster, generation, report, runner  # noqa: E402
from kilnbench import study as studymod  # noqa: E402
from kilnbench.progress import Progress, format_seconds  # noqa: E402

ROOT = runner.ROOT


def csv_ints(text):
    return [int(x) for x in text.split(",") if x.strip()]


def csv_strs(text):
    return [x.strip() for x in text.split(",") if x.strip()]


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="kiln-bench",
        description="Compile and measure a study of model variants with "
        "Kiln and its peers; write a report folder.")
    p.add_argument("study", nargs="?", help="study file (TOML, "
                   "docs/kiln-bench.md); default: studies/seed-small.toml, "
                   "the seed's 2x2 grid at the small preset")
    p.add_argument("--out", help="report folder (default "
                   "build/bench/<study name>)")
    p.add_argument("--build-dir", default=os.environ.get(
        "KILN_BUILD_DIR", os.path.join(ROOT, "build")))
    p.add_argument("--full", action="store_true",
                   help="the seed variants at the full preset (larger "
                   "model, sequence length 512)")
    p.add_argument("--preset", help="seed-variant preset (small, full)")
    p.add_argument("--variants", type=csv_strs)
    p.add_argument("--attentions", type=csv_strs,
                   help="seed variants: attention kinds (softmax, linear); "
                   "with --precisions, the variants are their cross "
                   "product")
    p.add_argument("--precisions", type=csv_strs,
                   help="seed variants: precisions (fp32, fp16, int8)")
    p.add_argument("--targets", type=csv_strs)
    p.add_argument("--kernels", type=csv_strs)
    p.add_argument("--passes", type=csv_strs,
                   help="pass configurations: O0..O3, O3-no-PASS")
    p.add_argument("--batch", type=csv_ints)
    p.add_argument("--seq-len", type=csv_ints)
    p.add_argument("--threads", type=int)
    p.add_argument("--warmup", type=int)
    p.add_argument("--iterations", type=int)
    p.add_argument("--duration", type=float)
    p.add_argument("--rounds", type=int)
    p.add_argument("--baseline")
    p.add_argument("--no-ablation", action="store_true")
    p.add_argument("--no-sweep", action="store_true")
    p.add_argument("--no-profile", action="store_true")
    p.add_argument("--no-peers", action="store_true")
    p.add_argument("--tensor-parallel", type=int,
                   help="generation study under mpirun -n N: split each "
                   "decoder over the N ranks ([cluster] tensor_parallel)")
    p.add_argument("--sweep-batch", type=csv_ints)
    p.add_argument("--sweep-seq-len", type=csv_ints)
    p.add_argument("--sweep-variants", type=csv_strs)
    p.add_argument("--ablation-passes", type=csv_strs,
                   help="passes to disable one at a time (default: every "
                   "pass of the -O3 pipeline)")
    p.add_argument("--quiet", action="store_true",
                   help="no progress output")
    return p.parse_args(argv)


def overrides(args):
    o = {"study": {}, "models": {}, "grid": {}, "sweep": {}, "ablation": {},
         "peers": {}, "profile": {}, "baseline": {}}
    for key in ("threads", "warmup", "iterations", "duration", "rounds"):
        if getattr(args, key) is not None:
            o["study"][key] = getattr(args, key)
    if args.full:
        # The same study at full size: the generator's full preset at its
        # sequence length, and the sweeps around it.
        o["models"]["preset"] = "full"
        o["grid"]["seq_len"] = [512]
        o["study"].setdefault("iterations", 5)
        o["study"].setdefault("warmup", 2)
        o["sweep"].setdefault("batch", [1, 4])
        o["sweep"].setdefault("seq_len", [128, 512, 2048])
    if args.preset:
        o["models"]["preset"] = args.preset
    if args.variants:
        o["models"]["variants"] = args.variants
    if args.attentions or args.precisions:
        o["models"]["variants"] = [
            f"{a}_{p}" for a in (args.attentions or ["softmax", "linear"])
            for p in (args.precisions or ["fp16", "int8"])]
        if "softmax_fp16" not in o["models"]["variants"] and \
                not args.baseline:
            o["baseline"]["variant"] = o["models"]["variants"][0]
    for key in ("targets", "kernels", "passes", "batch", "seq_len"):
        if getattr(args, key):
            o["grid"][key] = getattr(args, key)
    if args.baseline:
        o["baseline"]["variant"] = args.baseline
    if args.no_ablation:
        o["ablation"]["enabled"] = False
    if args.ablation_passes:
        o["ablation"]["passes"] = args.ablation_passes
    if args.no_sweep:
        o["sweep"]["enabled"] = False
    if args.sweep_batch:
        o["sweep"]["batch"] = args.sweep_batch
    if args.sweep_seq_len:
        o["sweep"]["seq_len"] = args.sweep_seq_len
    if args.sweep_variants:
        o["sweep"]["variants"] = args.sweep_variants
    if args.no_profile:
        o["profile"]["enabled"] = False
    if args.no_peers:
        o["peers"] = {"onnxruntime": False, "torch": False}
    return {k: v for k, v in o.items() if v}


def generation_main(args):
    """A study of [study] kind = "generation" (kilnbench/generation.py)."""
    o = {}
    if args.full:
        o["models"] = {"preset": "full"}
    if args.threads:
        o["study"] = {"threads": args.threads}
    if args.rounds:
        o.setdefault("study", {})["rounds"] = args.rounds
    if args.variants:
        o["models"] = {**o.get("models", {}), "variants": args.variants}
    if args.no_peers:
        o["peers"] = {"onnxruntime": False, "onnxruntime_genai": False}
    if args.tensor_parallel:
        o["cluster"] = {"tensor_parallel": args.tensor_parallel}
    try:
        st = generation.load(args.study, o)
    except generation.StudyError as e:
        print(f"kiln-bench: error: {e}", file=sys.stderr)
        return 2
    name = st["study"]["name"] + ("-full" if args.full else "")
    out = os.path.abspath(args.out or os.path.join(args.build_dir, "bench",
                                                   name))
    os.makedirs(out, exist_ok=True)
    say = (lambda s: None) if args.quiet else (
        lambda s: print(f"kiln-bench: {s}", file=sys.stderr, flush=True))
    # Under mpirun (or with [cluster] tensor_parallel): the study over the
    # ranks, rank 0 reporting (kilnbench/cluster.py).
    world = runner.Tools(args.build_dir).kiln.distributed
    try:
        world.init()
    except RuntimeError as e:
        print(f"kiln-bench: error: {e}", file=sys.stderr)
        return 2
    if world.size() > 1 or st["cluster"]["tensor_parallel"] > 1:
        if world.rank() != 0:
            say = lambda s: None  # noqa: E731 (rank 0 speaks)
        say(f"generation study '{name}' on {world.size()} rank(s); report "
            f"in {out}")
        return cluster.run(st, out, args.build_dir, say, world)
    say(f"generation study '{name}'; report in {out}")
    return generation.run(st, out, args.build_dir, say)


def sh(cmd):
    try:
        return subprocess.run(cmd, text=True, capture_output=True,
                              timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def environment(tools, threads):
    cpu = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = None
    try:
        with open("/proc/meminfo") as f:
            mem = round(int(f.readline().split()[1]) / 2**20, 1)
    except (OSError, ValueError, IndexError):
        pass
    try:
        import onnxruntime
        ort = onnxruntime.__version__
    except ImportError:
        ort = "not installed"
    rapl = "/sys/class/powercap/intel-rapl:0/energy_uj"
    if os.access(rapl, os.R_OK):
        energy = "RAPL package energy (whole CPU, all processes)"
    else:
        energy = ("unavailable: no readable RAPL counter "
                  "(/sys/class/powercap) on this machine")
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_gib": mem,
        "threads": threads,
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "onnxruntime": ort,
        "kiln_version": tools.version(),
        "commit": sh(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"])
        or "unknown",
        "date": datetime.datetime.now(datetime.timezone.utc).strftime(
            "%Y-%m-%d %H:%M UTC"),
        "load_before": " ".join(f"{x:.2f}" for x in os.getloadavg()),
        "energy": energy,
    }


def task_definition(study, manifest_config):
    if study["task"].get("definition"):
        return study["task"]["definition"]
    if study["models"]["source"] == "seed-variants":
        cfg = manifest_config or {}
        b, s = study["grid"]["batch"][0], study["grid"]["seq_len"][0]
        return (f"one forward pass of a batch of {b} sequence(s) of {s} "
                f"tokens through the whole decoder stack ("
                f"{cfg.get('layers', '?')} layers, d_model "
                f"{cfg.get('d_model', '?')}, {cfg.get('heads', '?')} heads / "
                f"{cfg.get('kv_heads', '?')} KV heads, vocabulary "
                f"{cfg.get('vocab', '?')}): token ids in, logits for every "
                f"position out ({b * s} tokens per task)")
    return ("one inference of the model at the stated batch size, inputs "
            "in, outputs out")


def main(argv=None):
    args = parse_args(argv)
    if not args.study:
        args.study = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                  "studies", "seed-small.toml")
    if generation.is_generation_study(args.study):
        return generation_main(args)
    try:
        st = studymod.load(args.study, overrides(args))
        if args.full and not args.out:
            st["study"]["name"] += "-full"
    except studymod.StudyError as e:
        print(f"kiln-bench: error: {e}", file=sys.stderr)
        return 2
    name = st["study"]["name"]
    out = os.path.abspath(args.out or os.path.join(args.build_dir, "bench",
                                                   name))
    os.makedirs(out, exist_ok=True)
    tools = runner.Tools(args.build_dir)
    say = (lambda s: None) if args.quiet else (
        lambda s: print(f"kiln-bench: {s}", file=sys.stderr, flush=True))
    started = time.monotonic()
    load_before = " ".join(f"{x:.2f}" for x in os.getloadavg())

    models = runner.Models(st, out)
    # The ablation's passes come from the model's own -O3 pipeline.
    ablation_passes = None
    if st["ablation"]["enabled"]:
        probe = studymod.plan(st, ablation_passes=[])
        abl = [c for c in probe if "ablation" in c.groups]
        models.prepare(abl)
        if st["ablation"]["passes"]:
            ablation_passes = list(st["ablation"]["passes"])
        elif abl and "onnx" in abl[0].info:
            try:
                ablation_passes = tools.pipeline_passes(abl[0].info["onnx"])
            except Exception as e:
                say(f"ablation skipped: {e}")
                ablation_passes = None
    configs = studymod.plan(st, ablation_passes)
    say(f"study '{name}': {len(configs)} configurations; report in {out}")
    models.prepare(configs)

    peers = {}
    if st["peers"].get("onnxruntime"):
        peers["onnxruntime"] = runner.OrtPeer(st["study"]["threads"])
    if st["peers"].get("torch"):
        peers["torch"] = runner.TorchPeer()
    for p in peers.values():
        if p.skip:
            say(f"peer {p.name} skipped: {p.skip}")

    for c in configs:
        if "error" in c.info:
            c.status, c.error = "model-failed", c.info["error"]
        elif c.engine != "kiln" and peers[c.engine].skip:
            c.status, c.error = "skipped", peers[c.engine].skip

    kiln_cfgs = [c for c in configs if c.engine == "kiln" and
                 c.status == "planned"]
    runnable = lambda: [c for c in configs if c.status in ("compiled",
                                                           "planned",
                                                           "measured")]
    rounds = st["study"]["rounds"]
    profile = st["profile"]["enabled"]
    # Costs for the ETA: a compile ~ 4 runs of a configuration.
    total = 4 * len(kiln_cfgs) + rounds * len(runnable()) + len(kiln_cfgs)
    prog = Progress(total, tty=None if not args.quiet else False)
    if args.quiet:
        prog.end = lambda *a, **k: None
        prog.begin = lambda *a, **k: None

    for c in kiln_cfgs:
        prog.begin(f"compile {c.label()}")
        ok = runner.compile_config(tools, c, out)
        prog.end(f"compiled {c.label()}", 4,
                 f"{c.compile_s:.1f} s" if ok else c.error)

    todo = [c for c in configs if c.status in ("compiled", "planned")]
    for r in range(rounds):
        shift = r % max(len(todo), 1)
        order = todo[shift:] + todo[:shift]
        for c in order:
            if c.status not in ("compiled", "planned", "measured"):
                continue
            prog.begin(f"round {r + 1}/{rounds}: {c.label()}")
            note = ""
            try:
                if c.engine == "kiln":
                    runner.measure_kiln(tools, c, st, out, r)
                else:
                    peers[c.engine].measure(c, st, r)
                c.status = "measured"
                note = f"median {sorted(c.samples[-1])[len(c.samples[-1]) // 2]:.3f} ms" \
                    if c.samples and c.samples[-1] else ""
            except Exception as e:
                c.status, c.error = "run-failed", str(e)
                note = c.error
            prog.end(f"round {r + 1}/{rounds}: {c.label()}", 1, note)

    for c in [c for c in configs if c.engine == "kiln" and
              c.status == "measured"]:
        prog.begin(f"check/profile {c.label()}")
        try:
            runner.check_and_profile(tools, c, st, out, profile)
            note = ""
            if c.self_check:
                note = "outputs " + ("within" if c.self_check["pass"] else
                                     "OUTSIDE") + " the variant's tolerance"
        except Exception as e:
            note = f"check/profile failed: {e}"
            c.self_check = {"pass": False, "reasons": [str(e)]}
        prog.end(f"check/profile {c.label()}", 1, note)
    prog.finish()

    env = environment(tools, st["study"]["threads"])
    env["load_before"] = load_before
    env["load_after"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    env["wall_s"] = round(time.monotonic() - started, 1)
    manifest_cfg = next(iter(models.manifests.values()), {}).get("config") \
        if models.manifests else None
    task_def = task_definition(st, manifest_cfg)
    report.write(out, st, configs, env, peers, ablation_passes, task_def)

    # The seed's table on stdout.
    with open(os.path.join(out, "report.md")) as f:
        text = f.read()
    start = text.find("## The variants")
    end = text.find("\n## ", start + 1)
    print(text[start:end if end > 0 else None].strip())
    failed = [c for c in configs if c.status not in ("measured",
                                                      "skipped")]
    print(f"\nReport: {os.path.join(out, 'report.md')} (results.json, "
          f"results.csv, plots/); {len(configs)} configurations, "
          f"{len(failed)} failed; {format_seconds(env['wall_s'])}.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
