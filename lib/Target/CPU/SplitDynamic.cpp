//===- SplitDynamic.cpp - Static-shape kernels for run-time sizes ---------===//
//
// With symbolic dims (a model exported with a dynamic batch), the ops the
// codegen kernels take have a run-time extent somewhere, and
// kiln-cpu-tile-and-vectorize's im2col convolution wants static shapes.
//
// kiln-cpu-split-dynamic (on tensors, before kiln-cpu-tile-and-vectorize):
// a float32 linalg.conv_2d_nchw_fchw whose only dynamic dim is the batch,
// and whose im2col the tile pass would materialize whole (its thread blocks
// are not whole output rows: ResNet's 56x56, 28x28, 112x112 layers),
// becomes an scf.for over the batch whose body is the same convolution on a
// static [1, C, H, W] image (extract_slice of the input, insert_slice into
// the result); its bias or zero initialization is tiled into the loop with
// it, so the static kernel (im2col, the fused bias, the zero padding written
// in place by the producer of the input) applies to each image, and one
// image's im2col at a time bounds its buffer whatever the batch. A
// convolution whose im2col is fused into the thread blocks keeps its
// run-time batch: the tile pass makes it one dimension of the blocks, one
// parallel region for the whole batch as with a static batch (a loop of
// per-image regions measured 1.19x the static time on the small CNN at
// batch 8).
//
// The contractions (matmul, batch_matmul, the im2col GEMM) are the tile
// pass's own: its thread blocks take run-time extents, and a block with a
// run-time row count is cut into static pieces there (splitIntoStaticPieces
// on the block), so that a dynamic M keeps all the thread blocks of one
// parallel region and M = 1 is the static 1-row code.
//
//===----------------------------------------------------------------------===//

#include "SplitDynamic.h"
#include "kiln/Target/CPU/CpuBackend.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Interfaces/TilingInterface.h"
#include "mlir/Pass/Pass.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;

