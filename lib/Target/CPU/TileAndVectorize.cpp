//===- TileAndVectorize.cpp - Register-tiled, vectorized GEMM kernels -----===//
//
// --kernels=codegen: instead of the naive scalar loop nests that
// linalg-to-parallel-loops makes of the contractions, float32 matmul,
// batch_matmul and (through a channels-first im2col) NCHW 2-D convolution are
// tiled twice on tensors:
//
//   scf.forall over (batch, M, N) blocks   -> scf.parallel -> OpenMP threads
//     scf.for over (M, N) register tiles of mr x nr, then K one at a time
//       vector.contract mr x nr x 1        -> vector.outerproduct -> vector.fma
//
// The accumulator's transfer_read/transfer_write pair is hoisted out of the K
// loop while still on tensors, so the mr x nr block stays in registers for
// the whole reduction (the classic outer-product micro-kernel). Edge tiles
// whose sizes are not multiples of the register tile are vectorized with
// masks. The vector ops are lowered in buildLLVMPipeline (see
// createLowerVectorsPass).
//
//===----------------------------------------------------------------------===//

#include "SplitDynamic.h"
#include "kiln/Target/CPU/CpuBackend.h"

#include "llvm/ADT/SetVector.h"
#include "mlir/Conversion/VectorToSCF/VectorToSCF.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Vector/Transforms/LoweringPatterns.h"
#include "mlir/Dialect/Vector/Transforms/VectorRewritePatterns.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/LoopInvariantCodeMotionUtils.h"

using namespace mlir;

