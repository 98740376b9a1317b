//===- Passes.td - Kiln's graph-level passes ------------------*- tablegen -*-===//
//
// Every graph pass: declared here with its options and statistics, runs alone
// in kiln-opt under its flag, and can be switched off by that flag's name in
// kiln-compile (--disable-pass=NAME) for ablation studies. docs/passes.md
// describes each with a before/after example.
//
// Statistics: MLIR's `statistics` (Pass::Statistic) count nothing with a
// release LLVM such as Debian's, so Kiln's passes declare kiln::Statistic
// members in their C++ class instead (kiln/Transforms/Statistics.h); the
// statistic names are listed in each pass's description.
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
    created, so folding never blows up the artifact; a result no larger
    than the constants that die with the folded op (a Transpose, Reshape or
    Cast of a single-use weight) is always created. A result that is only
    ever a weight (the B of MatMul, Gemm or fused_matmul, the W of Conv or
    fused_conv), directly or through more ops on constants (Tile, Expand and
    Mul of initializers: how older exporters write weights), is created up
    to `weight-size-limit` bytes: left computed, it would be computed again
    in every run, and it is as large as a weight stored as an initializer.
    Not when the op keeps a large constant alive (a Transpose of an
    embedding that a Gather also reads): that would store it twice.

    Statistics (kiln::Statistic): ops-folded, batch-norms-folded,
    constant-bytes-created, skipped-by-size.
  }];
  let dependentDialects = ["::kiln::KilnDialect"];
  let options = [
    Option<"sizeLimit", "size-limit", "int64_t", /*default=*/"1 << 22",
           "Largest folded constant in bytes (4 MiB by default), unless it replaces single-use constants at least as large; larger results stay computed">,
    Option<"weightSizeLimit", "weight-size-limit", "int64_t",
           /*default=*/"int64_t(1) << 31",
           "Largest folded constant in bytes (2 GiB by default) when it is only used as a matmul or convolution weight, directly or through other ops on constants">,
    Option<"foldBatchNorm", "fold-batch-norm", "bool", /*default=*/"true",
           "Fold inference-mode BatchNormalization into the preceding Conv/Gemm">,
  ];
}

def KilnDedupConstants : Pass<"kiln-dedup-constants", "mlir::func::FuncOp"> {
  let summary = "Merge constants with identical type and contents";
  let description = [{
    Upstream CSE merges constants whose attributes are the same object;
    two initializers with the same bytes (dense_resource blobs with different
    names, for instance) are different attributes. This pass hashes every
    constant's contents and replaces duplicates by the first occurrence.

    Statistics (kiln::Statistic): constants-deduplicated, bytes-saved.
  }];
}

def KilnCanonicalize : Pass<"kiln-canonicalize", "mlir::func::FuncOp"> {
  let summary = "Kiln's graph canonicalizations and local folds";
  let description = [{
    Applies the kiln ops' folders and Kiln's canonicalization patterns:
    Identity/Dropout removal; Reshape/Flatten/Squeeze/Unsqueeze chains
    collapsed into one Reshape; Transpose∘Transpose composed or removed;
    x·1, x+0, Cast to the same type, Expand to the same shape, Concat of one
    operand and Slice of the full range removed. Dead pure ops are erased.

    Statistic (kiln::Statistic): ops-removed, the net number of ops removed.
  }];
  let dependentDialects = ["::kiln::KilnDialect"];
}

def KilnDCE : Pass<"kiln-dce", "mlir::func::FuncOp"> {
  let summary = "Erase ops whose results are unused and that have no effects";
  let description = [{
    Erases ops without uses that have no side effects, walking each block
    backwards so a dead chain goes in one sweep. Statistic: ops-erased.
  }];
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
    an operand. See docs/passes/kiln-fuse-attention.md.

    Statistics: `attentions-fused`, `gqa-recognised`, `causal-masks`, `head-transposes-absorbed` (bhsd attentions whose Q/K/V head-split transposes, through rotary embeddings, and output transpose were absorbed into a `layout = "bshd"` attention).
  }];
  let dependentDialects = ["::kiln::KilnDialect"];
}

