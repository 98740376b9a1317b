#!/usr/bin/env python3
#===- scripts/bench_generation.py - Kiln against ORT on real decoders ------===#
#
# Text generation on a real PyTorch export of a Llama-style decoder
# (models/export_torch_decoder.py --mode generation: RoPE, GQA, a tied LM
# head, optimum's inputs with dynamic axes), at one or more depths:
#
#   * Kiln: the artifact compiled once without shape flags, the runtime's
#     generation loop (kiln.InferenceSession.generate);
#   * ONNX Runtime step by step (kiln.stepwise: a Python loop feeding
#     present -> past, as users write it);
#   * onnxruntime-genai (its C++ loop; genai_config.json from the export).
#
# Each engine generates N tokens greedily after a seeded prompt of P tokens,
# in interleaved rounds; TTFT, TPOT (= (E2E - TTFT)/(N - 1)) and tokens/s
# (1/TPOT) are medians over the rounds, and the greedy ids of every engine
# are compared with ONNX Runtime's. The compile time is measured too.
#
#   bench_generation.py --layers 2,30 [--prompt 128] [--new 64]
#       [--rounds 3] [--threads 2] [--precisions fp32,bf16]
#       [--workdir DIR] [--markdown FILE]
#
# --precisions: Kiln artifacts compiled with each kiln-compile --precision
# (fp32, fp16, bf16: weights and matmuls in the half type, softmax, norms
# and residual adds kept in fp32) run in the same rounds as "kiln-<p>"; the
# peers run the fp32 model. A half-precision artifact's ids are compared
# with ONNX Runtime's fp32 ids (token agreement, not exactness).
#
# The export runs with Debian's python3-torch (/usr/bin/python3).
#
#===----------------------------------------------------------------------===#

import argparse
import os
import platform
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "build", "python"))

import kiln  # noqa: E402
from kiln import stepwise  # noqa: E402
from bench_cpu import cpu_name  # noqa: E402  (scripts/ is sys.path[0])


def genai_generate(model, prompt, new):
    import onnxruntime_genai as og
    params = og.GeneratorParams(model)
    params.set_search_options(max_length=len(prompt) + new,
                              min_length=len(prompt) + new, do_sample=False)
    gen = og.Generator(model, params)
    start = time.perf_counter()
    gen.append_tokens(np.array([prompt], np.int32))
    ids, times = [], []
    while not gen.is_done():
        gen.generate_next_token()
        ids.append(int(gen.get_next_tokens()[0]))
        times.append((time.perf_counter() - start) * 1e3)
    return ids, times


