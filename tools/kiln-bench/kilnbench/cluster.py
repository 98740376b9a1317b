#===- kilnbench/cluster.py - A generation study over the ranks of a world -===#
#
# `mpirun -n N kiln-bench STUDY.toml` with a generation study
# (docs/cluster.md): the seed's task run by N processes, one per device,
# and one report written by rank 0.
#
#   1. rank 0 writes the decoders and compiles them (the others wait);
#      with [cluster] tensor_parallel = N also one artifact per rank
#      (kiln-compile --tensor-parallel=N); the paths are broadcast (a shared
#      folder: one node, or a cluster's shared file system);
#   2. tensor parallel only: rank 0 generates the task alone with the
#      one-process model; every rank then generates it on its shard, and
#      the ids must be identical on every rank and equal to those;
#   3. the task in rounds, the variants' order rotated each round. Data
#      parallel: per (round, variant) every rank generates once untimed
#      (the variant's weights back in the caches), rank 0 generates alone
#      while the others wait without spinning (the one-rank baseline),
#      then, after a barrier, every
#      rank generates its own request (the global work of the round: N
#      requests); tensor parallel: every rank runs the same request on its
#      shard (the global work: one request), after rank 0 has run it alone
#      with the one-process model (the latency baseline). Each rank times
#      on its own steady clock from the barrier;
#   4. every rank's samples go to rank 0, which aggregates: latencies
#      (TTFT, TPOT, E2E) pooled over the ranks; per round, output tokens/s
#      = the round's output tokens of all ranks (tensor parallel: of one)
#      / the slowest rank's wall time, and tasks/hour likewise; the
#      medians over the rounds are reported; scaling efficiency = that
#      throughput / (N x rank 0's throughput alone).
#
# Writes results.json (with every rank's raw samples) and report.md.
#
#===----------------------------------------------------------------------===#

import json
import os
import platform
import statistics
import sys
import time

import numpy as np

from . import generation, runner


def median(values):
    return statistics.median(values) if values else None


def _compile_tp(kiln, onnx_path, pattern, ranks):
    start = time.time()
    for r in range(ranks):
        kiln.compile(onnx_path, flags=[f"--tensor-parallel={ranks}",
                                       f"--tensor-parallel-rank={r}"]).save(
            pattern.replace("{rank}", str(r)))
    return time.time() - start


