#!/usr/bin/env python3
#===- test/E2E/generation.py - Text generation with compiled decoders -----===#
#
# The seed's variants in their decoder form (models/generate_seed_variants.py
# --form decoder, small preset: a KV cache as optimum exports it for softmax
# attention, a recurrent state for linear attention), each compiled ONCE
# without shape flags (batch, sequence and past length are symbols), then:
#
#   * greedy generation of NEW tokens after a PROMPT-token prompt, through
#     the runtime's loop (kiln.InferenceSession.generate and the
#     kiln-generate tool with --expected), must give EXACTLY the ids of the
#     numpy reference (seed_reference.greedy_generate: a full forward pass
#     over the whole sequence at every step, no cache) for the fp32 and fp16
#     variants, and agree on at least INT8_AGREEMENT of them for int8 (a
#     quantization step flipped by float rounding changes the rest of a
#     sequence; the agreement is printed);
#   * ONNX Runtime's step loop over the same ONNX (kiln.stepwise, a Python
#     loop feeding present -> past) must give the reference ids too: the
#     models and the reference are checked against a third implementation;
#   * prompts of different lengths served together (left-padded, masked)
#     give the same ids as each served alone, in a static batch and with
#     in-flight batching (kiln-generate --serve: requests of different
#     prompt and output lengths arriving all at once and as a Poisson
#     stream, admitted and retired between decode steps, --check-alone);
#   * sampling is reproducible from its seed and differs across seeds;
#   * bad input is a clear error: an empty prompt, an id outside the vocab,
#     a prompt + new tokens over max_length, a model that is not a decoder;
#   * kiln-generate's --json conforms to its schema;
#   * the static-cache decoders (--form decoder-static, variants
#     softmax_fp32_static and softmax_fp16_static: ONNX Runtime GenAI's
#     shared buffer, TensorScatter at cache_position) compile with every
#     present aliasing its past (the artifact's "aliases"), give the
#     reference ids exactly, and copy 0 bytes of cache per decode step,
#     where the Concat decoders copy their whole past every step (the
#     counts are checked against the cache's size); kiln_session_run with
#     runtime-allocated outputs leaves the caller's cache as it was.
#
#   generation.py --workdir DIR [--variants softmax_fp32,...] [--new N]
#
# Exit status 0 when everything holds, 1 otherwise.
#
#===----------------------------------------------------------------------===#

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np
import onnxruntime as ort

import kiln
from kiln import stepwise

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
VARIANTS = ["softmax_fp32", "softmax_fp16", "softmax_int8", "linear_fp32",
            "linear_fp16", "linear_int8", "softmax_fp32_static",
            "softmax_fp16_static"]
PROMPT, NEW = 24, 64
INT8_AGREEMENT = 0.75
failures = []


def check(ok, what):
    print(("ok    " if ok else "FAIL  ") + what, flush=True)
    if not ok:
        failures.append(what)


def _dtype(onnx_type):
    return {"tensor(float)": np.float32,
            "tensor(float16)": np.float16}[onnx_type]


