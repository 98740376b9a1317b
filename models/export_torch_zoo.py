#!/usr/bin/env python3
#===- models/export_torch_zoo.py - Real architectures for the benchmark ---===#
#
# Exports full-size real architectures with random weights (fixed seeds,
# eval mode) to ONNX for the CPU benchmark (scripts/bench_cpu.py --models
# real): torch.onnx.export, opset 17, constant folding on, the batch axis
# dynamic (dynamic_axes on axis 0 of the input and the output, named
# "batch"), every other dim static.
#
#   torchvision (weights=None), 3x224x224:
#     resnet50, mobilenet_v3_large, efficientnet_b0, squeezenet1_1,
#     densenet121, vit_b_16, and resnet18 (the smallest ResNet, beside the
#     demo's ResNet-18-shaped CNN)
#   written here, [B, 128, d] float input:
#     bert_base      BERT-base-sized encoder: nn.TransformerEncoder, 12
#                    layers, d_model 768, 12 heads, FFN 3072, GELU,
#                    post-norm, batch_first, sequence 128. It is a float-input
#                    encoder: the input is the token embeddings [B, 128, 768]
#                    (no vocabulary Gather, no position embedding, no pooler)
#     gpt_block      one GPT-2 block by hand: LayerNorm, fused qkv, causal
#                    multi-head attention (12 heads, d 768) as explicit
#                    matmul / masked_fill / softmax / matmul, GELU MLP 3072,
#                    two residuals
#     decoder_block  one Llama-style block (models/export_torch_decoder.py's
#                    Block, SmolLM2-135M's shape): RMSNorm as
#                    x*rsqrt(mean(x^2)+eps)*w, GQA with 9 query / 3 KV heads
#                    of 64 (d 576), rotary embedding, causal, SwiGLU MLP 1536
#
# BatchNorm statistics are those of two random batches (as
# export_torch_dynamic.py does), so activations keep their scale through
# the depth. The files are byte-identical from run to run.
#
# Needs PyTorch and torchvision: Debian's python3-torch / python3-torchvision
# (1.13 / 0.14), run with /usr/bin/python3 (the project's venv has no torch);
# exits 77 without them. --check runs each exported file with the venv's
# onnxruntime (a subprocess of .venv/bin/python) at batch 1 and 2.
#
#   /usr/bin/python3 models/export_torch_zoo.py --out DIR [--only a,b]
#       [--list] [--check] [--force]
#
# DIR/<name>.onnx and DIR/<name>.json:
#
#   {"input": "input", "shape": [1, ...] (batch as 1), "output": "output",
#    "params": <parameter count>, "what": "...", "torch": "1.13...",
#    "torchvision", "opset": 17, "exporter": <this file's sha256, 16 hex>}
#
# A model whose .onnx and .json (from this version of the file) exist is not
# exported again (--force does).
#
#===----------------------------------------------------------------------===#

import argparse
import hashlib
import json
import math
import os
import subprocess
import sys
import time
import warnings

try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    import torchvision
except ImportError as e:
    print(f"export_torch_zoo: PyTorch/torchvision not importable ({e}); "
          "install Debian's python3-torch python3-torchvision and run with "
          "/usr/bin/python3", file=sys.stderr)
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import export_torch_decoder  # noqa: E402  (its Block and RMSNorm)

OPSET = 17
SEED = 0
SEQ = 128
with open(os.path.abspath(__file__), "rb") as _f:
    # In each .json: a model exported by another version of this file is
    # exported again.
    EXPORTER = hashlib.sha256(_f.read()).hexdigest()[:16]


# --------------------------------------------------------------- models ----

class GPTBlock(nn.Module):
    """A GPT-2 block: pre-LayerNorm, fused qkv projection, causal attention
    written out (q k^T / sqrt(dh), masked_fill of a tril buffer with -inf,
    softmax, @ v), output projection, residual; LayerNorm, GELU MLP,
    residual."""

    def __init__(self, d=768, heads=12, ffn=3072, seq=SEQ):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.fc = nn.Linear(d, ffn)
        self.out = nn.Linear(ffn, d)
        self.register_buffer(
            "causal", torch.tril(torch.ones(seq, seq, dtype=torch.bool))
            .view(1, 1, seq, seq))
        for linear in (self.qkv, self.proj, self.fc, self.out):
            nn.init.normal_(linear.weight, std=0.02)
            nn.init.zeros_(linear.bias)

    def forward(self, x):
        B, T, C = x.shape
        dh = C // self.heads
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
        q = q.view(B, T, self.heads, dh).transpose(1, 2)
        k = k.view(B, T, self.heads, dh).transpose(1, 2)
        v = v.view(B, T, self.heads, dh).transpose(1, 2)
        att = torch.matmul(q, k.transpose(-2, -1)) * (1.0 / math.sqrt(dh))
        att = att.masked_fill(~self.causal, float("-inf"))
        att = torch.softmax(att, dim=-1)
        y = torch.matmul(att, v).transpose(1, 2).reshape(B, T, C)
        x = x + self.proj(y)
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