namespace kiln::cpu {
namespace {

/// The loops of a contraction this pass tiles: [batch..., m, n, k], k the
/// only reduction and innermost, the output indexed (batch..., m, n), the RHS
/// row-major in n (its last index is n, so an nr-wide row is one contiguous
/// vector load) and the LHS independent of n. linalg.matmul,
/// linalg.batch_matmul and the im2col convolution below are all of this form.
bool isRowMajorContraction(linalg::LinalgOp op) {
  if (!op.hasPureTensorSemantics() || op.getNumDpsInputs() != 2 ||
      op.getNumDpsInits() != 1 || !linalg::isaContractionOpInterface(op))
    return false;
  // Run-time extents are fine (symbolic dims): the thread blocks take them,
  // and a block with a run-time row count is cut into static pieces.
  unsigned numLoops = op.getNumLoops();
  if (numLoops < 3)
    return false;
  // f32 accumulation; the operands may be f16/bf16 (the lowering's mixed
  // precision matmuls): the vector loads widen them in registers
  // (vcvtph2ps with F16C), so half-precision weights stay half in memory.
  for (OpOperand &operand : op->getOpOperands()) {
    auto type = dyn_cast<RankedTensorType>(operand.get().getType());
    if (!type)
      return false;
    Type element = type.getElementType();
    bool isInit = op.isDpsInit(&operand);
    if (!element.isF32() && (isInit || !(element.isF16() || element.isBF16())))
      return false;
  }
  // vector.contract multiplies operands of one element type.
  if (getElementTypeOrSelf(op.getDpsInputOperand(0)->get().getType()) !=
      getElementTypeOrSelf(op.getDpsInputOperand(1)->get().getType()))
    return false;
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  for (unsigned i = 0; i + 1 < numLoops; ++i)
    if (iterators[i] != utils::IteratorType::parallel)
      return false;
  if (iterators.back() != utils::IteratorType::reduction)
    return false;
  MLIRContext *context = op->getContext();
  unsigned m = numLoops - 3, n = numLoops - 2, k = numLoops - 1;
  AffineMap out = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  if (out != AffineMap::getMultiDimIdentityMap(numLoops, context)
                 .getMajorSubMap(numLoops - 1))
    return false;
  AffineMap lhs = op.getMatchingIndexingMap(op.getDpsInputOperand(0));
  AffineMap rhs = op.getMatchingIndexingMap(op.getDpsInputOperand(1));
  if (!lhs.isProjectedPermutation() || !rhs.isProjectedPermutation())
    return false;
  auto dim = [&](unsigned d) { return getAffineDimExpr(d, context); };
  return rhs.getNumResults() >= 2 && rhs.getResults().back() == dim(n) &&
         rhs.getResult(rhs.getNumResults() - 2) == dim(k) &&
         lhs.getNumResults() >= 2 && lhs.getResults().back() == dim(k) &&
         lhs.getResult(lhs.getNumResults() - 2) == dim(m);
}

/// The [panels, K, panel] weight argument that `value` views as [K, N]
/// (kiln-cpu-pack-weights: linalg.transpose [1, 0, 2] -> collapse_shape,
/// then a slice of the first N columns when the last panel is padded), or
/// null.
Value weightPanelsOf(Value value) {
  if (auto padded = value.getDefiningOp<tensor::ExtractSliceOp>()) {
    if (!padded.hasZeroOffset() || !padded.hasUnitStride() ||
        padded.getSourceType().getRank() != 2 ||
        padded.getType().getRank() != 2)
      return {};
    value = padded.getSource();
  }
  auto collapse = value.getDefiningOp<tensor::CollapseShapeOp>();
  if (!collapse)
    return {};
  auto transpose = collapse.getSrc().getDefiningOp<linalg::TransposeOp>();
  if (!transpose || !transpose.hasPureTensorSemantics() ||
      transpose.getPermutation() != ArrayRef<int64_t>{1, 0, 2})
    return {};
  Value packed = transpose.getInput();
  auto type = dyn_cast<RankedTensorType>(packed.getType());
  if (!isa<BlockArgument>(packed) || !type || !type.hasStaticShape() ||
      type.getRank() != 3)
    return {};
  return packed;
}

/// A tensor.extract of [k, n] from a packed weight's [K, N] view (a
/// Gather of the tied embedding) reads [n / panel, k, n % panel] of the
/// panels, so that the view is not materialized.
void extractFromWeightPanels(RewriterBase &rewriter, tensor::ExtractOp op) {
  Value packed = weightPanelsOf(op.getTensor());
  if (!packed || op.getIndices().size() != 2)
    return;
  int64_t panel = cast<RankedTensorType>(packed.getType()).getDimSize(2);
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(op);
  Location loc = op.getLoc();
  AffineExpr d0 = rewriter.getAffineDimExpr(0);
  Value n = op.getIndices()[1];
  Value outer = affine::AffineApplyOp::create(
      rewriter, loc, AffineMap::get(1, 0, d0.floorDiv(panel)), ValueRange{n});
  Value inner = affine::AffineApplyOp::create(
      rewriter, loc, AffineMap::get(1, 0, d0 % panel), ValueRange{n});
  rewriter.replaceOpWithNewOp<tensor::ExtractOp>(
      op, packed, ValueRange{outer, op.getIndices()[0], inner});
}

/// Marks the im2col copies convToIm2ColMatmul makes, for fuseIm2ColIntoBlock.
constexpr StringLiteral kIm2ColAttr = "kiln.im2col";

/// tensor.pad (constant value and amounts) of an elementwise linalg.generic's
/// only result: the generic writes straight into the interior of the padded
/// tensor (an extract_slice of its zero fill, inserted back), so that
/// bufferization needs no copy into the padded buffer. Between two
/// convolutions that was one more loop over the activation (the Relu, then
/// the copy into the next convolution's padded input: two parallel regions
/// and two passes, now one). A result with other users (a residual Add)
/// is left alone: bufferization then copied the whole padded buffer. A
/// run-time extent (the batch) is taken from the generic's init.
LogicalResult padIntoProducer(RewriterBase &rewriter, tensor::PadOp pad) {
  auto generic = pad.getSource().getDefiningOp<linalg::GenericOp>();
  Value padValue = pad.getConstantPaddingValue();
  auto type = dyn_cast<RankedTensorType>(pad.getResultType());
  if (!generic || !padValue || !type || !generic->hasOneUse() ||
      generic.getNumResults() != 1 || generic.getNumDpsInits() != 1 ||
      generic.getNumLoops() != generic.getNumParallelLoops() ||
      !generic.getMatchingIndexingMap(generic.getDpsInitOperand(0))
           .isIdentity() ||
      !generic.getBlock()->getArguments().back().use_empty())
    return failure();
  SmallVector<OpFoldResult> low = pad.getMixedLowPad();
  SmallVector<OpFoldResult> high = pad.getMixedHighPad();
  auto isConstant = [](OpFoldResult v) {
    return getConstantIntValue(v).has_value();
  };
  if (!llvm::all_of(low, isConstant) || !llvm::all_of(high, isConstant))
    return failure();
  Location loc = pad.getLoc();
  rewriter.setInsertionPoint(generic);
  // The unpadded sizes, from the generic's init (it dominates the generic;
  // the pad's source, the generic's result, does not).
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(
      rewriter, loc, generic.getDpsInitOperand(0)->get());
  SmallVector<Value> dynamicSizes;
  for (int64_t i = 0; i < type.getRank(); ++i) {
    if (!type.isDynamicDim(i))
      continue;
    int64_t border = *getConstantIntValue(low[i]) +
                     *getConstantIntValue(high[i]);
    dynamicSizes.push_back(getValueOrCreateConstantIndexOp(
        rewriter, loc,
        affine::makeComposedFoldedAffineApply(
            rewriter, loc, getAffineSymbolExpr(0, rewriter.getContext()) +
                               border,
            {sizes[i]})));
  }
  Value empty = tensor::EmptyOp::create(rewriter, loc, type, dynamicSizes);
  Value filled =
      linalg::FillOp::create(rewriter, loc, padValue, empty).getResult(0);
  SmallVector<OpFoldResult> ones(type.getRank(), rewriter.getIndexAttr(1));
  Value interior = tensor::ExtractSliceOp::create(
      rewriter, loc, cast<RankedTensorType>(pad.getSource().getType()),
      filled, low, sizes, ones);
  rewriter.modifyOpInPlace(generic, [&] {
    generic.getDpsInitOperand(0)->set(interior);
  });
  rewriter.setInsertionPoint(pad);
  Value inserted = tensor::InsertSliceOp::create(
      rewriter, loc, generic.getResult(0), filled, low, sizes, ones);
  rewriter.replaceOp(pad, inserted);
  return success();
}

/// The convolution's accumulator [n, f, oh, ow] as the [n, f, oh*ow] one of
/// the im2col contraction. A zero fill or a broadcast along n and f (the
/// bias) is rebuilt in 3-D, so that tileAndFuseInit fuses it into the thread
/// blocks (a producer behind a collapse_shape is not fused, and stayed a
/// separate parallel loop writing the whole output once more); anything
/// else is collapsed.
Value collapseInit(RewriterBase &rewriter, Location loc, Value init,
                   RankedTensorType type) {
  MLIRContext *context = rewriter.getContext();
  auto collapsed = [&]() -> Value {
    return tensor::CollapseShapeOp::create(
        rewriter, loc, init,
        SmallVector<ReassociationIndices>{{0}, {1}, {2, 3}});
  };
  // The rebuilt producer writes where the original one did (collapsed): a
  // fresh tensor there, or the slice of the batch loop's result
  // (kiln-cpu-split-dynamic), which a new tensor would have to be copied
  // into.
  auto destination = [&](Value dest) -> Value {
    if (dest.getDefiningOp<tensor::EmptyOp>() && type.hasStaticShape())
      return tensor::EmptyOp::create(rewriter, loc, type.getShape(),
                                     type.getElementType());
    return tensor::CollapseShapeOp::create(
        rewriter, loc, type, dest,
        SmallVector<ReassociationIndices>{{0}, {1}, {2, 3}});
  };
  if (auto fill = init.getDefiningOp<linalg::FillOp>())
    return linalg::FillOp::create(rewriter, loc, fill.getInputs()[0],
                                  destination(fill.getOutputs()[0]))
        .getResult(0);
  auto generic = init.getDefiningOp<linalg::GenericOp>();
  if (!generic || generic.getNumDpsInits() != 1 ||
      generic.getNumLoops() != 4 || generic.getNumParallelLoops() != 4 ||
      !generic.getMatchingIndexingMap(generic.getDpsInitOperand(0))
           .isIdentity() ||
      !generic.getBlock()->getArguments().back().use_empty())
    return collapsed();
  SmallVector<AffineMap> maps;
  for (OpOperand *input : generic.getDpsInputOperands()) {
    AffineMap map = generic.getMatchingIndexingMap(input);
    // Inputs indexed by the batch and channel loops only.
    if (map.isFunctionOfDim(2) || map.isFunctionOfDim(3))
      return collapsed();
    maps.push_back(AffineMap::get(3, 0, map.getResults(), context));
  }
  maps.push_back(AffineMap::getMultiDimIdentityMap(3, context));
  SmallVector<utils::IteratorType> parallel3(3, utils::IteratorType::parallel);
  auto rebuilt = linalg::GenericOp::create(
      rewriter, loc, TypeRange{type}, generic.getDpsInputs(),
      ValueRange{destination(generic.getDpsInitOperand(0)->get())}, maps,
      parallel3);
  rewriter.cloneRegionBefore(generic.getRegion(), rebuilt.getRegion(),
                             rebuilt.getRegion().end());
  return rebuilt.getResult(0);
}

/// linalg.conv_2d_nchw_fchw (float32, static) as im2col + a row-major
/// contraction:
///   col[n, c, kh, kw, oh, ow] = in[n, c, oh*sh + kh*dh, ow*sw + kw*dw]
///   out[n, f, oh*ow] += filter[f, c*kh*kw] * col[n, c*kh*kw, oh*ow]
/// The im2col copy's innermost loop (ow) is contiguous in both tensors, so it
/// vectorizes (unlike upstream's rewriteInIm2Col, whose copy recomputes every
/// index with floordiv/mod over a flattened space).
///
/// A run-time batch (the only dynamic dim) is taken when the im2col is fused
/// into the thread blocks (im2colFusesIntoBlocks: never materialized whole,
/// the batch one dimension of the blocks, as with a static batch);
/// kiln-cpu-split-dynamic makes the others loops of one-image convolutions.
LogicalResult convToIm2ColMatmul(RewriterBase &rewriter,
                                 linalg::Conv2DNchwFchwOp conv,
                                 int64_t maxColElements, int64_t blockCols) {
  Value input = conv.getInputs()[0], filter = conv.getInputs()[1];
  Value init = conv.getOutputs()[0];
  auto inputType = dyn_cast<RankedTensorType>(input.getType());
  auto filterType = dyn_cast<RankedTensorType>(filter.getType());
  auto outType = dyn_cast<RankedTensorType>(init.getType());
  auto staticButBatch = [](RankedTensorType type) {
    return !ShapedType::isDynamicShape(type.getShape().drop_front());
  };
  if (!conv.hasPureTensorSemantics() || !inputType || !filterType ||
      !outType || inputType.getRank() != 4 || outType.getRank() != 4 ||
      !staticButBatch(inputType) || !filterType.hasStaticShape() ||
      !staticButBatch(outType) ||
      inputType.isDynamicDim(0) != outType.isDynamicDim(0) ||
      !inputType.getElementType().isF32() ||
      !filterType.getElementType().isF32() ||
      !outType.getElementType().isF32())
    return failure();
  int64_t n = outType.getDimSize(0), f = outType.getDimSize(1),
          oh = outType.getDimSize(2), ow = outType.getDimSize(3);
  int64_t c = filterType.getDimSize(1), kh = filterType.getDimSize(2),
          kw = filterType.getDimSize(3);
  bool dynamicBatch = ShapedType::isDynamic(n);
  if (dynamicBatch && !im2colFusesIntoBlocks(oh, ow, blockCols))
    return failure();
  if ((dynamicBatch ? 1 : n) * c * kh * kw * oh * ow > maxColElements)
    return failure();
  auto strides = llvm::to_vector(conv.getStrides().getValues<int64_t>());
  auto dilations = llvm::to_vector(conv.getDilations().getValues<int64_t>());

  Location loc = conv.getLoc();
  MLIRContext *context = rewriter.getContext();
  rewriter.setInsertionPoint(conv);
  Type f32 = rewriter.getF32Type();
  auto colType = RankedTensorType::get({n, c, kh, kw, oh, ow}, f32);
  SmallVector<Value> batch;
  if (dynamicBatch)
    batch.push_back(tensor::DimOp::create(rewriter, loc, input, 0));
  Value colInit = tensor::EmptyOp::create(rewriter, loc, colType, batch);
  AffineExpr dN, dC, dKh, dKw, dOh, dOw;
  bindDims(context, dN, dC, dKh, dKw, dOh, dOw);
  AffineMap inputMap = AffineMap::get(
      6, 0,
      {dN, dC, dOh * strides[0] + dKh * dilations[0],
       dOw * strides[1] + dKw * dilations[1]},
      context);
  SmallVector<utils::IteratorType> parallel6(6, utils::IteratorType::parallel);
  auto im2col = linalg::GenericOp::create(
      rewriter, loc, colType, ValueRange{input}, ValueRange{colInit},
      ArrayRef<AffineMap>{inputMap,
                          AffineMap::getMultiDimIdentityMap(6, context)},
      parallel6, [](OpBuilder &b, Location loc, ValueRange args) {
        linalg::YieldOp::create(b, loc, args[0]);
      });
  im2col->setAttr(kIm2ColAttr, rewriter.getUnitAttr());

  auto col = tensor::CollapseShapeOp::create(
      rewriter, loc, im2col.getResult(0),
      SmallVector<ReassociationIndices>{{0}, {1, 2, 3}, {4, 5}});
  auto filter2d = tensor::CollapseShapeOp::create(
      rewriter, loc, filter,
      SmallVector<ReassociationIndices>{{0}, {1, 2, 3}});
  Value out3d = collapseInit(
      rewriter, loc, init,
      RankedTensorType::get({n, f, oh * ow}, outType.getElementType()));

  // (b, m, n, k) = (n, f, oh*ow, c*kh*kw).
  AffineExpr b, m, nn, k;
  bindDims(context, b, m, nn, k);
  SmallVector<AffineMap> maps = {AffineMap::get(4, 0, {m, k}, context),
                                 AffineMap::get(4, 0, {b, k, nn}, context),
                                 AffineMap::get(4, 0, {b, m, nn}, context)};
  // A batch_matmul whose filter operand is broadcast over the batch: a named
  // contraction, so that it vectorizes to vector.contract like the others.
  auto matmul = linalg::BatchMatmulOp::create(
      rewriter, loc, TypeRange{out3d.getType()}, ValueRange{filter2d, col},
      ValueRange{out3d},
      ArrayRef<NamedAttribute>{rewriter.getNamedAttr(
          "indexing_maps", rewriter.getAffineMapArrayAttr(maps))});
  auto result = tensor::ExpandShapeOp::create(
      rewriter, loc, outType, matmul.getResult(0),
      SmallVector<ReassociationIndices>{{0}, {1}, {2, 3}});
  rewriter.replaceOp(conv, result.getResult());
  return success();
}

struct TileAndVectorizePass
    : PassWrapper<TileAndVectorizePass, OperationPass<func::FuncOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(TileAndVectorizePass)
  TileAndVectorizePass() = default;
  TileAndVectorizePass(const TileAndVectorizePass &other)
      : PassWrapper(other) {}
  TileAndVectorizePass(int64_t mr, int64_t nr, bool halfOnly,
                       bool skipAmx) {
    skipAmxBf16 = skipAmx;
    registerRows = mr;
    registerCols = nr;
    halfPrecisionOnly = halfOnly;
  }