def tool(name):
    return os.path.join(ROOT, "build", "bin", name) if not os.environ.get(
        "KILN_BIN_DIR") else os.path.join(os.environ["KILN_BIN_DIR"], name)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--new", type=int, default=NEW)
    ap.add_argument("--bin-dir", help="where kiln-generate is (default: "
                    "build/bin beside the sources)")
    args = ap.parse_args()
    if args.bin_dir:
        os.environ["KILN_BIN_DIR"] = args.bin_dir
    variants = args.variants.split(",")
    os.makedirs(args.workdir, exist_ok=True)
    models = os.path.join(args.workdir, "models")
    precisions = sorted({v.split("_")[1] for v in variants})
    attentions = sorted({v.split("_")[0] for v in variants})
    forms = ["decoder"] + (["decoder-static"] if any(
        v.endswith("_static") for v in variants) else [])
    subprocess.run([sys.executable, os.path.join(ROOT, "models",
                                                 "generate_seed_variants.py"),
                    "--out", models, "--form", ",".join(forms),
                    "--attention", ",".join(attentions),
                    "--precision", ",".join(precisions),
                    "--prompt-len", str(PROMPT), "--new-tokens",
                    str(args.new)], check=True)

    rows = []
    for v in variants:
        static = v.endswith("_static")
        name = (v[:-len("_static")] + "_decoder_static" if static else
                f"{v}_decoder")
        onnx_path = os.path.join(models, f"{name}.onnx")
        prompt = np.load(os.path.join(models, name, "generation",
                                      "prompt.npy"))
        ids_path = os.path.join(models, name, "generation", "ids.npy")
        ref = np.load(ids_path)
        start = time.time()
        try:
            artifact = kiln.compile(onnx_path)
        except kiln.CompileError as e:
            check(False, f"{v}: compiles without shape flags: "
                  f"{str(e).splitlines()[0]}")
            continue
        compile_s = time.time() - start
        path = os.path.join(args.workdir, f"{name}.kiln")
        artifact.save(path)
        session = kiln.InferenceSession(path, threads=2)
        symbols = session.symbols
        check(("max_sequence_length" if static else "past_sequence_length")
              in symbols or v.startswith("linear"),
              f"{v}: the cache length is a symbol ({', '.join(symbols)})")
        state = [i for i in session.get_inputs()
                 if i.name.startswith("past")]
        aliases = {a["output"]: a["input"] for a in
                   session.get_modelmeta().get("aliases", [])}
        if static:
            check(len(state) > 0 and all(
                aliases.get(stepwise.present_name(i.name)) == i.name
                for i in state), f"{v}: every present aliases its past "
                f"({len(aliases)} of {len(state)})")
        else:
            check(not aliases, f"{v}: no output aliases an input")

        generated = session.generate(prompt, max_new_tokens=args.new)
        got = np.array(generated["tokens"])
        # Bytes of cache each decode step copied: none in place; the whole
        # past (prompt + step - 1 rows of every layer's K and V) by Concat.
        copied = generated["step_copied_bytes"]
        if static:
            check(len(copied) == args.new and not any(copied),
                  f"{v}: 0 bytes of cache copied per decode step (the "
                  f"cache is written in place: {max(copied)} max)")
        elif v.startswith("softmax"):
            row = sum(int(np.prod([d for d in i.shape if isinstance(d, int)]))
                      * np.dtype(_dtype(i.type)).itemsize for i in state)
            want = [0] + [row * prompt.shape[0] * (prompt.shape[1] + s - 1)
                          for s in range(1, len(copied))]
            check(list(copied) == want, f"{v}: each decode step copies its "
                  f"whole past by Concat ({copied[-1]} bytes at the last "
                  f"step = the cache's size)")
        agree = float((got == ref).mean())
        if v.endswith("int8"):
            check(agree >= INT8_AGREEMENT, f"{v}: {agree:.3f} of "
                  f"{ref.size} greedy ids agree with the numpy reference "
                  f"(>= {INT8_AGREEMENT})")
        else:
            check(agree == 1.0, f"{v}: {args.new} greedy ids equal the "
                  f"numpy reference's (agreement {agree:.3f})")

        ort_session = ort.InferenceSession(
            onnx_path, providers=["CPUExecutionProvider"])
        if static:
            # One step through kiln_session_run with outputs it allocates:
            # present equals ONNX Runtime's, the caller's past is untouched.
            feeds = {"input_ids": prompt[:, :5],
                     "attention_mask": np.pad(np.ones((1, 5), np.int64),
                                              ((0, 0), (0, 3))),
                     "cache_position": np.zeros(1, np.int64)}
            for i in state:
                feeds[i.name] = np.full((1, i.shape[1], 8, i.shape[3]), 0.5,
                                        _dtype(i.type))
            before = {k: a.copy() for k, a in feeds.items()}
            mine = session.run(None, feeds)
            theirs = ort_session.run(None, feeds)
            check(all(np.array_equal(feeds[k], before[k]) for k in feeds)
                  and all(np.allclose(a, b, atol=1e-2) for a, b in
                          zip(mine[1:], theirs[1:])),
                  f"{v}: a run with runtime-allocated outputs writes the "
                  "cache into them, the caller's past unchanged")
        ort_ids = np.array(stepwise.generate(
            ort_session, [list(p) for p in prompt], args.new)["tokens"])
        ort_agree = float((ort_ids == ref).mean())
        if v.endswith("int8"):
            check(ort_agree >= INT8_AGREEMENT, f"{v}: ONNX Runtime's step "
                  f"loop agrees with the reference on {ort_agree:.3f}")
        else:
            check(ort_agree == 1.0, f"{v}: ONNX Runtime's step loop gives "
                  f"the reference ids")

        # The tool, with --expected and --json.
        out_json = os.path.join(args.workdir, f"{name}.json")
        cmd = [tool("kiln-generate"), path,
               "--prompt", os.path.join(models, name, "generation",
                                        "prompt.npy"),
               "--new-tokens", str(args.new), "--threads", "2",
               "--warmup", "0", "--repeat", "1", "--json", out_json]
        if not v.endswith("int8"):
            cmd += ["--expected", ids_path]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        check(proc.returncode == 0, f"{v}: kiln-generate exits 0"
              + ("" if proc.returncode == 0 else
                 f" ({proc.returncode}: {proc.stderr.strip()}"
                 f"{proc.stdout.strip()[-300:]})"))
        if proc.returncode == 0:
            valid = subprocess.run(
                [sys.executable, os.path.join(ROOT, "scripts",
                                              "validate_json.py"),
                 os.path.join(ROOT, "docs", "schemas",
                              "kiln.generate-result.v1.schema.json"),
                 out_json], capture_output=True, text=True)
            check(valid.returncode == 0, f"{v}: --json conforms to "
                  f"kiln.generate-result v1 {valid.stdout.strip()}")
            with open(out_json) as f:
                result = json.load(f)
            rows.append((v, compile_s, agree, result))

        # Batching: different prompt lengths together == each alone.
        short, long_ = list(prompt[0][:7]), list(prompt[0])
        together = session.generate([short, long_], max_new_tokens=12)
        alone = [session.generate([p], max_new_tokens=12)["tokens"][0]
                 for p in (short, long_)]
        check(together["tokens"] == alone, f"{v}: prompts of {len(short)} "
              f"and {len(long_)} tokens batched give the ids each gives "
              "alone")

        # In-flight batching: every request gets the ids it gets alone.
        # The scheduler grows each request's cache: a static one is refused.
        if static:
            proc = subprocess.run(
                [tool("kiln-generate"), path, "--serve", "2", "--prompt-len",
                 "8", "--warmup", "0", "--repeat", "1"], capture_output=True, text=True)
            check(proc.returncode != 0 and "a static cache" in proc.stderr,
                  f"{v}: serving refuses a static cache: "
                  f"{proc.stderr.strip()}")
        elif not v.endswith("int8"):
            for rate in ("0", "200"):
                serve_json = os.path.join(args.workdir,
                                          f"{name}.serve{rate}.json")
                proc = subprocess.run(
                    [tool("kiln-generate"), path, "--serve", "10",
                     "--rate", rate, "--prompt-len", "20", "--new-tokens",
                     "12", "--max-batch", "4", "--check-alone", "--warmup",
                     "0", "--repeat", "1", "--threads", "2", "--json",
                     serve_json], capture_output=True, text=True)
                ok = proc.returncode == 0
                if ok:
                    with open(serve_json) as f:
                        served = json.load(f)
                    ok = served["alone"] == {"checked": 10, "equal": 10} \
                        and served["mean_decode_batch"]["p50"] > 1.0 \
                        if rate == "0" else served["alone"]["equal"] == 10
                check(ok, f"{v}: 10 requests served in flight (rate "
                      f"{rate}/s, max batch 4) give the ids each gives alone"
                      + ("" if proc.returncode == 0 else
                         f" ({proc.stderr.strip()})"))
                valid = subprocess.run(
                    [sys.executable, os.path.join(ROOT, "scripts",
                                                  "validate_json.py"),
                     os.path.join(ROOT, "docs", "schemas",
                                  "kiln.serve-result.v1.schema.json"),
                     serve_json], capture_output=True, text=True)
                check(valid.returncode == 0, f"{v}: --serve --json conforms "
                      "to kiln.serve-result v1")

    # Sampling and errors on one model.
    first = next((r for r in rows), None)
    if first:
        session = kiln.InferenceSession(
            os.path.join(args.workdir, f"{first[0]}_decoder.kiln"), threads=2)
        p = [[1, 2, 3, 4]]
        a = session.generate(p, max_new_tokens=16, temperature=1.0,
                             top_k=40, top_p=0.95, seed=7)["tokens"]
        b = session.generate(p, max_new_tokens=16, temperature=1.0,
                             top_k=40, top_p=0.95, seed=7)["tokens"]
        c = session.generate(p, max_new_tokens=16, temperature=1.0,
                             top_k=40, top_p=0.95, seed=8)["tokens"]
        check(a == b and a != c, "sampling repeats with its seed and "
              "changes with another")
        vocab = session.get_outputs()[0].shape[2]
        for what, call, message in [
                ("an empty prompt", lambda: session.generate([[]]),
                 "prompt 0 is empty"),
                ("an id outside the vocab",
                 lambda: session.generate([[vocab]]),
                 f"outside the vocab [0, {vocab})"),
                ("over max_length",
                 lambda: session.generate([[1] * 10], max_new_tokens=10,
                                          max_length=16),
                 "exceeds max_length 16")]:
            try:
                call()
                check(False, f"{what} is an error")
            except ValueError as e:
                check(message in str(e), f"{what} is an error: {e}")
        # A model that is not a decoder.
        import onnx
        from onnx import TensorProto, helper
        graph = helper.make_graph(
            [helper.make_node("Relu", ["x"], ["y"])], "g",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
        relu = kiln.InferenceSession(kiln.compile(helper.make_model(
            graph, opset_imports=[helper.make_opsetid("", 17)])))
        try:
            relu.generate([[1]])
            check(False, "a model that is not a decoder is an error")
        except ValueError as e:
            check("no output 'logits'" in str(e),
                  f"a model that is not a decoder is an error: {e}")

    print(f"\n{'variant':14} {'compile s':>9} {'agree':>6} {'TTFT ms':>8} "
          f"{'TPOT ms':>8} {'tok/s':>8} {'state B':>9}")
    for v, compile_s, agree, r in rows:
        print(f"{v:14} {compile_s:9.1f} {agree:6.3f} "
              f"{r['ttft_ms']['p50']:8.2f} {r['tpot_ms']['p50']:8.3f} "
              f"{r['output_tokens_per_s']['p50']:8.0f} "
              f"{r['state_bytes']:9d}")
    print(f"\ngeneration: {len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
