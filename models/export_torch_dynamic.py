#!/usr/bin/env python3
#===- models/export_torch_dynamic.py - Real architectures, dynamic dims ---===#
#
# Exports real PyTorch architectures with random weights (fixed seeds) to
# ONNX with torch.onnx.export, opset 17, dynamic_axes naming every dynamic
# dim (dim_param), and writes for each model a few test shapes: inputs drawn
# from a fixed seed and PyTorch's own outputs. The test that runs them is
# test/E2E/dynamic_models.py (Kiln compiled once, no shape flags, at every
# shape, against ONNX Runtime).
#
# Needs PyTorch and torchvision: Debian's python3-torch / python3-torchvision
# (1.13 / 0.14), run with /usr/bin/python3 (the project's venv has no torch;
# numpy here is Debian's). It writes no onnx.checker check (the venv's onnx
# is not this interpreter's): the test loads every file with the venv's onnx.
#
#   /usr/bin/python3 models/export_torch_dynamic.py --out DIR [--only a,b]
#       [--list] [--with-large]
#
# DIR/<name>.onnx, DIR/<name>/shape_<i>/{input,torch_output}_<k>.npy and
# DIR/manifest.json:
#
#   {"torch", "torchvision", "opset": 17, "models": [{"name", "file",
#     "what", "inputs": [{"name", "shape"}], "outputs": [{"name", "shape"}],
#     "shapes": [{symbol: value}, ...], "data": ["<name>/shape_0", ...],
#     "export_s"}]}
#
# ("shape": an int per static dim, the symbol's name per dynamic one, as
# dynamic_axes names it.) Which models Kiln handles today, and the errors
# of the others, are the test's (XFAIL in test/E2E/dynamic_models.py).
#
#===----------------------------------------------------------------------===#

import argparse
import json
import math
import os
import sys
import time
import warnings

import numpy as np

try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    import torchvision
except ImportError as e:  # the test reports this as a skip (exit 77)
    print(f"export_torch_dynamic: PyTorch/torchvision not importable ({e}); "
          "install Debian's python3-torch python3-torchvision "
          "(scripts/setup.sh does)", file=sys.stderr)
    sys.exit(77)

OPSET = 17
SEED = 0


# --------------------------------------------------------------- models ----

class MLP(nn.Module):
    """784-256-128-10 with GELU, ReLU and a softmax; with layernorm=True a
    LayerNorm after the first layer."""

    def __init__(self, layernorm=False):
        super().__init__()
        self.fc1 = nn.Linear(784, 256)
        self.norm = nn.LayerNorm(256) if layernorm else nn.Identity()
        self.fc2 = nn.Linear(256, 128)
        self.fc3 = nn.Linear(128, 10)

    def forward(self, x):
        x = self.norm(F.gelu(self.fc1(x)))
        x = F.relu(self.fc2(x))
        return torch.softmax(self.fc3(x), dim=-1)


class SmallCNN(nn.Module):
    """Conv/BN/ReLU/pool on 3x32x32, flattened with x.view(x.size(0), -1)
    (Shape/Gather/Unsqueeze/Concat/Reshape). A BatchNorm after a ReLU and a
    BatchNorm1d stay BatchNormalization nodes (the exporter folds only the
    ones right after a Conv)."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(16)          # after ReLU: not folded
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(32)          # after Conv: folded
        self.conv3 = nn.Conv2d(32, 32, 3, stride=2, padding=1)
        self.fc1 = nn.Linear(32 * 4 * 4, 64)
        self.bn3 = nn.BatchNorm1d(64)
        self.fc2 = nn.Linear(64, 10)

    def forward(self, x):
        x = self.bn1(F.relu(self.conv1(x)))
        x = F.max_pool2d(x, 2)                          # 16x16
        x = F.relu(self.bn2(self.conv2(x)))
        x = F.avg_pool2d(x, 2)                          # 8x8
        x = F.relu(self.conv3(x))                       # 4x4
        x = x.view(x.size(0), -1)
        x = F.relu(self.bn3(self.fc1(x)))
        return self.fc2(x)


class ImageFeatures(nn.Module):
    """A fully convolutional feature extractor for images of any size (as
    OCR detectors and segmentation backbones are exported): a strided
    convolution, BatchNorm, max pooling, a dilated convolution, a depthwise
    one and an average pool counting its padding; the feature map (its
    size follows the image's) and its global mean through a Linear."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 16, 3, stride=2, padding=1)
        self.bn = nn.BatchNorm2d(16)
        self.dilated = nn.Conv2d(16, 24, 3, padding=2, dilation=2)
        self.depthwise = nn.Conv2d(24, 24, 3, padding=1, groups=24)
        self.head = nn.Linear(24, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn(self.stem(x))), 3, stride=2, padding=1)
        x = F.relu(self.dilated(x))
        x = F.relu6(self.depthwise(x))
        features = F.avg_pool2d(x, 3, stride=1, padding=1)
        return self.head(features.mean((2, 3))), features


