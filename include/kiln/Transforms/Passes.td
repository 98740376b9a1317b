//===- Passes.td - Kiln's graph-level passes ------------------*- tablegen -*-===//
//
// Every graph pass: declared here with its options and statistics, runs alone
// in kiln-opt under its flag, and can be switched off by that flag's name in
// kiln-compile (--disable-pass=NAME) for ablation studies. docs/passes.md
// describes each with a before/after example.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TRANSFORMS_PASSES_TD
#define KILN_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

//===----------------------------------------------------------------------===//
// Folding, canonicalization, CSE/DCE helpers
//===----------------------------------------------------------------------===//

def KilnConstantFold : Pass<"kiln-constant-fold", "mlir::func::FuncOp"> {
  let summary = "Evaluate ops whose operands are all constants";
  let description = [{
    Replaces every op whose operands are all constant (and whose result type
    is static) by the constant it computes, with ONNX numerics: arithmetic in
    the element type (float32 rounding, integer wrap-around), Cast rounding
    as ONNX Runtime does. Covers elementwise ops with broadcasting, Cast,
    shape ops (Shape of static tensors, Gather/Slice/Concat/Unsqueeze/Squeeze
    on shape vectors, Reshape/Transpose/Expand of constants), small MatMuls,
    and folds BatchNormalization (inference form) into the Conv or Gemm
    before it. A folded result larger than `size-limit` bytes is not
    created, so folding never blows up the artifact.
  }];
  let dependentDialects = ["::kiln::KilnDialect"];
  let options = [
    Option<"sizeLimit", "size-limit", "int64_t", /*default=*/"1 << 22",
           "Largest folded constant in bytes (4 MiB by default); larger results stay computed">,
    Option<"foldBatchNorm", "fold-batch-norm", "bool", /*default=*/"true",
           "Fold inference-mode BatchNormalization into the preceding Conv/Gemm">,
  ];
  let statistics = [
    Statistic<"numFolded", "ops-folded", "Ops replaced by constants">,
    Statistic<"numBatchNormsFolded", "batch-norms-folded",
              "BatchNormalizations folded into a Conv or Gemm">,
    Statistic<"bytesCreated", "constant-bytes-created",
              "Bytes of constant data created by folding">,
    Statistic<"numSkippedBySize", "skipped-by-size",
              "Folds not done because the result exceeds size-limit">,
  ];
}

def KilnDedupConstants : Pass<"kiln-dedup-constants", "mlir::func::FuncOp"> {
  let summary = "Merge constants with identical type and contents";
  let description = [{
    Upstream CSE merges constants whose attributes are the same object;
    two initializers with the same bytes (dense_resource blobs with different
    names, for instance) are different attributes. This pass hashes every
    constant's contents and replaces duplicates by the first occurrence.
  }];
  let statistics = [
    Statistic<"numDeduplicated", "constants-deduplicated",
              "Constants replaced by an identical earlier one">,
    Statistic<"bytesSaved", "bytes-saved", "Bytes of constant data removed">,
  ];
}

def KilnCanonicalize : Pass<"kiln-canonicalize", "mlir::func::FuncOp"> {
  let summary = "Kiln's graph canonicalizations and local folds";
  let description = [{
    Applies the kiln ops' folders and Kiln's canonicalization patterns:
    Identity/Dropout removal; Reshape/Flatten/Squeeze/Unsqueeze chains
    collapsed into one Reshape; Transpose∘Transpose composed or removed;
    x·1, x+0, Cast to the same type, Expand to the same shape, Concat of one
    operand and Slice of the full range removed. Dead pure ops are erased.
  }];
  let dependentDialects = ["::kiln::KilnDialect"];
  let statistics = [
    Statistic<"numOpsRemoved", "ops-removed", "Net number of ops removed">,
  ];
}

def KilnDCE : Pass<"kiln-dce", "mlir::func::FuncOp"> {
  let summary = "Erase ops whose results are unused and that have no effects";
  let statistics = [
    Statistic<"numErased", "ops-erased", "Dead ops erased">,
  ];
}

//===----------------------------------------------------------------------===//
// Layout
//===----------------------------------------------------------------------===//