class DecoderBlock(nn.Module):
    """export_torch_decoder.Block (RMSNorm, GQA with rotary embeddings,
    SwiGLU) at SmolLM2-135M's shape, with its rotary tables and the causal
    mask for a fixed sequence as constants; returns the block's output
    (not the present key/value)."""

    def __init__(self, d=576, heads=9, kv_heads=3, ffn=1536, seq=SEQ):
        super().__init__()
        self.block = export_torch_decoder.Block(d, heads, kv_heads, ffn)
        b = self.block
        for linear in (b.q, b.k, b.v, b.o, b.gate, b.up, b.down):
            nn.init.normal_(linear.weight, std=0.02)
        head_dim = d // heads
        inv = 1.0 / (10000 ** (torch.arange(0, head_dim, 2).float() /
                               head_dim))
        angles = torch.outer(torch.arange(seq).float(), inv)
        angles = torch.cat((angles, angles), dim=-1)
        self.register_buffer("cos", angles.cos())
        self.register_buffer("sin", angles.sin())
        self.register_buffer("mask", torch.triu(
            torch.full((seq, seq), float("-inf")), diagonal=1))

    def forward(self, x):
        return self.block(x, self.cos, self.sin, self.mask)[0]


def bert_base():
    layer = nn.TransformerEncoderLayer(
        768, 12, dim_feedforward=3072, dropout=0.0, activation="gelu",
        batch_first=True)
    encoder = nn.TransformerEncoder(layer, 12, enable_nested_tensor=False)
    # The 12 layers are deep copies of one: drawn again (BERT's init, N(0,
    # 0.02) matrices, zero biases), or the exporter would keep one copy of
    # the identical weights (it deduplicates initializers by value).
    for name, p in encoder.named_parameters():
        if p.dim() >= 2:
            nn.init.normal_(p, std=0.02)
        elif "norm" not in name:
            nn.init.zeros_(p)
    return encoder


def _tv(name):
    return getattr(torchvision.models, name)(weights=None)


def vit_b_16():
    """torchvision zero-initializes ViT's classifier (all logits 0, which
    would make any comparison of outputs pass): drawn from N(0, 0.02)."""
    model = _tv("vit_b_16")
    nn.init.normal_(model.heads.head.weight, std=0.02)
    return model


IMAGE = [3, 224, 224]
# name -> (what, make, input shape without the batch, calibrate BatchNorms)
SPECS = {
    "resnet18": ("torchvision ResNet-18", lambda: _tv("resnet18"),
                 IMAGE, True),
    "resnet50": ("torchvision ResNet-50", lambda: _tv("resnet50"),
                 IMAGE, True),
    "mobilenet_v3_large": ("torchvision MobileNetV3-Large",
                           lambda: _tv("mobilenet_v3_large"), IMAGE, True),
    "efficientnet_b0": ("torchvision EfficientNet-B0",
                        lambda: _tv("efficientnet_b0"), IMAGE, True),
    "squeezenet1_1": ("torchvision SqueezeNet 1.1",
                      lambda: _tv("squeezenet1_1"), IMAGE, False),
    "densenet121": ("torchvision DenseNet-121", lambda: _tv("densenet121"),
                    IMAGE, True),
    "vit_b_16": ("torchvision ViT-B/16 (classifier drawn, not zero)",
                 vit_b_16, IMAGE, False),
    "bert_base": ("BERT-base-sized encoder (nn.TransformerEncoder, 12 x "
                  "d768 h12 ffn3072 GELU), float embeddings in",
                  bert_base, [SEQ, 768], False),
    "gpt_block": ("one GPT-2 block (d768 h12, causal, GELU MLP 3072)",
                  GPTBlock, [SEQ, 768], False),
    "decoder_block": ("one Llama-style block (RMSNorm, GQA 9/3 x 64, "
                      "rotary, SwiGLU 1536)", DecoderBlock, [SEQ, 576],
                      False),
}


