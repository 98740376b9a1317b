#!/usr/bin/env python3
#===- models/generate_seed_variants.py - The seed's 2x2 grid of models -----===#
#
# Writes the model variants of the seed study (issue 6, section 2): one
# decoder-only transformer (fixed seed, configurable size) as ONNX in the form
# torch.onnx.export (opset 17, static shapes, constant folding) emits for a
# Llama-style PyTorch module, in six variants:
#
#               fp32 (baseline)   fp16 ("Standard" when softmax)   int8 QDQ
#   softmax     softmax_fp32      softmax_fp16  = Standard         softmax_int8
#   linear      linear_fp32       linear_fp16                      linear_int8
#                                                                  = Flash
#
# All six share the same fp32 master weights, so each variant's quality can
# be measured against the fp32 model of its attention kind. Next to the
# .onnx files: manifest.json (schema kiln.seed-variants v1, models/README.md)
# and per variant a data folder <name>/test_data_set_0/ with input_0.npy (the
# token ids) and output_0.npy (the logits of the numpy reference,
# models/seed_reference.py), usable as `kiln-run m.kiln --inputs DIR`.
#
#   generate_seed_variants.py --out DIR [--preset small|full]
#       [--attention softmax,linear] [--precision fp32,fp16,int8]
#       [--layers N --d-model N --heads N --kv-heads N --ffn N --vocab N
#        --seq-len N --batch N] [--linear-form cumsum|masked]
#       [--act-type uint8|int8] [--qdq-outputs on|off] [--dynamic-dims]
#       [--seed N] [--check-ort] [--no-reference]
#
# The graph of one layer (scope /model/layers.N), as PyTorch exports it:
#
#   RMSNorm   [Cast f32] Pow 2, ReduceMean -1, Add eps, Sqrt, Div(1, .) (how
#             torch.rsqrt exports), Mul, [Cast f16], Mul weight
#   attention q/k/v MatMul (weights [in, out] initializers), Reshape
#             [B,S,n,hd], Transpose (0,2,1,3); repeat_kv as Unsqueeze(2),
#             Expand [B,KV,rep,S,hd], Reshape [B,H,S,hd]; then
#     softmax MatMul(q, Transpose k), Div sqrt(hd), Where(causal, s, min),
#             [Cast f32] Softmax [Cast f16], MatMul(probs, v)
#     linear  phi = Elu + 1 on q and k; cumsum form (default):
#             kv = CumSum_S(Unsqueeze(phi k, -1) * Unsqueeze(v, -2)),
#             num = Squeeze(MatMul(Unsqueeze(phi q, -2), kv)),
#             den = ReduceSum(phi q * CumSum_S(phi k), -1) + 1e-6,
#             out = num / den (O(S hd^2): linear in the sequence length);
#             masked form: a = Where(causal, phi q @ phi k^T, 0),
#             out = (a / (ReduceSum(a, -1) + 1e-6)) @ v (O(S^2 hd))
#             (fp16: Cast to f32 around the core, Cast back)
#   then      Transpose, Reshape [B,S,D], o_proj MatMul, Add residual,
#             RMSNorm, SwiGLU: gate MatMul, Sigmoid, Mul, up MatMul, Mul,
#             down MatMul, Add residual.
#
# Around the layers: input_ids int64 [B,S] -> Gather(embed_tokens) -> layers
# -> RMSNorm -> lm_head MatMul -> logits [B,S,vocab] float32 (the fp16
# variants Cast their fp16 logits to float32 at the end, as Hugging Face's
# LlamaForCausalLM does with logits.float()). No positional encoding: the
# causal mask alone orders the tokens (documented in models/README.md).
#
# Precisions:
#   fp16  model.half(): fp16 initializers and fp16 compute; token ids stay
#         int64. RMSNorm and the softmax run in float32 between Casts (HF
#         Llama's hidden_states.to(float32) and softmax(dtype=float32)), and
#         so does the core of the linear attention (prefix sums / row sums
#         over up to S*hd terms overflow fp16's 65504 at the full preset).
#   int8  onnxruntime.quantization.quantize_static in QDQ format with
#         op_types_to_quantize=["MatMul"], per_channel=True: every MatMul
#         weight an int8 per-output-channel symmetric initializer +
#         DequantizeLinear(axis=1); every float MatMul input that is not a
#         weight (projections and attention matmuls) a per-tensor asymmetric
#         QuantizeLinear -> DequantizeLinear pair (uint8 by default), one pair
#         per tensor however many MatMuls read it, and so every MatMul output
#         (as onnxruntime 1.31 writes it; --qdq-outputs off: inputs only).
#         Scales from a MinMax calibration of the fp32 model on random
#         tokens, in numpy.
#
#===----------------------------------------------------------------------===#

import argparse
import json
import os
import sys
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import seed_reference as ref  # noqa: E402

OPSET = 17
IR_VERSION = 8
SCHEMA = "kiln.seed-variants v1"

PRESETS = {
    # Compiles and runs in seconds on 2 cores.
    "small": dict(layers=2, d_model=256, heads=8, kv_heads=2, ffn=688,
                  vocab=1024, seq_len=128, batch=1),
    # ~110 M parameters (Llama-like proportions), seq 512.
    "full": dict(layers=8, d_model=1024, heads=16, kv_heads=4, ffn=2816,
                 vocab=8192, seq_len=512, batch=1),
}
ROLES = {("softmax", "fp16"): "standard", ("linear", "int8"): "flash",
         ("softmax", "int8"): "crossed", ("linear", "fp16"): "crossed",
         ("softmax", "fp32"): "baseline", ("linear", "fp32"): "baseline"}