def KilnShardTensorParallel
    : Pass<"kiln-shard-tensor-parallel", "mlir::ModuleOp"> {
  let summary = "Megatron-style tensor parallelism: one rank's shard of @main";
  let description = [{
    Rewrites @main into what rank `rank` of a group of `ranks` processes
    computes (docs/cluster.md, docs/passes/kiln-shard-tensor-parallel.md).
    A matmul by a constant weight whose result reaches, through ops that
    act on each head or column alone, a matmul that contracts over it is
    column-parallel: the rank keeps its block of the weight's columns (and
    of the bias). The contracting matmul is row-parallel: the rank keeps
    the matching block of rows and its partial sum goes to `kiln.all_reduce`
    (a bias or residual it added is added after). So the Q/K/V projections
    and the MLP's up and gate projections are split by columns, attention
    runs on the rank's heads, the attention output and down projections by
    rows: two all-reduces per transformer block. Reshapes that split or
    merge the heads get their head count divided; attention's `num_heads`
    and `num_kv_heads` too; a graph input or output on the sharded path (a
    KV cache) becomes the rank's heads of it. What reaches no contracting
    matmul (the LM head, the embedding) stays replicated.

    A path that meets an op with no sharding rule, a head count not
    divisible by `ranks`, or operands sharded differently is an error
    naming the op and its ONNX node. The module gets
    `kiln.tensor_parallel = {rank, ranks}`, which the artifact records and
    the runtime checks against the MPI world.

    A model with ONNX's multi-device annotations (IR version 11; the
    importer's `kiln.sharding_annotations` and `kiln.device_configurations`)
    is split as they say, with `annotations=true`: the configuration of
    `ranks` devices is used (none: an error naming the ones there are);
    the matmuls whose weight it shards by columns are the column-parallel
    seeds, and only those; one whose weight it shards by rows must be
    reached as a row-parallel end; one whose weight it replicates stays
    whole. A spec the plan contradicts, a shard count other than `ranks`
    or a pipeline stage is an error naming the ONNX node.
    `kiln.tensor_parallel` then has `plan = "annotations"` and the
    configuration's name (else `plan = "inferred"`).

    Statistics: column-parallel, row-parallel, all-reduces,
    sharded-inputs, sharded-outputs, annotated-matmuls.
  }];
  let dependentDialects = ["::kiln::KilnDialect"];
  let options = [
    Option<"ranks", "ranks", "int64_t", /*default=*/"1",
           "Ranks in the tensor-parallel group (1: leave the model as is)">,
    Option<"rank", "rank", "int64_t", /*default=*/"0",
           "This shard's rank, 0 .. ranks-1">,
    Option<"annotate", "annotations", "bool", /*default=*/"true",
           "Follow the model's ONNX sharding annotations when it has them "
           "(false: infer the split from the graph alone)">,
  ];
}

def KilnFoldRepeatKV : Pass<"kiln-fold-repeat-kv", "mlir::func::FuncOp"> {
  let summary = "Grouped-query attention's matmuls over the KV heads, without repeat_kv";
  let description = [{
    Rewrites `MatMul(q [B, H, S, D], Transpose(repeat_kv(k)))` and
    `MatMul(p [B, H, S, T], repeat_kv(v))`, where repeat_kv is
    `Reshape(Expand(Unsqueeze(x [B, KV, T, D], 2)))` with query head h
    reading KV head h / rep (H = KV·rep), into a matmul over the KV heads:
    q reshaped to [B, KV, rep·S, D] times Kᵀ [B, KV, D, T] (or p times V),
    reshaped back to [B, H, S, ·]. K and V are no longer copied once per
    query head. The transpose may come before or after the repetition, the
    matmul may be a `kiln.fused_matmul` without a residual, and B, S and T
    may be symbolic (the new shapes are constants with 0 and -1). See
    docs/passes/kiln-fold-repeat-kv.md.

    Statistics: `matmuls-grouped`, `repeats-erased`.
  }];
  let dependentDialects = ["::kiln::KilnDialect"];
}

def KilnFuseRotaryEmbedding
    : Pass<"kiln-fuse-rotary-embedding", "mlir::func::FuncOp"> {
  let summary = "x·cos + rotate_half(x)·sin into kiln.rotary_embedding";
  let description = [{
    Matches the rotary position embedding in the rotate-half form PyTorch
    exports for Llama/GPT-NeoX-style models,
    `Add(Mul(x, cos), Mul(Concat(Neg(Slice(x, D/2:)), Slice(x, :D/2)), sin))`
    (operands of Add and Mul in either order), and replaces it by
    `kiln.rotary_embedding x, cos, sin`. Only fuses when cos and sin
    broadcast to x without enlarging it and the Muls and the Concat have no
    other users. Statistic: rotary-embeddings-fused.
  }];
  let dependentDialects = ["::kiln::KilnDialect"];
}

def KilnFuseLinearAttention
    : Pass<"kiln-fuse-linear-attention", "mlir::func::FuncOp"> {
  let summary = "φ(Q)·(φ(K)ᵀ·V) with its normaliser into kiln.linear_attention";
  let description = [{
    Matches non-causal linear attention (Katharopoulos et al., 2020) in the
    form a PyTorch module exports it: feature maps elu+1, relu or exp on Q
    and K, kv = φKᵀ·V, num = φQ·kv, the normaliser φQ·(ΣφK)ᵀ, num / (z + eps),
    K and V possibly repeated for grouped-query attention. See
    docs/passes/kiln-fuse-linear-attention.md.

    Statistics: `linear-attentions-fused`.
  }];
  let dependentDialects = ["::kiln::KilnDialect"];
}

