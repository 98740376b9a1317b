#!/usr/bin/env python3
#===- test/Fuzz/mutate_models.py - Mutated ONNX models through kiln-compile -===#
#
# Kiln's own model fuzzer. Takes seed models (the ONNX backend test suite's,
# PyTorch-exported ones among them, and the demo models), mutates each at
# the byte level and at the protobuf level, and runs kiln-compile on every
# mutant in a child process:
#
#   bytes      flip, overwrite, insert or delete bytes; truncate; splice two
#              models
#   structure  edit an attribute (value, type, a huge or negative int),
#              change a dim (0, -1, huge, symbolic), a dtype (of an input,
#              an output, an initializer, a Cast's `to`), an initializer's
#              dims against its data, a node input to a dangling name or
#              the empty one, drop or duplicate a node, swap the opset
#              number (0, 1..23, huge) or the IR version, delete a graph
#              output, rename an op type
#
# A mutant passes when kiln-compile exits 0 or 1 within the time limit,
# printing exactly one `error:` line when it fails. Anything else (a signal,
# another status, a hang, a failure without a diagnostic) is a finding: the
# mutant is kept in --findings for a regression input. Runs at every stage
# the flags ask for: `--emit=graph -O2` (import, libonnx's checks, the graph
# pipeline) for every mutant, and every --compile-every'th mutant compiled to
# an artifact at -O1.
#
#   mutate_models.py --kiln-compile BIN --count N [--seed S] [--jobs J]
#       [--seeds DIR_OR_FILE ...] [--timeout 60] [--findings DIR]
#       [--compile-every 10]
#
# The last line is `fuzz: N mutants, C crashed, H hung, U undiagnosed`.
# Exit 1 when any finding.
#
#===----------------------------------------------------------------------===#

import argparse
import concurrent.futures
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

import onnx
from onnx import AttributeProto, TensorProto

BACKEND_DATA = "/usr/share/libonnx-testdata/data"
DTYPES = [TensorProto.FLOAT, TensorProto.UINT8, TensorProto.INT8,
          TensorProto.INT32, TensorProto.INT64, TensorProto.STRING,
          TensorProto.BOOL, TensorProto.FLOAT16, TensorProto.DOUBLE,
          TensorProto.BFLOAT16, TensorProto.COMPLEX64, 0, 17, 23, 999]
HUGE = [0, -1, -7, 1 << 31, 1 << 40, (1 << 63) - 1, -(1 << 63), 3, 65536]


def find_seeds(paths, limit, rng):
    files = []
    for path in paths:
        if os.path.isfile(path):
            files.append(path)
            continue
        for root, _, names in os.walk(path):
            files += [os.path.join(root, n) for n in names
                      if n.endswith(".onnx")]
    files.sort()
    rng.shuffle(files)
    # Small models keep the runs fast; the big ones still come up.
    files = [f for f in files if os.path.getsize(f) < 4 << 20] or files
    return files[:limit]


def mutate_bytes(data, rng, other):
    data = bytearray(data)
    kind = rng.randrange(6)
    if not data:
        return bytes(other[:rng.randrange(len(other) + 1)])
    if kind == 0:
        for _ in range(rng.randint(1, 8)):
            i = rng.randrange(len(data))
            data[i] ^= 1 << rng.randrange(8)
    elif kind == 1:
        for _ in range(rng.randint(1, 4)):
            i = rng.randrange(len(data))
            data[i] = rng.choice([0, 0xFF, 0x7F, 0x80, rng.randrange(256)])
    elif kind == 2:
        i = rng.randrange(len(data))
        data[i:i] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 16)))
    elif kind == 3:
        i = rng.randrange(len(data))
        del data[i:i + rng.randint(1, 64)]
    elif kind == 4:
        data = data[:rng.randrange(len(data))]
    else:
        i, j = rng.randrange(len(data)), rng.randrange(len(other) + 1)
        data = data[:i] + other[j:]
    return bytes(data)


def random_value_name(graph, rng):
    names = [v for n in graph.node for v in list(n.input) + list(n.output)]
    names += [i.name for i in graph.input]
    return rng.choice(names) if names else "x"