namespace kiln::cpu {

/// Erases the tensor.dim ops of `producer`'s result left unused once the op
/// it fed is split: the iteration domain's ones would keep the producer.
static void eraseUnusedDims(RewriterBase &rewriter, Operation *producer) {
  if (!producer)
    return;
  for (Operation *user :
       llvm::make_early_inc_range(producer->getResult(0).getUsers()))
    if (isa<tensor::DimOp>(user) && user->use_empty())
      rewriter.eraseOp(user);
}

/// The all-parallel linalg op that produces `op`'s init for `op` alone,
/// writing every element without reading it (a fill, a broadcast): it can
/// be recomputed per piece.
static linalg::LinalgOp tileableInitProducer(linalg::LinalgOp op) {
  Value init = op.getDpsInitOperand(0)->get();
  auto producer = init.getDefiningOp<linalg::LinalgOp>();
  if (!producer || !producer.hasPureTensorSemantics() ||
      !producer->hasOneUse() || producer.getNumDpsInits() != 1 ||
      producer->getNumResults() != 1 ||
      producer.getNumLoops() != producer.getNumParallelLoops() ||
      !producer.getMatchingIndexingMap(producer.getDpsInitOperand(0))
           .isIdentity() ||
      producer.payloadUsesValueFromOperand(producer.getDpsInitOperand(0)) ||
      !isa<TilingInterface>(producer.getOperation()))
    return nullptr;
  return producer;
}

/// Erases `value`'s defining extract_slice once nothing reads it.
static void eraseDeadSlice(RewriterBase &rewriter, Value value) {
  auto slice = value.getDefiningOp<tensor::ExtractSliceOp>();
  if (slice && slice->use_empty())
    rewriter.eraseOp(slice);
}

FailureOr<SmallVector<linalg::LinalgOp>>
splitIntoStaticPieces(RewriterBase &rewriter, linalg::LinalgOp op,
                      unsigned dim, int64_t chunk,
                      ArrayRef<int64_t> knownExtents) {
  if (chunk < 1 || !op.hasPureTensorSemantics() ||
      op.getNumDpsInits() != 1 || op->getNumResults() != 1 ||
      dim >= op.getNumLoops() ||
      op.getIteratorTypesArray()[dim] != utils::IteratorType::parallel ||
      !op.getMatchingIndexingMap(op.getDpsInitOperand(0)).isFunctionOfDim(dim))
    return failure();
  auto tiling = dyn_cast<TilingInterface>(op.getOperation());
  if (!tiling)
    return failure();
  MLIRContext *context = rewriter.getContext();
  Location loc = op.getLoc();
  // (Before the iteration domain, whose tensor.dim ops use the init.)
  linalg::LinalgOp producer = tileableInitProducer(op);
  Value carried = producer ? producer.getDpsInitOperand(0)->get()
                           : op.getDpsInitOperand(0)->get();
  rewriter.setInsertionPoint(op);
  SmallVector<Range> domain = tiling.getIterationDomain(rewriter);
  // The extent from the carried result (a tensor.empty's size folds in).
  if (!getConstantIntValue(domain[dim].size)) {
    AffineMap outMap = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
    std::optional<unsigned> position = outMap.getResultPosition(
        getAffineDimExpr(dim, context));
    if (position)
      domain[dim].size =
          tensor::getMixedSize(rewriter, loc, carried, *position);
  }
  Type resultType = op->getResult(0).getType();
  if (carried.getType() != resultType)
    return failure();

  SmallVector<linalg::LinalgOp> pieces;
  // One piece: `op` on [offset, offset + extent) of `dim`, into `acc`.
  auto buildPiece = [&](Value acc, OpFoldResult offset,
                        int64_t extent) -> FailureOr<Value> {
    SmallVector<OpFoldResult> offsets, sizes;
    for (const Range &range : domain) {
      offsets.push_back(range.offset);
      sizes.push_back(range.size);
    }
    offsets[dim] = affine::makeComposedFoldedAffineApply(
        rewriter, loc,
        getAffineSymbolExpr(0, context) + getAffineSymbolExpr(1, context),
        {domain[dim].offset, offset});
    sizes[dim] = rewriter.getIndexAttr(extent);
    // The init first (the tiled op goes after it): a slice of the carried
    // result, through the tiled init producer.
    SmallVector<OpFoldResult> resultOffsets, resultSizes;
    if (failed(tiling.getResultTilePosition(rewriter, 0, offsets, sizes,
                                            resultOffsets, resultSizes)))
      return failure();
    SmallVector<OpFoldResult> strides(resultSizes.size(),
                                      rewriter.getIndexAttr(1));
    Value slice = tensor::ExtractSliceOp::create(rewriter, loc, acc,
                                                 resultOffsets, resultSizes,
                                                 strides);
    Value newInit = slice;
    if (producer) {
      FailureOr<TilingResult> fill =
          cast<TilingInterface>(producer.getOperation())
              .getTiledImplementation(rewriter, resultOffsets, resultSizes);
      if (failed(fill) || fill->tiledOps.size() != 1)
        return failure();
      auto fillOp = cast<linalg::LinalgOp>(fill->tiledOps.front());
      OpOperand *fillInit = fillOp.getDpsInitOperand(0);
      Value old = fillInit->get();
      if (old.getType() != slice.getType())
        return failure();
      rewriter.modifyOpInPlace(fillOp, [&] { fillInit->set(slice); });
      eraseDeadSlice(rewriter, old);
      newInit = fillOp->getResult(0);
    }
    FailureOr<TilingResult> tiled =
        tiling.getTiledImplementation(rewriter, offsets, sizes);
    if (failed(tiled) || tiled->tiledOps.size() != 1)
      return failure();
    auto piece = dyn_cast<linalg::LinalgOp>(tiled->tiledOps.front());
    if (!piece)
      return failure();
    OpOperand *pieceInit = piece.getDpsInitOperand(0);
    if (pieceInit->get().getType() != newInit.getType())
      return failure();
    Value old = pieceInit->get();
    rewriter.modifyOpInPlace(piece, [&] { pieceInit->set(newInit); });
    eraseDeadSlice(rewriter, old);
    pieces.push_back(piece);
    return tensor::InsertSliceOp::create(rewriter, loc, piece->getResult(0),
                                         acc, resultOffsets, resultSizes,
                                         strides)
        .getResult();
  };

  OpFoldResult size = domain[dim].size;
  // An extent known to be one of a few: one whole piece per value.
  if (!knownExtents.empty()) {
    Value sizeValue = getValueOrCreateConstantIndexOp(rewriter, loc, size);
    auto switchOp = scf::IndexSwitchOp::create(
        rewriter, loc, TypeRange{resultType}, sizeValue, knownExtents,
        knownExtents.size());
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.createBlock(&switchOp.getDefaultRegion());
    // (Not reached; the result as it was.)
    scf::YieldOp::create(rewriter, loc, carried);
    for (auto [extent, region] :
         llvm::zip(knownExtents, switchOp.getCaseRegions())) {
      rewriter.createBlock(&region);
      FailureOr<Value> result =
          buildPiece(carried, rewriter.getIndexAttr(0), extent);
      if (failed(result))
        return failure();
      scf::YieldOp::create(rewriter, loc, *result);
    }
    rewriter.setInsertionPointAfter(switchOp);
    rewriter.replaceOp(op, switchOp.getResult(0));
    eraseUnusedDims(rewriter, producer);
    return pieces;
  }

  // The whole chunks: an scf.for (a single piece, or none, when the extent
  // is known).
  std::optional<int64_t> staticSize = getConstantIntValue(size);
  AffineExpr s0 = getAffineSymbolExpr(0, context);
  OpFoldResult full = affine::makeComposedFoldedAffineApply(
      rewriter, loc, s0.floorDiv(chunk) * chunk, {size});
  Value acc = carried;
  std::optional<int64_t> staticFull = getConstantIntValue(full);
  if (staticFull && *staticFull == chunk) {
    FailureOr<Value> result =
        buildPiece(acc, rewriter.getIndexAttr(0), chunk);
    if (failed(result))
      return failure();
    acc = *result;
  } else if (!staticFull || *staticFull > 0) {
    Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
    Value step = arith::ConstantIndexOp::create(rewriter, loc, chunk);
    Value upper = getValueOrCreateConstantIndexOp(rewriter, loc, full);
    auto loop = scf::ForOp::create(
        rewriter, loc, zero, upper, step, ValueRange{acc},
        [](OpBuilder &b, Location loc, Value, ValueRange args) {
          scf::YieldOp::create(b, loc, args);
        });
    Operation *yield = loop.getBody()->getTerminator();
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPoint(yield);
    FailureOr<Value> result = buildPiece(loop.getRegionIterArgs()[0],
                                         loop.getInductionVar(), chunk);
    if (failed(result))
      return failure();
    rewriter.modifyOpInPlace(yield, [&] { yield->setOperand(0, *result); });
    acc = loop.getResult(0);
  }

  // The remainder r = size mod chunk, one static piece of exactly r: an
  // scf.index_switch over r = 1 .. chunk - 1 (0: nothing left).
  if (chunk > 1 && staticSize) {
    if (int64_t r = *staticSize % chunk) {
      FailureOr<Value> result =
          buildPiece(acc, rewriter.getIndexAttr(*staticSize - r), r);
      if (failed(result))
        return failure();
      acc = *result;
    }
  } else if (chunk > 1) {
    // A run-time remainder r in 0 .. chunk - 1: static pieces of the powers
    // of two below chunk (4, 2, 1 of 8), each under an scf.if on its bit
    // of r, one after the other. (One piece of exactly r rows, an
    // scf.index_switch over 1 .. chunk - 1, read B once but made chunk - 1
    // copies of the kernel: with every matmul of a decoder's layer so, the
    // dynamic 30-layer decoder compiled to 8 times the static code.) M = 1,
    // a decode step, is the 1-row piece alone, as before.
    Value sizeValue = getValueOrCreateConstantIndexOp(rewriter, loc, size);
    Value fullValue = getValueOrCreateConstantIndexOp(rewriter, loc, full);
    Value remainder = arith::SubIOp::create(rewriter, loc, sizeValue,
                                            fullValue);
    Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
    Value offset = fullValue;
    int64_t piece = int64_t(1) << llvm::Log2_64(uint64_t(chunk - 1));
    for (; piece >= 1; piece /= 2) {
      Value bit = arith::ConstantIndexOp::create(rewriter, loc, piece);
      Value masked = arith::AndIOp::create(rewriter, loc, remainder, bit);
      Value taken = arith::CmpIOp::create(
          rewriter, loc, arith::CmpIPredicate::ne, masked, zero);
      auto ifOp = scf::IfOp::create(rewriter, loc, TypeRange{resultType},
                                    taken, /*withElseRegion=*/true);
      {
        OpBuilder::InsertionGuard guard(rewriter);
        rewriter.setInsertionPointToStart(&ifOp.getElseRegion().front());
        scf::YieldOp::create(rewriter, loc, acc);
        rewriter.setInsertionPointToStart(&ifOp.getThenRegion().front());
        FailureOr<Value> result = buildPiece(acc, offset, piece);
        if (failed(result))
          return failure();
        scf::YieldOp::create(rewriter, loc, *result);
      }
      acc = ifOp.getResult(0);
      offset = arith::AddIOp::create(rewriter, loc, offset, masked);
    }
  }
  rewriter.replaceOp(op, acc);
  eraseUnusedDims(rewriter, producer);
  return pieces;
}

namespace {

/// A float32 NCHW convolution whose batch is its only run-time extent.
bool isDynamicBatchConv(linalg::Conv2DNchwFchwOp conv) {
  if (!conv.hasPureTensorSemantics())
    return false;
  for (Value v : conv->getOperands()) {
    auto type = dyn_cast<RankedTensorType>(v.getType());
    if (!type || type.getRank() != 4 || !type.getElementType().isF32())
      return false;
  }
  auto filter = cast<RankedTensorType>(conv.getInputs()[1].getType());
  auto input = cast<RankedTensorType>(conv.getInputs()[0].getType());
  auto output = cast<RankedTensorType>(conv.getOutputs()[0].getType());
  auto onlyBatch = [](RankedTensorType type) {
    return type.isDynamicDim(0) &&
           !ShapedType::isDynamicShape(type.getShape().drop_front());
  };
  return filter.hasStaticShape() && onlyBatch(input) && onlyBatch(output);
}

struct SplitDynamicPass
    : PassWrapper<SplitDynamicPass, OperationPass<func::FuncOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(SplitDynamicPass)
  StringRef getArgument() const override { return "kiln-cpu-split-dynamic"; }
  StringRef getDescription() const override {
    return "Run a float32 NCHW convolution with a run-time batch as a loop of "
           "static one-image convolutions (tensors, before "
           "kiln-cpu-tile-and-vectorize)";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<affine::AffineDialect, arith::ArithDialect,
                    linalg::LinalgDialect, scf::SCFDialect,
                    tensor::TensorDialect>();
  }