# Quality gates of a variant's logits against its numpy reference (the same
# precision emulated in float64): max |error| <= max_abs_error_rel *
# max |reference|, cosine similarity >= cosine_min, top-1 agreement >=
# top1_min. models/README.md justifies them from the precisions.
TOLERANCES = {
    "fp32": dict(max_abs_error_rel=1e-4, cosine_min=0.999999, top1_min=0.99),
    "fp16": dict(max_abs_error_rel=5e-3, cosine_min=0.99999, top1_min=0.97),
    "int8": dict(max_abs_error_rel=5e-2, cosine_min=0.9995, top1_min=0.95),
}
# int8 in stacks deeper than the small preset's 2 layers: a quantization step
# flipped by float32 rounding (see models/README.md) has more layers to grow
# through, and two correct implementations differ more. Measured at the full
# preset (8 layers, seq 512): ONNX Runtime and Kiln differ from the
# reference by cosine 0.9966-0.9985, top-1 0.84-0.88, max error 7-11 % of
# max |logit|.
TOLERANCES_INT8_DEEP = dict(max_abs_error_rel=0.15, cosine_min=0.995,
                            top1_min=0.75)


def tolerance(precision, cfg):
    """The quality gate of a variant of `precision` for model `cfg`."""
    if precision == "int8" and cfg["layers"] > 2:
        return TOLERANCES_INT8_DEEP
    return TOLERANCES[precision]


def within(quality, tolerance, ref_max):
    """The gates `quality` (seed_reference.quality) fails, [] when none."""
    failed = []
    if quality["max_abs_error"] > tolerance["max_abs_error_rel"] * ref_max:
        failed.append(f"max abs error {quality['max_abs_error']:.3g} > "
                      f"{tolerance['max_abs_error_rel']:g} * {ref_max:.3g}")
    if quality["cosine"] < tolerance["cosine_min"]:
        failed.append(f"cosine {quality['cosine']:.7f} < "
                      f"{tolerance['cosine_min']}")
    if quality["top1_agreement"] < tolerance["top1_min"]:
        failed.append(f"top-1 {quality['top1_agreement']:.4f} < "
                      f"{tolerance['top1_min']}")
    return failed


# --- Weights ----------------------------------------------------------------

def master_weights(cfg, seed):
    """fp32 weights by their PyTorch names; MatMul weights stored [in, out]
    as the exporter writes nn.Linear's transposed weight."""
    rng = np.random.default_rng(seed)
    d, hd = cfg["d_model"], cfg["d_model"] // cfg["heads"]
    w = {}

    def lin(name, fan_in, fan_out):
        w[name] = (rng.standard_normal((fan_in, fan_out)) /
                   np.sqrt(fan_in)).astype(np.float32)

    def norm(name):
        w[name] = (1.0 + 0.1 * rng.standard_normal(d)).astype(np.float32)

    w["model.embed_tokens.weight"] = rng.standard_normal(
        (cfg["vocab"], d)).astype(np.float32)
    for i in range(cfg["layers"]):
        p = f"model.layers.{i}"
        norm(f"{p}.input_layernorm.weight")
        lin(f"{p}.self_attn.q_proj.weight", d, cfg["heads"] * hd)
        lin(f"{p}.self_attn.k_proj.weight", d, cfg["kv_heads"] * hd)
        lin(f"{p}.self_attn.v_proj.weight", d, cfg["kv_heads"] * hd)
        lin(f"{p}.self_attn.o_proj.weight", cfg["heads"] * hd, d)
        norm(f"{p}.post_attention_layernorm.weight")
        lin(f"{p}.mlp.gate_proj.weight", d, cfg["ffn"])
        lin(f"{p}.mlp.up_proj.weight", d, cfg["ffn"])
        lin(f"{p}.mlp.down_proj.weight", cfg["ffn"], d)
    norm("model.norm.weight")
    lin("lm_head.weight", d, cfg["vocab"])
    return w


def token_ids(cfg, seed, batch=None):
    rng = np.random.default_rng(seed)
    return rng.integers(0, cfg["vocab"], (batch or cfg["batch"],
                                          cfg["seq_len"]), dtype=np.int64)


def calibrate(cfg, weights, attention, seed, batches, act_type,
              linear_form):
    """MinMax ranges of every quantized activation over `batches` random
    sequences through the fp32 model (onnxruntime's MinMax calibrater
    keeps the min of the mins and the max of the maxes)."""
    record = {}
    ids = token_ids(cfg, seed, batches)
    for row in ids:
        ref.forward(cfg, weights, row[None], attention, "fp32",
                    record=record, act_type=act_type,
                    linear_form=linear_form)
    return {k: ref.activation_qparams(lo, hi, act_type)
            for k, (lo, hi) in record.items()}


# --- Graph ------------------------------------------------------------------

