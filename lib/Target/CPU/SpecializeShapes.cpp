//===- SpecializeShapes.cpp - Static kernels for hinted dynamic dims ------===//
//
// --shape-hints=name:min..opt..max gives symbols a range, as TensorRT's
// optimization profiles do: the module attribute `kiln.shape_hints`
// ({batch = array<i64: min, opt, max>}); the artifact's constraints make the
// runtime reject a run outside min..max. kiln-cpu-specialize-shapes (on
// tensors, before kiln-cpu-split-dynamic and kiln-cpu-tile-and-vectorize)
// uses them for the ops those passes tile, a contraction (matmul,
// batch_matmul, the lowering's transposed generics) or an NCHW convolution
// with run-time loop extents:
//
//   - one dynamic loop whose extent takes at most max-static-cases values
//     (min..max): the static-size strategy, one static copy per value,
//
//       scf.index_switch %extent
//       case v: the op on static shapes with extent v
//       default: the op as it was (not reached within the constraints)
//
//   - otherwise, when every dynamic loop extent has a hinted opt: one
//     static copy for opt (the extents all equal to their opt), the
//     dynamic op for every other size.
//
// An op whose result is returned as it is keeps its dynamic code alone (the
// switch's result would be copied into the output buffer).
//
// A static copy is what a static compile at that size holds (tensor.cast of
// the operands to static types, the init's producer, a fill or a bias
// broadcast, cloned with static sizes so that the tile pass still fuses it
// into the register tiles), so kiln-cpu-tile-and-vectorize picks its thread
// blocks, row pieces and im2col strategy, and kiln-cpu-split-dynamic leaves
// its convolution whole, as for static shapes: at opt the dynamic artifact
// runs the static code. The default keeps a destination of its own (the
// fill and tensor.empty moved in, or copied when CSE shares them with
// another op): one shared across switches was bufferized in place for
// both ops.
//
// A loop extent's range is computed from its tensor.dim, traced back through
// the lowering's size arithmetic (affine.apply, arith, tensor.empty sizes,
// slices, reshapes, destination operands) to @main's arguments, whose dims
// over the symbols are their `kiln.shape` attributes (KilnToLinalg): min and
// max by interval arithmetic, opt by evaluation at the symbols' opt values.
//
//===----------------------------------------------------------------------===//

#include "kiln/Target/CPU/CpuBackend.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;