  SplitDynamicPass() = default;
  SplitDynamicPass(const SplitDynamicPass &other) : PassWrapper(other) {}
  Option<int64_t> blockCols{
      *this, "block-n",
      llvm::cl::desc("kiln-cpu-tile-and-vectorize's block-n: convolutions "
                     "whose im2col it fuses into its thread blocks keep their "
                     "run-time batch (one dimension of the blocks)"),
      llvm::cl::init(256)};

  void runOnOperation() override {
    SmallVector<linalg::Conv2DNchwFchwOp> convs;
    getOperation().walk([&](linalg::Conv2DNchwFchwOp conv) {
      auto out = cast<RankedTensorType>(conv.getOutputs()[0].getType());
      if (isDynamicBatchConv(conv) &&
          !im2colFusesIntoBlocks(out.getDimSize(2), out.getDimSize(3),
                                 blockCols))
        convs.push_back(conv);
    });
    IRRewriter rewriter(&getContext());
    for (linalg::Conv2DNchwFchwOp conv : convs) {
      Operation *producer = conv.getOutputs()[0].getDefiningOp();
      if (failed(splitIntoStaticPieces(
              rewriter, cast<linalg::LinalgOp>(conv.getOperation()),
              /*dim=*/0, /*chunk=*/1))) {
        conv.emitError("kiln-cpu-split-dynamic: cannot split the batch");
        return signalPassFailure();
      }
      if (producer && isa<linalg::LinalgOp>(producer) && producer->use_empty())
        rewriter.eraseOp(producer);
    }
  }
};

} // namespace

std::unique_ptr<Pass> createSplitDynamicPass() {
  return std::make_unique<SplitDynamicPass>();
}

} // namespace kiln::cpu
