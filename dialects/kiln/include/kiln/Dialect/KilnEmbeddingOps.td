//===- KilnEmbeddingOps.td - Position embeddings ---------------*- tablegen -*-===//
//
// Kiln's own ops (no ONNX operator of this name before opset 23): made by
// Kiln's passes, each with a decomposition back into ONNX-level kiln ops
// (kiln-decompose-fused).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_EMBEDDING_OPS_TD
#define KILN_EMBEDDING_OPS_TD

include "kiln/Dialect/KilnBase.td"

def Kiln_RotaryEmbeddingOp : Kiln_OnnxOp<"rotary_embedding"> {
  let summary = "Rotary position embedding (RoPE), rotate-half form";
  let description = [{
    Rotates pairs of features by position-dependent angles, in the
    "rotate half" form of GPT-NeoX and Llama (feature `i` pairs with
    `i + D/2` over the last dim of size `D`):

    ```
    rotate_half(X) = concat(-X[..., D/2:], X[..., :D/2], axis = -1)
    Y = X * cos + rotate_half(X) * sin
    ```

    `cos` and `sin` hold the angles' cosines and sines, duplicated over the
    two halves (`emb = concat(freqs, freqs)` in the reference code), and
    broadcast to `X` (numpy rules) without enlarging it: typically `[S, D]`
    against `X : [B, H, S, D]`. `kiln-fuse-rotary-embedding` makes this op
    from the Slice/Neg/Concat/Mul/Add form PyTorch exports;
    `kiln-decompose-fused` rewrites it back.

    ```mlir
    %y = kiln.rotary_embedding %x, %cos, %sin
        : (tensor<2x8x16x32xf32>, tensor<16x32xf32>, tensor<16x32xf32>) -> tensor<2x8x16x32xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$X, Kiln_FloatTensor:$cos,
                       Kiln_FloatTensor:$sin);
  let results = (outs Kiln_FloatTensor:$Y);
  let hasVerifier = 1;
}

#endif // KILN_EMBEDDING_OPS_TD