  StringRef getArgument() const override {
    return "kiln-cpu-tile-and-vectorize";
  }
  StringRef getDescription() const override {
    return "Tile float32 matmul/batch_matmul/NCHW conv (tensors) for threads "
           "(scf.forall) and registers, and vectorize the register tiles";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<affine::AffineDialect, arith::ArithDialect,
                    linalg::LinalgDialect, scf::SCFDialect,
                    tensor::TensorDialect, vector::VectorDialect>();
  }

  Option<int64_t> registerRows{*this, "mr",
                               llvm::cl::desc("Register tile rows (M)"),
                               llvm::cl::init(8)};
  Option<int64_t> registerCols{
      *this, "nr", llvm::cl::desc("Register tile columns (N, the vector)"),
      llvm::cl::init(32)};
  Option<int64_t> blockRows{*this, "block-m",
                            llvm::cl::desc("Rows of one thread's block"),
                            llvm::cl::init(32)};
  Option<int64_t> blockCols{*this, "block-n",
                            llvm::cl::desc("Columns of one thread's block"),
                            llvm::cl::init(kWeightPanel)};
  Option<bool> halfPrecisionOnly{
      *this, "half-only",
      llvm::cl::desc("Only the contractions with f16/bf16 operands (with "
                     "--kernels=library, which calls BLAS for the f32 ones)"),
      llvm::cl::init(false)};
  Option<bool> skipAmxBf16{
      *this, "skip-amx-bf16",
      llvm::cl::desc("Leave the bf16 x bf16 -> f32 matmuls to the AMX-BF16 "
                     "kernel calls (kiln-cpu-amx-bf16-calls)"),
      llvm::cl::init(false)};
  Option<int64_t> maxIm2ColElements{
      *this, "max-im2col-elements",
      llvm::cl::desc("Largest im2col buffer (elements) a convolution may use"),
      llvm::cl::init(int64_t(1) << 24)};

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    IRRewriter rewriter(&getContext());

    // With half-only, the f32 contractions are left to the BLAS calls
    // (kiln-cpu-library-calls, which takes f32 only); the half-precision ones
    // would otherwise stay scalar loops.
    auto wanted = [&](linalg::LinalgOp op) {
      if (skipAmxBf16 && isAmxBf16Contraction(op))
        return false;
      return !halfPrecisionOnly ||
             !getElementTypeOrSelf(op.getDpsInputOperand(0)->get().getType())
                  .isF32();
    };
    // Library mode (half-only) leaves the padding to the library calls.
    SmallVector<tensor::PadOp> pads;
    if (!halfPrecisionOnly)
      func.walk([&](tensor::PadOp pad) { pads.push_back(pad); });
    for (tensor::PadOp pad : pads)
      (void)padIntoProducer(rewriter, pad);

    SmallVector<linalg::Conv2DNchwFchwOp> convs;
    func.walk([&](linalg::Conv2DNchwFchwOp op) {
      if (wanted(op))
        convs.push_back(op);
    });
    for (linalg::Conv2DNchwFchwOp conv : convs)
      (void)convToIm2ColMatmul(rewriter, conv, maxIm2ColElements, blockCols);