def KilnFuseNormalization
    : Pass<"kiln-fuse-normalization", "mlir::func::FuncOp"> {
  let summary = "LayerNorm and RMSNorm written out as plain ops into kiln.layer_normalization / kiln.rms_norm";
  let description = [{
    Matches x / sqrt(ReduceMean(x^2) + eps) (x^2 as Pow or Mul; the division
    as Div, Reciprocal or 1/s), with an optional weight, as kiln.rms_norm,
    and the same over x - ReduceMean(x) with optional gamma and beta as
    kiln.layer_normalization. A Cast of x up to f32 and back becomes the
    op's stash_type. Reductions must cover the trailing dims with
    keepdims = 1, eps must be a constant, intermediates single-use.
    See docs/passes/kiln-fuse-normalization.md.

    Statistics: `layer-norms-fused`, `rms-norms-fused`.
  }];
  let dependentDialects = ["::kiln::KilnDialect"];
}

def KilnFuseActivations
    : Pass<"kiln-fuse-activations", "mlir::func::FuncOp"> {
  let summary = "GELU (Erf and tanh forms), SiLU and SwiGLU written out into single ops";
  let description = [{
    x * 0.5 * (1 + erf(x / sqrt 2)) and 0.5 * x * (1 + tanh(sqrt(2/pi) *
    (x + 0.044715 x^3))), factors in any order and association, become
    kiln.gelu; Mul(x, Sigmoid(x)) becomes kiln.silu and Mul(silu(g), up)
    kiln.swiglu. Constants are compared with a tolerance that fits their
    element type. See docs/passes/kiln-fuse-activations.md.

    Statistics: `gelus-fused`, `silus-fused`, `swiglus-fused`.
  }];
  let dependentDialects = ["::kiln::KilnDialect"];
}

def KilnFuseQDQ : Pass<"kiln-fuse-qdq", "mlir::func::FuncOp"> {
  let summary = "QuantizeLinear/DequantizeLinear around MatMul/Gemm into integer matmuls";
  let description = [{
    Q(DQ(y)) with the same parameters becomes y. DQ(a) x DQ(w) (MatMul or
    Gemm; `a` a per-tensor quantized activation, `w` a constant int8
    weight quantized per tensor or per output column), with an optional
    i32 bias, Relu and per-tensor Q after it, becomes one
    kiln.quantized_matmul: int8 operands, i32 accumulation, and an epilogue
    that requantizes (int8 result) or dequantizes (f32 result, when no Q
    follows). Weight transposes, row sums and combined scales are folded at
    compile time. See docs/passes/kiln-fuse-qdq.md.

    Statistics: `round-trips-removed`, `matmuls-quantized`,
    `matmuls-dequantized`.
  }];
  let dependentDialects = ["::kiln::KilnDialect"];
}

def KilnInsertQDQ : Pass<"kiln-insert-qdq", "mlir::func::FuncOp"> {
  let summary = "Post-training quantization: Q/DQ pairs around MatMul/Gemm/Conv inputs";
  let description = [{
    For each MatMul, Gemm (and, with ops=Conv, Conv) whose weight is a
    float constant, and that is not in keep-nodes: its input goes through
    QuantizeLinear/DequantizeLinear with per-tensor parameters computed
    from the calibrated range given in `ranges` (as onnxruntime's
    compute_scale_zp; int8 asymmetric by default), its weight becomes an
    int8 constant quantized per output channel (symmetric, [-127, 127])
    behind a DequantizeLinear, and a Gemm's constant bias (or the constant
    bias Add after a MatMul) an i32 constant in units of a_scale *
    w_scale[n]. kiln-fuse-qdq then makes the MatMul/Gemm layers integer ops.
    kiln-compile --precision=int8 --calibration=DIR calibrates the ranges
    and calls the same code. See docs/quantization.md.
  }];
  let dependentDialects = ["::kiln::KilnDialect"];
  let options = [
    ListOption<"ranges", "ranges", "std::string",
               "Calibrated input ranges, node=min:max per layer">,
    ListOption<"ops", "ops", "std::string",
               "ONNX op types to quantize (default MatMul,Gemm)">,
    ListOption<"keepNodes", "keep-nodes", "std::string",
               "ONNX node names left in float">,
    Option<"activationType", "activation-type", "std::string",
           /*default=*/"\"int8\"", "int8 or uint8">,
    Option<"activationSymmetric", "activation-symmetric", "bool",
           /*default=*/"false",
           "Symmetric activations (zero point 0 for int8, 128 for uint8)">,
  ];
}