def KilnOptimizeLayout : Pass<"kiln-optimize-layout", "mlir::func::FuncOp"> {
  let summary = "Sink and cancel transposes; NHWC convolutions when preferred";
  let description = [{
    Moves Transposes through elementwise, reduction and normalization ops
    towards each other and cancels them; with `prefer-nhwc`, rewrites NCHW
    convolution and pooling into their NHWC forms with weights pre-transposed
    (by folding), leaving the fewest transposes, at the graph's edges. With
    `matmul-weight-layout=nk`, constant MatMul/Gemm weights are stored
    transposed (N×K), the layout a kernel reading rows of B wants.
    docs/passes/kiln-optimize-layout.md has the details.

    Statistics (kiln::Statistic, declared in OptimizeLayout.cpp):
    transposes-removed, transposes-inserted (so that the transposes after
    the pass number those before + inserted - removed),
    ops-converted-to-nhwc, weights-relaid.
  }];
  let dependentDialects = ["::kiln::KilnDialect"];
  let options = [
    Option<"preferNHWC", "prefer-nhwc", "bool", /*default=*/"false",
           "Rewrite convolution and pooling to channels-last (NHWC)">,
    Option<"matmulWeightLayout", "matmul-weight-layout", "std::string",
           /*default=*/"\"kn\"",
           "How constant matmul weights are stored: kn (as in ONNX) or nk (transposed)">,
  ];
}

//===----------------------------------------------------------------------===//
// Fusion into Kiln's high-level ops, and their decomposition
//===----------------------------------------------------------------------===//

def KilnFuseAttention : Pass<"kiln-fuse-attention", "mlir::func::FuncOp"> {
  let summary = "MatMul(Q,Kᵀ)·scale (+mask) → Softmax → MatMul(·,V) into kiln.attention";
  let description = [{
    Matches scaled dot-product attention in the form PyTorch exports it and
    replaces it by `kiln.attention`. K and V repeated for grouped-query
    attention (Unsqueeze/Expand/Reshape, or Tile) are matched through, so the
    fused op reads the un-repeated K/V and records `num_kv_heads`. A constant
    lower-triangular mask becomes `causal = true`; any other mask is kept as
    an operand.
  }];
  let dependentDialects = ["::kiln::KilnDialect"];
  let statistics = [
    Statistic<"numFused", "attentions-fused", "kiln.attention ops created">,
    Statistic<"numGQA", "gqa-recognised", "Fused attentions with kv-heads < heads">,
    Statistic<"numCausal", "causal-masks", "Masks recognised as causal">,
  ];
}

def KilnFuseLinearAttention
    : Pass<"kiln-fuse-linear-attention", "mlir::func::FuncOp"> {
  let summary = "φ(Q)·(φ(K)ᵀ·V) with its normaliser into kiln.linear_attention";
  let dependentDialects = ["::kiln::KilnDialect"];
  let statistics = [
    Statistic<"numFused", "linear-attentions-fused",
              "kiln.linear_attention ops created">,
  ];
}

def KilnFuseNormalization
    : Pass<"kiln-fuse-normalization", "mlir::func::FuncOp"> {
  let summary = "LayerNorm and RMSNorm written out as plain ops into kiln.layer_norm / kiln.rms_norm";
  let dependentDialects = ["::kiln::KilnDialect"];
  let statistics = [
    Statistic<"numLayerNorms", "layer-norms-fused", "kiln.layer_norm ops created">,
    Statistic<"numRMSNorms", "rms-norms-fused", "kiln.rms_norm ops created">,
  ];
}

def KilnFuseActivations
    : Pass<"kiln-fuse-activations", "mlir::func::FuncOp"> {
  let summary = "GELU (Erf and tanh forms), SiLU and SwiGLU written out into single ops";
  let dependentDialects = ["::kiln::KilnDialect"];
  let statistics = [
    Statistic<"numGelu", "gelus-fused", "kiln.gelu ops created">,
    Statistic<"numSilu", "silus-fused", "kiln.silu ops created">,
    Statistic<"numSwiGLU", "swiglus-fused", "kiln.swiglu ops created">,
  ];
}

def KilnFuseEpilogues : Pass<"kiln-fuse-epilogues", "mlir::func::FuncOp"> {
  let summary = "Bias add, activation and residual add folded into MatMul/Gemm/Conv";
  let dependentDialects = ["::kiln::KilnDialect"];
  let statistics = [
    Statistic<"numFused", "epilogues-fused", "Ops folded into an epilogue">,
  ];
}

def KilnDecomposeFused : Pass<"kiln-decompose-fused", "mlir::func::FuncOp"> {
  let summary = "Rewrite Kiln's fused ops back into plain kiln ops";
  let description = [{
    Every fused op (attention, linear attention, layer/RMS norm, SiLU,
    SwiGLU, matmul/conv with epilogue) is rewritten into the plain ONNX-level
    ops it stands for, so a backend works before it has a kernel for it.
    `ops` limits the decomposition to the named op mnemonics.
  }];
  let dependentDialects = ["::kiln::KilnDialect"];
  let options = [
    ListOption<"ops", "ops", "std::string",
               "Only decompose these ops (e.g. attention,rms_norm); all when empty">,
  ];
  let statistics = [
    Statistic<"numDecomposed", "ops-decomposed", "Fused ops decomposed">,
  ];
}

#endif // KILN_TRANSFORMS_PASSES_TD
