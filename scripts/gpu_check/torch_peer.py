#!/usr/bin/env python3
#===- scripts/gpu_check/torch_peer.py - PyTorch peer of the GPU check ------===#
#
# Runs the demo transformer block (models/generate_demo_models.py, the math
# of models/reference.py) in PyTorch eager and with torch.compile on the GPU,
# with the bundle's weights and inputs, and prints one JSON object: median
# latency of each mode, and the max abs difference of eager's output to the
# CPU backend's expected output. Needs torch only (no numpy): the weights are
# raw files + meta.json, the .npy files are parsed here.
#
#   torch_peer.py BUNDLE MODEL --iterations N --warmup N
#
#===----------------------------------------------------------------------===#

import argparse
import ast
import json
import os
import statistics
import sys

import torch

DTYPES = {"float32": torch.float32, "float16": torch.float16,
          "int64": torch.int64, "int32": torch.int32}
NPY_DTYPES = {"<f4": torch.float32, "<f2": torch.float16, "<i8": torch.int64}


def load_npy(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:6] != b"\x93NUMPY":
        raise ValueError(f"{path}: not a .npy file")
    header_len = int.from_bytes(data[8:10], "little")
    header = ast.literal_eval(data[10:10 + header_len].decode("latin1"))
    if header["fortran_order"]:
        raise ValueError(f"{path}: Fortran order is not supported")
    body = bytearray(data[10 + header_len:])
    tensor = torch.frombuffer(body, dtype=NPY_DTYPES[header["descr"]])
    return tensor.reshape(header["shape"])


def load_weights(folder, device):
    with open(os.path.join(folder, "meta.json")) as f:
        meta = json.load(f)
    weights = {}
    for name, info in meta.items():
        with open(os.path.join(folder, info["file"]), "rb") as f:
            body = bytearray(f.read())
        tensor = torch.frombuffer(body, dtype=DTYPES[info["dtype"]])
        weights[name] = tensor.reshape(info["shape"]).to(device)
    return weights


class TransformerBlock(torch.nn.Module):
    """models/reference.py's transformer_block: RMSNorm, GQA attention with
    rotary embeddings and a causal mask, SwiGLU MLP, two residuals."""

    def __init__(self, w, n_heads=8, n_kv_heads=2, eps=1e-6):
        super().__init__()
        self.w = w
        self.n_heads, self.n_kv_heads, self.eps = n_heads, n_kv_heads, eps

    def rms_norm(self, h, weight):
        return weight * h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) +
                                        self.eps)

    def forward(self, x):
        w = self.w
        batch, seq, d_model = x.shape
        hd = d_model // self.n_heads

        def heads(t, n):
            return t.view(batch, seq, n, hd).transpose(1, 2)

        cos = w["rotary_emb.cos_cached"][:seq]
        sin = w["rotary_emb.sin_cached"][:seq]

        def rope(t):
            rotated = torch.cat([-t[..., hd // 2:], t[..., :hd // 2]], dim=-1)
            return t * cos + rotated * sin

        h = self.rms_norm(x, w["input_layernorm.weight"])
        q = rope(heads(h @ w["self_attn.q_proj.weight"], self.n_heads))
        k = rope(heads(h @ w["self_attn.k_proj.weight"], self.n_kv_heads))
        v = heads(h @ w["self_attn.v_proj.weight"], self.n_kv_heads)
        rep = self.n_heads // self.n_kv_heads
        k = k.repeat_interleave(rep, dim=1)
        v = v.repeat_interleave(rep, dim=1)
        attn = torch.nn.functional.scaled_dot_product_attention(
            q, k, v, is_causal=True)
        attn = attn.transpose(1, 2).reshape(batch, seq, d_model)
        h1 = x + attn @ w["self_attn.o_proj.weight"]
        n2 = self.rms_norm(h1, w["post_attention_layernorm.weight"])
        gate = n2 @ w["mlp.gate_proj.weight"]
        up = n2 @ w["mlp.up_proj.weight"]
        return h1 + (torch.nn.functional.silu(gate) * up) @ \
            w["mlp.down_proj.weight"]


def time_module(fn, x, warmup, iterations):
    with torch.no_grad():
        for _ in range(warmup):
            fn(x)
        torch.cuda.synchronize()
        samples = []
        for _ in range(iterations):
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            fn(x)
            end.record()
            end.synchronize()
            samples.append(start.elapsed_time(end))
    return statistics.median(samples)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("bundle")
    parser.add_argument("model")
    parser.add_argument("--iterations", type=int, default=100)
    parser.add_argument("--warmup", type=int, default=10)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print(json.dumps({"skipped": "torch.cuda.is_available() is False"}))
        return
    device = torch.device("cuda")
    weights = load_weights(os.path.join(args.bundle, "torch", args.model),
                           device)
    x = load_npy(os.path.join(args.bundle, "data", args.model,
                              "input_0.npy")).to(device)
    block = TransformerBlock(weights).eval()
    result = {"torch": torch.__version__,
              "device": torch.cuda.get_device_name(),
              "input_shape": list(x.shape)}
    with torch.no_grad():
        out = block(x).float().cpu()
    expected_path = os.path.join(args.bundle, "expected", args.model,
                                 "output_0.npy")
    if os.path.exists(expected_path):
        expected = load_npy(expected_path)
        result["max_abs_diff_vs_cpu_backend"] = float(
            (out - expected).abs().max())
    result["eager_median_ms"] = time_module(block, x, args.warmup,
                                            args.iterations)
    try:
        compiled = torch.compile(block)
        result["compile_median_ms"] = time_module(compiled, x, args.warmup,
                                                  args.iterations)
    except Exception as e:  # torch.compile needs a working Triton/compiler
        result["compile_error"] = f"{type(e).__name__}: {e}"[:500]
    print(json.dumps(result))


if __name__ == "__main__":
    sys.exit(main())