def KilnFuseEpilogues : Pass<"kiln-fuse-epilogues", "mlir::func::FuncOp"> {
  let summary = "Bias add, activation and residual add folded into MatMul/Gemm/Conv";
  let description = [{
    After a MatMul, Gemm, Conv or kiln.conv_nhwc: a bias Add (broadcast
    over the last dim, or the channels for a conv), a residual Add before an
    activation, the activation (Relu, Gelu, SiLU, Sigmoid, Tanh), a residual
    Add after it, each optional, each intermediate single-use, become one
    kiln.fused_matmul, kiln.fused_conv or kiln.fused_conv_nhwc. See
    docs/passes/kiln-fuse-epilogues.md.

    Statistics: `epilogues-fused`.
  }];
  let dependentDialects = ["::kiln::KilnDialect"];
}

def KilnDecomposeFused : Pass<"kiln-decompose-fused", "mlir::func::FuncOp"> {
  let summary = "Rewrite Kiln's fused ops back into plain kiln ops";
  let description = [{
    Every fused op (attention, linear attention, layer/RMS norm, SiLU,
    SwiGLU, matmul/conv with epilogue) is rewritten into the plain ONNX-level
    ops it stands for, so a backend works before it has a kernel for it.
    `ops` limits the decomposition to the named op mnemonics.
    `keep-library-convs` leaves the channels-last convolutions that a
    library kernel takes as they are (oneDNN with `--kernels=auto`), and the
    channels-last pools, so that the activations stay NHWC between them.

    Statistics: `ops-decomposed`.
  }];
  let dependentDialects = ["::kiln::KilnDialect"];
  let options = [
    ListOption<"ops", "ops", "std::string",
               "Only decompose these ops (e.g. attention,rms_norm); all when empty">,
    Option<"keepLibraryConvs", "keep-library-convs", "bool", "false",
           "Keep the channels-last convolutions a library kernel runs "
           "(kiln::isLibraryConvolution) and the channels-last pools">,
  ];
}

//===----------------------------------------------------------------------===//
// Precision
//===----------------------------------------------------------------------===//

def KilnConvertPrecision
    : Pass<"kiln-convert-precision", "mlir::func::FuncOp"> {
  let summary = "Run float32 computation and weights in fp16 or bf16, keeping chosen ops in fp32";
  let description = [{
    Every kiln op that computes float32 values is rewritten to compute in
    `precision` (fp16 or bf16): its float32 operands become half (float32
    constants are converted at compile time, other values through a
    kiln.cast), and its results change type. Ops kept in float32 get their
    half operands cast back to float32. Kept by default (`keep-classes`):
    softmax (Softmax, LogSoftmax, kiln.attention), normalizations (Batch/
    Instance/Layer/Group/Lp/MeanVariance normalization, kiln.rms_norm),
    accumulating reductions (ReduceSum/Mean/SumSquare/Prod/L1/L2/LogSum/
    LogSumExp, CumSum, GlobalAveragePool, kiln.linear_attention) and residual
    adds (an Add of two non-constant operands of the result's shape, or a
    fused matmul/conv with a residual operand). `keep-ops` adds op types
    (ONNX names such as LayerNormalization, or kiln mnemonics such as
    rms_norm), `keep-nodes` ONNX node names (found in the op locations).
    `only-nodes`, when given, converts only the ops with these node names
    (the sensitivity analysis of kiln-compile --auto-keep). The function's
    inputs and outputs keep their types unless `convert-io`. Cast pairs
    half -> f32 -> half are cancelled. See
    docs/passes/kiln-convert-precision.md.

    Statistics: `ops-converted`, `ops-kept`, `constants-converted`,
    `constants-overflowed` (finite float32 constants with elements beyond
    the half type's range, which become infinities), `casts-inserted`,
    `cast-pairs-removed`.
  }];
  let dependentDialects = ["::kiln::KilnDialect"];
  let options = [
    Option<"precision", "precision", "std::string", /*default=*/"\"fp16\"",
           "The half type: fp16 or bf16">,
    Option<"keepClasses", "keep-classes", "std::string",
           /*default=*/"\"softmax,normalization,reduction,residual-add\"",
           "Classes of ops kept in fp32 (comma-separated, or none)">,
    ListOption<"keepOps", "keep-ops", "std::string",
               "More op types kept in fp32: ONNX op types or kiln op names">,
    ListOption<"keepNodes", "keep-nodes", "std::string",
               "ONNX node names whose ops are kept in fp32">,
    ListOption<"onlyNodes", "only-nodes", "std::string",
               "When given, convert only the ops of these ONNX nodes">,
    Option<"convertIO", "convert-io", "bool", /*default=*/"false",
           "Also give the function's float32 inputs and outputs the half type">,
  ];
}

#endif // KILN_TRANSFORMS_PASSES_TD