def mutate_structure(model, rng):
    g = model.graph
    kinds = ["attr", "dim", "dtype", "init_dims", "dangling", "drop_node",
             "dup_node", "opset", "ir", "output", "op_type", "cast_to",
             "empty_input", "swap_inputs"]
    kind = rng.choice(kinds)
    nodes = list(g.node)
    if kind == "attr" and nodes:
        node = rng.choice(nodes)
        if node.attribute:
            a = rng.choice(node.attribute)
            choice = rng.randrange(5)
            if choice == 0:
                a.type = rng.choice([AttributeProto.INT, AttributeProto.FLOAT,
                                     AttributeProto.INTS, AttributeProto.STRING,
                                     AttributeProto.TENSOR, 0])
            elif choice == 1:
                a.i = rng.choice(HUGE)
            elif choice == 2:
                del a.ints[:]
                a.ints.extend(rng.choice(HUGE) for _ in range(rng.randint(0, 6)))
            elif choice == 3:
                a.f = rng.choice([float("nan"), float("inf"), -1e30, 0.0])
            else:
                a.name = rng.choice(["axis", "perm", "to", "kernel_shape",
                                     "pads", "strides", "zzz"])
        else:
            node.attribute.add(name=rng.choice(["axis", "perm", "to"]),
                               type=AttributeProto.INT, i=rng.choice(HUGE))
    elif kind == "dim":
        values = list(g.input) + list(g.output) + list(g.value_info)
        if values:
            v = rng.choice(values)
            shape = v.type.tensor_type.shape
            if shape.dim and rng.random() < 0.8:
                d = rng.choice(shape.dim)
                if rng.random() < 0.7:
                    d.dim_value = rng.choice(HUGE)
                else:
                    d.dim_param = rng.choice(["N", "", "batch"])
            else:
                shape.dim.add().dim_value = rng.choice(HUGE)
    elif kind == "dtype":
        values = list(g.input) + list(g.output) + list(g.value_info)
        pool = values + list(g.initializer)
        if pool:
            v = rng.choice(pool)
            if isinstance(v, TensorProto):
                v.data_type = rng.choice(DTYPES)
            else:
                v.type.tensor_type.elem_type = rng.choice(DTYPES)
    elif kind == "init_dims" and g.initializer:
        t = rng.choice(g.initializer)
        if t.dims and rng.random() < 0.6:
            t.dims[rng.randrange(len(t.dims))] = rng.choice(HUGE)
        else:
            t.dims.append(rng.choice([0, 1, 2, 1 << 20]))
    elif kind == "dangling" and nodes:
        node = rng.choice(nodes)
        if node.input:
            node.input[rng.randrange(len(node.input))] = "dangling_" + str(
                rng.randrange(100))
    elif kind == "drop_node" and nodes:
        del g.node[rng.randrange(len(nodes))]
    elif kind == "dup_node" and nodes:
        g.node.insert(rng.randrange(len(nodes) + 1), rng.choice(nodes))
    elif kind == "opset":
        if model.opset_import:
            model.opset_import[rng.randrange(len(model.opset_import))].version = \
                rng.choice([0, 1, 5, 6, 7, 9, 11, 13, 17, 18, 21, 23, 24,
                            1 << 40])
        else:
            model.opset_import.add(version=rng.randrange(30))
    elif kind == "ir":
        model.ir_version = rng.choice([0, 1, 3, 7, 8, 9, 10, 11, 99, -1])
    elif kind == "output" and g.output:
        del g.output[rng.randrange(len(g.output))]
    elif kind == "op_type" and nodes:
        rng.choice(nodes).op_type = rng.choice(
            ["Conv", "MatMul", "Reshape", "Loop", "If", "Foo", "", "Gemm",
             "Concat", "Gather", "Slice", "Resize", "Einsum", "Split"])
    elif kind == "cast_to":
        casts = [n for n in nodes if n.op_type == "Cast"] or nodes
        if casts:
            n = rng.choice(casts)
            del n.attribute[:]
            n.attribute.add(name="to", type=AttributeProto.INT,
                            i=rng.choice(DTYPES))
    elif kind == "empty_input" and nodes:
        node = rng.choice(nodes)
        if node.input:
            node.input[rng.randrange(len(node.input))] = ""
    elif kind == "swap_inputs" and nodes:
        node = rng.choice(nodes)
        if len(node.input) >= 1:
            node.input[rng.randrange(len(node.input))] = random_value_name(g, rng)
    return kind


