#!/usr/bin/env python3
#===- test/E2E/cluster.py - Kiln's tools under mpirun, on the CPU ---------===#
#
# The cluster issue's CPU tests (docs/cluster.md), each under
# `mpirun --oversubscribe -n N` with one thread per rank:
#
#   1. tensor parallel: a Llama-style decoder exported by PyTorch (GQA with
#      a KV cache, rotary embeddings, SwiGLU, dynamic batch/sequence/past)
#      compiled with --tensor-parallel=N for N = 2 and 4; every rank's
#      logits equal ONNX Runtime's on the full model and its present K/V
#      equal ONNX Runtime's heads of that rank (fp32 tolerance), and the
#      model compiled for one process agrees too; greedy ids from
#      kiln-generate under mpirun -n N equal the one-process ids;
#      the seed's decoders (models/generate_seed_variants.py --form
#      decoder, small preset), the 2x2 grid: Standard (softmax GQA, fp16),
#      Flash (linear attention, int8 QDQ: its row-parallel integer matmuls
#      sum in f32 before requantizing) and the crossed ones, each on 2
#      ranks, generate the one-process greedy ids;
#      blocks of real architectures exported by torchvision's/PyTorch's
#      exporter (models/export_torch_zoo.py): a GPT-2 block (LayerNorm,
#      multi-head attention with biases, GELU MLP) over 2 and 4 ranks and a
#      Llama block (9 query / 3 KV heads) over 3 ranks equal ONNX Runtime
#      on every rank; the report calls them tensor parallel, the group's
#      throughput one request per run; the GPT-2 block with ONNX's
#      multi-device annotations (IR 11) that split only its MLP: the
#      shards follow them and equal ONNX Runtime;
#   2. data parallel: kiln-run under mpirun -n 1, 2, 4: the JSON's
#      aggregate (pooled latency, samples/s = all ranks' samples / the
#      slowest rank's wall time, scaling efficiency) recomputed here from
#      the per-rank samples; kiln-generate's aggregate likewise;
#      `mpirun -n 2 kiln-bench` on the seed's generation study, data
#      parallel and tensor parallel: one report, its aggregates recomputed
#      here from every rank's raw samples in results.json; the shards' ids
#      identical on both ranks and equal to the one-process model's;
#   3. failures: a rank that cannot load its artifact makes the whole job
#      exit non-zero naming the rank and the reason; a rank whose outputs
#      mismatch makes every rank exit 1; a tensor-parallel artifact run
#      outside mpirun is refused with a message.
#
# Exit 77 (skipped) when mpirun is missing or Kiln was built without MPI.
#
#   cluster.py --build DIR --workdir DIR
#
#===----------------------------------------------------------------------===#

import argparse
import json
import os
import shutil
import subprocess
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
TORCH_PYTHON = "/usr/bin/python3"

failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)
    return ok


def run(cmd, env=None, timeout=600):
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env,
                          timeout=timeout)
    return proc.returncode, proc.stdout, proc.stderr


def mpirun(n, cmd):
    return run(["mpirun", "--oversubscribe", "-n", str(n)] + cmd,
               env=MPI_ENV)


MPI_ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_btl_vader_single_copy_mechanism="none",
               OMPI_MCA_rmaps_base_oversubscribe="1", OMP_NUM_THREADS="1")

HEADS, KV_HEADS, HEAD_DIM, LAYERS = 8, 4, 8, 2


def inputs(batch=2, seq=5, past=3, vocab=512, seed=0):
    rng = np.random.default_rng(seed)
    feeds = {
        "input_ids": rng.integers(0, vocab, (batch, seq)).astype(np.int64),
        "attention_mask": np.ones((batch, past + seq), np.int64),
        "position_ids": np.tile(np.arange(past, past + seq, dtype=np.int64),
                                (batch, 1)),
    }
    for i in range(LAYERS):
        for kind in ("key", "value"):
            feeds[f"past_key_values.{i}.{kind}"] = rng.standard_normal(
                (batch, KV_HEADS, past, HEAD_DIM)).astype(np.float32)
    return feeds