namespace kiln::cpu {
namespace {

/// The sizes an index value takes: [lo, hi], and its value at opt.
struct SizeRange {
  int64_t lo, opt, hi;
};

std::optional<SizeRange> exact(int64_t v) { return SizeRange{v, v, v}; }

std::optional<SizeRange> add(std::optional<SizeRange> a,
                             std::optional<SizeRange> b) {
  if (!a || !b)
    return std::nullopt;
  int64_t lo, opt, hi;
  if (llvm::AddOverflow(a->lo, b->lo, lo) ||
      llvm::AddOverflow(a->opt, b->opt, opt) ||
      llvm::AddOverflow(a->hi, b->hi, hi))
    return std::nullopt;
  return SizeRange{lo, opt, hi};
}

std::optional<SizeRange> negate(std::optional<SizeRange> a) {
  if (!a || a->lo == INT64_MIN)
    return std::nullopt;
  return SizeRange{-a->hi, -a->opt, -a->lo};
}

std::optional<SizeRange> mul(std::optional<SizeRange> a,
                             std::optional<SizeRange> b) {
  if (!a || !b)
    return std::nullopt;
  int64_t corners[4], opt;
  int64_t pairs[4][2] = {
      {a->lo, b->lo}, {a->lo, b->hi}, {a->hi, b->lo}, {a->hi, b->hi}};
  for (int i = 0; i < 4; ++i)
    if (llvm::MulOverflow(pairs[i][0], pairs[i][1], corners[i]))
      return std::nullopt;
  if (llvm::MulOverflow(a->opt, b->opt, opt))
    return std::nullopt;
  return SizeRange{*std::min_element(corners, corners + 4), opt,
                   *std::max_element(corners, corners + 4)};
}

/// Floor or ceil division by a positive constant (monotonic).
std::optional<SizeRange> divide(std::optional<SizeRange> a,
                                std::optional<SizeRange> b, bool ceil) {
  if (!a || !b || b->lo != b->hi || b->lo <= 0)
    return std::nullopt;
  int64_t c = b->lo;
  auto div = [&](int64_t v) {
    return ceil ? llvm::divideCeilSigned(v, c) : llvm::divideFloorSigned(v, c);
  };
  return SizeRange{div(a->lo), div(a->opt), div(a->hi)};
}

/// The non-negative remainder by a positive constant.
std::optional<SizeRange> remainder(std::optional<SizeRange> a,
                                   std::optional<SizeRange> b) {
  if (!a || !b || b->lo != b->hi || b->lo <= 0)
    return std::nullopt;
  int64_t c = b->lo;
  auto mod = [&](int64_t v) { return v - c * llvm::divideFloorSigned(v, c); };
  // Within one period the remainder grows with the value.
  if (llvm::divideFloorSigned(a->lo, c) == llvm::divideFloorSigned(a->hi, c))
    return SizeRange{mod(a->lo), mod(a->opt), mod(a->hi)};
  return SizeRange{0, mod(a->opt), c - 1};
}

std::optional<SizeRange> minOf(std::optional<SizeRange> a,
                               std::optional<SizeRange> b, bool max) {
  if (!a || !b)
    return std::nullopt;
  auto pick = [&](int64_t x, int64_t y) {
    return max ? std::max(x, y) : std::min(x, y);
  };
  return SizeRange{pick(a->lo, b->lo), pick(a->opt, b->opt),
                   pick(a->hi, b->hi)};
}

std::optional<SizeRange>
evaluate(AffineExpr expr, ArrayRef<std::optional<SizeRange>> dims,
         ArrayRef<std::optional<SizeRange>> symbols) {
  if (auto c = dyn_cast<AffineConstantExpr>(expr))
    return exact(c.getValue());
  if (auto d = dyn_cast<AffineDimExpr>(expr))
    return d.getPosition() < dims.size() ? dims[d.getPosition()]
                                         : std::nullopt;
  if (auto s = dyn_cast<AffineSymbolExpr>(expr))
    return s.getPosition() < symbols.size() ? symbols[s.getPosition()]
                                            : std::nullopt;
  auto binary = cast<AffineBinaryOpExpr>(expr);
  std::optional<SizeRange> lhs = evaluate(binary.getLHS(), dims, symbols);
  std::optional<SizeRange> rhs = evaluate(binary.getRHS(), dims, symbols);
  switch (expr.getKind()) {
  case AffineExprKind::Add:
    return add(lhs, rhs);
  case AffineExprKind::Mul:
    return mul(lhs, rhs);
  case AffineExprKind::FloorDiv:
    return divide(lhs, rhs, /*ceil=*/false);
  case AffineExprKind::CeilDiv:
    return divide(lhs, rhs, /*ceil=*/true);
  case AffineExprKind::Mod:
    return remainder(lhs, rhs);
  default:
    return std::nullopt;
  }
}

/// The hinted ranges of the module's symbols, and of the index values and
/// tensor dims computed from them.
class HintedSizes {
public:
  explicit HintedSizes(ModuleOp module) {
    auto symbols = module->getAttrOfType<ArrayAttr>("kiln.symbols");
    auto hints = module->getAttrOfType<DictionaryAttr>("kiln.shape_hints");
    if (!symbols || !hints)
      return;
    for (Attribute name : symbols) {
      auto range = hints.getAs<DenseI64ArrayAttr>(
          cast<StringAttr>(name).getValue());
      if (range && range.size() == 3)
        symbolRanges.push_back(SizeRange{range[0], range[1], range[2]});
      else
        symbolRanges.push_back(std::nullopt);
    }
  }

  bool empty() const {
    return llvm::none_of(symbolRanges,
                         [](auto r) { return r.has_value(); });
  }