    SmallVector<tensor::ExtractOp> extracts;
    func.walk([&](tensor::ExtractOp op) { extracts.push_back(op); });
    for (tensor::ExtractOp op : extracts)
      extractFromWeightPanels(rewriter, op);

    SmallVector<linalg::LinalgOp> targets;
    func.walk([&](linalg::LinalgOp op) {
      if (isRowMajorContraction(op) && wanted(op))
        targets.push_back(op);
    });
    for (linalg::LinalgOp op : targets)
      if (failed(tileAndVectorize(rewriter, op)))
        return signalPassFailure();
    sizeFromInits(func);

    RewritePatternSet patterns(&getContext());
    // Masked edge tiles: the transfers take their masks as operands rather
    // than inside vector.mask regions, which the buffer deallocation pipeline
    // would insert ops into (vector.mask holds exactly one op).
    vector::populateVectorMaskLoweringPatternsForSideEffectingOps(patterns);
    vector::populateCastAwayVectorLeadingOneDimPatterns(patterns);
    vector::populateVectorTransferPermutationMapLoweringPatterns(patterns);
    vector::TransferReadOp::getCanonicalizationPatterns(patterns,
                                                        &getContext());
    vector::TransferWriteOp::getCanonicalizationPatterns(patterns,
                                                         &getContext());
    tensor::ExtractSliceOp::getCanonicalizationPatterns(patterns,
                                                        &getContext());
    tensor::InsertSliceOp::getCanonicalizationPatterns(patterns, &getContext());
    if (failed(applyPatternsGreedily(func, std::move(patterns))))
      return signalPassFailure();

    // Keep the accumulator in registers across K: hoist the loop-invariant
    // transfer_read/transfer_write pair on the K loop's iter_arg (post-order
    // walk: the K loops, innermost, come first).
    SmallVector<scf::ForOp> loops;
    func.walk([&](scf::ForOp loop) {
      if (loop->removeAttr(kReductionLoop))
        loops.push_back(loop);
    });
    // The masks of a masked tile (an edge, or a run-time N) first: the
    // transfers are a hoistable pair only with their mask outside the loop.
    for (scf::ForOp loop : loops) {
      moveLoopInvariantCode(cast<LoopLikeOpInterface>(loop.getOperation()));
      hoistLoopInvariantSubsets(rewriter, loop);
    }
  }

  /// The tiling sizes its loops with tensor.dim of the operands: with a
  /// run-time batch, of the im2col (through its collapse_shape), which would
  /// keep the whole-batch im2col alive although every thread block now
  /// copies its own part. A dim of a collapse_shape's single-dim group is
  /// the source's, a dim of a linalg op's result its init's (a tensor.empty
  /// whose size the canonicalizer then folds in).
  static void sizeFromInits(func::FuncOp func) {
    SmallVector<tensor::DimOp> dims;
    func.walk([&](tensor::DimOp dim) { dims.push_back(dim); });
    for (tensor::DimOp dim : dims) {
      std::optional<int64_t> index = dim.getConstantIndex();
      if (!index)
        continue;
      int64_t position = *index;
      Value source = dim.getSource();
      bool changed = false;
      while (true) {
        if (auto collapse = source.getDefiningOp<tensor::CollapseShapeOp>()) {
          SmallVector<ReassociationIndices> groups =
              collapse.getReassociationIndices();
          if (position >= (int64_t)groups.size() ||
              groups[position].size() != 1)
            break;
          position = groups[position].front();
          source = collapse.getSrc();
        } else if (auto linalgOp = source.getDefiningOp<linalg::LinalgOp>()) {
          auto result = cast<OpResult>(source);
          source = linalgOp.getDpsInitOperand(result.getResultNumber())->get();
        } else {
          break;
        }
        changed = true;
      }
      if (!changed)
        continue;
      OpBuilder b(dim);
      Value replacement = tensor::DimOp::create(b, dim.getLoc(), source,
                                                position);
      dim.replaceAllUsesWith(replacement);
      dim.erase();
    }
  }

  /// Marks the K loops around the micro-kernels until the accumulator hoisting.
  static constexpr StringLiteral kReductionLoop = "kiln.reduction_loop";

  /// Tiles `op` with `tileSizes` (scf.forall or scf.for) and fuses the
  /// producer of its accumulator (the zero fill, or the bias broadcast of a
  /// convolution) into the tiles, so the output is written once, by the
  /// micro-kernels. Returns the tiled contraction and the fused producers.
  static FailureOr<SmallVector<Operation *>>
  tileAndFuseInit(RewriterBase &rewriter, Operation *op,
                  ArrayRef<int64_t> tileSizes,
                  scf::SCFTilingOptions::LoopType loopType) {
    scf::SCFTilingOptions tiling;
    tiling.setLoopType(loopType);
    tiling.setTileSizes(getAsIndexOpFoldResult(rewriter.getContext(),
                                               tileSizes));
    scf::SCFTileAndFuseOptions options;
    options.setTilingOptions(tiling);
    options.setFusionControlFn(
        [](tensor::ExtractSliceOp, OpResult producer, bool isDestination)
            -> std::optional<scf::SCFTileAndFuseOptions::ControlFnResult> {
          auto linalgOp = dyn_cast<linalg::LinalgOp>(producer.getOwner());
          if (!isDestination || !linalgOp ||
              linalgOp.getNumReductionLoops() != 0)
            return std::nullopt;
          return scf::SCFTileAndFuseOptions::ControlFnResult{};
        });
    rewriter.setInsertionPoint(op);
    FailureOr<scf::SCFTileAndFuseResult> result =
        scf::tileConsumerAndFuseProducersUsingSCF(
            rewriter, cast<TilingInterface>(op), options);
    if (failed(result))
      return failure();
    for (OpResult value : op->getResults())
      rewriter.replaceAllUsesWith(value, result->replacements.lookup(value));
    SmallVector<Operation *> tiled(result->tiledAndFusedOps.begin(),
                                   result->tiledAndFusedOps.end());
    return tiled;
  }

  /// A convolution's thread block reads whole output rows (block-n a multiple
  /// of ow) of one image: then its im2col tile is a box of the 6-D im2col
  /// (all of c, kh, kw; a run of oh; all of ow), and the copy is fused into
  /// the block. Each thread then copies only what its block uses, into a
  /// cache-sized buffer, instead of the whole image's im2col being written
  /// to (freshly faulted-in) memory and read back. Anything else keeps the
  /// im2col outside the loop.
  /// Whether a contraction's right-hand side is an im2col (a convolution
  /// as a matmul, whose blocks must read whole output rows).
  static bool readsIm2Col(linalg::LinalgOp op) {
    if (op.getNumDpsInputs() < 2)
      return false;
    auto collapse = op.getDpsInputOperand(1)
                        ->get()
                        .getDefiningOp<tensor::CollapseShapeOp>();
    auto im2col = collapse ? collapse.getSrc().getDefiningOp<linalg::GenericOp>()
                           : linalg::GenericOp();
    return im2col && im2col->hasAttr(kIm2ColAttr);
  }