class Builder:
    """Nodes named as PyTorch's exporter names them (`/scope/Op_N`, outputs
    `/scope/Op_N_output_0`)."""

    def __init__(self, cfg, precision, weights, qparams, act_type,
                 dynamic, qdq_outputs):
        self.cfg = cfg
        self.qdq_outputs = qdq_outputs
        self.precision = precision
        self.weights = weights
        self.qparams = qparams
        self.act_type = act_type
        self.dynamic = dynamic
        self.nodes, self.inits = [], []
        self.counts = {}
        self.opset = OPSET
        self.scope = ""
        self.qdq_cache = {}
        self.weight_cache = {}
        self.ftype = (TensorProto.FLOAT16 if precision == "fp16" else
                      TensorProto.FLOAT)
        self.fnp = np.float16 if precision == "fp16" else np.float32

    def _name(self, op_type):
        key = (self.scope, op_type)
        n = self.counts.get(key, 0)
        self.counts[key] = n + 1
        return f"{self.scope}/{op_type}" + (f"_{n}" if n else "")

    def op(self, op_type, inputs, **attrs):
        name = self._name(op_type)
        out = f"{name}_output_0"
        self.nodes.append(helper.make_node(op_type, inputs, [out], name=name,
                                           **attrs))
        return out

    def const(self, value, dtype=np.int64):
        name = self._name("Constant")
        out = f"{name}_output_0"
        self.nodes.append(helper.make_node(
            "Constant", [], [out], name=name,
            value=numpy_helper.from_array(np.asarray(value, dtype=dtype))))
        return out

    def fconst(self, value):
        """A scalar in the working precision (fp16 constants for fp16)."""
        return self.const(value, self.fnp)

    def init(self, name, array):
        self.inits.append(numpy_helper.from_array(array, name))
        return name

    def cast(self, x, to):
        return self.op("Cast", [x], to=to)

    def named(self, name):
        """Renames the output of the node just added (a graph output)."""
        self.nodes[-1].output[0] = name
        return name

    # Shapes: constants with static shapes (the exporter folds x.shape[i]);
    # with --dynamic-dims, the Shape -> Gather -> Unsqueeze -> Concat
    # arithmetic it emits for dynamic axes.
    def setup_dims(self, ids):
        if not self.dynamic:
            return
        saved, self.scope = self.scope, "/model"
        self.dim_b = self.dim_of(ids, 0)
        self.dim_s = self.dim_of(ids, 1)
        self.scope = saved

    def dim_of(self, x, axis):
        """x.shape[axis] as a 1-element int64 tensor."""
        return self.op("Unsqueeze", [self.op(
            "Gather", [self.op("Shape", [x]), self.const(axis)], axis=0),
            self.const([0])])

    def shape(self, *parts):
        sizes = {"B": self.cfg["batch"], "S": self.cfg["seq_len"]}
        if not self.dynamic:
            return self.const([sizes.get(p, p) for p in parts])
        dims = {"B": self.dim_b, "S": self.dim_s,
                "T": getattr(self, "dim_t", None)}
        pieces = [dims[p] if isinstance(p, str) else self.const([p])
                  for p in parts]
        return self.op("Concat", pieces, axis=0)

    # MatMul operands.
    def weight(self, name):
        if name in self.weight_cache:
            return self.weight_cache[name]
        w = self.weights[name]
        if self.precision == "fp32":
            out = self.init(name, w)
        elif self.precision == "fp16":
            out = self.init(name, w.astype(np.float16))
        else:
            q, scale = ref.weight_qparams(w)
            self.init(f"{name}_quantized", q)
            self.init(f"{name}_scale", scale)
            self.init(f"{name}_zero_point", np.zeros(q.shape[1], np.int8))
            out = f"{name}_DequantizeLinear_Output"
            self.nodes.append(helper.make_node(
                "DequantizeLinear", [f"{name}_quantized", f"{name}_scale",
                                     f"{name}_zero_point"], [out],
                name=f"{name}_DequantizeLinear", axis=1))
        self.weight_cache[name] = out
        return out

    def act(self, key, x):
        """A MatMul's activation input: a QDQ pair at int8 (one per tensor,
        shared by every MatMul that reads it), the tensor itself else."""
        if self.precision != "int8":
            return x
        if x in self.qdq_cache:
            return self.qdq_cache[x]
        scale, zp = self.qparams[key]
        zp_dtype = np.uint8 if self.act_type == "uint8" else np.int8
        s = self.init(f"{x}_scale", np.array(scale, np.float32))
        z = self.init(f"{x}_zero_point", np.array(zp, zp_dtype))
        q = f"{x}_QuantizeLinear_Output"
        dq = f"{x}_DequantizeLinear_Output"
        self.nodes.append(helper.make_node("QuantizeLinear", [x, s, z], [q],
                                           name=f"{x}_QuantizeLinear"))
        self.nodes.append(helper.make_node("DequantizeLinear", [q, s, z],
                                           [dq], name=f"{x}_DequantizeLinear"))
        self.qdq_cache[x] = dq
        return dq

    def out(self, key, x):
        """A MatMul's output: a QDQ pair too at int8 with qdq_outputs."""
        return self.act(key, x) if self.qdq_outputs else x

    def linear(self, x, key, wname, scope):
        saved, self.scope = self.scope, scope
        out = self.op("MatMul", [self.act(key, x), self.weight(wname)])
        self.scope = saved
        return self.out(f"{wname}.out", out)

    def rms_norm(self, x, wname, scope):
        saved, self.scope = self.scope, scope
        h = self.cast(x, TensorProto.FLOAT) if self.precision == "fp16" else x
        square = self.op("Pow", [h, self.const(2.0, np.float32)])
        if self.opset >= 18:  # axes became an input
            var = self.op("ReduceMean", [square, self.const([-1])],
                          keepdims=1)
        else:
            var = self.op("ReduceMean", [square], axes=[-1], keepdims=1)
        std = self.op("Sqrt", [self.op(
            "Add", [var, self.const(self.cfg["eps"], np.float32)])])
        inv = self.op("Div", [self.const(1.0, np.float32), std])
        h = self.op("Mul", [h, inv])
        if self.precision == "fp16":
            h = self.cast(h, TensorProto.FLOAT16)
        if wname not in self.weight_cache:  # a float initializer, never int8
            self.weight_cache[wname] = self.init(
                wname, self.weights[wname].astype(self.fnp))
        out = self.op("Mul", [self.weight_cache[wname], h])
        self.scope = saved
        return out


