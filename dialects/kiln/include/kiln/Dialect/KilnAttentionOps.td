//===- KilnAttentionOps.td - kiln.attention and kiln.linear_attention ---*- tablegen -*-===//
//
// Kiln's own ops (no ONNX operator of this name): made by Kiln's passes, each
// with a decomposition back into ONNX-level kiln ops (kiln-decompose-fused).
// Shapes are inferred and checked in lib/AttentionOps.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_ATTENTION_OPS_TD
#define KILN_ATTENTION_OPS_TD

include "kiln/Dialect/KilnBase.td"

/// An attention mask: a boolean keep-mask or an additive float mask.
def Kiln_AttentionMask : Kiln_Optional<RankedTensorOf<[Kiln_Float, Kiln_Bool]>>;

def Kiln_AttentionOp : Kiln_OnnxOp<"attention"> {
  let summary = "Scaled dot-product attention with grouped KV heads, an "
                "optional mask and an optional causal mask";
  let description = [{
    Multi-head scaled dot-product attention, made by `kiln-fuse-attention`.

    Operands, in the default `layout = "bhsd"` (heads before sequence):
    * `Q`: `[B, H, Sq, D]`, `K`: `[B, Hkv, Skv, D]`, `V`: `[B, Hkv, Skv, Dv]`,
      one float element type. `H` is `num_heads` and `Hkv` is `num_kv_heads`
      (a static dim must equal the attribute); `H % Hkv == 0`.
    * `mask`: `none`, or a tensor of rank <= 4 that broadcasts (numpy rules,
      without enlarging the result) to the scores `[B, H, Sq, Skv]`: either
      `i1` (true = keep) or of Q's element type (added to the scores).

    With `layout = "bshd"` (sequence before heads, FlashAttention's layout
    and the one the Q/K/V projections produce before the head split is
    transposed) Q, K, V and the result have their dims 1 and 2 swapped:
    `Q`: `[B, Sq, H, D]`, `K`: `[B, Skv, Hkv, D]`, `V`: `[B, Skv, Hkv, Dv]`,
    result `[B, Sq, H, Dv]`. The mask is unchanged: it still broadcasts
    against the scores `[B, H, Sq, Skv]`. A bshd attention is exactly
    `Transpose(attention_bhsd(Transpose(Q), Transpose(K), Transpose(V),
    mask), perm = [0, 2, 1, 3])` with each input transposed by the same perm.

    The result is `[B, H, Sq, Dv]` (bhsd). For each batch `b` and query head `h`,
    with `g = h / (H / Hkv)` the KV head that `h` reads (the order that
    PyTorch's `repeat_kv` / `repeat_interleave(K, H / Hkv, dim=1)` produce:
    query heads `g*rep .. g*rep+rep-1` share KV head `g`):

    ```
    S[i, j] = scale * sum_d Q[b, h, i, d] * K[b, g, j, d]
    S[i, j] = S[i, j] + mask[b, h, i, j]                  (float mask)
    S[i, j] = mask[b, h, i, j] ? S[i, j] : lowest         (i1 mask)
    S[i, j] = j <= i + (Skv - Sq) ? S[i, j] : lowest      (causal = true)
    P = softmax(S) along j
    Y[b, h, i, :] = sum_j P[i, j] * V[b, g, j, :]
    ```

    Everything is computed in the element type of Q. `lowest` is the most
    negative finite value of that type (`torch.finfo(dtype).min`, the value
    Hugging Face models fill masked scores with), so masked keys get weight 0
    exactly, and a row whose every key is masked averages V uniformly
    instead of giving NaN.

    The causal mask is aligned to the bottom right: the last query attends
    to every key, as when the queries are the last `Sq` positions of a
    sequence of `Skv` (flash-attention 2.1 and later, PyTorch's
    `causal_lower_right`). With `Sq == Skv` this is the usual lower
    triangle `j <= i`.

    ```mlir
    // Llama-style grouped-query attention, 8 query heads over 2 KV heads.
    %y = kiln.attention %q, %k, %v, %none {num_heads = 8 : i64, num_kv_heads = 2 : i64, scale = 0.176776692 : f32, causal = true}
        : (tensor<2x8x16x32xf32>, tensor<2x2x16x32xf32>, tensor<2x2x16x32xf32>, none) -> tensor<2x8x16x32xf32>
    // A padding mask.
    %z = kiln.attention %q, %k, %v, %keep {num_heads = 8 : i64, num_kv_heads = 8 : i64, scale = 1.250000e-01 : f32}
        : (tensor<?x8x?x64xf16>, tensor<?x8x?x64xf16>, tensor<?x8x?x64xf16>, tensor<?x1x1x?xi1>) -> tensor<?x8x?x64xf16>
    // The first example on [B, S, H, D] tensors, as the projections'
    // Reshape produces them (kiln-fuse-attention absorbs the head
    // transposes this way).
    %w = kiln.attention %qs, %ks, %vs, %none {causal = true, layout = "bshd", num_heads = 8 : i64, num_kv_heads = 2 : i64, scale = 0.176776692 : f32}
        : (tensor<2x16x8x32xf32>, tensor<2x16x2x32xf32>, tensor<2x16x2x32xf32>, none) -> tensor<2x16x8x32xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$Q, Kiln_FloatTensor:$K,
                   Kiln_FloatTensor:$V, Kiln_AttentionMask:$mask,
                   I64Attr:$num_heads, I64Attr:$num_kv_heads, F32Attr:$scale,
                   DefaultValuedAttr<BoolAttr, "false">:$causal,
                   DefaultValuedAttr<StrAttr, "\"bhsd\"">:$layout);
  let results = (outs Kiln_FloatTensor:$Y);
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// True for `layout = "bshd"`: Q, K, V and Y are [B, S, H, D].
    bool isBSHD() { return getLayout() == "bshd"; }
  }];
}

def Kiln_LinearAttentionOp : Kiln_OnnxOp<"linear_attention"> {
  let summary = "Non-causal linear attention with a positive feature map "
                "(Katharopoulos et al., 2020)";
  let description = [{
    Linear attention as in "Transformers are RNNs" (Katharopoulos et al.,
    2020), made by `kiln-fuse-linear-attention`.

    `Q`: `[B, H, Sq, D]`, `K`: `[B, Hkv, Skv, D]`, `V`: `[B, Hkv, Skv, Dv]`,
    one float element type, `H = num_heads`, `Hkv = num_kv_heads`,
    `H % Hkv == 0`; the result is `[B, H, Sq, Dv]`. Query head `h` reads KV
    head `g = h / (H / Hkv)`, as in `kiln.attention`. Per batch and head:

    ```
    q = φ(Q[b, h]), k = φ(K[b, g])                 [Sq, D], [Skv, D]
    num = q · (kᵀ · V[b, g])                       [Sq, Dv]
    den = q · (kᵀ · 1) = q · sum_j k[j, :]         [Sq, 1]
    Y[b, h] = num / (den + eps)
    ```

    `eps` is added to the normaliser once, after the dot product, as in the
    paper's reference implementation (`1 / (einsum(Q, K.sum(dim=1)) + eps)`).
    `feature_map` φ is applied elementwise:
    * `"elu1"`: `elu(x) + 1` (alpha 1), the paper's feature map;
    * `"relu"`: `max(x, 0)`;
    * `"exp"`: `exp(x)`.
    Everything is computed in the element type of Q, in the order written
    above (the association that makes the cost linear in the sequence).

    ```mlir
    %y = kiln.linear_attention %q, %k, %v {feature_map = "elu1", eps = 9.99999997e-07 : f32, num_heads = 4 : i64, num_kv_heads = 4 : i64}
        : (tensor<2x4x64x32xf32>, tensor<2x4x64x32xf32>, tensor<2x4x64x32xf32>) -> tensor<2x4x64x32xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$Q, Kiln_FloatTensor:$K,
                   Kiln_FloatTensor:$V, StrAttr:$feature_map,
                   DefaultValuedAttr<F32Attr, "1e-6f">:$eps,
                   I64Attr:$num_heads, I64Attr:$num_kv_heads);
  let results = (outs Kiln_FloatTensor:$Y);
  let hasVerifier = 1;
}

#endif // KILN_ATTENTION_OPS_TD
