#!/usr/bin/env python3
#===- scripts/gpu_check/prepare.py - The CPU half of the GPU check ---------===#
#
# Runs on the build machine (the project's venv: onnx, numpy). Makes the
# bundle a GPU host needs to run every GPU test and benchmark without MLIR,
# Python packages or network (../shared/GPU.md):
#
#   BUNDLE/bin/kiln-run, BUNDLE/lib/*.so*     the runtime tool and the shared
#                                             libraries it needs
#   BUNDLE/artifacts/<check>.kiln             CUDA artifacts (codegen and
#                                             library kernels) for --chip
#   BUNDLE/data/<model>/input_N.npy           inputs
#   BUNDLE/expected/<model>/output_N.npy      the CPU backend's outputs on
#                                             those inputs (the reference a
#                                             GPU run must match)
#   BUNDLE/torch/<model>/                     weights as raw little-endian
#                                             files + meta.json, for the
#                                             PyTorch peer (no numpy needed)
#   BUNDLE/manifest.json                      the checks, what each measures
#                                             and its tolerance
#   BUNDLE/run.py, BUNDLE/torch_peer.py       the GPU half (stdlib only)
#   BUNDLE/runtime-check/                     the CUDA runtime's own device
#                                             check (scripts/cuda-runtime-
#                                             check.sh: nvcc-built kernels,
#                                             graphs, events, errors), whose
#                                             CPU half on the fake driver
#                                             runs here
#
# Every CUDA artifact that fails to compile is an error of this script: the
# CPU half passes only when the whole bundle is there. `--quick` makes a
# small bundle (the MLP, a 256x256x256 GEMM and a 1 MiB elementwise chain) for
# the ctest that runs this script on every build.
#
#===----------------------------------------------------------------------===#

import argparse
import json
import os
import shutil
import subprocess
import sys
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "models"))

import generate_demo_models as demo  # noqa: E402
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import quantize_demo  # noqa: E402

sys.path.insert(0, os.path.join(ROOT, "scripts"))
import quantize_demo  # noqa: E402

# Tolerances of a GPU output against the CPU backend's, per model precision:
# fp32 kernels differ in summation order (and FMA contraction) only; fp16
# models round each intermediate to half on both sides but at different
# points (tensor-core fp32 accumulation vs the CPU's); int8 models share the
# integer math exactly, and the float parts between the quantizers may move
# a value across a rounding boundary: one quantization step of the output.
TOLERANCES = {
    "fp32": {"rtol": 1e-3, "atol": 1e-4},
    "fp16": {"rtol": 2e-2, "atol": 2e-2},
    # One step of the output's quantization at most (the QDQ MLP's
    # probabilities: 1/255); int8-valued outputs must then be equal.
    "int8": {"rtol": 0.0, "atol": 0.005},
}


def log(message):
    print(f"[gpu-check prepare] {message}", flush=True)


def run(cmd, **kwargs):
    result = subprocess.run(cmd, capture_output=True, text=True, **kwargs)
    if result.returncode != 0:
        raise RuntimeError(
            f"command failed ({result.returncode}): {' '.join(cmd)}\n"
            f"{result.stdout}{result.stderr}")
    return result


# --- Models ------------------------------------------------------------------

def fix_dims(model, sizes):
    """Fixes the symbolic dims of the graph's inputs and outputs
    (name -> size), so the whole graph is statically shaped."""
    for value in list(model.graph.input) + list(model.graph.output):
        for dim in value.type.tensor_type.shape.dim:
            if dim.HasField("dim_param"):
                if dim.dim_param not in sizes:
                    raise ValueError(f"no size for dim '{dim.dim_param}'")
                dim.dim_value = sizes[dim.dim_param]
    return model