def run(study, out, build_dir, say, world):
    tools = runner.Tools(build_dir)
    kiln = tools.kiln
    st, task = study["study"], study["task"]
    tp = int(study["cluster"]["tensor_parallel"])
    rank, size = world.rank(), world.size()
    if tp > 1 and tp != size:
        if rank == 0:
            print(f"kiln-bench: error: [cluster] tensor_parallel = {tp} needs "
                  f"mpirun -n {tp} (this world has {size} rank(s))",
                  file=sys.stderr)
        return 2
    threads = st["threads"]
    variants = list(study["models"]["variants"])
    models = os.path.join(out, "models")

    # 1. Models and compiles, on rank 0.
    setup = {}
    if rank == 0:
        setup["config"] = generation.write_decoders(study, models, variants,
                                                    say)
        setup["paths"], setup["errors"], setup["compile_s"] = {}, {}, {}
        for v in variants:
            onnx_path = os.path.join(models, f"{v}_decoder.onnx")
            p = {"onnx": onnx_path,
                 "kiln": os.path.join(out, f"{v}_decoder.kiln")}
            if tp > 1:
                p["shard"] = os.path.join(out, f"{v}_decoder.rank{{rank}}"
                                               f".kiln")
            setup["paths"][v] = p
            say(f"compiling {v}" + (f" (and {tp} shards)" if tp > 1 else ""))
            try:
                s = runner._in_child(generation._compile, kiln, onnx_path,
                                     p["kiln"])
                if tp > 1:
                    s += runner._in_child(_compile_tp, kiln, onnx_path,
                                          p["shard"], tp)
                setup["compile_s"][v] = s
            except RuntimeError as e:
                setup["errors"][v] = str(e).splitlines()[0]
                say(f"  {v}: compile failed: {setup['errors'][v]}")
    world.barrier(idle=True)  # the others wait for rank 0's compiles
    setup = json.loads(world.broadcast(json.dumps(setup)))
    cfg, paths, errors = setup["config"], setup["paths"], setup["errors"]
    variants = [v for v in variants if v not in errors]

    sessions = {}

    def session(v, shard):
        key = (v, shard)
        if key not in sessions:
            path = paths[v]["shard" if shard else "kiln"]
            sessions[key] = kiln.InferenceSession(
                path.replace("{rank}", str(rank)), threads=threads)
        return sessions[key]

    rng = np.random.default_rng(st["seed"] + 17)
    prompts = [list(map(int, rng.integers(0, cfg["vocab"], task["prompt"])))
               for _ in range(task["batch"])]
    new_tokens = task["new_tokens"]

    # 2. Tensor parallel: the shards' ids against the one-process model's.
    ids = {}
    if tp > 1:
        for v in variants:
            one = None
            if rank == 0:
                one = session(v, False).generate(
                    prompts, max_new_tokens=new_tokens)["tokens"]
            world.barrier(idle=True)
            mine = session(v, True).generate(
                prompts, max_new_tokens=new_tokens)["tokens"]
            every = world.gather(json.dumps(mine))
            if rank == 0:
                shards = [json.loads(x) for x in every]
                ids[v] = {"identical_on_every_rank":
                          all(s == shards[0] for s in shards),
                          "equal_to_one_process": shards[0] == one}

    # 3. The task.
    shard = tp > 1
    samples = {v: {"times": [], "tokens": [], "wall_ms": [],
                   "solo_times": [], "solo_tokens": [], "solo_wall_ms": []}
               for v in variants}
    for v in variants:  # warm-up, untimed
        for _ in range(st["warmup"]):
            session(v, shard).generate(prompts, max_new_tokens=new_tokens)
    for r in range(st["rounds"]):
        if rank == 0:
            say(f"task round {r + 1}/{st['rounds']} on {size} rank(s)")
        order = variants[r % len(variants):] + variants[:r % len(variants)]
        for v in order:
            s = session(v, shard)
            if size > 1:
                # Untimed first: the variant's weights back in the caches,
                # so rank 0's run alone is not the cold one of the pair.
                s.generate(prompts, max_new_tokens=new_tokens)
                world.barrier()
                if rank == 0:
                    alone = session(v, False) if shard else s
                    if shard:  # the one-process model, warm too
                        alone.generate(prompts, max_new_tokens=new_tokens)
                    start = time.perf_counter()
                    g = alone.generate(prompts, max_new_tokens=new_tokens)
                    samples[v]["solo_wall_ms"].append(
                        (time.perf_counter() - start) * 1e3)
                    samples[v]["solo_times"].append(g["step_ms"])
                    samples[v]["solo_tokens"].append(
                        sum(len(t) for t in g["tokens"]))
                world.barrier(idle=True)  # the others wait, not spinning
            world.barrier()
            start = time.perf_counter()
            g = s.generate(prompts, max_new_tokens=new_tokens)
            samples[v]["wall_ms"].append((time.perf_counter() - start) * 1e3)
            samples[v]["times"].append(g["step_ms"])
            samples[v]["tokens"].append(sum(len(t) for t in g["tokens"]))

    # 4. To rank 0.
    mine = {"rank": rank, "host": world.hostname(),
            "local_rank": world.local_rank(), "device": "cpu",
            "samples": samples}
    every = world.gather(json.dumps(mine))
    if rank != 0:
        return 0
    ranks = [json.loads(x) for x in every]
    results = {"schema": "kiln.generation-cluster-study", "version": 1,
               "study": st, "task": task, "config": cfg,
               "cluster": describe(world, tp, threads, st, task, ranks),
               "compile_s": setup["compile_s"], "errors": errors,
               "tensor_parallel_ids": ids,
               "variants": {v: aggregate(ranks, v, tp, size)
                            for v in variants},
               "ranks": ranks}
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump(results, f, indent=1)
        f.write("\n")
    text = report(study, results)
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write(text)
    print(text)
    bad = [v for v, x in ids.items()
           if not (x["identical_on_every_rank"] and
                   x["equal_to_one_process"])]
    if bad:
        print(f"kiln-bench: error: tensor-parallel ids differ for "
              f"{', '.join(bad)}", file=sys.stderr)
        return 1
    return 0