  std::optional<SizeRange> of(OpFoldResult size) {
    if (std::optional<int64_t> c = getConstantIntValue(size))
      return exact(*c);
    return of(cast<Value>(size));
  }

  std::optional<SizeRange> of(Value value) {
    if (std::optional<int64_t> c = getConstantIntValue(value))
      return exact(*c);
    auto known = values.find(value);
    if (known != values.end())
      return known->second;
    // (Marked unknown first: a cycle through loop arguments stops here.)
    values[value] = std::nullopt;
    std::optional<SizeRange> range = compute(value);
    values[value] = range;
    return range;
  }

  /// The range of dim `dim` of tensor `tensor`.
  std::optional<SizeRange> dimOf(Value tensor, int64_t dim) {
    auto type = dyn_cast<RankedTensorType>(tensor.getType());
    if (!type || dim < 0 || dim >= type.getRank())
      return std::nullopt;
    if (!type.isDynamicDim(dim))
      return exact(type.getDimSize(dim));
    if (auto arg = dyn_cast<BlockArgument>(tensor)) {
      auto func = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
      if (!func || arg.getOwner() != &func.getBody().front())
        return std::nullopt;
      auto shape =
          func.getArgAttrOfType<AffineMapAttr>(arg.getArgNumber(),
                                               "kiln.shape");
      if (!shape || dim >= shape.getValue().getNumResults())
        return std::nullopt;
      return evaluate(shape.getValue().getResult(dim), {}, symbolRanges);
    }
    Operation *def = tensor.getDefiningOp();
    if (auto empty = dyn_cast<tensor::EmptyOp>(def))
      return of(empty.getDynamicSize(dim));
    if (auto cast = dyn_cast<tensor::CastOp>(def))
      return dimOf(cast.getSource(), dim);
    if (auto slice = dyn_cast<tensor::ExtractSliceOp>(def)) {
      llvm::SmallBitVector dropped = slice.getDroppedDims();
      SmallVector<OpFoldResult> sizes = slice.getMixedSizes();
      int64_t kept = -1;
      for (size_t i = 0; i < sizes.size(); ++i)
        if (!dropped.test(i) && ++kept == dim)
          return of(sizes[i]);
      return std::nullopt;
    }
    if (auto insert = dyn_cast<tensor::InsertSliceOp>(def))
      return dimOf(insert.getDest(), dim);
    if (auto pad = dyn_cast<tensor::PadOp>(def))
      return add(dimOf(pad.getSource(), dim),
                 add(of(pad.getMixedLowPad()[dim]),
                     of(pad.getMixedHighPad()[dim])));
    if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(def)) {
      std::optional<SizeRange> product = exact(1);
      // A local: the range of `getReassociationIndices()[dim]` would refer
      // into a temporary destroyed before the loop runs (ASan found it).
      SmallVector<ReassociationIndices> groups =
          collapse.getReassociationIndices();
      for (int64_t d : groups[dim])
        product = mul(product, dimOf(collapse.getSrc(), d));
      return product;
    }
    if (auto expand = dyn_cast<tensor::ExpandShapeOp>(def))
      return of(expand.getMixedOutputShape()[dim]);
    if (auto dps = dyn_cast<DestinationStyleOpInterface>(def))
      return dimOf(dps.getTiedOpOperand(cast<OpResult>(tensor))->get(), dim);
    if (auto loop = dyn_cast<scf::ForOp>(def))
      return dimOf(loop.getInitArgs()[cast<OpResult>(tensor).getResultNumber()],
                   dim);
    return std::nullopt;
  }

private:
  std::optional<SizeRange> compute(Value value) {
    Operation *def = value.getDefiningOp();
    if (!def)
      return std::nullopt;
    if (auto dim = dyn_cast<tensor::DimOp>(def)) {
      std::optional<int64_t> index = dim.getConstantIndex();
      return index ? dimOf(dim.getSource(), *index) : std::nullopt;
    }
    auto operandRanges = [&](ValueRange operands) {
      SmallVector<std::optional<SizeRange>> ranges;
      for (Value v : operands)
        ranges.push_back(of(v));
      return ranges;
    };
    auto applyMap = [&](AffineMap map, ValueRange operands, unsigned result) {
      SmallVector<std::optional<SizeRange>> ranges = operandRanges(operands);
      ArrayRef<std::optional<SizeRange>> all(ranges);
      return evaluate(map.getResult(result), all.take_front(map.getNumDims()),
                      all.drop_front(map.getNumDims()));
    };
    if (auto apply = dyn_cast<affine::AffineApplyOp>(def))
      return applyMap(apply.getAffineMap(), apply.getMapOperands(), 0);
    auto minMax = [&](AffineMap map, ValueRange operands, bool max) {
      std::optional<SizeRange> range;
      for (unsigned i = 0; i < map.getNumResults(); ++i) {
        std::optional<SizeRange> r = applyMap(map, operands, i);
        range = i == 0 ? r : minOf(range, r, max);
      }
      return range;
    };
    if (auto min = dyn_cast<affine::AffineMinOp>(def))
      return minMax(min.getAffineMap(), min.getMapOperands(), false);
    if (auto max = dyn_cast<affine::AffineMaxOp>(def))
      return minMax(max.getAffineMap(), max.getMapOperands(), true);
    if (def->getNumOperands() == 1 &&
        isa<arith::IndexCastOp, arith::IndexCastUIOp, arith::ExtSIOp,
            arith::ExtUIOp>(def))
      return of(def->getOperand(0));
    if (def->getNumOperands() != 2)
      return std::nullopt;
    std::optional<SizeRange> lhs = of(def->getOperand(0));
    std::optional<SizeRange> rhs = of(def->getOperand(1));
    if (isa<arith::AddIOp>(def))
      return add(lhs, rhs);
    if (isa<arith::SubIOp>(def))
      return add(lhs, negate(rhs));
    if (isa<arith::MulIOp>(def))
      return mul(lhs, rhs);
    if (isa<arith::FloorDivSIOp>(def) ||
        (isa<arith::DivSIOp, arith::DivUIOp>(def) && lhs && lhs->lo >= 0))
      return divide(lhs, rhs, /*ceil=*/false);
    if (isa<arith::CeilDivSIOp>(def) ||
        (isa<arith::CeilDivUIOp>(def) && lhs && lhs->lo >= 0))
      return divide(lhs, rhs, /*ceil=*/true);
    if (isa<arith::RemSIOp, arith::RemUIOp>(def) && lhs && lhs->lo >= 0)
      return remainder(lhs, rhs);
    if (isa<arith::MinSIOp>(def))
      return minOf(lhs, rhs, /*max=*/false);
    if (isa<arith::MaxSIOp>(def))
      return minOf(lhs, rhs, /*max=*/true);
    return std::nullopt;
  }