def main():
    ap = argparse.ArgumentParser(description="Text generation on a real "
                                 "decoder: Kiln against ONNX Runtime and "
                                 "onnxruntime-genai")
    ap.add_argument("--layers", default="2,30")
    ap.add_argument("--prompt", type=int, default=128)
    ap.add_argument("--new", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--workdir", default=os.path.join(ROOT, "build",
                                                      "bench-generation"))
    ap.add_argument("--torch-python", default="/usr/bin/python3")
    ap.add_argument("--precisions", default="fp32",
                    help="comma-separated kiln-compile --precision values "
                         "(fp32, fp16, bf16)")
    ap.add_argument("--markdown")
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    import onnxruntime as ort
    import onnxruntime_genai as og

    rows = []
    for layers in [int(x) for x in args.layers.split(",")]:
        name = f"llama{layers}"
        onnx_path = os.path.join(args.workdir, f"{name}.onnx")
        genai_dir = os.path.join(args.workdir, f"{name}-genai")
        subprocess.run([args.torch_python, os.path.join(
            ROOT, "models", "export_torch_decoder.py"), "-o", onnx_path,
            "--layers", str(layers), "--mode", "generation", "--genai",
            genai_dir], check=True)
        kiln_sessions, compile_s = {}, {}
        for precision in args.precisions.split(","):
            engine = "kiln" if precision == "fp32" else f"kiln-{precision}"
            kiln_path = os.path.join(args.workdir, f"{name}-{precision}.kiln")
            start = time.time()
            subprocess.run([os.path.join(ROOT, "build", "bin", "kiln-compile"),
                            onnx_path, "-o", kiln_path,
                            f"--precision={precision}"], check=True,
                           stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
            compile_s[engine] = time.time() - start
            kiln_sessions[engine] = kiln.InferenceSession(
                kiln_path, threads=args.threads)
        options = ort.SessionOptions()
        options.intra_op_num_threads = args.threads
        os_ = ort.InferenceSession(onnx_path, options,
                                   providers=["CPUExecutionProvider"])
        gm = og.Model(genai_dir)
        rng = np.random.default_rng(0)
        prompt = [int(t) for t in rng.integers(0, 49152, args.prompt)]

        def run(engine):
            if engine in kiln_sessions:
                r = kiln_sessions[engine].generate([prompt],
                                                   max_new_tokens=args.new)
                return r["tokens"][0], r["step_ms"]
            if engine == "onnxruntime":
                r = stepwise.generate(os_, [prompt], args.new)
                return r["tokens"][0], [t * 1e3 for t in r["token_times"]]
            return genai_generate(gm, prompt, args.new)

        engines = list(kiln_sessions) + ["onnxruntime", "onnxruntime-genai"]
        for e in engines:  # warm-up
            run(e)
        samples = {e: [] for e in engines}
        for r in range(args.rounds):
            k = r % len(engines)
            for e in engines[k:] + engines[:k]:
                samples[e].append(run(e))
        ref = samples["onnxruntime"][0][0]
        for e in engines:
            ttft = float(np.median([t[0] for _, t in samples[e]]))
            tpot = float(np.median([(t[-1] - t[0]) / (len(t) - 1)
                                    for _, t in samples[e]]))
            agree = float(np.mean(np.array(samples[e][0][0]) ==
                                  np.array(ref)))
            rows.append(dict(layers=layers, engine=e, ttft=ttft, tpot=tpot,
                             rate=1e3 / tpot, agree=agree,
                             compile_s=compile_s.get(e)))
            print(f"{name} {e:18} TTFT {ttft:8.1f} ms  TPOT {tpot:7.2f} ms  "
                  f"{1e3 / tpot:6.1f} tok/s  ids = ORT's: {agree:.3f}"
                  + (f"  (compiled in {compile_s[e]:.1f} s)"
                     if e in compile_s else ""), flush=True)
    if args.markdown:
        cpu = cpu_name()
        with open(args.markdown, "w") as f:
            f.write("# Text generation on the CPU: Kiln against ONNX Runtime "
                    "and onnxruntime-genai\n\n")
            f.write(f"`scripts/bench_generation.py --layers {args.layers} "
                    f"--prompt {args.prompt} --new {args.new} --rounds "
                    f"{args.rounds} --threads {args.threads} --precisions "
                    f"{args.precisions}` on {cpu} "
                    f"({os.cpu_count()} cores), {time.strftime('%Y-%m-%d')}, "
                    f"Python {platform.python_version()}, onnxruntime "
                    f"{ort.__version__}, onnxruntime-genai "
                    f"{og.__version__}. The model: "
                    "models/export_torch_decoder.py --mode generation (a "
                    "PyTorch 1.13 export of a Llama-style decoder, random "
                    "weights: d 576, 9/3 heads of 64, FFN 1536, vocab 49152, "
                    "RoPE, tied LM head; 30 layers is SmolLM2-135M's shape), "
                    "batch 1, greedy; medians of interleaved rounds; "
                    "`kiln` is the fp32 artifact, `kiln-bf16`/`kiln-fp16` "
                    "the same model compiled with --precision (their ids "
                    "compared with ONNX Runtime's fp32 ids). "
                    "The machine is shared: compare within a row group.\n\n")
            f.write("| layers | engine | TTFT ms | TPOT ms | tokens/s | "
                    "ids = ORT's | Kiln compile s |\n"
                    "|---:|---|---:|---:|---:|---:|---:|\n")
            for r in rows:
                f.write(f"| {r['layers']} | {r['engine']} | {r['ttft']:.1f} "
                        f"| {r['tpot']:.2f} | {r['rate']:.1f} | "
                        f"{r['agree']:.3f} | "
                        + (f"{r['compile_s']:.1f}" if r["compile_s"] else "")
                        + " |\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