def cache_inputs(cfg, precision, attention, static=False):
    """The decoder form's state: (input name, output name, ONNX dtype,
    dims) per tensor, in graph order. Softmax: the KV cache as optimum
    exports it (`past_key_values.{i}.key` -> `present.{i}.key`, [batch,
    kv_heads, past, head_dim], the working precision); with `static`, ONNX
    Runtime GenAI's shared buffer: past and present [batch, kv_heads,
    max_sequence_length, head_dim], one buffer written in place. Linear: the
    recurrent state S = sum phi(k) v^T [batch, kv_heads, hd, hd] and the
    normaliser z = sum phi(k) [batch, kv_heads, hd], float32 (the core runs
    in float32 at every precision)."""
    kv, hd = cfg["kv_heads"], cfg["d_model"] // cfg["heads"]
    out = []
    for i in range(cfg["layers"]):
        if attention == "softmax":
            dtype = (TensorProto.FLOAT16 if precision == "fp16" else
                     TensorProto.FLOAT)
            for part in ("key", "value"):
                if static:
                    dims = ["batch_size", kv, STATIC_DIM, hd]
                    out.append((f"past_key_values.{i}.{part}",
                                f"present.{i}.{part}", dtype, dims, dims))
                    continue
                out.append((f"past_key_values.{i}.{part}",
                            f"present.{i}.{part}", dtype,
                            ["batch_size", kv, "past_sequence_length", hd],
                            ["batch_size", kv, PRESENT_DIM, hd]))
        else:
            out.append((f"past_state.{i}", f"present_state.{i}",
                        TensorProto.FLOAT, ["batch_size", kv, hd, hd],
                        ["batch_size", kv, hd, hd]))
            out.append((f"past_norm.{i}", f"present_norm.{i}",
                        TensorProto.FLOAT, ["batch_size", kv, hd],
                        ["batch_size", kv, hd]))
    return out


# optimum's names of the decoder form's dims.
PRESENT_DIM = "past_sequence_length + sequence_length"
# The static cache's length (the runtime allocates it once per generation).
STATIC_DIM = "max_sequence_length"
# TensorScatter (the static cache's in-place write) is opset 24; ONNX
# Runtime 1.31 reads IR <= 13.
STATIC_OPSET = 24
STATIC_IR_VERSION = 10