def make_mutant(seed_path, other_path, rng):
    data = open(seed_path, "rb").read()
    if rng.random() < 0.45:
        other = open(other_path, "rb").read()
        return mutate_bytes(data, rng, other), "bytes"
    model = onnx.ModelProto()
    try:
        model.ParseFromString(data)
    except Exception:  # noqa: BLE001 - a seed protobuf cannot parse
        return mutate_bytes(data, rng, data), "bytes"
    kinds = []
    for _ in range(rng.randint(1, 3)):
        try:
            kinds.append(mutate_structure(model, rng))
        except (ValueError, TypeError, IndexError):
            kinds.append("none")  # a value protobuf itself refuses
    return model.SerializeToString(), "+".join(kinds)


def run_one(tool, path, args, timeout):
    out = path + ".out"
    start = time.monotonic()
    try:
        proc = subprocess.run([tool, path, *args, "-o", out],
                              capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "hung", f"no exit after {timeout} s", time.monotonic() - start
    finally:
        if os.path.exists(out):
            os.remove(out)
    seconds = time.monotonic() - start
    stderr = proc.stderr.decode(errors="replace")
    if proc.returncode < 0:
        return "crashed", f"signal {-proc.returncode}: {stderr[-600:]}", seconds
    if proc.returncode not in (0, 1):
        return "crashed", f"exit {proc.returncode}: {stderr[-600:]}", seconds
    if proc.returncode == 1 and stderr.count("error:") < 1:
        return "undiagnosed", f"exit 1 without a diagnostic: {stderr[-600:]}", \
            seconds
    return "ok", "rejected" if proc.returncode else "accepted", seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--kiln-compile", required=True)
    parser.add_argument("--count", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--seeds", nargs="*",
                        default=[os.path.join(BACKEND_DATA, "pytorch-converted"),
                                 os.path.join(BACKEND_DATA, "pytorch-operator"),
                                 os.path.join(BACKEND_DATA, "node"),
                                 os.path.join(BACKEND_DATA, "simple")])
    parser.add_argument("--max-seed-models", type=int, default=400)
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument("--compile-every", type=int, default=10)
    parser.add_argument("--findings", default="")
    parser.add_argument("--workdir", default="")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    seeds = find_seeds(args.seeds, args.max_seed_models, rng)
    if not seeds:
        print("fuzz: no seed models found in " + " ".join(args.seeds))
        return 1
    work = args.workdir or tempfile.mkdtemp(prefix="kiln-fuzz-")
    os.makedirs(work, exist_ok=True)
    jobs = []
    for i in range(args.count):
        seed = seeds[i % len(seeds)]
        data, kind = make_mutant(seed, rng.choice(seeds), rng)
        path = os.path.join(work, f"mutant_{i}.onnx")
        with open(path, "wb") as f:
            f.write(data)
        stage = (["-O1"] if args.compile_every and i % args.compile_every == 0
                 else ["--emit=graph", "-O2"])
        jobs.append((i, path, seed, kind, stage))
    counts = {"ok": 0, "crashed": 0, "hung": 0, "undiagnosed": 0}
    accepted = 0
    slowest = 0.0
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        futures = {pool.submit(run_one, args.kiln_compile, path, stage,
                               args.timeout): (i, path, seed, kind, stage)
                   for i, path, seed, kind, stage in jobs}
        for future in concurrent.futures.as_completed(futures):
            i, path, seed, kind, stage = futures[future]
            verdict, detail, seconds = future.result()
            slowest = max(slowest, seconds)
            counts[verdict] += 1
            if verdict == "ok":
                accepted += detail == "accepted"
                os.remove(path)
                continue
            print(f"FINDING {verdict}: mutant {i} of {os.path.relpath(seed, BACKEND_DATA) if seed.startswith(BACKEND_DATA) else seed} "
                  f"({kind}, {' '.join(stage)}): {detail}")
            if args.findings:
                os.makedirs(args.findings, exist_ok=True)
                shutil.copy(path, os.path.join(args.findings,
                                               f"{verdict}-{i}.onnx"))
    if not args.workdir:
        shutil.rmtree(work, ignore_errors=True)
    findings = args.count - counts["ok"]
    print(f"seed models: {len(seeds)}; accepted {accepted}, rejected with a "
          f"diagnostic {counts['ok'] - accepted}; slowest run {slowest:.1f} s")
    print(f"fuzz: {args.count} mutants, {counts['crashed']} crashed, "
          f"{counts['hung']} hung, {counts['undiagnosed']} undiagnosed")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