  static void fuseIm2ColIntoBlock(RewriterBase &rewriter, Operation *blockOp) {
    auto matmul = dyn_cast<linalg::BatchMatmulOp>(blockOp);
    auto forall = blockOp->getParentOfType<scf::ForallOp>();
    if (!matmul || !forall)
      return;
    auto slice = matmul.getDpsInputOperand(1)
                     ->get()
                     .getDefiningOp<tensor::ExtractSliceOp>();
    if (!slice || !slice->hasOneUse())
      return;
    auto collapse = slice.getSource().getDefiningOp<tensor::CollapseShapeOp>();
    if (!collapse)
      return;
    auto im2col = collapse.getSrc().getDefiningOp<linalg::GenericOp>();
    if (!im2col || !im2col->hasAttr(kIm2ColAttr))
      return;
    ArrayRef<int64_t> colShape =
        cast<RankedTensorType>(im2col.getResultTypes()[0]).getShape();
    int64_t k = colShape[1] * colShape[2] * colShape[3], ow = colShape[5];
    ArrayRef<int64_t> sizes = slice.getStaticSizes();
    ArrayRef<int64_t> offsets = slice.getStaticOffsets();
    if (ShapedType::isDynamicShape(sizes) || sizes.size() != 3 ||
        sizes[0] != 1 || sizes[1] != k || sizes[2] % ow != 0 ||
        offsets[1] != 0 || !slice.hasUnitStride())
      return;
    SmallVector<OpFoldResult> mixed = slice.getMixedOffsets();
    Location loc = slice.getLoc();
    rewriter.setInsertionPoint(slice);
    AffineExpr p;
    bindDims(rewriter.getContext(), p);
    OpFoldResult row = affine::makeComposedFoldedAffineApply(
        rewriter, loc, p.floorDiv(ow), {mixed[2]});
    OpFoldResult zero = rewriter.getIndexAttr(0);
    SmallVector<OpFoldResult> boxOffsets = {mixed[0], zero, zero, zero, row,
                                            zero};
    SmallVector<OpFoldResult> boxSizes = getAsIndexOpFoldResult(
        rewriter.getContext(),
        {1, colShape[1], colShape[2], colShape[3], sizes[2] / ow, ow});
    SmallVector<OpFoldResult> ones(6, rewriter.getIndexAttr(1));
    auto box = tensor::ExtractSliceOp::create(
        rewriter, loc, im2col.getResult(0), boxOffsets, boxSizes, ones);
    auto boxCollapsed = tensor::CollapseShapeOp::create(
        rewriter, loc, slice.getType(), box,
        SmallVector<ReassociationIndices>{{0}, {1, 2, 3}, {4, 5}});
    rewriter.replaceOp(slice, boxCollapsed.getResult());
    SmallVector<LoopLikeOpInterface> loops = {
        cast<LoopLikeOpInterface>(forall.getOperation())};
    std::optional<scf::SCFFuseProducerOfSliceResult> fused =
        scf::tileAndFuseProducerOfSlice(rewriter, box, loops);
    if (!fused || fused->tiledOps.empty())
      return;
    // The copy one output row (ow) at a time, as a vector: a contiguous load
    // and store (LLVM leaves the scalar loop unvectorized).
    auto tile = dyn_cast<linalg::GenericOp>(fused->tiledOps.front());
    if (!tile)
      return;
    scf::SCFTilingOptions rows;
    rows.setLoopType(scf::SCFTilingOptions::LoopType::ForOp);
    rows.setTileSizes(
        getAsIndexOpFoldResult(rewriter.getContext(), {1, 1, 1, 1, 1, 0}));
    rewriter.setInsertionPoint(tile);
    FailureOr<scf::SCFTilingResult> tiled =
        scf::tileUsingSCF(rewriter, cast<TilingInterface>(*tile), rows);
    if (failed(tiled))
      return;
    rewriter.replaceOp(tile, tiled->replacements);
    // One row: in[0, 0, 0, :] -> col[0, 0, 0, 0, 0, :], contiguous in both
    // when the input row is as long as the output one (horizontal stride 1).
    // (linalg::vectorize rejects the copy's oh + kh input map.)
    auto rowOp = cast<linalg::GenericOp>(tiled->tiledOps.front());
    Value rowIn = rowOp.getDpsInputOperand(0)->get();
    Value rowOut = rowOp.getDpsInitOperand(0)->get();
    auto inType = cast<RankedTensorType>(rowIn.getType());
    auto outType = cast<RankedTensorType>(rowOut.getType());
    if (!inType.hasStaticShape() || !outType.hasStaticShape() ||
        inType.getShape().back() != outType.getShape().back() ||
        inType.getNumElements() != ow || outType.getNumElements() != ow)
      return;
    rewriter.setInsertionPoint(rowOp);
    Location rowLoc = rowOp.getLoc();
    auto vectorType = VectorType::get({ow}, inType.getElementType());
    Value zeroIndex = arith::ConstantIndexOp::create(rewriter, rowLoc, 0);
    Value padding = arith::ConstantOp::create(
        rewriter, rowLoc, rewriter.getZeroAttr(inType.getElementType()));
    auto read = vector::TransferReadOp::create(
        rewriter, rowLoc, vectorType, rowIn,
        SmallVector<Value>(inType.getRank(), zeroIndex), padding,
        ArrayRef<bool>{true});
    auto write = vector::TransferWriteOp::create(
        rewriter, rowLoc, read.getResult(), rowOut,
        SmallVector<Value>(outType.getRank(), zeroIndex),
        ArrayRef<bool>{true});
    rewriter.replaceOp(rowOp, write.getResult());
  }

  /// `tile` clamped to a loop's static extent (a run-time one: `tile`).
  static int64_t clampTile(int64_t tile, int64_t range) {
    return ShapedType::isDynamic(range) ? tile : std::min(tile, range);
  }

  /// A thread block whose right-hand side is a column range of a weight
  /// that kiln-cpu-pack-weights stored as panels reads its panel instead: a
  /// contiguous [K, cols] slab of the argument. The block's columns must be
  /// one panel (block-n == panel).
  void readWeightPanels(RewriterBase &rewriter, linalg::LinalgOp block,
                        int64_t blockN) {
    if (block.getNumLoops() != 3)
      return;
    auto slice = block.getDpsInputOperand(1)
                     ->get()
                     .getDefiningOp<tensor::ExtractSliceOp>();
    if (!slice || slice.getSourceType().getRank() != 2 ||
        !slice.hasUnitStride())
      return;
    Value packed = weightPanelsOf(slice.getSource());
    if (!packed)
      return;
    auto packedType = cast<RankedTensorType>(packed.getType());
    int64_t panel = packedType.getDimSize(2);
    int64_t k = packedType.getDimSize(1);
    SmallVector<OpFoldResult> offsets = slice.getMixedOffsets();
    SmallVector<OpFoldResult> sizes = slice.getMixedSizes();
    std::optional<int64_t> kOffset = getConstantIntValue(offsets[0]);
    std::optional<int64_t> kSize = getConstantIntValue(sizes[0]);
    std::optional<int64_t> cols = getConstantIntValue(sizes[1]);
    if (kOffset != 0 || kSize != k || panel != blockN ||
        (cols && *cols > panel))
      return;
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPoint(slice);
    Location loc = slice.getLoc();
    AffineExpr d0 = rewriter.getAffineDimExpr(0);
    OpFoldResult index = affine::makeComposedFoldedAffineApply(
        rewriter, loc, d0.floorDiv(panel), {offsets[1]});
    auto panelSlice = tensor::ExtractSliceOp::create(
        rewriter, loc, slice.getType(), packed,
        ArrayRef<OpFoldResult>{index, rewriter.getIndexAttr(0),
                               rewriter.getIndexAttr(0)},
        ArrayRef<OpFoldResult>{rewriter.getIndexAttr(1), sizes[0], sizes[1]},
        ArrayRef<OpFoldResult>{rewriter.getIndexAttr(1),
                               rewriter.getIndexAttr(1),
                               rewriter.getIndexAttr(1)});
    rewriter.replaceOp(slice, panelSlice.getResult());
  }

