//===- Passes.h - Kiln's graph-level passes ---------------------*- C++ -*-===//
#ifndef KILN_TRANSFORMS_PASSES_H
#define KILN_TRANSFORMS_PASSES_H

#include "kiln/Dialect/KilnDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"

#include <memory>

namespace kiln {

#define GEN_PASS_DECL
#include "kiln/Transforms/Passes.h.inc"

/// Registers every Kiln pass with the global registry (kiln-opt flags).
#define GEN_PASS_REGISTRATION
#include "kiln/Transforms/Passes.h.inc"

//===----------------------------------------------------------------------===//
// Pattern sets, reusable across passes
//===----------------------------------------------------------------------===//

/// Kiln's canonicalizations (kiln-canonicalize).
void populateKilnCanonicalizationPatterns(mlir::RewritePatternSet &patterns);

/// Transpose sinking and cancellation (part of kiln-optimize-layout).
void populateTransposeSinkingPatterns(mlir::RewritePatternSet &patterns);

/// Decompositions of the fused ops back into plain kiln ops
/// (kiln-decompose-fused). Attention-family ops (kiln.attention,
/// kiln.linear_attention), the other fused ops (norms, activations,
/// epilogues) and kiln.rotary_embedding live in separate files.
void populateDecomposeAttentionPatterns(mlir::RewritePatternSet &patterns);
void populateDecomposeFusedOpPatterns(mlir::RewritePatternSet &patterns);
void populateDecomposeRotaryEmbeddingPatterns(mlir::RewritePatternSet &patterns);

/// Decompositions of the channels-last ops (kiln.conv_nhwc,
/// kiln.max_pool_nhwc, kiln.average_pool_nhwc,
/// kiln.global_average_pool_nhwc) into their NCHW ops between transposes
/// (LayoutDecompose.cpp; for kiln-decompose-fused).
void populateDecomposeLayoutOpPatterns(mlir::RewritePatternSet &patterns);

/// Whether `op` is a channels-last convolution a library kernel runs as it
/// is (oneDNN, --kernels=auto; kiln-decompose-fused keep-library-convs): a
/// kiln.conv_nhwc or kiln.fused_conv_nhwc on float32 with 2 spatial dims,
/// static channels and filter (the batch may be dynamic, the spatial dims
/// too with explicit padding: oneDNN is called with the run-time sizes), a
/// bias of M elements, a residual of the result's type, `group` dividing
/// both channel counts and an auto_pad ONNX defines.
bool isLibraryConvolution(mlir::Operation *op);
/// A float32 2-D channels-last max or average pool over run-time image
/// sizes that oneDNN runs (kiln-cpu-dnnl-calls): explicit padding, floor
/// mode, no dilation, static channels, and an end padding of at least
/// stride - 1 per dim, so that the padding oneDNN needs for the output's
/// size, computed at run time, is never negative.
bool isDynamicLibraryPool(mlir::Operation *op);

} // namespace kiln

#endif // KILN_TRANSFORMS_PASSES_H