def describe(world, tp, threads, st, task, ranks):
    cores = os.cpu_count() or 0
    per_node = world.local_size()
    functional = ["CPU ranks share one node's cores and memory bandwidth"]
    if per_node * max(threads, 1) > cores:
        functional.append(f"oversubscribed: {per_node} rank(s) x "
                          f"{max(threads, 1)} thread(s) on {cores} core(s)")
    return {
        "launcher": world.launcher(), "library": world.library(),
        "world_size": world.size(), "nodes": world.nodes(),
        "ranks_per_node": per_node, "tensor_parallel": tp,
        "mode": "tensor_parallel" if tp > 1 else "data_parallel",
        "rank_map": [{"rank": r["rank"], "host": r["host"],
                      "local_rank": r["local_rank"], "device": r["device"]}
                     for r in ranks],
        "cpu": platform.processor() or platform.machine(),
        "threads_per_rank": threads, "warmup": st["warmup"],
        "rounds": st["rounds"],
        "run_class": "functional only (" + "; ".join(functional) + ")",
        "aggregation": (
            "latencies (TTFT, TPOT, E2E) pooled over every rank's "
            "generations; per round, output tokens/s = output tokens of "
            + ("one rank (the group serves one request)" if tp > 1 else
               "all ranks") + " / the slowest rank's wall time from the "
            "round's barrier, tasks/hour likewise; the medians over rounds "
            "are reported; scaling efficiency = that throughput / (world "
            "size x rank 0's throughput alone)")}


def aggregate(ranks, v, tp, size):
    """The variant's per-rank and aggregated figures (see the file
    comment)."""
    per_rank, ttft, tpot, e2e = [], [], [], []
    for r in ranks:
        s = r["samples"][v]
        times = s["times"]
        row = generation.summarize(times, [[[0] * n] for n in s["tokens"]])
        row.update({"rank": r["rank"], "host": r["host"],
                    "wall_ms": median(s["wall_ms"])})
        per_rank.append(row)
        ttft += [t[0] for t in times]
        e2e += [t[-1] for t in times]
        tpot += [(t[-1] - t[0]) / (len(t) - 1) for t in times if len(t) > 1]
    rounds = len(ranks[0]["samples"][v]["wall_ms"])
    tput, tasks = [], []
    for i in range(rounds):
        wall = max(r["samples"][v]["wall_ms"][i] for r in ranks)
        group = ranks[:1] if tp > 1 else ranks
        tokens = sum(r["samples"][v]["tokens"][i] for r in group)
        tput.append(tokens / (wall / 1e3))
        tasks.append(len(group) * 3600e3 / wall)
    out = {"per_rank": per_rank,
           "ttft_ms": median(ttft), "tpot_ms": median(tpot),
           "e2e_ms": median(e2e), "p99_e2e_ms":
           float(np.percentile(e2e, 99)) if e2e else None,
           "output_tokens_per_s": median(tput), "tasks_per_hour":
           median(tasks), "rounds_output_tokens_per_s": tput}
    solo = ranks[0]["samples"][v]
    if solo["solo_wall_ms"]:
        alone = [n / (w / 1e3) for n, w in zip(solo["solo_tokens"],
                                              solo["solo_wall_ms"])]
        out["solo_output_tokens_per_s"] = median(alone)
        out["solo_e2e_ms"] = median([t[-1] for t in solo["solo_times"]])
        out["scaling_efficiency"] = median(tput) / (size * median(alone))
        if tp > 1:  # the group's latency against one process's
            out["speedup_vs_one_process"] = out["solo_e2e_ms"] / out["e2e_ms"]
    return out