def build_model(cfg, precision, attention, weights, qparams=None,
                act_type="uint8", dynamic=False, linear_form="cumsum",
                name="model", qdq_outputs=True, decoder=False,
                static=False):
    """The forward pass over a whole sequence; with `decoder`, the
    decoder form with state (optimum's convention, models/README.md): inputs
    input_ids [batch, seq], attention_mask [batch, past + seq] and the
    cache/state of cache_inputs(); outputs logits and the new state. One
    graph serves the prompt (past 0) and each decode step (seq 1).

    With `static` (softmax only), the static cache of ONNX Runtime GenAI's
    shared buffer: attention_mask [batch, max_len] (1 for the real tokens
    written so far, 0 for left padding and the columns not written yet),
    cache_position int64 [batch] (the column of the step's first token,
    the same for every sequence of a left-padded batch), and each layer's
    new K/V rows written by TensorScatter(past, new, cache_position, axis
    2) into present [batch, kv_heads, max_len, head_dim]; attention reads
    present over all max_len keys under the mask."""
    if decoder and attention == "linear" and linear_form != "cumsum":
        raise ValueError("the decoder form of linear attention is the "
                         "cumsum (recurrent) form")
    if static and (not decoder or attention != "softmax"):
        raise ValueError("the static cache is a softmax decoder form")
    dynamic = dynamic or decoder
    b = Builder(cfg, precision, weights, qparams, act_type, dynamic,
                qdq_outputs)
    if static:
        b.opset = STATIC_OPSET
    d, heads, kv = cfg["d_model"], cfg["heads"], cfg["kv_heads"]
    hd, rep = d // heads, heads // kv
    fp16 = precision == "fp16"
    ids = "input_ids"
    b.setup_dims(ids)

    b.scope = "/model/embed_tokens"
    emb = "model.embed_tokens.weight"
    b.init(emb, weights[emb].astype(b.fnp))
    h = b.op("Gather", [emb, ids], axis=0)

    b.scope = "/model"
    if not decoder:
        # The causal mask, as torch.tril(torch.ones(S, S)).bool() exports.
        ones = b.op("ConstantOfShape", [b.shape("S", "S")],
                    value=numpy_helper.from_array(np.ones(1, np.float32)))
        keep = b.cast(b.op("Trilu", [ones], upper=0), TensorProto.BOOL)
    else:
        # total = past + seq from the mask; query i (at position past + i)
        # sees key j <= past + i where the mask is 1: torch.ones(S, T)
        # .tril(past) & attention_mask[:, None, None, :].
        mask = "attention_mask"
        total = b.dim_of(mask, 1)
        if static:
            # The queries start at column cache_position[0] of max_len.
            past = b.op("Gather", ["cache_position", b.const(0)], axis=0)
        else:
            past = b.op("Sub", [total, b.dim_s])
        if attention == "softmax":
            ones = b.op("ConstantOfShape", [
                b.op("Concat", [b.dim_s, total], axis=0)],
                value=numpy_helper.from_array(np.ones(1, np.float32)))
            causal = b.op("Trilu", [ones, past if static else b.op(
                "Squeeze", [past, b.const([0])])], upper=0)
            pad = b.cast(b.op("Unsqueeze", [mask, b.const([1, 2])]),
                         TensorProto.BOOL)
            keep = b.op("And", [b.cast(causal, TensorProto.BOOL), pad])
        else:
            # The new tokens' mask [B, 1, S, 1]: a padding token adds
            # nothing to the state.
            new = b.op("Slice", [mask, past, total, b.const([1])])
            new_mask = b.cast(b.op("Unsqueeze", [new, b.const([1, 3])]),
                              TensorProto.FLOAT)

    for i in range(cfg["layers"]):
        p = f"model.layers.{i}"
        sc = f"/model/layers.{i}"
        x = b.rms_norm(h, f"{p}.input_layernorm.weight",
                       f"{sc}/input_layernorm")
        a = f"{sc}/self_attn"
        q = b.linear(x, f"{p}.attn_in", f"{p}.self_attn.q_proj.weight",
                     f"{a}/q_proj")
        k = b.linear(x, f"{p}.attn_in", f"{p}.self_attn.k_proj.weight",
                     f"{a}/k_proj")
        v = b.linear(x, f"{p}.attn_in", f"{p}.self_attn.v_proj.weight",
                     f"{a}/v_proj")
        b.scope = a

        def heads_of(t, n):
            t = b.op("Reshape", [t, b.shape("B", "S", n, hd)])
            return b.op("Transpose", [t], perm=[0, 2, 1, 3])

        def repeat_kv(t, length="S"):
            t = b.op("Unsqueeze", [t, b.const([2])])
            t = b.op("Expand", [t, b.shape("B", kv, rep, length, hd)])
            return b.op("Reshape", [t, b.shape("B", heads, length, hd)])

        def cached(t, part):
            """Concat(past, new) along the sequence: the present cache;
            static: the new rows written into past at cache_position."""
            if static:
                b.op("TensorScatter", [f"past_key_values.{i}.{part}", t,
                                       "cache_position"], axis=2)
            else:
                b.op("Concat", [f"past_key_values.{i}.{part}", t], axis=2)
            return b.named(f"present.{i}.{part}")

        q = heads_of(q, heads)
        if decoder and attention == "linear":
            k, v = heads_of(k, kv), heads_of(v, kv)
        elif decoder:
            k = cached(heads_of(k, kv), "key")
            b.dim_t = b.dim_of(k, 2)
            k = repeat_kv(k, "T")
            v = repeat_kv(cached(heads_of(v, kv), "value"), "T")
        else:
            k = repeat_kv(heads_of(k, kv))
            v = repeat_kv(heads_of(v, kv))
        if decoder and attention == "linear":
            o = linear_step(b, i, p, q, k, v, new_mask, fp16)
            o = b.op("Reshape", [o, b.shape("B", heads, "S", hd)])
        elif attention == "softmax":
            kt = b.op("Transpose", [k], perm=[0, 1, 3, 2])
            s = b.out(f"{p}.scores.out", b.op(
                "MatMul", [b.act(f"{p}.q", q), b.act(f"{p}.kT", kt)]))
            s = b.op("Div", [s, b.fconst(np.sqrt(hd))])
            s = b.op("Where", [keep, s, b.fconst(np.finfo(b.fnp).min)])
            if fp16:
                s = b.cast(s, TensorProto.FLOAT)
            probs = b.op("Softmax", [s], axis=-1)
            if fp16:
                probs = b.cast(probs, TensorProto.FLOAT16)
            o = b.out(f"{p}.attn.out", b.op(
                "MatMul", [b.act(f"{p}.probs", probs), b.act(f"{p}.v", v)]))
        else:
            def phi(t):
                return b.op("Add", [b.op("Elu", [t], alpha=1.0),
                                    b.fconst(1.0)])
            fq, fk = phi(q), phi(k)
            if linear_form == "masked":
                fkt = b.op("Transpose", [fk], perm=[0, 1, 3, 2])
                s = b.out(f"{p}.scores.out", b.op(
                    "MatMul", [b.act(f"{p}.phi_q", fq),
                               b.act(f"{p}.phi_kT", fkt)]))
                s = b.op("Where", [keep, s, b.fconst(0.0)])
                if fp16:
                    s = b.cast(s, TensorProto.FLOAT)
                den = b.op("Add", [b.op("ReduceSum", [s, b.const([-1])],
                                        keepdims=1),
                                   b.const(ref.EPS_LINEAR, np.float32)])
                probs = b.op("Div", [s, den])
                if fp16:
                    probs = b.cast(probs, TensorProto.FLOAT16)
                o = b.out(f"{p}.attn.out", b.op(
                    "MatMul", [b.act(f"{p}.probs", probs),
                               b.act(f"{p}.v", v)]))
            else:
                vv = v
                if fp16:
                    fq, fk, vv = (b.cast(t, TensorProto.FLOAT)
                                  for t in (fq, fk, v))
                kv_outer = b.op("Mul", [
                    b.op("Unsqueeze", [fk, b.const([-1])]),
                    b.op("Unsqueeze", [vv, b.const([-2])])])
                kv_sum = b.op("CumSum", [kv_outer, b.const(2)])
                num = b.out(f"{p}.num.out", b.op("MatMul", [
                    b.act(f"{p}.phi_q", b.op("Unsqueeze",
                                             [fq, b.const([-2])])),
                    b.act(f"{p}.kv", kv_sum)]))
                num = b.op("Squeeze", [num, b.const([-2])])
                k_sum = b.op("CumSum", [fk, b.const(2)])
                den = b.op("ReduceSum", [b.op("Mul", [fq, k_sum]),
                                         b.const([-1])], keepdims=1)
                den = b.op("Add", [den, b.const(ref.EPS_LINEAR, np.float32)])
                o = b.op("Div", [num, den])
                if fp16:
                    o = b.cast(o, TensorProto.FLOAT16)
        o = b.op("Transpose", [o], perm=[0, 2, 1, 3])
        o = b.op("Reshape", [o, b.shape("B", "S", d)])
        o = b.linear(o, f"{p}.o_in", f"{p}.self_attn.o_proj.weight",
                     f"{a}/o_proj")
        b.scope = sc
        h = b.op("Add", [h, o])
        x = b.rms_norm(h, f"{p}.post_attention_layernorm.weight",
                       f"{sc}/post_attention_layernorm")
        g = b.linear(x, f"{p}.mlp_in", f"{p}.mlp.gate_proj.weight",
                     f"{sc}/mlp/gate_proj")
        u = b.linear(x, f"{p}.mlp_in", f"{p}.mlp.up_proj.weight",
                     f"{sc}/mlp/up_proj")
        b.scope = f"{sc}/mlp/act_fn"
        silu = b.op("Mul", [g, b.op("Sigmoid", [g])])
        b.scope = f"{sc}/mlp"
        m = b.op("Mul", [silu, u])
        m = b.linear(m, f"{p}.down_in", f"{p}.mlp.down_proj.weight",
                     f"{sc}/mlp/down_proj")
        b.scope = sc
        h = b.op("Add", [h, m])

    x = b.rms_norm(h, "model.norm.weight", "/model/norm")
    logits = b.linear(x, "lm_head_in", "lm_head.weight", "/lm_head")
    b.scope = ""
    last = b.nodes[-1]
    if fp16:
        b.nodes.append(helper.make_node("Cast", [logits], ["logits"],
                                        name="/Cast", to=TensorProto.FLOAT))
    else:
        last.output[0] = "logits"
    bdim, sdim = ((["batch", "seq"]) if dynamic else
                  [cfg["batch"], cfg["seq_len"]])
    inputs = [helper.make_tensor_value_info(ids, TensorProto.INT64,
                                            [bdim, sdim])]
    outputs = [helper.make_tensor_value_info("logits", TensorProto.FLOAT,
                                             [bdim, sdim, cfg["vocab"]])]
    if decoder:
        bdim, sdim = "batch_size", "sequence_length"
        inputs = [helper.make_tensor_value_info(ids, TensorProto.INT64,
                                                [bdim, sdim]),
                  helper.make_tensor_value_info(
                      mask, TensorProto.INT64,
                      [bdim, STATIC_DIM if static else PRESENT_DIM])]
        if static:
            inputs.append(helper.make_tensor_value_info(
                "cache_position", TensorProto.INT64, [bdim]))
        outputs = [helper.make_tensor_value_info(
            "logits", TensorProto.FLOAT, [bdim, sdim, cfg["vocab"]])]
        for past, present, dtype, pdims, odims in cache_inputs(
                cfg, precision, attention, static):
            inputs.append(helper.make_tensor_value_info(past, dtype, pdims))
            outputs.append(helper.make_tensor_value_info(present, dtype,
                                                         odims))
    graph = helper.make_graph(b.nodes, name, inputs, outputs, b.inits)
    model = helper.make_model(
        graph, producer_name="kiln-seed-variants",
        opset_imports=[helper.make_opsetid(
            "", STATIC_OPSET if static else OPSET)],
        ir_version=STATIC_IR_VERSION if static else IR_VERSION)
    onnx.checker.check_model(model)
    return model


