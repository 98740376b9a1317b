#!/usr/bin/env python3
#===- models/generate_linear_attention.py - A linear-attention block -------===#
#
# Writes linear_attention.onnx: the attention of "Transformers are RNNs"
# (Katharopoulos et al., 2020) as torch.onnx.export (opset 17) emits this
# PyTorch module, node for node:
#
#   class LinearAttention(nn.Module):
#       def forward(self, x):                        # [B, S, D_MODEL]
#           B, S, _ = x.shape
#           def heads(t, n):
#               return t.view(B, S, n, HEAD_DIM).transpose(1, 2)
#           q = heads(self.q_proj(x), N_HEADS)       # Linear, no bias
#           k = heads(self.k_proj(x), N_KV_HEADS)
#           v = heads(self.v_proj(x), N_KV_HEADS)
#           k = repeat_kv(k, N_HEADS // N_KV_HEADS)  # as in Llama
#           v = repeat_kv(v, N_HEADS // N_KV_HEADS)
#           q = F.elu(q) + 1                         # φ(x) = elu(x) + 1
#           k = F.elu(k) + 1
#           kv = torch.matmul(k.transpose(-2, -1), v)
#           num = torch.matmul(q, kv)
#           z = torch.matmul(q, k.sum(dim=-2, keepdim=True).transpose(-2, -1))
#           out = num / (z + self.eps)
#           out = out.transpose(1, 2).reshape(B, S, D_MODEL)
#           return self.o_proj(out)
#
# (static shapes, so the exporter's shape arithmetic is constants), with a
# backend-test style data set whose output onnxruntime computes and which is
# checked against a float64 numpy reference written from the paper's math.
# kiln-fuse-linear-attention turns its attention into one
# kiln.linear_attention (test/Transforms/fuse-linear-attention-model.test).
#
#   generate_linear_attention.py --out DIR [--feature-map elu1|relu|exp]
#
#===----------------------------------------------------------------------===#

import argparse
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from generate_demo_models import (GraphBuilder, run_onnxruntime,  # noqa: E402
                                  write_data_set)

BATCH = 2
SEQ = 16
D_MODEL = 64
N_HEADS = 4
N_KV_HEADS = 2
HEAD_DIM = D_MODEL // N_HEADS
EPS = 1e-6


def feature_map(b, t, kind):
    if kind == "elu1":
        return b.op("Add", [b.op("Elu", [t], alpha=1.0),
                            b.const(1.0, np.float32)])
    if kind == "relu":
        return b.op("Relu", [t])
    return b.op("Exp", [t])


def build(kind):
    b = GraphBuilder(seed=4)
    for name, out in (("q_proj", N_HEADS), ("k_proj", N_KV_HEADS),
                      ("v_proj", N_KV_HEADS), ("o_proj", None)):
        rows = D_MODEL if out is None else out * HEAD_DIM
        # nn.Linear stores [out, in]; the exporter transposes the initializer.
        b.weight(f"attn.{name}.weight", (D_MODEL, rows))
    x = "hidden_states"
    b.scope = "/attn"

    def heads(t, n):
        t = b.op("Reshape", [t, b.const([BATCH, SEQ, n, HEAD_DIM])])
        return b.op("Transpose", [t], perm=[0, 2, 1, 3])

    q = heads(b.op("MatMul", [x, "attn.q_proj.weight"]), N_HEADS)
    k = heads(b.op("MatMul", [x, "attn.k_proj.weight"]), N_KV_HEADS)
    v = heads(b.op("MatMul", [x, "attn.v_proj.weight"]), N_KV_HEADS)

    rep = N_HEADS // N_KV_HEADS

    def repeat_kv(t):
        t = b.op("Unsqueeze", [t, b.const([2])])
        t = b.op("Expand", [t, b.const([BATCH, N_KV_HEADS, rep, SEQ,
                                        HEAD_DIM])])
        return b.op("Reshape", [t, b.const([BATCH, N_HEADS, SEQ, HEAD_DIM])])

    k = repeat_kv(k)
    v = repeat_kv(v)
    q = feature_map(b, q, kind)
    k = feature_map(b, k, kind)
    kv = b.op("MatMul", [b.op("Transpose", [k], perm=[0, 1, 3, 2]), v])
    num = b.op("MatMul", [q, kv])
    ksum = b.op("ReduceSum", [k, b.const([-2])], keepdims=1)
    z = b.op("MatMul", [q, b.op("Transpose", [ksum], perm=[0, 1, 3, 2])])
    out = b.op("Div", [num, b.op("Add", [z, b.const(EPS, np.float32)])])
    out = b.op("Transpose", [out], perm=[0, 2, 1, 3])
    out = b.op("Reshape", [out, b.const([BATCH, SEQ, D_MODEL])])
    b.scope = ""
    b.nodes.append(helper.make_node(
        "MatMul", [out, "attn.o_proj.weight"], ["output"],
        name="/attn/o_proj/MatMul"))
    model = b.model(
        "linear_attention",
        [helper.make_tensor_value_info(x, TensorProto.FLOAT,
                                       [BATCH, SEQ, D_MODEL])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT,
                                       [BATCH, SEQ, D_MODEL])])
    weights = {t.name: onnx.numpy_helper.to_array(t)
               for t in model.graph.initializer}
    return model, weights