def fmt(x, digits=2):
    return "n/a" if x is None else f"{x:.{digits}f}"


def report(study, results):
    c = results["cluster"]
    task = results["task"]
    lines = [f"# {study['study']['title'] or study['study']['name']}: "
             f"{c['mode'].replace('_', ' ')} on {c['world_size']} rank(s)", ""]
    lines += [
        f"- launcher: {c['launcher']} ({c['library']}); world size "
        f"{c['world_size']}, {c['nodes']} node(s), {c['ranks_per_node']} "
        f"rank(s) per node; tensor-parallel degree {c['tensor_parallel']}",
        "- ranks: " + ", ".join(f"{r['rank']} -> {r['host']} (local "
                                f"{r['local_rank']}, {r['device']})"
                                for r in c["rank_map"]),
        f"- task: prompt {task['prompt']} tokens, {task['new_tokens']} new "
        f"tokens, batch {task['batch']}; {c['threads_per_rank']} thread(s) "
        f"per rank, {c['warmup']} warm-up, {c['rounds']} round(s); preset "
        f"{study['models']['preset']} (d_model {results['config']['d_model']},"
        f" {results['config']['layers']} layers)",
        f"- run: **{c['run_class']}**",
        f"- aggregation: {c['aggregation']}", ""]
    if results["tensor_parallel_ids"]:
        lines += ["| variant | ids identical on every rank | equal to one "
                  "process |", "|---|---|---|"]
        for v, x in results["tensor_parallel_ids"].items():
            lines.append(f"| {v} | {x['identical_on_every_rank']} | "
                         f"{x['equal_to_one_process']} |")
        lines.append("")
    tp = c["tensor_parallel"] > 1
    lines += ["| variant | TTFT ms | TPOT ms | E2E ms | p99 E2E ms | output "
              "tokens/s | tasks/hour | one process alone: E2E ms, tokens/s | "
              + ("speedup (E2E) |" if tp else "scaling efficiency |"),
              "|---|---|---|---|---|---|---|---|---|"]
    for v, a in results["variants"].items():
        eff = a.get("scaling_efficiency")
        last = (fmt(a.get("speedup_vs_one_process")) + "x") if tp else (
            "n/a" if eff is None else f"{100 * eff:.0f}%")
        lines.append(
            f"| {v} ({generation.ROLES.get(v, '')}) | {fmt(a['ttft_ms'])} | "
            f"{fmt(a['tpot_ms'])} | {fmt(a['e2e_ms'])} | "
            f"{fmt(a['p99_e2e_ms'])} | {fmt(a['output_tokens_per_s'], 1)} | "
            f"{fmt(a['tasks_per_hour'], 0)} | {fmt(a.get('solo_e2e_ms'))}, "
            f"{fmt(a.get('solo_output_tokens_per_s'), 1)} | {last} |")
    lines += ["", "Per rank (medians over the rounds):", "",
              "| variant | rank | host | TTFT ms | TPOT ms | E2E ms | wall "
              "ms |", "|---|---|---|---|---|---|---|"]
    for v, a in results["variants"].items():
        for r in a["per_rank"]:
            lines.append(f"| {v} | {r['rank']} | {r['host']} | "
                         f"{fmt(r['ttft_ms'])} | {fmt(r['tpot_ms'])} | "
                         f"{fmt(r['e2e_ms'])} | {fmt(r['wall_ms'])} |")
    if results["errors"]:
        lines += [""] + [f"- {v}: not compiled: {e}"
                         for v, e in results["errors"].items()]
    lines += ["", "ONNX Runtime, onnxruntime-genai, llama-bench's pp/tg, the "
              "depth sweep and the kernel profile are the one-process "
              "study's (run kiln-bench without mpirun); this report "
              "measures Kiln's own generation over the ranks.", ""]
    return "\n".join(lines)