def elementwise_model(elements):
    """y = Relu(x * 1.5 + 0.25): one fused kernel reading and writing
    `elements` floats, the bandwidth check's model."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [elements])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [elements])
    nodes = [
        helper.make_node("Mul", ["x", "scale"], ["scaled"], name="/Mul"),
        helper.make_node("Add", ["scaled", "shift"], ["shifted"], name="/Add"),
        helper.make_node("Relu", ["shifted"], ["y"], name="/Relu"),
    ]
    inits = [numpy_helper.from_array(np.array(1.5, np.float32), "scale"),
             numpy_helper.from_array(np.array(0.25, np.float32), "shift")]
    graph = helper.make_graph(nodes, "elementwise_chain", [x], [y], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def gemm_model(m, n, k):
    """C = A @ B in float16, both operands inputs (the artifact stays small;
    kiln-run draws them from --seed)."""
    a = helper.make_tensor_value_info("a", TensorProto.FLOAT16, [m, k])
    b = helper.make_tensor_value_info("b", TensorProto.FLOAT16, [k, n])
    c = helper.make_tensor_value_info("c", TensorProto.FLOAT16, [m, n])
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["a", "b"], ["c"], name="/MatMul")],
        "gemm_f16", [a, b], [c])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def demo_model(name, sizes, seed):
    model, _, _ = demo.BUILDERS[name]()
    model = fix_dims(model, sizes)
    onnx.checker.check_model(model, full_check=True)
    rng = np.random.default_rng(seed)
    inputs = []
    for value in model.graph.input:
        shape = [d.dim_value for d in value.type.tensor_type.shape.dim]
        inputs.append(rng.standard_normal(shape).astype(np.float32))
    return model, inputs


def int8_model(name, sizes, seed, work):
    """The demo model as the QDQ model onnxruntime's quantize_static makes
    of it (scripts/quantize_demo.py: per-channel int8 weights, int8
    activations): Kiln's integer matmuls (kiln-fuse-qdq) on the GPU."""
    model, inputs = demo_model(name, sizes, seed)
    fp32 = os.path.join(work, f"{name}.fp32.onnx")
    qdq = os.path.join(work, f"{name}.qdq.onnx")
    onnx.save(model, fp32)
    quantize_demo.quantize(fp32, qdq, name)
    return onnx.load(qdq), inputs


def save_npy_set(folder, kind, arrays):
    os.makedirs(folder, exist_ok=True)
    for n, array in enumerate(arrays):
        np.save(os.path.join(folder, f"{kind}_{n}.npy"), array)