  SmallVector<std::optional<SizeRange>> symbolRanges;
  DenseMap<Value, std::optional<SizeRange>> values;
};

/// The ops kiln-cpu-split-dynamic and kiln-cpu-tile-and-vectorize tile.
bool isTiledOp(linalg::LinalgOp op) {
  if (!op.hasPureTensorSemantics() || op.getNumDpsInits() != 1 ||
      op->getNumResults() != 1)
    return false;
  if (isa<linalg::Conv2DNchwFchwOp>(op.getOperation()))
    return true;
  return op.getNumLoops() >= 3 && linalg::isaContractionOpInterface(op);
}

/// The all-parallel op that writes `op`'s init without reading it (a zero
/// fill, a bias broadcast): cloned into each static copy, so that the tile
/// pass fuses it as it does for static shapes. (It may have other users:
/// CSE merges the zero fills of two matmuls of the same shape, e.g. the K
/// and V projections; a cast of the shared fill left it a kernel of its own
/// in front of the static copy.)
linalg::LinalgOp initProducer(linalg::LinalgOp op) {
  auto producer =
      op.getDpsInitOperand(0)->get().getDefiningOp<linalg::LinalgOp>();
  if (!producer || !producer.hasPureTensorSemantics() ||
      producer.getNumDpsInits() != 1 ||
      producer->getNumResults() != 1 ||
      producer.getNumLoops() != producer.getNumParallelLoops() ||
      !producer.getMatchingIndexingMap(producer.getDpsInitOperand(0))
           .isIdentity() ||
      producer.payloadUsesValueFromOperand(producer.getDpsInitOperand(0)))
    return nullptr;
  return producer;
}

/// `operand`'s type with its dynamic dims set from the loop sizes `loops`
/// (a static size per loop, or dynamic); null when a dynamic dim is not
/// one loop's extent.
RankedTensorType staticTypeOf(linalg::LinalgOp op, OpOperand &operand,
                              ArrayRef<int64_t> loops) {
  auto type = dyn_cast<RankedTensorType>(operand.get().getType());
  if (!type)
    return nullptr;
  AffineMap map = op.getMatchingIndexingMap(&operand);
  SmallVector<int64_t> shape(type.getShape());
  for (int64_t d = 0; d < type.getRank(); ++d) {
    if (!type.isDynamicDim(d))
      continue;
    auto loop = dyn_cast<AffineDimExpr>(map.getResult(d));
    if (!loop || ShapedType::isDynamic(loops[loop.getPosition()]))
      return nullptr;
    shape[d] = loops[loop.getPosition()];
  }
  return type.clone(shape);
}

struct SpecializeShapesPass
    : PassWrapper<SpecializeShapesPass, OperationPass<func::FuncOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(SpecializeShapesPass)
  SpecializeShapesPass() = default;
  SpecializeShapesPass(const SpecializeShapesPass &other)
      : PassWrapper(other) {}
  StringRef getArgument() const override {
    return "kiln-cpu-specialize-shapes";
  }
  StringRef getDescription() const override {
    return "Static copies of contractions and convolutions with run-time "
           "extents for the sizes --shape-hints names (kiln.shape_hints): "
           "opt, or every size of a small min..max (tensors, before "
           "kiln-cpu-split-dynamic and kiln-cpu-tile-and-vectorize)";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<arith::ArithDialect, linalg::LinalgDialect,
                    scf::SCFDialect, tensor::TensorDialect>();
  }