def linear_step(b, i, p, q, k, v, new_mask, fp16):
    """Causal linear attention with a recurrent state, as a PyTorch export
    of S_t = S_0 + cumsum(phi(k) v^T), z_t = z_0 + cumsum(phi(k)),
    o_t = phi(q_t) S_t / (phi(q_t) . z_t + eps) writes it, over the KV heads
    (GQA: the state is never repeated; each KV head's query group reads
    it). q [B, H, S, hd]; k, v [B, KV, S, hd]; returns o [B, KV, rep, S,
    hd]. The last position's S and z are the outputs present_state.{i} and
    present_norm.{i}."""
    cfg = b.cfg
    kv, hd = cfg["kv_heads"], cfg["d_model"] // cfg["heads"]
    rep = cfg["heads"] // kv

    def phi(t):
        return b.op("Add", [b.op("Elu", [t], alpha=1.0), b.fconst(1.0)])

    fq, fk, vv = phi(q), phi(k), v
    if fp16:
        fq, fk, vv = (b.cast(t, TensorProto.FLOAT) for t in (fq, fk, v))
    fk = b.op("Mul", [fk, new_mask])
    kv_outer = b.op("Mul", [b.op("Unsqueeze", [fk, b.const([-1])]),
                            b.op("Unsqueeze", [vv, b.const([-2])])])
    kv_sum = b.op("Add", [b.op("CumSum", [kv_outer, b.const(2)]),
                          b.op("Unsqueeze", [f"past_state.{i}",
                                             b.const([2])])])
    k_sum = b.op("Add", [b.op("CumSum", [fk, b.const(2)]),
                         b.op("Unsqueeze", [f"past_norm.{i}",
                                            b.const([2])])])

    def last(t, name):
        b.op("Squeeze", [b.op("Slice", [t, b.const([-1]),
                                        b.const([np.iinfo(np.int64).max]),
                                        b.const([2])]), b.const([2])])
        return b.named(name)

    last(kv_sum, f"present_state.{i}")
    last(k_sum, f"present_norm.{i}")
    fqg = b.op("Reshape", [fq, b.shape("B", kv, rep, "S", hd)])
    num = b.out(f"{p}.num.out", b.op("MatMul", [
        b.act(f"{p}.phi_q", b.op("Unsqueeze", [fqg, b.const([-2])])),
        b.act(f"{p}.kv", b.op("Unsqueeze", [kv_sum, b.const([2])]))]))
    num = b.op("Squeeze", [num, b.const([-2])])
    den = b.op("ReduceSum", [b.op("Mul", [
        fqg, b.op("Unsqueeze", [k_sum, b.const([2])])]), b.const([-1])],
        keepdims=1)
    den = b.op("Add", [den, b.const(ref.EPS_LINEAR, np.float32)])
    o = b.op("Div", [num, den])
    if fp16:
        o = b.cast(o, TensorProto.FLOAT16)
    return o


