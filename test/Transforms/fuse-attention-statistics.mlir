// RUN: kiln-opt %S/fuse-attention.mlir -split-input-file -kiln-fuse-attention --kiln-pass-statistics -o /dev/null 2>&1 | FileCheck %s
// RUN: kiln-opt %S/fuse-linear-attention.mlir -split-input-file -kiln-fuse-linear-attention --kiln-pass-statistics -o /dev/null 2>&1 | FileCheck %s --check-prefix=LINEAR

// The statistics over the cases of fuse-attention.mlir: 16 fused ops, of
// which 2 read un-repeated K/V (@llama_gqa_causal, @gqa_tile) and 5 have a
// mask recognised as causal (@llama_gqa_causal, @causal_unfolded,
// @causal_additive_bottom_right, @causal_dense_resource, @masked_fill).

// CHECK-LABEL: kiln-fuse-attention
// CHECK-NEXT: (attentions-fused) 16 :
// CHECK-NEXT: (gqa-recognised) 2 :
// CHECK-NEXT: (causal-masks) 5 :

// LINEAR-LABEL: kiln-fuse-linear-attention
// LINEAR-NEXT: (linear-attentions-fused) 5 :
