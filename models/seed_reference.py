#===- models/seed_reference.py - numpy references of the seed's variants ---===#
#
# The decoder-only transformer of models/generate_seed_variants.py written
# again from the math in numpy, for the quality checks of the 2x2 grid
# (attention softmax|linear x precision fp16|int8, plus the fp32 baselines).
# It takes the fp32 master weights (by their PyTorch names) and reproduces
# what each variant computes:
#
#   fp32  float64 math throughout (compared in float32);
#   fp16  float64 math with every tensor the graph holds in float16 rounded
#         to float16 (round to nearest even) where the graph produces it:
#         the weights, each MatMul/Add/Mul/Sigmoid/Div/Where/Elu result. The
#         parts the graph casts to float32 (RMSNorm, the softmax, the linear
#         attention core) stay float64 until they are cast back;
#   int8  float64 math with the QDQ pairs applied exactly as ONNX defines
#         them: QuantizeLinear y = saturate(round_half_even(x / s) + zp),
#         DequantizeLinear x' = (y - zp) * s; weights per output channel
#         (axis 1 of the [in, out] MatMul weight), symmetric int8 in
#         [-127, 127]; activations per tensor, asymmetric uint8 (or int8),
#         on every MatMul input and (qdq_outputs) every MatMul output.
#
# The same forward pass records the activation ranges of the calibration
# run (`record`), so the generator's QDQ scales come from this code.
#
#===----------------------------------------------------------------------===#

import numpy as np

EPS_LINEAR = 1e-6


def r16(x):
    """Rounds to float16 and back (numpy rounds to nearest even)."""
    return np.asarray(x, np.float64).astype(np.float16).astype(np.float64)


def quant_range(act_type):
    return (0, 255) if act_type == "uint8" else (-128, 127)


def activation_qparams(rmin, rmax, act_type="uint8"):
    """Per-tensor asymmetric scale/zero point as onnxruntime's MinMax
    calibration computes them (the range always includes 0)."""
    qmin, qmax = quant_range(act_type)
    rmin = min(float(rmin), 0.0)
    rmax = max(float(rmax), 0.0)
    scale = np.float32((rmax - rmin) / (qmax - qmin))
    if scale == 0:
        scale = np.float32(1.0)
    zp = np.round(qmin - rmin / np.float64(scale))
    zp = int(np.clip(zp, qmin, qmax))
    return scale, zp


def weight_qparams(w):
    """Per-output-channel symmetric int8 of a [in, out] weight: scale
    max|w| / 127 per column, zero point 0; returns (q int8, scale f32)."""
    absmax = np.abs(w.astype(np.float64)).max(axis=0)
    scale = (absmax / 127.0).astype(np.float32)
    scale[scale == 0] = 1.0
    # w / scale in float32, as onnxruntime's quantizer divides (a float64
    # division rounds a few near-half elements the other way).
    q = np.clip(np.rint(w.astype(np.float32) / scale), -127,
                127).astype(np.int8)
    return q, scale


def fake_quant(x, scale, zp, qmin, qmax):
    s = np.float64(scale)
    q = np.clip(np.rint(x / s) + zp, qmin, qmax)
    return (q - zp) * s


class Numerics:
    """How one variant rounds: `t` rounds a tensor the graph holds in the
    working precision, `act` is applied to a MatMul input tensor, `weight`
    gives the weight as the graph's MatMul sees it."""

    def __init__(self, precision, weights, qparams=None, record=None,
                 act_type="uint8", qdq_outputs=True):
        self.precision = precision
        self.qdq_outputs = qdq_outputs
        self.weights = weights
        self.qparams = qparams or {}
        self.record = record
        self.act_type = act_type
        self._wcache = {}

    def t(self, x):
        return r16(x) if self.precision == "fp16" else x

    def weight(self, name):
        if name not in self._wcache:
            w = self.weights[name].astype(np.float64)
            if self.precision == "fp16":
                w = r16(w)
            elif self.precision == "int8":
                q, s = weight_qparams(self.weights[name])
                w = q.astype(np.float64) * s.astype(np.float64)
            self._wcache[name] = w
        return self._wcache[name]

    def norm_weight(self, name):
        # Norm weights are not MatMul weights: fp16 at fp16, float else.
        return self.t(self.weights[name].astype(np.float64))

    def out(self, key, x):
        """A MatMul's output: a QDQ pair too with qdq_outputs (as
        onnxruntime's quantize_static writes it)."""
        if self.precision == "int8" and not self.qdq_outputs:
            self._record(key, x)
            return x
        return self.act(key, x)

    def _record(self, key, x):
        if self.record is not None:
            lo, hi = float(x.min()), float(x.max())
            old = self.record.get(key)
            self.record[key] = (lo, hi) if old is None else (
                min(old[0], lo), max(old[1], hi))

    def act(self, key, x):
        self._record(key, x)
        if self.precision != "int8":
            return x
        scale, zp = self.qparams[key]
        qmin, qmax = quant_range(self.act_type)
        return fake_quant(x, scale, zp, qmin, qmax)


def _elu(x):
    return np.where(x > 0, x, np.expm1(np.minimum(x, 0)))