  Option<int64_t> maxStaticCases{
      *this, "max-static-cases",
      llvm::cl::desc("An op with one dynamic loop whose extent takes at most "
                     "this many sizes (min..max) gets a static copy for each"),
      llvm::cl::init(4)};

  void runOnOperation() override {
    auto module = getOperation()->getParentOfType<ModuleOp>();
    if (!module)
      return;
    HintedSizes hints(module);
    if (hints.empty())
      return;
    SmallVector<linalg::LinalgOp> ops;
    // An op whose result is a model output is left alone: the switch's
    // result would be copied into the output buffer, which the op writes
    // in place (measured: the transformer block's last matmul).
    getOperation().walk([&](linalg::LinalgOp op) {
      if (isTiledOp(op) &&
          ShapedType::isDynamicShape(op.getStaticLoopRanges()) &&
          llvm::none_of(op->getUsers(), [](Operation *user) {
            return isa<func::ReturnOp>(user);
          }))
        ops.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (linalg::LinalgOp op : ops)
      (void)specialize(rewriter, op, hints);
  }

  /// Static copies of `op` for the hinted sizes of its dynamic loops.
  LogicalResult specialize(RewriterBase &rewriter, linalg::LinalgOp op,
                           HintedSizes &hints) {
    SmallVector<int64_t> loops = op.getStaticLoopRanges();
    linalg::LinalgOp producer = initProducer(op);
    // Each dynamic loop: an operand dim it is the extent of (an input's
    // first: the producer of the init moves into the switch), and its
    // range.
    struct DynamicLoop {
      unsigned loop;
      Value tensor;
      int64_t dim;
      SizeRange range;
    };
    SmallVector<DynamicLoop> dynamic;
    for (unsigned i = 0; i < loops.size(); ++i) {
      if (!ShapedType::isDynamic(loops[i]))
        continue;
      std::optional<DynamicLoop> found;
      for (OpOperand &operand : op->getOpOperands()) {
        AffineMap map = op.getMatchingIndexingMap(&operand);
        for (unsigned r = 0; r < map.getNumResults() && !found; ++r) {
          auto dim = dyn_cast<AffineDimExpr>(map.getResult(r));
          if (!dim || dim.getPosition() != i)
            continue;
          Value tensor = operand.get();
          // (The init's producer may move: its own init has the same dims.)
          if (producer && op.isDpsInit(&operand))
            tensor = producer.getDpsInitOperand(0)->get();
          if (std::optional<SizeRange> range = hints.dimOf(tensor, r))
            found = DynamicLoop{i, tensor, r, *range};
        }
        if (found)
          break;
      }
      if (!found)
        return failure();
      dynamic.push_back(*found);
    }

    // The sizes to copy the op for: every size of a small range, or opt.
    SmallVector<SmallVector<int64_t>> cases;
    const DynamicLoop &first = dynamic.front();
    if (dynamic.size() == 1 && first.range.lo >= 1 &&
        first.range.hi - first.range.lo + 1 <= maxStaticCases) {
      for (int64_t v = first.range.lo; v <= first.range.hi; ++v) {
        cases.push_back(loops);
        cases.back()[first.loop] = v;
      }
    } else {
      cases.push_back(loops);
      for (const DynamicLoop &d : dynamic) {
        if (d.range.opt < 1)
          return failure();
        cases.back()[d.loop] = d.range.opt;
      }
    }
    // Every copy must have static operands.
    for (OpOperand &operand : op->getOpOperands())
      if (!staticTypeOf(op, operand, cases.front()))
        return failure();
    if (producer)
      for (OpOperand *input : producer.getDpsInputOperands())
        if (isa<RankedTensorType>(input->get().getType()) &&
            !producerInputType(op, producer, *input, cases.front()))
          return failure();

    Location loc = op.getLoc();
    rewriter.setInsertionPoint(op);
    SmallVector<Value> extents;
    for (const DynamicLoop &d : dynamic)
      extents.push_back(tensor::DimOp::create(rewriter, loc, d.tensor, d.dim));
    // The switch's selector: the extent (one dynamic loop), or 1 when all
    // extents are at opt.
    Value selector;
    SmallVector<int64_t> caseValues;
    if (dynamic.size() == 1) {
      selector = extents.front();
      for (const SmallVector<int64_t> &c : cases)
        caseValues.push_back(c[dynamic.front().loop]);
    } else {
      Value all;
      for (auto [d, extent] : llvm::zip(dynamic, extents)) {
        Value equal = arith::CmpIOp::create(
            rewriter, loc, arith::CmpIPredicate::eq, extent,
            arith::ConstantIndexOp::create(rewriter, loc, d.range.opt));
        all = all ? arith::AndIOp::create(rewriter, loc, all, equal).getResult()
                  : equal;
      }
      Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
      Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
      selector = arith::SelectOp::create(rewriter, loc, all, one, zero);
      caseValues.push_back(1);
    }
    Type resultType = op->getResult(0).getType();
    auto switchOp = scf::IndexSwitchOp::create(
        rewriter, loc, TypeRange{resultType}, selector, caseValues,
        caseValues.size());
    {
      OpBuilder::InsertionGuard guard(rewriter);
      for (auto [sizes, region] :
           llvm::zip(cases, switchOp.getCaseRegions())) {
        rewriter.createBlock(&region);
        Value result = buildStaticCopy(rewriter, op, producer, sizes);
        scf::YieldOp::create(
            rewriter, loc,
            tensor::CastOp::create(rewriter, loc, resultType, result)
                .getResult());
      }
      rewriter.createBlock(&switchOp.getDefaultRegion());
      auto yield = scf::YieldOp::create(rewriter, loc, op->getResult(0));
      // The dynamic init and its producer go with the op: moved when nothing
      // else uses them (a static copy computes and allocates nothing for
      // them), else copied. A destination shared with an op outside the
      // switch (the K and V projections' merged fill and tensor.empty)
      // was bufferized in place for both: the second matmul overwrote the
      // first one's result.
      rewriter.setInsertionPoint(yield);
      // (Right before its user, which is in the default branch by then.)
      auto privateEmpty = [&](OpOperand *use) {
        auto empty = use->get().getDefiningOp<tensor::EmptyOp>();
        if (!empty)
          return;
        if (empty->hasOneUse()) {
          rewriter.moveOpBefore(empty, use->getOwner());
          return;
        }
        OpBuilder::InsertionGuard guard(rewriter);
        rewriter.setInsertionPoint(use->getOwner());
        Operation *copy = rewriter.clone(*empty);
        rewriter.modifyOpInPlace(use->getOwner(),
                                 [&] { use->set(copy->getResult(0)); });
      };
      if (producer && producer->hasOneUse()) {
        rewriter.moveOpBefore(producer.getOperation(), yield);
        privateEmpty(producer.getDpsInitOperand(0));
        rewriter.moveOpBefore(op.getOperation(), yield);
      } else if (producer) {
        Operation *copy = rewriter.clone(*producer.getOperation());
        OpOperand *init = op.getDpsInitOperand(0);
        rewriter.modifyOpInPlace(op, [&] { init->set(copy->getResult(0)); });
        privateEmpty(&cast<linalg::LinalgOp>(copy).getDpsInitsMutable()[0]);
        rewriter.moveOpBefore(op.getOperation(), yield);
      } else {
        rewriter.moveOpBefore(op.getOperation(), yield);
        privateEmpty(op.getDpsInitOperand(0));
      }
      rewriter.replaceAllUsesExcept(op->getResult(0), switchOp.getResult(0),
                                    yield);
    }
    return success();
  }

  /// The static type of an input of the init's producer: its loops are
  /// the dims of `op`'s init.
  static RankedTensorType producerInputType(linalg::LinalgOp op,
                                            linalg::LinalgOp producer,
                                            OpOperand &input,
                                            ArrayRef<int64_t> loops) {
    RankedTensorType init = staticTypeOf(op, *op.getDpsInitOperand(0), loops);
    if (!init)
      return nullptr;
    return staticTypeOf(producer, input, init.getShape());
  }

  /// `op` (and its init's producer) on static shapes for the loop sizes
  /// `loops`; returns the copy's result.
  static Value buildStaticCopy(RewriterBase &rewriter, linalg::LinalgOp op,
                               linalg::LinalgOp producer,
                               ArrayRef<int64_t> loops) {
    Location loc = op.getLoc();
    auto castTo = [&](Value value, RankedTensorType type) -> Value {
      if (value.getType() == type)
        return value;
      return tensor::CastOp::create(rewriter, loc, type, value);
    };
    RankedTensorType initType =
        staticTypeOf(op, *op.getDpsInitOperand(0), loops);
    Value init;
    if (producer) {
      SmallVector<Value> operands;
      for (OpOperand *input : producer.getDpsInputOperands()) {
        auto type = dyn_cast<RankedTensorType>(input->get().getType());
        operands.push_back(
            type ? castTo(input->get(),
                          producerInputType(op, producer, *input, loops))
                 : input->get());
      }
      Value producerInit = producer.getDpsInitOperand(0)->get();
      if (producerInit.getDefiningOp<tensor::EmptyOp>())
        operands.push_back(tensor::EmptyOp::create(
            rewriter, loc, initType.getShape(), initType.getElementType()));
      else
        operands.push_back(castTo(producerInit, initType));
      init = mlir::clone(rewriter, producer.getOperation(),
                         TypeRange{Type(initType)}, operands)
                 ->getResult(0);
    } else {
      init = castTo(op.getDpsInitOperand(0)->get(), initType);
    }
    SmallVector<Value> operands;
    for (OpOperand *input : op.getDpsInputOperands())
      operands.push_back(
          castTo(input->get(), staticTypeOf(op, *input, loops)));
    operands.push_back(init);
    return mlir::clone(rewriter, op.getOperation(), TypeRange{Type(initType)},
                       operands)
        ->getResult(0);
  }
};

} // namespace

std::unique_ptr<Pass> createSpecializeShapesPass() {
  return std::make_unique<SpecializeShapesPass>();
}

} // namespace kiln::cpu