# --- Driver -----------------------------------------------------------------

def run_onnxruntime(path, ids):
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.intra_op_num_threads = 2
    session = ort.InferenceSession(path, options,
                                   providers=["CPUExecutionProvider"])
    return session.run(None, {"input_ids": ids})[0]


def parse_list(value, allowed, what):
    items = allowed if value == "all" else value.split(",")
    for item in items:
        if item not in allowed:
            raise SystemExit(f"unknown {what} '{item}' (one of "
                             f"{', '.join(allowed)})")
    return items


def write_decoder(args, cfg, weights, attention, precision, qparams,
                  qdq_outputs, static=False):
    """Writes the decoder form of one variant (`static`: the static-cache
    form, decoder-static), its reference generation (greedy ids of
    seed_reference.greedy_generate for a seeded prompt) and returns its
    manifest entry."""
    start = time.time()
    form = "decoder-static" if static else "decoder"
    name = f"{attention}_{precision}_" + form.replace("-", "_")
    model = build_model(cfg, precision, attention, weights, qparams,
                        args.act_type, True, "cumsum", name, qdq_outputs,
                        decoder=True, static=static)
    path = os.path.join(args.out, f"{name}.onnx")
    onnx.save(model, path)
    state = [{"input": past, "output": present,
              "dtype": "float16" if dtype == TensorProto.FLOAT16 else
              "float32", "dims": pdims}
             for past, present, dtype, pdims, _ in cache_inputs(
                 cfg, precision, attention, static)]
    entry = {
        "name": name, "form": form,
        "role": ROLES[(attention, precision)], "attention": attention,
        "precision": precision, "file": f"{name}.onnx",
        "nodes": len(model.graph.node),
        "weight_bytes": int(sum(numpy_helper.to_array(t).nbytes
                                for t in model.graph.initializer)),
        "state": state,
        "baseline": f"{attention}_fp32_" + form.replace("-", "_"),
    }
    if precision == "int8":
        entry["act_type"] = args.act_type
        entry["qdq_outputs"] = qdq_outputs
    prompt = np.random.default_rng(args.seed + 3).integers(
        0, cfg["vocab"], (cfg["batch"], args.prompt_len), dtype=np.int64)
    gen = os.path.join(args.out, name, "generation")
    os.makedirs(gen, exist_ok=True)
    np.save(os.path.join(gen, "prompt.npy"), prompt)
    entry["generation"] = {"prompt": f"{name}/generation/prompt.npy",
                           "prompt_len": args.prompt_len,
                           "new_tokens": args.new_tokens}
    if not args.no_reference:
        ids = ref.greedy_generate(cfg, weights, prompt, args.new_tokens,
                                  attention, precision, qparams,
                                  args.act_type, qdq_outputs)
        np.save(os.path.join(gen, "ids.npy"), ids)
        entry["generation"]["reference"] = f"{name}/generation/ids.npy"
    print(f"{name} ({entry['role']}, {form}): {entry['nodes']} nodes, "
          f"{entry['weight_bytes'] / 2**20:.1f} MiB -> {path} "
          f"({time.time() - start:.1f} s)")
    return entry