def calibrate(model, shape):
    """Running statistics of two random batches of 2 (cumulative averages),
    instead of the init's mean 0 / var 1."""
    for m in model.modules():
        if isinstance(m, nn.modules.batchnorm._BatchNorm):
            m.momentum = None
            m.reset_running_stats()
    model.train()
    g = torch.Generator().manual_seed(1000)
    with torch.no_grad():
        for _ in range(2):
            model(torch.randn(2, *shape, generator=g))
    model.eval()


def export(name, out):
    what, make, shape, bn = SPECS[name]
    torch.manual_seed(SEED)
    model = make()
    if bn:
        calibrate(model, shape)
    model.eval()
    example = torch.randn(1, *shape, generator=torch.Generator()
                          .manual_seed(99))
    path = os.path.join(out, name + ".onnx")
    start = time.time()
    # Not under no_grad: with gradients enabled nn.TransformerEncoderLayer
    # and nn.MultiheadAttention take their composite paths (the fused fast
    # paths have no ONNX export).
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            model, (example,), path, opset_version=OPSET,
            input_names=["input"], output_names=["output"],
            dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}},
            do_constant_folding=True)
    meta = {"input": "input", "shape": [1] + list(shape), "output": "output",
            "params": sum(p.numel() for p in model.parameters()),
            "what": what, "torch": torch.__version__,
            "torchvision": torchvision.__version__, "opset": OPSET,
            "exporter": EXPORTER}
    with open(os.path.join(out, name + ".json"), "w") as f:
        json.dump(meta, f, indent=1)
        f.write("\n")
    return time.time() - start, meta


CHECK = r"""
import json, sys
import numpy as np
import onnxruntime as ort
for path in sys.argv[1:]:
    meta = json.load(open(path[:-5] + ".json"))
    s = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    for b in (1, 2):
        x = np.random.default_rng(0).standard_normal(
            [b] + meta["shape"][1:]).astype(np.float32)
        y = s.run(None, {meta["input"]: x})[0]
        assert y.shape[0] == b, (path, y.shape)
        assert np.isfinite(y).all(), (path, "non-finite output")
        assert y.std() > 0, (path, "constant output")
    print(f"onnxruntime ok: {path} -> {list(y.shape[1:])}, "
          f"output std {y.std():.3g}, max |y| {np.abs(y).max():.3g}")
"""


def check(paths):
    python = os.path.join(ROOT, ".venv", "bin", "python")
    if not os.path.exists(python):
        print(f"--check: no {python}", file=sys.stderr)
        return 1
    return subprocess.run([python, "-c", CHECK] + paths).returncode


def current(meta_path):
    """Whether this version of the file wrote meta_path."""
    try:
        with open(meta_path) as f:
            return json.load(f).get("exporter") == EXPORTER
    except (OSError, ValueError):
        return False


def main():
    ap = argparse.ArgumentParser(
        description="Exports real architectures (random weights, dynamic "
        "batch) to ONNX for scripts/bench_cpu.py.")
    ap.add_argument("--out")
    ap.add_argument("--only", help="comma-separated model names")
    ap.add_argument("--list", action="store_true",
                    help="print the models and exit")
    ap.add_argument("--check", action="store_true",
                    help="run each file with the venv's onnxruntime at "
                    "batch 1 and 2")
    ap.add_argument("--force", action="store_true",
                    help="export again models already in --out")
    args = ap.parse_args()
    if args.list:
        for name, spec in SPECS.items():
            print(f"{name:20} {spec[0]}")
        return 0
    if not args.out:
        ap.error("--out is required")
    names = args.only.split(",") if args.only else list(SPECS)
    unknown = [n for n in names if n not in SPECS]
    if unknown:
        ap.error(f"unknown model(s) {', '.join(unknown)}; --list shows them")
    torch.set_num_threads(min(2, os.cpu_count() or 1))
    os.makedirs(args.out, exist_ok=True)
    failed, paths = 0, []
    for name in names:
        path = os.path.join(args.out, name + ".onnx")
        if not args.force and os.path.exists(path) and \
                current(path[:-5] + ".json"):
            print(f"{name:20} already in {args.out}")
            paths.append(path)
            continue
        try:
            seconds, meta = export(name, args.out)
        except Exception as e:  # noqa: BLE001 - reported, then exit 1
            print(f"{name:20} EXPORT FAILED: {type(e).__name__}: {e}",
                  file=sys.stderr)
            failed += 1
            continue
        paths.append(path)
        print(f"{name:20} exported in {seconds:.1f} s "
              f"({meta['params'] / 1e6:.1f}M parameters)", flush=True)
    if args.check and paths and check(paths) != 0:
        failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