def forward(cfg, weights, ids, attention, precision, qparams=None,
            record=None, act_type="uint8", linear_form="cumsum",
            qdq_outputs=True):
    """Logits [B, S, vocab] (float32) of one variant for int64 ids [B, S].
    cfg: dict with layers, d_model, heads, kv_heads, eps."""
    n = Numerics(precision, weights, qparams, record, act_type, qdq_outputs)
    t = n.t
    layers, d = cfg["layers"], cfg["d_model"]
    heads, kv_heads = cfg["heads"], cfg["kv_heads"]
    hd = d // heads
    rep = heads // kv_heads
    eps = cfg["eps"]
    batch, seq = ids.shape

    def linear(x, key, wname):
        return t(n.out(f"{wname}.out", n.act(key, x) @ n.weight(wname)))

    def rms_norm(x, wname):
        # In float32 for fp16 too (the graph casts), back to the working
        # precision, then times the weight.
        h = x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)
        return t(n.norm_weight(wname) * t(h))

    def split(x, nh):
        return x.reshape(batch, seq, nh, hd).transpose(0, 2, 1, 3)

    def phi(x):  # Elu, then + 1: two ops, two roundings in fp16
        return t(t(_elu(x)) + 1.0)

    causal = np.tril(np.ones((seq, seq), dtype=bool))
    emb = weights["model.embed_tokens.weight"].astype(np.float64)
    h = t(emb[ids])
    for i in range(layers):
        p = f"model.layers.{i}"
        x = rms_norm(h, f"{p}.input_layernorm.weight")
        q = split(linear(x, f"{p}.attn_in", f"{p}.self_attn.q_proj.weight"),
                  heads)
        k = split(linear(x, f"{p}.attn_in", f"{p}.self_attn.k_proj.weight"),
                  kv_heads)
        v = split(linear(x, f"{p}.attn_in", f"{p}.self_attn.v_proj.weight"),
                  kv_heads)
        k = np.repeat(k, rep, axis=1)  # query head j reads kv head j // rep
        v = np.repeat(v, rep, axis=1)
        if attention == "softmax":
            s = t(n.out(f"{p}.scores.out", n.act(f"{p}.q", q) @
                        n.act(f"{p}.kT", k.transpose(0, 1, 3, 2))))
            s = t(s / t(np.sqrt(hd)))
            s = np.where(causal, s, -np.inf)  # the fill's exp is 0 anyway
            e = np.exp(s - s.max(axis=-1, keepdims=True))
            probs = t(e / e.sum(axis=-1, keepdims=True))
            o = t(n.out(f"{p}.attn.out",
                        n.act(f"{p}.probs", probs) @ n.act(f"{p}.v", v)))
        elif linear_form == "masked":
            fq, fk = phi(q), phi(k)
            a = t(n.out(f"{p}.scores.out", n.act(f"{p}.phi_q", fq) @
                        n.act(f"{p}.phi_kT", fk.transpose(0, 1, 3, 2))))
            a = np.where(causal, a, 0.0)
            probs = t(a / (a.sum(axis=-1, keepdims=True) + EPS_LINEAR))
            o = t(n.out(f"{p}.attn.out",
                        n.act(f"{p}.probs", probs) @ n.act(f"{p}.v", v)))
        else:
            # Causal linear attention by prefix sums (fp16: in float32).
            fq, fk = phi(q), phi(k)
            kv = np.cumsum(fk[..., :, None] * v[..., None, :], axis=2)
            num = n.out(f"{p}.num.out",
                        n.act(f"{p}.phi_q", fq)[..., None, :] @
                        n.act(f"{p}.kv", kv))[..., 0, :]
            den = (fq * np.cumsum(fk, axis=2)).sum(-1, keepdims=True)
            o = t(num / (den + EPS_LINEAR))
        o = o.transpose(0, 2, 1, 3).reshape(batch, seq, d)
        h = t(h + linear(o, f"{p}.o_in", f"{p}.self_attn.o_proj.weight"))
        x = rms_norm(h, f"{p}.post_attention_layernorm.weight")
        g = linear(x, f"{p}.mlp_in", f"{p}.mlp.gate_proj.weight")
        u = linear(x, f"{p}.mlp_in", f"{p}.mlp.up_proj.weight")
        m = t(t(g * t(1.0 / (1.0 + np.exp(-g)))) * u)
        h = t(h + linear(m, f"{p}.down_in", f"{p}.mlp.down_proj.weight"))
    x = rms_norm(h, "model.norm.weight")
    logits = linear(x, "lm_head_in", "lm_head.weight")
    return logits.astype(np.float32)


def quality(got, ref):
    """Max abs / rel error, cosine similarity and top-1 agreement of logits
    [..., vocab] against a reference."""
    got = np.asarray(got, np.float64)
    ref = np.asarray(ref, np.float64)
    diff = np.abs(got - ref)
    g, r = got.ravel(), ref.ravel()
    denom = np.linalg.norm(g) * np.linalg.norm(r)
    return {
        "max_abs_error": float(diff.max()),
        "max_rel_error": float(diff.max() / max(np.abs(ref).max(), 1e-30)),
        "cosine": float(g @ r / denom) if denom else 0.0,
        "top1_agreement": float((got.argmax(-1) == ref.argmax(-1)).mean()),
    }


def greedy_generate(cfg, weights, prompt, new_tokens, attention, precision,
                    qparams=None, act_type="uint8", qdq_outputs=True):
    """Greedy decoding of int64 `prompt` [B, P]: ids [B, new_tokens]. Each
    step runs forward() over the whole sequence so far (no cache), so this
    checks a decoder's cache or state handling without sharing it."""
    ids = np.asarray(prompt, np.int64)
    out = []
    for _ in range(new_tokens):
        logits = forward(cfg, weights, ids, attention, precision, qparams,
                         act_type=act_type, qdq_outputs=qdq_outputs)
        nxt = logits[:, -1, :].argmax(-1).astype(np.int64)
        out.append(nxt)
        ids = np.concatenate([ids, nxt[:, None]], axis=1)
    return np.stack(out, axis=1)