def reference(w, x, kind):
    """Katharopoulos et al.'s formula, per head, in float64."""
    w = {k: v.astype(np.float64) for k, v in w.items()}
    x = x.astype(np.float64)
    phi = {"elu1": lambda t: np.where(t > 0, t, np.expm1(t)) + 1,
           "relu": lambda t: np.maximum(t, 0),
           "exp": np.exp}[kind]

    def heads(t, n):
        return t.reshape(BATCH, SEQ, n, HEAD_DIM).transpose(0, 2, 1, 3)

    q = phi(heads(x @ w["attn.q_proj.weight"], N_HEADS))
    k = phi(heads(x @ w["attn.k_proj.weight"], N_KV_HEADS))
    v = heads(x @ w["attn.v_proj.weight"], N_KV_HEADS)
    rep = N_HEADS // N_KV_HEADS
    out = np.empty((BATCH, N_HEADS, SEQ, HEAD_DIM))
    for h in range(N_HEADS):
        g = h // rep  # query head h reads KV head h / rep
        kv = np.einsum("bsd,bse->bde", k[:, g], v[:, g])
        z = np.einsum("bsd,bd->bs", q[:, h], k[:, g].sum(axis=1))
        out[:, h] = np.einsum("bsd,bde->bse", q[:, h], kv) / (z + EPS)[..., None]
    out = out.transpose(0, 2, 1, 3).reshape(BATCH, SEQ, D_MODEL)
    return (out @ w["attn.o_proj.weight"]).astype(np.float32)


def main():
    parser = argparse.ArgumentParser(
        description="Writes a linear-attention block as PyTorch exports it.")
    parser.add_argument("--out", required=True, help="output folder")
    parser.add_argument("--feature-map", default="elu1",
                        choices=["elu1", "relu", "exp"])
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    model, weights = build(args.feature_map)
    path = os.path.join(args.out, "linear_attention.onnx")
    onnx.save(model, path)
    inputs = [np.random.default_rng(104).standard_normal(
        (BATCH, SEQ, D_MODEL)).astype(np.float32)]
    outputs = run_onnxruntime(model, inputs)
    np.testing.assert_allclose(
        outputs[0], reference(weights, inputs[0], args.feature_map),
        rtol=1e-4, atol=1e-5,
        err_msg="onnxruntime and the numpy reference disagree")
    write_data_set(os.path.join(args.out, "linear_attention",
                                "test_data_set_0"), model, inputs, outputs)
    print(f"linear_attention ({args.feature_map}): {len(model.graph.node)} "
          f"nodes -> {path}")


if __name__ == "__main__":
    main()