  LogicalResult tileAndVectorize(RewriterBase &rewriter, linalg::LinalgOp op) {
    unsigned numLoops = op.getNumLoops();
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    unsigned m = numLoops - 3, n = numLoops - 2, k = numLoops - 1;
    using LoopType = scf::SCFTilingOptions::LoopType;

    // Thread blocks: one batch index, blockRows x blockN of the output;
    // blockN splits N evenly (gemmBlockColumns, as the weight's panels),
    // except where the blocks read whole output rows of an im2col.
    int64_t blockN = blockCols;
    if (!readsIm2Col(op) && !ShapedType::isDynamic(ranges[n]))
      blockN = gemmBlockColumns(ranges[n], blockCols, registerCols);
    SmallVector<int64_t> blockSizes(numLoops, 1);
    blockSizes[m] = clampTile(blockRows, ranges[m]);
    blockSizes[n] = clampTile(blockN, ranges[n]);
    blockSizes[k] = 0;
    FailureOr<SmallVector<Operation *>> blocks =
        tileAndFuseInit(rewriter, op, blockSizes, LoopType::ForallOp);
    if (failed(blocks))
      return op.emitError("kiln-cpu-tile-and-vectorize: cannot tile for "
                          "threads");
    rewriter.eraseOp(op);
    fuseIm2ColIntoBlock(rewriter, blocks->front());
    readWeightPanels(rewriter, cast<linalg::LinalgOp>(blocks->front()),
                     blockN);

    // Rows in static pieces, never masked register tiles (a masked tile
    // computes all mr rows whatever its size: M = 1 did 8 times the 1-row
    // tile's work, a static M = 33 ran 3x slower than as 32 + 1 rows):
    // - a block of a run-time row count (a dynamic M): a loop of whole
    //   register tiles (mr rows) and the remainder as static pieces of the
    //   powers of two below mr, each under an scf.if on its bit (4, 2, 1
    //   of 8: a remainder of 7 reads B three times, but there are three
    //   copies of the kernel rather than seven; M = 1 is the 1-row piece);
    // - a block of a static M that is not a multiple of block-m: either a
    //   whole block or the last one (an scf.index_switch over the two);
    // - a static row count that is not a multiple of mr: its whole register
    //   tiles and one static remainder piece.
    // Each piece is then tiled for registers like a static block.
    auto blockOp = cast<linalg::LinalgOp>(blocks->front());
    SmallVector<Operation *> producers(llvm::drop_begin(*blocks));
    auto initProducer = [](linalg::LinalgOp op) -> Operation * {
      Operation *producer = op.getDpsInitOperand(0)->get().getDefiningOp();
      return isa_and_nonnull<linalg::LinalgOp>(producer) ? producer
                                                         : nullptr;
    };
    auto cut = [&](linalg::LinalgOp op, int64_t chunk,
                   ArrayRef<int64_t> extents)
        -> FailureOr<SmallVector<linalg::LinalgOp>> {
      if (Operation *producer = initProducer(op))
        producers.push_back(producer);
      FailureOr<SmallVector<linalg::LinalgOp>> pieces =
          splitIntoStaticPieces(rewriter, op, m, chunk, extents);
      if (failed(pieces))
        return op->emitError("kiln-cpu-tile-and-vectorize: cannot split the "
                             "block's rows");
      return pieces;
    };
    SmallVector<linalg::LinalgOp> bySize = {blockOp};
    int64_t blockM = blockOp.getStaticLoopRanges()[m];
    if (ShapedType::isDynamic(blockM) && !ShapedType::isDynamic(ranges[m])) {
      SmallVector<int64_t> extents = {blockRows};
      if (ranges[m] % blockRows)
        extents.push_back(ranges[m] % blockRows);
      FailureOr<SmallVector<linalg::LinalgOp>> pieces =
          cut(blockOp, blockRows, extents);
      if (failed(pieces))
        return failure();
      bySize = std::move(*pieces);
    }
    SmallVector<linalg::LinalgOp> pieces;
    for (linalg::LinalgOp op : bySize) {
      int64_t rows = op.getStaticLoopRanges()[m];
      if (ShapedType::isDynamic(rows) ||
          (rows > registerRows && rows % registerRows)) {
        FailureOr<SmallVector<linalg::LinalgOp>> rowPieces =
            cut(op, registerRows, {});
        if (failed(rowPieces))
          return failure();
        llvm::append_range(pieces, *rowPieces);
      } else {
        pieces.push_back(op);
      }
    }
    for (linalg::LinalgOp piece : pieces) {
      if (Operation *producer = initProducer(piece))
        producers.push_back(producer);
      if (failed(tileForRegisters(rewriter, piece)))
        return failure();
    }
    // The init producers of the block and of the pieces, now fused into the
    // register tiles (none is erased twice: each op once in the list).
    llvm::SetVector<Operation *> unique(producers.begin(), producers.end());
    for (Operation *producer : llvm::reverse(unique))
      if (producer->use_empty())
        rewriter.eraseOp(producer);
    return success();
  }