def dump_torch_weights(model, folder):
    """The initializers as raw files + meta.json, read back by
    torch_peer.py with torch.frombuffer (no numpy on the GPU host needed)."""
    os.makedirs(folder, exist_ok=True)
    meta = {}
    for tensor in model.graph.initializer:
        array = numpy_helper.to_array(tensor)
        file = tensor.name.replace("/", "_") + ".bin"
        np.ascontiguousarray(array).tofile(os.path.join(folder, file))
        meta[tensor.name] = {"file": file, "dtype": str(array.dtype),
                             "shape": list(array.shape)}
    with open(os.path.join(folder, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)


# --- Bundle ------------------------------------------------------------------

def copy_runtime(build, bundle):
    """kiln-run and the shared libraries it needs that a GPU host may lack
    (onnx_proto, protobuf for .pb files): everything ldd resolves outside
    the C library's own."""
    os.makedirs(os.path.join(bundle, "bin"), exist_ok=True)
    os.makedirs(os.path.join(bundle, "lib"), exist_ok=True)
    tools = ["kiln-run"]
    if os.path.exists(os.path.join(build, "bin", "kiln-cuda-bench")):
        tools.append("kiln-cuda-bench")
    system = ("libc.so", "libm.so", "libpthread", "libdl.so", "librt.so",
              "ld-linux", "linux-vdso", "libgcc_s", "libstdc++")
    for tool in tools:
        path = os.path.join(build, "bin", tool)
        shutil.copy2(path, os.path.join(bundle, "bin", tool))
        for line in run(["ldd", path]).stdout.splitlines():
            parts = line.split("=>")
            if len(parts) != 2 or not parts[1].strip().startswith("/"):
                continue
            lib = parts[1].split("(")[0].strip()
            if any(s in os.path.basename(lib) for s in system):
                continue
            shutil.copy2(lib, os.path.join(bundle, "lib",
                                           os.path.basename(lib)))
    return tools


def main():
    parser = argparse.ArgumentParser(
        description="Makes the GPU check bundle (the CPU half).")
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--bundle", required=True, help="output folder")
    parser.add_argument("--chip", default="sm_90",
                        help="CUDA chip of the artifacts (sm_80, sm_89, "
                        "sm_90; default sm_90 for H100/H200)")
    parser.add_argument("--quick", action="store_true",
                        help="a small bundle (the ctest of the CPU half)")
    args = parser.parse_args()

    # Compiles through the kiln package of this build (build/python).
    sys.path.insert(0, os.path.join(args.build, "python"))
    import kiln
    kiln_run = os.path.join(args.build, "bin", "kiln-run")
    bundle = os.path.abspath(args.bundle)
    if os.path.exists(bundle):
        shutil.rmtree(bundle)
    work = os.path.join(bundle, "work")  # ONNX files and CPU artifacts
    os.makedirs(work)
    start = time.time()

    # (name, model, inputs, precision, modes, extra manifest fields)
    models = []
    if args.quick:
        mlp, mlp_in = demo_model("mlp", {"batch": 4}, 1)
        models.append(("mlp", mlp, mlp_in, "fp32"))
        # Convolutions: library mode calls cuDNN (kiln_rt_cuda_conv2d).
        cnn, cnn_in = demo_model("small_cnn", {"batch": 2}, 1)
        models.append(("small_cnn", cnn, cnn_in, "fp32"))
        ew = 1 << 18
        models.append(("elementwise", elementwise_model(ew), None, "fp32"))
        models.append(("gemm_f16", gemm_model(256, 256, 256), None, "fp16"))
        q, q_in = int8_model("mlp", {"batch": 4}, 1, work)
        models.append(("mlp_int8", q, q_in, "int8"))
    else:
        for name, sizes in (("mlp", {"batch": 64}),
                            ("transformer_block", {"batch": 8, "seq": 128}),
                            ("small_cnn", {"batch": 8})):
            model, inputs = demo_model(name, sizes, 1)
            models.append((name, model, inputs, "fp32"))
        # 256 MiB of float32 in, 256 MiB out.
        models.append(("elementwise", elementwise_model(64 << 20), None,
                       "fp32"))
        models.append(("gemm_f16", gemm_model(4096, 4096, 4096), None,
                       "fp16"))
        for name, sizes in (("mlp", {"batch": 64}),
                            ("transformer_block", {"batch": 8, "seq": 128})):
            q, q_in = int8_model(name, sizes, 1, work)
            models.append((name + "_int8", q, q_in, "int8"))

    checks = []
    for name, model, inputs, precision in models:
        onnx_path = os.path.join(work, f"{name}.onnx")
        onnx.save(model, onnx_path)
        data = os.path.join(bundle, "data", name)
        expected = os.path.join(bundle, "expected", name)
        run_inputs = []
        if inputs is not None:
            save_npy_set(data, "input", inputs)
            run_inputs = ["--inputs", data]
        else:
            run_inputs = ["--seed", "7"]
        # The reference: the CPU backend's outputs on the same inputs
        # (kiln-run draws seeded inputs identically on every device). The
        # bandwidth and GEMM checks are compared too where they are small;
        # the full-size ones are measured only (a 4096^3 fp16 GEMM on two
        # CPU cores takes minutes).
        compare = inputs is not None or args.quick
        if compare:
            cpu = os.path.join(work, f"{name}.cpu.kiln")
            kiln.compile(onnx_path, opt_level=2).save(cpu)
            os.makedirs(expected, exist_ok=True)
            run([kiln_run, cpu, *run_inputs, "--threads", "2",
                 "--consistency-runs", "0", "--save-outputs", expected])
        for kernels in ("codegen", "library"):
            check = f"{name}-{kernels}"
            artifact = os.path.join(bundle, "artifacts", f"{check}.kiln")
            os.makedirs(os.path.dirname(artifact), exist_ok=True)
            # The same compile on the command line (for the manifest).
            cmd = [os.path.join(args.build, "bin", "kiln-compile"), onnx_path,
                   "-O3", f"--target=cuda:{args.chip}",
                   f"--kernels={kernels}", "-o", artifact]
            t0 = time.time()
            kiln.compile(onnx_path, opt_level=3, target=f"cuda:{args.chip}",
                         kernels=kernels).save(artifact)
            log(f"{check}: compiled for cuda:{args.chip} in "
                f"{time.time() - t0:.1f} s")
            entry = {
                "name": check, "model": name, "kernels": kernels,
                "artifact": os.path.relpath(artifact, bundle),
                "inputs": (os.path.relpath(data, bundle)
                           if inputs is not None else None),
                "seed": None if inputs is not None else 7,
                "expected": (os.path.relpath(expected, bundle)
                             if compare else None),
                "precision": precision,
                "tolerance": TOLERANCES[precision],
                "compile_command": " ".join(
                    os.path.relpath(c, ROOT) if c.startswith(ROOT) else c
                    for c in cmd),
            }
            if name == "elementwise":
                elements = model.graph.input[0].type.tensor_type.shape.dim[0]
                entry["kind"] = "bandwidth"
                entry["bytes_moved"] = 2 * 4 * elements.dim_value
            elif name == "gemm_f16":
                dims = [[d.dim_value for d in v.type.tensor_type.shape.dim]
                        for v in model.graph.input]
                entry["kind"] = "gemm"
                entry["mnk"] = [dims[0][0], dims[1][1], dims[0][1]]
                entry["dtype"] = "float16"
            else:
                entry["kind"] = "e2e"
            checks.append(entry)
        # The one-rank tensor-parallel path (docs/cluster.md): the model
        # split for a group of one, its all-reduces the identity through
        # NCCL's one-rank communicator, against the same reference.
        if compare and name in ("mlp", "transformer_block"):
            check = f"{name}-tp1"
            artifact = os.path.join(bundle, "artifacts", f"{check}.kiln")
            kiln.compile(onnx_path, opt_level=3, target=f"cuda:{args.chip}",
                         flags=["--tensor-parallel=1"]).save(artifact)
            checks.append({
                "name": check, "model": name, "kernels": "codegen",
                "artifact": os.path.relpath(artifact, bundle),
                "inputs": (os.path.relpath(data, bundle)
                           if inputs is not None else None),
                "seed": None if inputs is not None else 7,
                "expected": os.path.relpath(expected, bundle),
                "precision": precision, "tolerance": TOLERANCES[precision],
                "kind": "e2e", "nccl": True,
                "compile_command": f"kiln-compile {name}.onnx -O3 "
                                   f"--target=cuda:{args.chip} "
                                   f"--tensor-parallel=1 -o {check}.kiln"})
            log(f"{check}: compiled (one-rank tensor parallel, NCCL)")
        if name == "transformer_block":
            dump_torch_weights(model, os.path.join(bundle, "torch", name))

    tools = copy_runtime(args.build, bundle)
    # The runtime's own device check (and its CPU half on the fake driver).
    proc = subprocess.run(
        [os.path.join(ROOT, "scripts", "cuda-runtime-check.sh"), "prepare",
         args.build, os.path.join(bundle, "runtime-check")],
        capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError("scripts/cuda-runtime-check.sh prepare failed:\n"
                           + proc.stdout + proc.stderr)
    log(proc.stdout.strip().splitlines()[-1])
    for script in ("run.py", "torch_peer.py"):
        shutil.copy2(os.path.join(ROOT, "scripts", "gpu_check", script),
                     os.path.join(bundle, script))
    shutil.rmtree(work)
    manifest = {
        "schema": "kiln.gpu-check-bundle", "version": 1,
        "chip": args.chip, "quick": args.quick, "tools": tools,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "git": subprocess.run(["git", "-C", ROOT, "rev-parse", "--short",
                               "HEAD"], capture_output=True,
                              text=True).stdout.strip(),
        "checks": checks,
        "goals": {
            "bandwidth": "fused elementwise kernel >= 70% of the device's "
                         "copy bandwidth (256 MiB tensors)",
            "gemm": "fp16 GEMM 4096^3, library mode >= 90% of cuBLAS alone; "
                    "codegen reported beside it",
            "e2e": "every model matches the CPU backend within tolerance",
            "torch": "transformer block, library mode within 1.3x of "
                     "PyTorch eager",
        },
    }
    with open(os.path.join(bundle, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    size = sum(os.path.getsize(os.path.join(d, f))
               for d, _, files in os.walk(bundle) for f in files)
    log(f"bundle {bundle}: {len(checks)} checks, {size / 2**20:.1f} MiB, "
        f"{time.time() - start:.0f} s")


if __name__ == "__main__":
    main()