def tensor_parallel(args, kiln_compile, kiln_run, kiln_generate, onnx_path):
    import onnxruntime as ort
    work = args.workdir
    feeds = inputs()
    sess = ort.InferenceSession(onnx_path,
                                providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    ref = dict(zip(names, sess.run(None, feeds)))

    one = os.path.join(work, "dec.kiln")
    rc, out, err = run([kiln_compile, onnx_path, "-o", one, "--quiet"])
    if not check(rc == 0, "compile the decoder for one process"):
        print(err)
        return
    for n in (2, 4):
        pattern = os.path.join(work, f"dec.tp{n}.rank{{rank}}.kiln")
        rc, out, err = run([kiln_compile, onnx_path, "--tensor-parallel",
                            str(n), "-o", pattern, "--quiet"])
        if not check(rc == 0, f"compile the decoder for {n} ranks"):
            print(err)
            continue
        # Each rank's inputs (its heads of the KV cache) and expected
        # outputs (the logits; its heads of the present K/V).
        per = KV_HEADS // n
        for r in range(n):
            d_in = os.path.join(work, f"tp{n}", f"in{r}")
            d_out = os.path.join(work, f"tp{n}", f"expected{r}")
            os.makedirs(d_in, exist_ok=True)
            os.makedirs(d_out, exist_ok=True)
            for name, value in feeds.items():
                if name.startswith("past_key_values"):
                    value = value[:, r * per:(r + 1) * per]
                np.save(os.path.join(d_in, name + ".npy"), value)
            for k, name in enumerate(names):
                value = ref[name]
                if name.startswith("present"):
                    value = value[:, r * per:(r + 1) * per]
                np.save(os.path.join(d_out, f"output_{k}.npy"), value)
        cmd = [kiln_run, pattern, "--threads", "1", "--require-expected",
               "--expected", os.path.join(work, f"tp{n}", "expected{rank}"),
               "--rtol", "1e-4", "--atol", "1e-5"]
        for name in feeds:
            cmd += ["--input", f"{name}=" + os.path.join(
                work, f"tp{n}", "in{rank}", name + ".npy")]
        rc, out, err = mpirun(n, cmd)
        check(rc == 0 and "Tensor parallel: %d rank(s)" % n in out,
              f"mpirun -n {n}: every rank's logits and KV heads equal ONNX "
              f"Runtime's (rc {rc})")
        if rc != 0:
            print(out[-3000:], err[-3000:])
        # A shard outside mpirun: refused, naming what to do.
        rc, out, err = run([kiln_run, pattern.replace("{rank}", "0"),
                            "--threads", "1"])
        check(rc == 2 and "tensor-parallel" in err and "mpirun" in err,
              f"a {n}-rank shard run alone is refused ({err.strip()[:120]})")
        # Greedy ids: the same as one process.
        ids_one = os.path.join(work, "ids-one.npy")
        gen = ["--prompt-len", "12", "--new-tokens", "16", "--threads", "1",
               "--repeat", "1", "--warmup", "0"]
        if n == 2:
            rc, out, err = run([kiln_generate, one, "--save-ids", ids_one]
                               + gen)
            check(rc == 0, "kiln-generate, one process")
        rc, out, err = mpirun(n, [kiln_generate, pattern, "--expected",
                                  ids_one] + gen + [
                                      "--json", os.path.join(
                                          work, f"gen-tp{n}.json")])
        check(rc == 0 and "ids identical on every rank" in out and
              "(exact)" in out,
              f"mpirun -n {n} kiln-generate: greedy ids equal one "
              f"process's (rc {rc})")
        if rc != 0:
            print(out[-2000:], err[-2000:])

    # The one-process model on the same inputs, for completeness.
    d_in = os.path.join(work, "tp2", "in-full")
    d_out = os.path.join(work, "tp2", "expected-full")
    os.makedirs(d_in, exist_ok=True)
    os.makedirs(d_out, exist_ok=True)
    cmd = [kiln_run, one, "--threads", "1", "--require-expected",
           "--expected", d_out, "--rtol", "1e-4", "--atol", "1e-5"]
    for name, value in feeds.items():
        np.save(os.path.join(d_in, name + ".npy"), value)
        cmd += ["--input", f"{name}=" + os.path.join(d_in, name + ".npy")]
    for k, name in enumerate(names):
        np.save(os.path.join(d_out, f"output_{k}.npy"), ref[name])
    rc, out, err = run(cmd)
    check(rc == 0, "the one-process decoder equals ONNX Runtime")


def seed_decoders(args, kiln_compile, kiln_generate):
    work = os.path.join(args.workdir, "seed")
    subprocess.run([sys.executable, os.path.join(
        ROOT, "models", "generate_seed_variants.py"), "--out", work,
        "--preset", "small", "--form", "decoder", "--attention",
        "softmax,linear", "--precision", "fp16,int8", "--no-reference"],
        check=True, stdout=subprocess.DEVNULL)
    gen = ["--prompt-len", "32", "--new-tokens", "32", "--threads", "1",
           "--repeat", "1", "--warmup", "0"]
    for variant in ("softmax_fp16", "linear_fp16", "softmax_int8",
                    "linear_int8"):
        onnx_path = os.path.join(work, f"{variant}_decoder.onnx")
        one = os.path.join(work, f"{variant}.kiln")
        pattern = os.path.join(work, f"{variant}.rank{{rank}}.kiln")
        ids = os.path.join(work, f"{variant}.ids.npy")
        rc1, _, e1 = run([kiln_compile, onnx_path, "-o", one, "--quiet"])
        rc2, _, e2 = run([kiln_compile, onnx_path, "--tensor-parallel", "2",
                          "-o", pattern, "--quiet"])
        if not check(rc1 == 0 and rc2 == 0,
                     f"seed {variant} decoder compiles for 1 and 2 ranks"):
            print(e1, e2)
            continue
        rc, _, err = run([kiln_generate, one, "--save-ids", ids] + gen)
        rc, out, err = mpirun(2, [kiln_generate, pattern, "--expected", ids]
                              + gen)
        check(rc == 0 and "32 of 32 ids equal (exact)" in out and
              "ids identical on every rank" in out,
              f"seed {variant} decoder on 2 ranks: the one-process greedy "
              f"ids (rc {rc})")


def zoo_blocks(args, kiln_compile, kiln_run):
    import onnxruntime as ort
    work = os.path.join(args.workdir, "zoo")
    subprocess.run([TORCH_PYTHON, os.path.join(ROOT, "models",
                                               "export_torch_zoo.py"),
                    "--out", work, "--only", "gpt_block,decoder_block"],
                   check=True, stdout=subprocess.DEVNULL)
    for model, ranks in (("gpt_block", (2, 4)), ("decoder_block", (3,))):
        onnx_path = os.path.join(work, model + ".onnx")
        with open(os.path.join(work, model + ".json")) as f:
            info = json.load(f)
        x = np.random.default_rng(1).standard_normal(
            info["shape"]).astype(np.float32)
        sess = ort.InferenceSession(onnx_path,
                                    providers=["CPUExecutionProvider"])
        y = sess.run(None, {info["input"]: x})[0]
        data = os.path.join(work, model + "-data")
        os.makedirs(data, exist_ok=True)
        np.save(os.path.join(data, "input_0.npy"), x)
        np.save(os.path.join(data, "output_0.npy"), y)
        for n in ranks:
            pattern = os.path.join(work, f"{model}.tp{n}.rank{{rank}}.kiln")
            rc, _, err = run([kiln_compile, onnx_path, "--tensor-parallel",
                              str(n), "-o", pattern, "--quiet"])
            if not check(rc == 0, f"{model}: compile for {n} ranks"):
                print(err)
                continue
            rc, out, err = mpirun(n, [kiln_run, pattern, "--inputs", data,
                                      "--threads", "1", "--iterations", "2",
                                      "--require-expected", "--rtol", "1e-3",
                                      "--atol", "1e-4"])
            check(rc == 0 and f"Tensor parallel: {n} rank(s)" in out and
                  "2 samples (the group's)" in out,
                  f"{model} on {n} ranks: ONNX Runtime's output on every "
                  f"rank; reported as one model's shards (rc {rc})")
            if rc != 0:
                print(out[-2000:], err[-2000:])


def annotated_block(args, kiln_compile, kiln_run):
    """The GPT-2 block of zoo_blocks with ONNX's multi-device annotations
    (IR 11, models/annotate_sharding.py) that split only its MLP over 2
    devices and keep the attention whole: Kiln's shards follow them (one
    all-reduce instead of the two it infers), say so in the artifact, and
    equal ONNX Runtime on every rank."""
    import onnx
    import onnxruntime as ort
    sys.path.insert(0, os.path.join(ROOT, "models"))
    import annotate_sharding
    work = os.path.join(args.workdir, "zoo")
    model = onnx.load(os.path.join(work, "gpt_block.onnx"))
    annotate_sharding.annotate(model, 2, column=["/fc/MatMul"],
                               row=["/out/MatMul"],
                               replicate=["/qkv/MatMul", "/proj/MatMul"])
    onnx_path = os.path.join(work, "gpt_block_annotated.onnx")
    onnx.save(model, onnx_path)
    with open(os.path.join(work, "gpt_block.json")) as f:
        info = json.load(f)
    x = np.random.default_rng(2).standard_normal(
        info["shape"]).astype(np.float32)
    sess = ort.InferenceSession(onnx_path, providers=["CPUExecutionProvider"])
    data = os.path.join(work, "gpt_block_annotated-data")
    os.makedirs(data, exist_ok=True)
    np.save(os.path.join(data, "input_0.npy"), x)
    np.save(os.path.join(data, "output_0.npy"),
            sess.run(None, {info["input"]: x})[0])
    counts = {}
    for plan in ("auto", "inferred"):
        rc, out, err = run([kiln_compile, onnx_path, "--tensor-parallel", "2",
                            "--tensor-parallel-rank", "0",
                            "--tensor-parallel-plan", plan, "--emit=graph",
                            "-o", "-"])
        counts[plan] = out.count("kiln.all_reduce ") if rc == 0 else -1
    check(counts == {"auto": 1, "inferred": 2},
          f"annotated GPT-2 block: the annotations split the MLP alone "
          f"(all-reduces per rank {counts}; 1 as annotated, 2 inferred)")
    pattern = os.path.join(work, "gpt_block_annotated.rank{rank}.kiln")
    rc, _, err = run([kiln_compile, onnx_path, "--tensor-parallel", "2",
                      "-o", pattern, "--quiet"])
    if not check(rc == 0, "annotated GPT-2 block: compile for 2 ranks"):
        print(err)
        return
    rc, out, err = run([kiln_run, pattern.replace("{rank}", "1"), "--info"])
    check(rc == 0 and "annotations (configuration 'tp2')" in out,
          "annotated GPT-2 block: the artifact says its split follows the "
          "annotations")
    rc, out, err = mpirun(2, [kiln_run, pattern, "--inputs", data,
                              "--threads", "1", "--iterations", "2",
                              "--require-expected", "--rtol", "1e-3",
                              "--atol", "1e-4"])
    check(rc == 0 and "Tensor parallel: 2 rank(s)" in out,
          f"annotated GPT-2 block on 2 ranks: ONNX Runtime's output on "
          f"every rank (rc {rc})")
    if rc != 0:
        print(out[-2000:], err[-2000:])


def cuda_shards(args, kiln_compile):
    """The CUDA target's tensor parallelism compiles (no GPU here): the
    host code of each shard calls the CUDA shim's all-reduce (NCCL at run
    time, docs/cluster.md), one call per row-parallel matmul."""
    work = os.path.join(args.workdir, "zoo")
    onnx_path = os.path.join(work, "gpt_block.onnx")
    out = os.path.join(work, "gpt_block.cuda.rank1.ll")
    rc, _, err = run([kiln_compile, onnx_path, "--target=cuda:sm_80",
                      "--input-shapes=input:1x128x768", "--tensor-parallel=2",
                      "--tensor-parallel-rank=1", "--emit=llvm", "-o", out,
                      "--quiet"])
    if rc != 0 and "no CUDA target" in err:
        print("skipped: this build has no CUDA target")
        return
    if not check(rc == 0, "gpt_block: compiles for cuda:sm_80, 2 ranks"):
        print(err)
        return
    with open(out) as f:
        calls = f.read().count("call void @kiln_rt_cuda_all_reduce_f32(")
    check(calls == 2, f"gpt_block's CUDA shard calls the NCCL all-reduce "
                      f"twice (attention output, MLP down): {calls}")


def data_parallel(args, kiln_run, kiln_generate):
    work = args.workdir
    model = os.path.join(work, "dec.kiln")
    for n in (1, 2, 4):
        path = os.path.join(work, f"dp{n}.json")
        rc, out, err = mpirun(n, [
            kiln_run, model, "--threads", "1", "--dims",
            "batch_size=2,sequence_length=8,past_sequence_length=16,"
            "past_sequence_length___sequence_length=24",
            "--warmup", "2", "--iterations", "10", "--json", path])
        if not check(rc == 0, f"mpirun -n {n} kiln-run (data parallel)"):
            print(out[-2000:], err[-2000:])
            continue
        with open(path) as f:
            result = json.load(f)
        rc, out, err = run([sys.executable, os.path.join(
            ROOT, "scripts", "validate_json.py"), os.path.join(
            ROOT, "docs", "schemas", "kiln.run-result.v2.schema.json"), path])
        check(rc == 0, f"-n {n}: the JSON is valid kiln.run-result v2 "
                       f"({(out + err).strip()[:200]})")
        d = result["distributed"]
        ranks = d["ranks"]
        check(d["world_size"] == n and len(ranks) == n and
              [r["rank"] for r in ranks] == list(range(n)),
              f"-n {n}: one report per rank, in rank order")
        pooled = np.concatenate([r["samples_ms"] for r in ranks])
        agg = d["aggregate"]
        slowest = max(r["elapsed_s"] for r in ranks)
        samples = sum(len(r["samples_ms"]) * r["batch"] for r in ranks)
        check(np.isclose(agg["timing"]["median_ms"],
                         np.percentile(pooled, 50), rtol=1e-6) and
              np.isclose(agg["timing"]["p99_ms"], np.percentile(pooled, 99),
                         rtol=1e-6) and agg["timing"]["runs"] == len(pooled),
              f"-n {n}: pooled latency = the ranks' samples together")
        check(agg["global_samples"] == samples == 10 * 2 * n and
              np.isclose(agg["slowest_elapsed_s"], slowest, rtol=1e-6) and
              np.isclose(agg["samples_per_s"], samples / slowest, rtol=1e-6),
              f"-n {n}: samples/s = all samples / the slowest rank's time")
        for r in ranks:
            check(np.isclose(r["timing"]["median_ms"],
                             np.percentile(r["samples_ms"], 50), rtol=1e-6),
                  f"-n {n}: rank {r['rank']}'s median from its samples")
        if n > 1:
            solo = agg["solo"]
            solo_rate = len(solo["samples_ms"]) * 2 / (
                sum(solo["samples_ms"]) / 1e3)
            check(np.isclose(agg["scaling_efficiency"],
                             agg["samples_per_s"] / (n * solo["samples_per_s"]),
                             rtol=1e-6) and
                  0.5 < solo["samples_per_s"] / solo_rate < 1.01,
                  f"-n {n}: scaling efficiency = samples/s / (n x rank 0 "
                  f"alone)")
        check("functional only" in d["run_class"],
              f"-n {n}: a CPU run is labelled functional only")

    path = os.path.join(work, "gen-dp2.json")
    rc, out, err = mpirun(2, [kiln_generate, model, "--prompt-len", "8",
                              "--new-tokens", "8", "--threads", "1",
                              "--repeat", "3", "--json", path])
    if check(rc == 0 and "Data parallel: 2 rank(s)" in out,
             "mpirun -n 2 kiln-generate (data parallel)"):
        with open(path) as f:
            d = json.load(f)["distributed"]
        tokens = sum(r["output_tokens"] for r in d["ranks"])
        wall = max(r["wall_ms"][0] for r in d["ranks"])
        agg = d["aggregate"]
        ttft = np.concatenate([r["ttft_ms"] for r in d["ranks"]])
        check(tokens == 2 * 3 * 8 and agg["output_tokens"] == tokens and
              np.isclose(agg["output_tokens_per_s"], tokens / wall * 1e3,
                         rtol=1e-6) and
              np.isclose(agg["ttft_ms"]["p50"], np.percentile(ttft, 50),
                         rtol=1e-5),
              "kiln-generate -n 2: output tokens/s = all ranks' tokens / "
              "the slowest rank's time; TTFT pooled")
    else:
        print(out[-2000:], err[-2000:])


def bench_study(args):
    study = os.path.join(ROOT, "tools", "kiln-bench", "studies",
                         "seed-generation-cluster.toml")
    kiln_bench = os.path.join(args.build, "bin", "kiln-bench")
    for tp in (1, 2):
        out = os.path.join(args.workdir, f"bench-tp{tp}")
        rc, stdout, err = mpirun(2, [kiln_bench, study, "--out", out,
                                     "--rounds", "2", "--tensor-parallel",
                                     str(tp)])
        mode = "tensor parallel" if tp > 1 else "data parallel"
        if not check(rc == 0 and "on 2 rank(s)" in stdout,
                     f"mpirun -n 2 kiln-bench, {mode} (rc {rc})"):
            print(stdout[-2000:], err[-2000:])
            continue
        with open(os.path.join(out, "results.json")) as f:
            res = json.load(f)
        check(os.path.exists(os.path.join(out, "report.md")) and
              res["cluster"]["world_size"] == 2 and
              res["cluster"]["mode"] == mode.replace(" ", "_") and
              len(res["ranks"]) == 2, f"kiln-bench {mode}: one report")
        ok = True
        for v, a in res["variants"].items():
            ranks = [r["samples"][v] for r in res["ranks"]]
            group = ranks[:1] if tp > 1 else ranks
            rounds = [sum(g["tokens"][i] for g in group) /
                      (max(r["wall_ms"][i] for r in ranks) / 1e3)
                      for i in range(len(ranks[0]["wall_ms"]))]
            ttft = [t[0] for r in ranks for t in r["times"]]
            ok &= bool(np.isclose(a["output_tokens_per_s"],
                                  np.median(rounds), rtol=1e-9) and
                       np.isclose(a["ttft_ms"], np.median(ttft), rtol=1e-9))
            if tp == 1:
                solo = ranks[0]
                alone = np.median([n / (w / 1e3) for n, w in zip(
                    solo["solo_tokens"], solo["solo_wall_ms"])])
                ok &= bool(np.isclose(a["scaling_efficiency"],
                                      np.median(rounds) / (2 * alone),
                                      rtol=1e-9))
        check(ok, f"kiln-bench {mode}: throughput per round = tokens / the "
              f"slowest rank's wall time, TTFT pooled, efficiency against "
              f"rank 0 alone, as recomputed from the raw samples")
        if tp > 1:
            ids = res["tensor_parallel_ids"]
            check(ids and all(x["identical_on_every_rank"] and
                              x["equal_to_one_process"]
                              for x in ids.values()),
                  "kiln-bench tensor parallel: the shards' ids equal the "
                  "one-process model's")


def failures_propagate(args, kiln_run):
    work = args.workdir
    model = os.path.join(work, "dec.kiln")
    only0 = os.path.join(work, "only0")
    os.makedirs(only0, exist_ok=True)
    shutil.copy(model, os.path.join(only0, "m0.kiln"))
    rc, out, err = mpirun(2, [kiln_run, os.path.join(only0, "m{rank}.kiln"),
                              "--threads", "1", "--iterations", "2"])
    check(rc != 0 and "rank 1 of 2" in err and "m1.kiln" in err,
          f"a failing rank ends the job non-zero, naming rank and reason "
          f"(rc {rc}: {err.strip().splitlines()[0] if err.strip() else ''})")
    # Rank 1 compares against outputs that are not its own: exit 1.
    exp = os.path.join(work, "expected-rank")
    dims = ("batch_size=1,sequence_length=4,past_sequence_length=2,"
            "past_sequence_length___sequence_length=6")
    rc, out, err = run([kiln_run, model, "--threads", "1", "--dims", dims,
                        "--save-outputs", os.path.join(exp + "0")])
    shutil.rmtree(exp + "1", ignore_errors=True)
    shutil.copytree(exp + "0", exp + "1")
    logits = np.load(os.path.join(exp + "1", "output_0.npy"))
    np.save(os.path.join(exp + "1", "output_0.npy"), logits + 1.0)
    rc, out, err = mpirun(2, [kiln_run, model, "--threads", "1", "--dims",
                              dims, "--expected", exp + "{rank}"])
    check(rc == 1 and "rank 1" in out and "mismatched" in out,
          f"a rank whose outputs mismatch: exit 1 on every rank (rc {rc})")


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--build", required=True)
    parser.add_argument("--workdir", required=True)
    args = parser.parse_args()
    bin_dir = os.path.join(args.build, "bin")
    kiln_compile = os.path.join(bin_dir, "kiln-compile")
    kiln_run = os.path.join(bin_dir, "kiln-run")
    kiln_generate = os.path.join(bin_dir, "kiln-generate")
    if not shutil.which("mpirun"):
        print("SKIPPED: mpirun not found (scripts/setup.sh installs "
              "openmpi-bin)")
        return 77
    rc, out, err = run(["mpirun", "--oversubscribe", "-n", "2", kiln_run,
                        "--list-devices"], env=MPI_ENV)
    if rc != 0 and "built without MPI" in err:
        print("SKIPPED: Kiln was built without MPI")
        return 77
    os.makedirs(args.workdir, exist_ok=True)
    onnx_path = os.path.join(args.workdir, "dec.onnx")
    subprocess.run([TORCH_PYTHON, os.path.join(ROOT, "models",
                                               "export_torch_decoder.py"),
                    "-o", onnx_path, "--layers", str(LAYERS), "--mode",
                    "generation", "--vocab", "512", "--dim",
                    str(HEADS * HEAD_DIM), "--heads", str(HEADS),
                    "--kv-heads", str(KV_HEADS), "--ffn", "128"],
                   check=True, stdout=subprocess.DEVNULL)
    tensor_parallel(args, kiln_compile, kiln_run, kiln_generate, onnx_path)
    seed_decoders(args, kiln_compile, kiln_generate)
    zoo_blocks(args, kiln_compile, kiln_run)
    annotated_block(args, kiln_compile, kiln_run)
    cuda_shards(args, kiln_compile)
    data_parallel(args, kiln_run, kiln_generate)
    bench_study(args)
    failures_propagate(args, kiln_run)
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
