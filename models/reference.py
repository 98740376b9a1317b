#===- models/reference.py - numpy references for the demo models -----------===#
#
# Written from the math, not from the ONNX graphs, so that a mistake in the
# graph builder shows up as a disagreement with onnxruntime. Each function
# takes the model's initializers by name and the model's inputs, and returns
# the list of outputs. Computed in float64, compared in float32.
#
#===----------------------------------------------------------------------===#

import numpy as np


def _softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def mlp(w, x):
    w = {k: v.astype(np.float64) for k, v in w.items()}
    h = np.maximum(x @ w["fc1.weight"].T + w["fc1.bias"], 0)
    h = np.maximum(h @ w["fc2.weight"] + w["fc2.bias"], 0)
    logits = h @ w["fc3.weight"].T + w["fc3.bias"]
    return [_softmax(logits).astype(np.float32)]


def transformer_block(w, x, n_heads=8, n_kv_heads=2, eps=1e-6):
    w = {k: v.astype(np.float64) for k, v in w.items()}
    x = x.astype(np.float64)
    batch, seq, d_model = x.shape
    head_dim = d_model // n_heads

    def rms_norm(h, weight):
        return weight * h / np.sqrt(np.mean(h * h, axis=-1, keepdims=True) +
                                    eps)

    def heads(t, n):  # [B, S, n*hd] -> [B, n, S, hd]
        return t.reshape(batch, seq, n, head_dim).transpose(0, 2, 1, 3)

    def rope(t):
        cos = w["rotary_emb.cos_cached"][:seq]
        sin = w["rotary_emb.sin_cached"][:seq]
        half = head_dim // 2
        rotated = np.concatenate([-t[..., half:], t[..., :half]], axis=-1)
        return t * cos + rotated * sin

    h = rms_norm(x, w["input_layernorm.weight"])
    q = rope(heads(h @ w["self_attn.q_proj.weight"], n_heads))
    k = rope(heads(h @ w["self_attn.k_proj.weight"], n_kv_heads))
    v = heads(h @ w["self_attn.v_proj.weight"], n_kv_heads)
    # Grouped-query attention: query head i reads kv head i // (H / KV).
    k = np.repeat(k, n_heads // n_kv_heads, axis=1)
    v = np.repeat(v, n_heads // n_kv_heads, axis=1)
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(head_dim)
    causal = np.tril(np.ones((seq, seq), dtype=bool))
    scores = np.where(causal, scores, -np.inf)
    attn = _softmax(scores) @ v
    attn = attn.transpose(0, 2, 1, 3).reshape(batch, seq, d_model)
    h1 = x + attn @ w["self_attn.o_proj.weight"]

    n2 = rms_norm(h1, w["post_attention_layernorm.weight"])
    gate = n2 @ w["mlp.gate_proj.weight"]
    silu = gate / (1.0 + np.exp(-gate))
    up = n2 @ w["mlp.up_proj.weight"]
    out = h1 + (silu * up) @ w["mlp.down_proj.weight"]
    return [out.astype(np.float32)]


def _conv3x3(x, w):
    """NCHW 3x3 convolution, stride 1, zero padding 1 (im2col)."""
    n, c, h, wd = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    cols = np.stack([xp[:, :, i:i + h, j:j + wd]
                     for i in range(3) for j in range(3)], axis=2)
    # cols: [n, c, 9, h, w]; w: [f, c, 3, 3] -> [f, c, 9]
    return np.einsum("nckhw,fck->nfhw", cols, w.reshape(w.shape[0], c, 9))


def small_cnn(w, x, eps=1e-5):
    w = {k: v.astype(np.float64) for k, v in w.items()}
    x = x.astype(np.float64)

    def conv_bn(name, h, relu):
        y = _conv3x3(h, w[f"{name}.conv.weight"])
        scale = w[f"{name}.bn.weight"] / np.sqrt(w[f"{name}.bn.running_var"] +
                                                 eps)
        shift = w[f"{name}.bn.bias"] - w[f"{name}.bn.running_mean"] * scale
        y = y * scale[None, :, None, None] + shift[None, :, None, None]
        return np.maximum(y, 0) if relu else y

    def block(name, h):
        y = conv_bn(f"{name}.conv1", h, True)
        y = conv_bn(f"{name}.conv2", y, False)
        return np.maximum(y + h, 0)

    h = conv_bn("stem", x, True)
    h = block("layer1", h)
    n, c, hh, ww = h.shape
    h = h.reshape(n, c, hh // 2, 2, ww // 2, 2).max(axis=(3, 5))
    h = conv_bn("widen", h, True)
    h = block("layer2", h)
    h = h.mean(axis=(2, 3))
    logits = h @ w["fc.weight"].T + w["fc.bias"]
    return [logits.astype(np.float32)]