  /// Register tiles of a thread block (the fused init producer with them),
  /// K innermost, the micro-kernel and the fused producer tiles vectorized.
  LogicalResult tileForRegisters(RewriterBase &rewriter,
                                 linalg::LinalgOp blockOp) {
    unsigned numLoops = blockOp.getNumLoops();
    SmallVector<int64_t> ranges = blockOp.getStaticLoopRanges();
    unsigned m = numLoops - 3, n = numLoops - 2, k = numLoops - 1;
    using LoopType = scf::SCFTilingOptions::LoopType;
    int64_t mr = clampTile(registerRows, ranges[m]);
    int64_t nr = clampTile(registerCols, ranges[n]);
    // A piece of fewer rows than the register tile (a decode step's M = 1,
    // the remainder rows) gets as many accumulators, in N: mr x nr = 1 x 32
    // on AVX-512 kept 2 of the 16 accumulators busy and read 128 bytes of
    // each weight row per K step, every step another row 4 N bytes further
    // (the LM head: 196 KB), which ran a [1, 576] x [576, 49152] product at
    // 8 GB/s a thread, 3x ONNX Runtime's time. 1 x 256 reads 1 KB of each
    // row. The widened tile divides the block (no masked tiles).
    if (!ShapedType::isDynamic(ranges[m]) && ranges[m] < registerRows &&
        !ShapedType::isDynamic(ranges[n]) && nr == registerCols) {
      int64_t widest = (registerRows / ranges[m]) * registerCols;
      for (int64_t cols = widest; cols > registerCols; cols -= registerCols)
        if (ranges[n] % cols == 0 && llvm::isPowerOf2_64(cols / registerCols)) {
          nr = cols;
          break;
        }
    }
    SmallVector<int64_t> vectorSizes(numLoops, 1);
    vectorSizes[m] = mr;
    vectorSizes[n] = nr;
    SmallVector<int64_t> registerSizes = vectorSizes;
    registerSizes[k] = 0;
    FailureOr<SmallVector<Operation *>> tiles =
        tileAndFuseInit(rewriter, blockOp, registerSizes, LoopType::ForOp);
    if (failed(tiles))
      return blockOp->emitError("kiln-cpu-tile-and-vectorize: cannot tile "
                                "for registers");
    rewriter.eraseOp(blockOp);

    // K one step at a time, innermost, around the register tile.
    Operation *tileOp = tiles->front();
    SmallVector<int64_t> kSizes(numLoops, 0);
    kSizes[k] = 1;
    scf::SCFTilingOptions kOptions;
    kOptions.setLoopType(LoopType::ForOp);
    kOptions.setTileSizes(getAsIndexOpFoldResult(rewriter.getContext(),
                                                 kSizes));
    rewriter.setInsertionPoint(tileOp);
    FailureOr<scf::SCFTilingResult> kTiles = scf::tileUsingSCF(
        rewriter, cast<TilingInterface>(tileOp), kOptions);
    if (failed(kTiles))
      return tileOp->emitError("kiln-cpu-tile-and-vectorize: cannot tile K");
    rewriter.replaceOp(tileOp, kTiles->replacements);
    for (LoopLikeOpInterface loop : kTiles->loops)
      loop->setAttr(kReductionLoop, rewriter.getUnitAttr());

    // Vectorize the micro-kernel and the fused producer tiles: static when
    // the block divides evenly, else masked to the register tile's size.
    SmallVector<std::pair<Operation *, SmallVector<int64_t>>> toVectorize;
    toVectorize.push_back({kTiles->tiledOps.back(), vectorSizes});
    for (Operation *producer : llvm::drop_begin(*tiles)) {
      auto linalgOp = dyn_cast<linalg::LinalgOp>(producer);
      if (!linalgOp)
        continue;
      // The producer's loops are the output's: the contraction's minus K.
      SmallVector<int64_t> sizes(vectorSizes.begin(), vectorSizes.end() - 1);
      if (linalgOp.getNumLoops() == sizes.size())
        toVectorize.push_back({producer, sizes});
    }
    for (auto &[target, sizes] : toVectorize) {
      auto linalgOp = cast<linalg::LinalgOp>(target);
      SmallVector<int64_t> inputVectorSizes;
      if (linalgOp.hasDynamicShape())
        inputVectorSizes = sizes;
      // Anything the vectorizer rejects stays a (tiled) loop nest: correct,
      // only slower.
      // (The scalable flags must be as many as the sizes, all fixed.)
      SmallVector<bool> scalable(inputVectorSizes.size(), false);
      if (failed(linalg::vectorizeOpPrecondition(target, inputVectorSizes,
                                                 scalable)))
        continue;
      FailureOr<linalg::VectorizationResult> vectorized = linalg::vectorize(
          rewriter, target, inputVectorSizes, scalable,
          /*vectorizeNDExtract=*/false, /*flatten1DDepthwiseConv=*/false,
          /*assumeDynamicDimsMatchVecSizes=*/false,
          /*createNamedContraction=*/true);
      if (succeeded(vectorized))
        rewriter.replaceOp(target, vectorized->replacements);
    }
    return success();
  }
};