class LSTMClassifier(nn.Module):
    """Two-layer LSTM (batch_first) over 12 fixed steps, dynamic batch; the
    last step's hidden state through a Linear, and the whole sequence."""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(16, 32, num_layers=2, batch_first=True)
        self.head = nn.Linear(32, 5)

    def forward(self, x):
        seq, (h, c) = self.lstm(x)
        return self.head(h[-1]), seq


class GRUTagger(nn.Module):
    """Bidirectional GRU (sequence first, as nn.GRU's default) over 12 fixed
    steps, dynamic batch, a Linear per step."""

    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(16, 24, bidirectional=True)
        self.head = nn.Linear(48, 7)

    def forward(self, x):
        seq, _ = self.gru(x)
        return self.head(seq)


class GPTBlock(nn.Module):
    """A nanoGPT-style block: pre-LayerNorm, fused qkv projection, causal
    mask sliced from a registered tril buffer (mask[:, :, :T, :T]: a slice
    to a run-time end), softmax attention, GELU MLP, two residuals."""

    def __init__(self, d=64, heads=4, max_len=128):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.fc = nn.Linear(d, 4 * d)
        self.out = nn.Linear(4 * d, d)
        self.register_buffer(
            "mask", torch.tril(torch.ones(max_len, max_len))
            .view(1, 1, max_len, max_len))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
        q = q.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        k = k.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        v = v.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.mask[:, :, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        x = x + self.proj(y)
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


class GQADecodeStep(nn.Module):
    """One decoder step of grouped-query attention with a KV cache (Llama
    style): x [B, 1, D], past_key/past_value [B, Hkv, past, Dh]; the new
    key/value are appended (present = Concat(past, new) on axis 2), the
    Hkv heads repeated to H (expand + reshape), softmax over past + 1."""

    def __init__(self, d=64, heads=8, kv_heads=2):
        super().__init__()
        self.heads, self.kv_heads, self.dh = heads, kv_heads, d // heads
        self.q = nn.Linear(d, heads * self.dh, bias=False)
        self.k = nn.Linear(d, kv_heads * self.dh, bias=False)
        self.v = nn.Linear(d, kv_heads * self.dh, bias=False)
        self.o = nn.Linear(heads * self.dh, d, bias=False)

    def forward(self, x, past_key, past_value):
        B, T, _ = x.shape
        H, Hkv, Dh = self.heads, self.kv_heads, self.dh
        q = self.q(x).view(B, T, H, Dh).transpose(1, 2)
        k = self.k(x).view(B, T, Hkv, Dh).transpose(1, 2)
        v = self.v(x).view(B, T, Hkv, Dh).transpose(1, 2)
        present_key = torch.cat([past_key, k], dim=2)
        present_value = torch.cat([past_value, v], dim=2)
        L = present_key.shape[2]
        kk = present_key[:, :, None].expand(B, Hkv, H // Hkv, L, Dh) \
            .reshape(B, H, L, Dh)
        vv = present_value[:, :, None].expand(B, Hkv, H // Hkv, L, Dh) \
            .reshape(B, H, L, Dh)
        att = torch.softmax(q @ kk.transpose(-2, -1) / math.sqrt(Dh), dim=-1)
        y = (att @ vv).transpose(1, 2).reshape(B, T, H * Dh)
        return self.o(y), present_key, present_value


class IfModel(nn.Module):
    """torch.jit.script'ed: a data-dependent branch (ONNX If) on the
    input's mean (the test shapes' inputs are shifted so that both
    branches run)."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 16)

    def forward(self, x):
        y = self.fc(x)
        if bool(x.mean() > 0):
            out = torch.relu(y) * 2.0
        else:
            out = torch.sigmoid(y) - 1.0
        return out


class LoopModel(nn.Module):
    """torch.jit.script'ed Elman RNN: a Python loop over the (dynamic)
    sequence (ONNX Loop with a trip count from Shape)."""

    def __init__(self):
        super().__init__()
        self.hidden = 24
        self.ih = nn.Linear(16, 24)
        self.hh = nn.Linear(24, 24)

    def forward(self, x):
        h = torch.zeros(x.size(0), self.hidden)
        for t in range(x.size(1)):
            h = torch.tanh(self.ih(x[:, t]) + self.hh(h))
        return h


def _tv(name, **kw):
    return getattr(torchvision.models, name)(weights=None, **kw)


# Each spec: name, what, make() -> module, inputs [(name, shape with
# symbols)], outputs [(name, shape with symbols)], shapes [{symbol: value}],
# script (torch.jit.script before export), calibrate (BN statistics),
# input_offsets (added to the test inputs, one per shape).
# Which ones Kiln is expected to compile today is the test's business
# (test/E2E/dynamic_models.py, XFAIL); the order here is the same: batch
# only first, then dynamic sequences and control flow.
IMAGE_B = [{"batch": 1}, {"batch": 2}, {"batch": 5}]
SEQ_BS = [{"batch": 1, "seq": 5}, {"batch": 2, "seq": 16},
          {"batch": 3, "seq": 33}]
SPECS = [
    # Dynamic batch.
    dict(name="resnet18", what="torchvision ResNet-18, 3x224x224",
         make=lambda: _tv("resnet18"), calibrate=True,
         inputs=[("input", ["batch", 3, 224, 224])],
         outputs=[("logits", ["batch", 1000])],
         shapes=[{"batch": 1}, {"batch": 2}, {"batch": 3}]),
    dict(name="mobilenet_v2", what="torchvision MobileNetV2, 3x160x160",
         make=lambda: _tv("mobilenet_v2"), calibrate=True,
         inputs=[("input", ["batch", 3, 160, 160])],
         outputs=[("logits", ["batch", 1000])], shapes=IMAGE_B),
    dict(name="mobilenet_v3_small",
         what="torchvision MobileNetV3-Small, 3x128x128",
         make=lambda: _tv("mobilenet_v3_small"), calibrate=True,
         inputs=[("input", ["batch", 3, 128, 128])],
         outputs=[("logits", ["batch", 1000])], shapes=IMAGE_B),
    dict(name="squeezenet1_1", what="torchvision SqueezeNet 1.1, 3x128x128",
         make=lambda: _tv("squeezenet1_1"),
         inputs=[("input", ["batch", 3, 128, 128])],
         outputs=[("logits", ["batch", 1000])], shapes=IMAGE_B),
    # Dynamic image size (and batch).
    dict(name="resnet18_hw", what="torchvision ResNet-18, any image size",
         make=lambda: _tv("resnet18"), calibrate=True,
         inputs=[("input", ["batch", 3, "height", "width"])],
         outputs=[("logits", ["batch", 1000])],
         shapes=[{"batch": 1, "height": 224, "width": 224},
                 {"batch": 2, "height": 96, "width": 160},
                 {"batch": 1, "height": 161, "width": 97}]),
    dict(name="mobilenet_v2_hw",
         what="torchvision MobileNetV2, any image size",
         make=lambda: _tv("mobilenet_v2"), calibrate=True,
         inputs=[("input", ["batch", 3, "height", "width"])],
         outputs=[("logits", ["batch", 1000])],
         shapes=[{"batch": 1, "height": 160, "width": 160},
                 {"batch": 2, "height": 96, "width": 128},
                 {"batch": 1, "height": 113, "width": 75}]),
    dict(name="squeezenet1_1_hw",
         what="torchvision SqueezeNet 1.1 (ceil_mode pools), any image size",
         make=lambda: _tv("squeezenet1_1"),
         inputs=[("input", ["batch", 3, "height", "width"])],
         outputs=[("logits", ["batch", 1000])],
         shapes=[{"batch": 1, "height": 128, "width": 128},
                 {"batch": 2, "height": 96, "width": 160},
                 {"batch": 1, "height": 161, "width": 97}]),
    dict(name="image_features",
         what="conv/BN/pools/dilated/depthwise features, any image size",
         make=ImageFeatures, calibrate=True,
         inputs=[("input", ["batch", 3, "height", "width"])],
         outputs=[("logits", ["batch", 10]),
                  ("features", ["batch", 24, "out_height", "out_width"])],
         shapes=[{"batch": 1, "height": 32, "width": 48},
                 {"batch": 2, "height": 17, "width": 23},
                 {"batch": 3, "height": 64, "width": 40}]),
    dict(name="mlp", what="MLP 784-256-128-10, GELU, ReLU, softmax",
         make=MLP,
         inputs=[("input", ["batch", 784])],
         outputs=[("probs", ["batch", 10])],
         shapes=[{"batch": 1}, {"batch": 2}, {"batch": 5}, {"batch": 64}]),
    dict(name="mlp_layernorm", what="the MLP with a LayerNorm",
         make=lambda: MLP(layernorm=True),
         inputs=[("input", ["batch", 784])],
         outputs=[("probs", ["batch", 10])],
         shapes=[{"batch": 1}, {"batch": 2}, {"batch": 5}]),
    dict(name="small_cnn", what="CNN with BatchNorm2d/1d, 3x32x32",
         make=SmallCNN, calibrate=True,
         inputs=[("input", ["batch", 3, 32, 32])],
         outputs=[("logits", ["batch", 10])],
         shapes=[{"batch": 1}, {"batch": 2}, {"batch": 5}, {"batch": 17}]),
    dict(name="lstm", what="2-layer LSTM, batch_first, 12 steps",
         make=LSTMClassifier,
         inputs=[("input", ["batch", 12, 16])],
         outputs=[("logits", ["batch", 5]), ("seq", ["batch", 12, 32])],
         shapes=IMAGE_B),
    dict(name="gru", what="bidirectional GRU, sequence first, 12 steps",
         make=GRUTagger,
         inputs=[("input", [12, "batch", 16])],
         outputs=[("tags", [12, "batch", 7])], shapes=IMAGE_B),
    # Dynamic sequence / cache length, control flow.
    dict(name="transformer_encoder",
         what="nn.TransformerEncoderLayer d=64 h=4, batch_first",
         make=lambda: nn.TransformerEncoderLayer(
             64, 4, dim_feedforward=128, dropout=0.0, batch_first=True),
         inputs=[("input", ["batch", "seq", 64])],
         outputs=[("output", ["batch", "seq", 64])], shapes=SEQ_BS),
    dict(name="gpt_block", what="nanoGPT block, causal mask from a buffer",
         make=GPTBlock,
         inputs=[("input", ["batch", "seq", 64])],
         outputs=[("output", ["batch", "seq", 64])], shapes=SEQ_BS),
    dict(name="gqa_kv_cache", what="GQA decode step (8/2 heads), KV cache",
         make=GQADecodeStep,
         inputs=[("x", ["batch", 1, 64]),
                 ("past_key", ["batch", 2, "past", 8]),
                 ("past_value", ["batch", 2, "past", 8])],
         outputs=[("output", ["batch", 1, 64]),
                  ("present_key", ["batch", 2, "present", 8]),
                  ("present_value", ["batch", 2, "present", 8])],
         shapes=[{"batch": 1, "past": 1}, {"batch": 2, "past": 7},
                 {"batch": 3, "past": 32}]),
    dict(name="if_branch", what="jit.script, data-dependent if (ONNX If)",
         make=IfModel, script=True, input_offsets=[1.0, -1.0, 1.0],
         inputs=[("input", ["batch", 16])],
         outputs=[("output", ["batch", 16])], shapes=IMAGE_B),
    dict(name="loop_rnn", what="jit.script, loop over the sequence (Loop)",
         make=LoopModel, script=True,
         inputs=[("input", ["batch", "seq", 16])],
         outputs=[("output", ["batch", 24])], shapes=SEQ_BS),
]
LARGE_SPECS = [
    dict(name="resnet50", what="torchvision ResNet-50, 3x224x224",
         make=lambda: _tv("resnet50"), calibrate=True,
         inputs=[("input", ["batch", 3, 224, 224])],
         outputs=[("logits", ["batch", 1000])],
         shapes=[{"batch": 1}, {"batch": 2}]),
]


def concrete(shape, dims):
    return [dims[d] if isinstance(d, str) else d for d in shape]


def make_inputs(spec, dims, seed, offset=0.0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(*concrete(shape, dims), generator=g) + offset
            for _, shape in spec["inputs"]]


def calibrate(model, spec):
    """Gives the BatchNorms running statistics of random data (cumulative
    averages over two batches of 4), so that activations keep a realistic
    scale through the depth instead of the init's mean 0 / var 1."""
    for m in model.modules():
        if isinstance(m, nn.modules.batchnorm._BatchNorm):
            m.momentum = None
            m.reset_running_stats()
    model.train()
    # A batch of 4; an image of the first test shape's size (a 4x4 image
    # would give statistics that blow up at full size).
    dims = {s: 4 if s == "batch" else spec["shapes"][0][s]
            for s in {d for _, shp in spec["inputs"] for d in shp
                      if isinstance(d, str)}}
    with torch.no_grad():
        for i in range(2):
            model(*make_inputs(spec, dims, 1000 + i))
    model.eval()


def export(spec, out):
    torch.manual_seed(SEED)
    model = spec["make"]()
    if spec.get("calibrate"):
        calibrate(model, spec)
    model.eval()
    example = make_inputs(spec, spec["shapes"][-1], 99)
    if spec.get("script"):
        model = torch.jit.script(model)
    dynamic_axes = {}
    for name, shape in spec["inputs"] + spec["outputs"]:
        axes = {i: d for i, d in enumerate(shape) if isinstance(d, str)}
        if axes:
            dynamic_axes[name] = axes
    path = os.path.join(out, spec["name"] + ".onnx")
    start = time.time()
    # Not under no_grad: with gradients enabled nn.TransformerEncoderLayer
    # takes its composite path (its fused fast path has no ONNX export).
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            model, tuple(example), path, opset_version=OPSET,
            input_names=[n for n, _ in spec["inputs"]],
            output_names=[n for n, _ in spec["outputs"]],
            dynamic_axes=dynamic_axes, do_constant_folding=True)
    export_s = time.time() - start
    data = []
    for i, dims in enumerate(spec["shapes"]):
        folder = os.path.join(spec["name"], f"shape_{i}")
        os.makedirs(os.path.join(out, folder), exist_ok=True)
        offsets = spec.get("input_offsets") or [0.0] * len(spec["shapes"])
        inputs = make_inputs(spec, dims, 100 + i, offsets[i])
        with torch.no_grad():
            outputs = model(*inputs)
        if isinstance(outputs, torch.Tensor):
            outputs = (outputs,)
        for k, t in enumerate(inputs):
            np.save(os.path.join(out, folder, f"input_{k}.npy"),
                    t.detach().numpy())
        for k, t in enumerate(outputs):
            np.save(os.path.join(out, folder, f"torch_output_{k}.npy"),
                    t.detach().numpy())
        data.append(folder)
    return {"name": spec["name"], "file": spec["name"] + ".onnx",
            "what": spec["what"],
            "inputs": [{"name": n, "shape": s} for n, s in spec["inputs"]],
            "outputs": [{"name": n, "shape": s} for n, s in spec["outputs"]],
            "shapes": spec["shapes"], "data": data,
            "export_s": round(export_s, 2)}


def main():
    ap = argparse.ArgumentParser(
        description="Exports real architectures with dynamic dims to ONNX "
        "(test/E2E/dynamic_models.py runs them).")
    ap.add_argument("--out", required=False)
    ap.add_argument("--only", help="comma-separated model names")
    ap.add_argument("--with-large", action="store_true",
                    help="also ResNet-50 (batch 1, 2)")
    ap.add_argument("--list", action="store_true",
                    help="print the models and exit")
    args = ap.parse_args()
    specs = SPECS + (LARGE_SPECS if args.with_large else [])
    if args.list:
        for s in SPECS + LARGE_SPECS:
            print(f"{s['name']:22} {s['what']}")
        return 0
    if not args.out:
        ap.error("--out is required")
    if args.only:
        names = args.only.split(",")
        known = {s["name"]: s for s in SPECS + LARGE_SPECS}
        unknown = [n for n in names if n not in known]
        if unknown:
            ap.error(f"unknown model(s) {', '.join(unknown)}; --list shows "
                     "them")
        specs = [known[n] for n in names]
    torch.set_num_threads(min(2, os.cpu_count() or 1))
    os.makedirs(args.out, exist_ok=True)
    manifest = {"torch": torch.__version__,
                "torchvision": torchvision.__version__,
                "opset": OPSET, "models": []}
    failed = 0
    for spec in specs:
        try:
            entry = export(spec, args.out)
        except Exception as e:  # noqa: BLE001 - reported, then exit 1
            print(f"{spec['name']:22} EXPORT FAILED: "
                  f"{type(e).__name__}: {e}", file=sys.stderr)
            failed += 1
            continue
        manifest["models"].append(entry)
        print(f"{spec['name']:22} exported in {entry['export_s']:.1f} s")
    with open(os.path.join(args.out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