def main(argv=None):
    parser = argparse.ArgumentParser(
        description="Writes the seed's transformer variants (attention "
        "softmax|linear x precision fp32|fp16|int8) as ONNX, with a "
        "manifest and numpy reference outputs.")
    parser.add_argument("--out", required=True, help="output folder")
    parser.add_argument("--preset", choices=sorted(PRESETS), default="small")
    for key in PRESETS["small"]:
        parser.add_argument("--" + key.replace("_", "-"), type=int,
                            help=f"override the preset's {key}")
    parser.add_argument("--attention", default="softmax,linear",
                        help="softmax, linear or both (comma-separated)")
    parser.add_argument("--precision", default="fp32,fp16,int8",
                        help="fp32, fp16, int8 (comma-separated)")
    parser.add_argument("--linear-form", choices=["cumsum", "masked"],
                        default="cumsum",
                        help="causal linear attention by prefix sums "
                        "(O(S), default) or as a masked S x S product")
    parser.add_argument("--act-type", choices=["uint8", "int8"],
                        default="uint8", help="int8 variants' activations")
    parser.add_argument("--qdq-outputs", choices=["on", "off"], default="on",
                        help="int8: QDQ pairs on the MatMul outputs too (on: "
                        "as onnxruntime's quantize_static writes them; off: "
                        "on the MatMul inputs only)")
    parser.add_argument("--dynamic-dims", action="store_true",
                        help="named dims batch/seq in the graph inputs, "
                        "shape arithmetic in the graph (give kiln-compile "
                        "--input-shapes input_ids:BxS)")
    parser.add_argument("--form", default="full",
                        help="full (one forward pass over a sequence), "
                        "decoder (optimum's decoder with a KV cache or a "
                        "linear-attention state, for generation), "
                        "decoder-static (softmax only: ONNX Runtime "
                        "GenAI's static cache [batch, kv_heads, max_len, "
                        "head_dim] written in place by TensorScatter, "
                        "opset 24), comma-separated")
    parser.add_argument("--prompt-len", type=int, default=32,
                        help="decoder form: the reference generation's "
                        "prompt length")
    parser.add_argument("--new-tokens", type=int, default=64,
                        help="decoder form: tokens the reference generation "
                        "decodes greedily")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--calib-batches", type=int, default=4,
                        help="random sequences of the int8 calibration")
    parser.add_argument("--eps", type=float, default=1e-6,
                        help="RMSNorm epsilon")
    parser.add_argument("--check-ort", action="store_true",
                        help="run each variant with onnxruntime and record "
                        "its quality against the numpy reference")
    parser.add_argument("--no-reference", action="store_true",
                        help="skip the numpy reference outputs (slow at "
                        "--preset full)")
    args = parser.parse_args(argv)

    cfg = dict(PRESETS[args.preset])
    for key in PRESETS["small"]:
        if getattr(args, key) is not None:
            cfg[key] = getattr(args, key)
    cfg["eps"] = args.eps
    if cfg["d_model"] % cfg["heads"] or cfg["heads"] % cfg["kv_heads"]:
        parser.error("d_model must divide by heads, heads by kv_heads")
    attentions = parse_list(args.attention, ["softmax", "linear"],
                            "attention")
    precisions = parse_list(args.precision, ["fp32", "fp16", "int8"],
                            "precision")
    forms = parse_list(args.form, ["full", "decoder", "decoder-static"],
                       "form")
    if "decoder" in forms and args.linear_form != "cumsum":
        parser.error("--form decoder needs --linear-form cumsum")
    os.makedirs(args.out, exist_ok=True)

    weights = master_weights(cfg, args.seed)
    ids = token_ids(cfg, args.seed + 1)
    manifest = {
        "schema": SCHEMA,
        "generator": "models/generate_seed_variants.py",
        "preset": args.preset,
        "seed": args.seed,
        "config": {**cfg, "head_dim": cfg["d_model"] // cfg["heads"],
                   "linear_form": args.linear_form,
                   "act_type": args.act_type,
                   "qdq_outputs": args.qdq_outputs == "on",
                   "calib_batches": args.calib_batches,
                   "dynamic_dims": args.dynamic_dims,
                   "parameters": int(sum(w.size for w in weights.values()))},
        "inputs": {
            "input_ids": {
                "dtype": "int64", "shape": [cfg["batch"], cfg["seq_len"]],
                "dims": (["batch", "seq"] if args.dynamic_dims else
                         [cfg["batch"], cfg["seq_len"]]),
                "build": f"numpy.random.default_rng(seed + 1).integers(0, "
                         f"vocab, (batch, seq_len), dtype=int64), seed="
                         f"{args.seed}, vocab={cfg['vocab']}"}},
        "tolerances": {p: tolerance(p, cfg) for p in TOLERANCES},
        "variants": [],
    }
    baselines = {}
    for attention in attentions:
        for precision in ["fp32", "fp16", "int8"]:
            if precision not in precisions:
                continue
            qparams = None
            if precision == "int8":
                qparams = calibrate(cfg, weights, attention, args.seed + 2,
                                    args.calib_batches, args.act_type,
                                    args.linear_form)
            qdq_outputs = args.qdq_outputs == "on"
            if "decoder" in forms:
                manifest["variants"].append(write_decoder(
                    args, cfg, weights, attention, precision, qparams,
                    qdq_outputs))
            if "decoder-static" in forms and attention == "softmax":
                manifest["variants"].append(write_decoder(
                    args, cfg, weights, attention, precision, qparams,
                    qdq_outputs, static=True))
            if "full" not in forms:
                continue
            name = f"{attention}_{precision}"
            start = time.time()
            model = build_model(cfg, precision, attention, weights, qparams,
                                args.act_type, args.dynamic_dims,
                                args.linear_form, name, qdq_outputs)
            path = os.path.join(args.out, f"{name}.onnx")
            onnx.save(model, path)
            entry = {
                "name": name, "role": ROLES[(attention, precision)],
                "attention": attention, "precision": precision,
                "file": f"{name}.onnx",
                "nodes": len(model.graph.node),
                "weight_bytes": int(sum(
                    numpy_helper.to_array(t).nbytes
                    for t in model.graph.initializer)),
                "inputs": [{"name": "input_ids", "dtype": "int64",
                            "shape": [cfg["batch"], cfg["seq_len"]]}],
                "outputs": [{"name": "logits", "dtype": "float32",
                             "shape": [cfg["batch"], cfg["seq_len"],
                                       cfg["vocab"]]}],
                "baseline": f"{attention}_fp32",
                "tolerance": tolerance(precision, cfg),
            }
            if attention == "linear":
                entry["linear_form"] = args.linear_form
            if precision == "int8":
                entry["act_type"] = args.act_type
                entry["qdq_outputs"] = qdq_outputs
            data = os.path.join(args.out, name, "test_data_set_0")
            os.makedirs(data, exist_ok=True)
            np.save(os.path.join(data, "input_0.npy"), ids)
            entry["data"] = f"{name}/test_data_set_0"
            if not args.no_reference:
                logits = ref.forward(cfg, weights, ids, attention, precision,
                                     qparams, act_type=args.act_type,
                                     linear_form=args.linear_form,
                                     qdq_outputs=qdq_outputs)
                np.save(os.path.join(data, "output_0.npy"), logits)
                entry["reference"] = f"{name}/test_data_set_0/output_0.npy"
                if precision == "fp32":
                    baselines[attention] = logits
                if attention in baselines:
                    entry["quality_vs_baseline"] = ref.quality(
                        logits, baselines[attention])
                if args.check_ort:
                    entry["ort_vs_reference"] = ref.quality(
                        run_onnxruntime(path, ids), logits)
            manifest["variants"].append(entry)
            print(f"{name} ({entry['role']}): {entry['nodes']} nodes, "
                  f"{entry['weight_bytes'] / 2**20:.1f} MiB -> {path} "
                  f"({time.time() - start:.1f} s)"
                  + (f"; ORT vs numpy cos "
                     f"{entry['ort_vs_reference']['cosine']:.6f} top-1 "
                     f"{entry['ort_vs_reference']['top1_agreement']:.3f}"
                     if "ort_vs_reference" in entry else ""))
    with open(os.path.join(args.out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=2)
        f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