/// After bufferization: the vector ops of the micro-kernels down to 1-D
/// loads, stores and FMAs that convert-vector-to-llvm takes.
struct LowerVectorsPass
    : PassWrapper<LowerVectorsPass, OperationPass<func::FuncOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(LowerVectorsPass)
  StringRef getArgument() const override { return "kiln-cpu-lower-vectors"; }
  StringRef getDescription() const override {
    return "Lower vector.contract to outer products/FMAs and n-D transfers "
           "to 1-D ones";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<arith::ArithDialect, memref::MemRefDialect,
                    scf::SCFDialect, vector::VectorDialect>();
  }
  void runOnOperation() override {
    MLIRContext *context = &getContext();
    RewritePatternSet patterns(context);
    vector::populateVectorContractLoweringPatterns(
        patterns, vector::VectorContractLowering::OuterProduct);
    vector::populateVectorOuterProductLoweringPatterns(patterns);
    vector::populateVectorTransferPermutationMapLoweringPatterns(patterns);
    vector::populateVectorTransposeLoweringPatterns(
        patterns, vector::VectorTransposeLowering::EltWise);
    vector::populateVectorMultiReductionLoweringPatterns(
        patterns, vector::VectorMultiReductionLowering::InnerParallel);
    vector::populateVectorShapeCastLoweringPatterns(patterns);
    vector::populateVectorBroadcastLoweringPatterns(patterns);
    vector::populateVectorMaskOpLoweringPatterns(patterns);
    vector::populateVectorToVectorCanonicalizationPatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

/// linalg-to-parallel-loops turns every parallel dimension of an op into one
/// multi-dimensional scf.parallel, which scf-to-openmp collapses into a single
/// OpenMP loop: every element then recomputes its indices with div/rem and
/// LLVM cannot vectorize the innermost dimension. This keeps only enough
/// outer dimensions parallel to feed the threads (at least minParallelTrips
/// iterations, when the trip counts are static) and makes the rest (always
/// the innermost, usually contiguous one) plain scf.for loops.
///
/// A loop not worth a parallel region becomes sequential altogether: one
/// whose parallel dimensions have a single iteration, and an elementwise one
/// (a body without loops or calls) over fewer than min-parallel-elements
/// iterations in all. Each OpenMP region costs a fork and a join of the
/// team, more than such a loop's work (the small CNN at batch 1 had 37).
struct SplitParallelLoopsPass
    : PassWrapper<SplitParallelLoopsPass, OperationPass<func::FuncOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(SplitParallelLoopsPass)
  SplitParallelLoopsPass() = default;
  SplitParallelLoopsPass(const SplitParallelLoopsPass &other)
      : PassWrapper(other) {}
  StringRef getArgument() const override {
    return "kiln-cpu-split-parallel-loops";
  }
  StringRef getDescription() const override {
    return "Keep the outer dimensions of multi-dimensional scf.parallel loops "
           "parallel and make the inner ones scf.for (vectorizable)";
  }
  Option<int64_t> minParallelTrips{
      *this, "min-parallel-trips",
      llvm::cl::desc("Parallel iterations to keep before going sequential"),
      llvm::cl::init(64)};
  Option<int64_t> minParallelElements{
      *this, "min-parallel-elements",
      llvm::cl::desc("Fewest iterations of an elementwise loop nest that "
                     "run in parallel"),
      llvm::cl::init(4096)};

  void runOnOperation() override {
    SmallVector<scf::ParallelOp> loops;
    getOperation().walk([&](scf::ParallelOp loop) {
      if (loop.getNumReductions() == 0)
        loops.push_back(loop);
    });
    getOperation().walk(freeBodyBuffers);
    for (scf::ParallelOp loop : loops)
      split(loop);
  }

  /// The buffer deallocation pipeline leaves the buffers allocated inside a
  /// thread block's body (scf.forall: a fused im2col tile) without a
  /// dealloc. Nothing leaves a parallel loop's body (its terminator yields no
  /// buffers), so free them at its end.
  static void freeBodyBuffers(scf::ParallelOp loop) {
    Block *body = loop.getBody();
    for (auto alloc :
         llvm::make_early_inc_range(body->getOps<memref::AllocOp>())) {
      if (llvm::any_of(alloc->getUsers(), [](Operation *user) {
            return isa<memref::DeallocOp>(user);
          }))
        continue;
      OpBuilder b(body->getTerminator());
      memref::DeallocOp::create(b, alloc.getLoc(), alloc.getResult());
    }
  }

  /// The static trip count of dimension `i`, if it has one.
  static std::optional<int64_t> tripCount(scf::ParallelOp loop, unsigned i) {
    std::optional<int64_t> lb = getConstantIntValue(loop.getLowerBound()[i]);
    std::optional<int64_t> ub = getConstantIntValue(loop.getUpperBound()[i]);
    std::optional<int64_t> step = getConstantIntValue(loop.getStep()[i]);
    if (!lb || !ub || !step || *step <= 0)
      return std::nullopt;
    return *ub > *lb ? llvm::divideCeil(*ub - *lb, *step) : 0;
  }

  /// A thread-block loop of the tiled kernels (its body holds their vector
  /// micro-kernels): every dimension of it stays parallel, whatever its trip
  /// counts (with a run-time M, the row blocks may be a single one while the
  /// column blocks feed the threads).
  static bool isThreadBlockLoop(scf::ParallelOp loop) {
    return loop.getBody()
        ->walk([](Operation *op) {
          return isa<vector::VectorDialect>(op->getDialect())
                     ? WalkResult::interrupt()
                     : WalkResult::advance();
        })
        .wasInterrupted();
  }

  /// Whether the body is straight-line code (an elementwise loop nest).
  static bool isStraightLine(scf::ParallelOp loop) {
    bool straightLine = true;
    loop.getBody()->walk([&](Operation *op) {
      if ((op->getNumRegions() > 0 && op != loop) ||
          isa<CallOpInterface>(op))
        straightLine = false;
    });
    return straightLine;
  }

  /// Whether `loop` is too little work for a parallel region of its own:
  /// its `keep` outer dimensions have at most one iteration, or it is an
  /// elementwise nest of fewer than min-parallel-elements iterations. Unknown
  /// (nullopt) when that depends on run-time trip counts (symbolic dims).
  std::optional<bool> tooSmall(scf::ParallelOp loop, unsigned keep) {
    int64_t kept = 1, all = 1;
    bool keptDynamic = false, allDynamic = false;
    for (unsigned i = 0; i < loop.getNumLoops(); ++i) {
      std::optional<int64_t> trips = tripCount(loop, i);
      if (!trips) {
        allDynamic = true;
        keptDynamic |= i < keep;
        continue;
      }
      all *= *trips;
      if (i < keep)
        kept *= *trips;
    }
    if (kept <= 1 && !keptDynamic)
      return true;
    bool straightLine = isStraightLine(loop);
    if (straightLine && !allDynamic && all < minParallelElements)
      return true;
    // A run-time extent of zero leaves nothing to run either way.
    bool mayBeFew = keptDynamic && kept <= 1;
    bool mayBeSmall =
        straightLine && allDynamic && all < minParallelElements;
    if (!mayBeFew && !mayBeSmall)
      return false;
    return std::nullopt;
  }

  /// The run-time test of tooSmall's condition: true when `loop` (its
  /// `keep` outer dimensions) is worth a parallel region.
  Value worthParallel(OpBuilder &b, scf::ParallelOp loop, unsigned keep) {
    Location loc = loop.getLoc();
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    Value kept = one, all = one;
    for (unsigned i = 0; i < loop.getNumLoops(); ++i) {
      Value extent = arith::SubIOp::create(b, loc, loop.getUpperBound()[i],
                                           loop.getLowerBound()[i]);
      extent = arith::MaxSIOp::create(b, loc, extent, zero);
      Value trips =
          arith::CeilDivSIOp::create(b, loc, extent, loop.getStep()[i]);
      all = arith::MulIOp::create(b, loc, all, trips);
      if (i < keep)
        kept = arith::MulIOp::create(b, loc, kept, trips);
    }
    Value worth = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt,
                                        kept, one);
    if (isStraightLine(loop)) {
      Value enough = arith::CmpIOp::create(
          b, loc, arith::CmpIPredicate::sge, all,
          arith::ConstantIndexOp::create(b, loc, minParallelElements));
      worth = arith::AndIOp::create(b, loc, worth, enough);
    }
    return worth;
  }

  void split(scf::ParallelOp loop) {
    unsigned numLoops = loop.getNumLoops();
    unsigned keep = 0;
    int64_t trips = 1;
    // A loop inside another parallel loop (the im2col copy fused into a
    // convolution's thread block) runs on the thread of that block: all of it
    // sequential, rather than a nested OpenMP region that div/rems every
    // index.
    bool nested = loop->getParentOfType<scf::ParallelOp>() != nullptr;
    // A run-time trip count (a symbolic dim) may be 1: the dimensions after
    // it are kept as if it were, until the static ones are enough.
    while (!nested && keep + 1 < numLoops && trips < minParallelTrips) {
      std::optional<int64_t> dimTrips = tripCount(loop, keep);
      ++keep;
      if (dimTrips)
        trips *= *dimTrips;
    }
    if (!nested && (numLoops == 1 || isThreadBlockLoop(loop)))
      keep = numLoops;
    std::optional<bool> small = false;
    if (!nested)
      small = tooSmall(loop, keep);
    if (!small) {
      // Known at run time only: both versions, picked by the trip counts.
      OpBuilder b(loop);
      Value worth = worthParallel(b, loop, keep);
      auto ifOp = scf::IfOp::create(b, loop.getLoc(), worth,
                                    /*withElseRegion=*/true);
      b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
      auto parallel = cast<scf::ParallelOp>(b.clone(*loop));
      loop->moveBefore(ifOp.elseBlock()->getTerminator());
      if (keep < numLoops)
        splitAt(parallel, keep);
      splitAt(loop, 0);
      return;
    }
    if (*small)
      keep = 0;
    if (keep < numLoops)
      splitAt(loop, keep);
  }

  /// `loop`'s `keep` outer dimensions stay an scf.parallel (none: no
  /// parallel loop at all), the others become nested scf.for loops.
  static void splitAt(scf::ParallelOp loop, unsigned keep) {
    unsigned numLoops = loop.getNumLoops();
    OpBuilder b(loop);
    Location loc = loop.getLoc();
    SmallVector<Value> ivs;
    if (keep > 0) {
      auto outer = scf::ParallelOp::create(
          b, loc, loop.getLowerBound().take_front(keep),
          loop.getUpperBound().take_front(keep),
          loop.getStep().take_front(keep));
      b.setInsertionPointToStart(outer.getBody());
      llvm::append_range(ivs, outer.getInductionVars());
    }
    for (unsigned i = keep; i < numLoops; ++i) {
      auto inner = scf::ForOp::create(b, loc, loop.getLowerBound()[i],
                                      loop.getUpperBound()[i],
                                      loop.getStep()[i]);
      ivs.push_back(inner.getInductionVar());
      b.setInsertionPointToStart(inner.getBody());
    }
    Block *body = loop.getBody();
    Operation *insertBefore = &*b.getInsertionPoint();
    for (auto [oldIv, newIv] : llvm::zip(loop.getInductionVars(), ivs))
      oldIv.replaceAllUsesWith(newIv);
    // Move everything but the terminator (scf.reduce without operands).
    while (body->getOperations().size() > 1)
      body->front().moveBefore(insertBefore);
    loop.erase();
  }
};

} // namespace

std::unique_ptr<Pass> createSplitParallelLoopsPass() {
  return std::make_unique<SplitParallelLoopsPass>();
}

std::unique_ptr<Pass> createTileAndVectorizePass(int64_t mr, int64_t nr,
                                                 bool halfOnly,
                                                 bool skipAmxBf16) {
  return std::make_unique<TileAndVectorizePass>(mr, nr, halfOnly,
                                                skipAmxBf16);
}

std::unique_ptr<Pass> createLowerVectorsPass() {
  return std::make_unique<LowerVectorsPass>();
}

void registerTileAndVectorizePasses() {
  PassRegistration<TileAndVectorizePass>();
  PassRegistration<LowerVectorsPass>();
  PassRegistration<SplitParallelLoopsPass>();
}

} // namespace kiln::cpu
