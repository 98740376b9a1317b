//===- NN.cpp - Lowering of the NN kiln ops to linalg ---------------------===//
//
// MatMul and Gemm become linalg.matmul / linalg.batch_matmul (batch dims
// broadcast and collapsed into one); convolutions the named linalg conv ops
// when they fit (group 1), else a grouped linalg.generic; pools, the
// Softmax family and the normalizations linalg.generic reductions followed
// by an elementwise generic. float16/bfloat16 inputs are extended to f32
// inside the ops and the f32 result truncated once at the end, as ONNX
// Runtime accumulates them.
//
//===----------------------------------------------------------------------===//

#include "Common.h"

#include "kiln/Conversion/KilnToLinalg.h"
#include "kiln/Dialect/KilnOps.h"
#include "kiln/Dialect/NNShapes.h"

#include "mlir/Dialect/Utils/ReshapeOpsUtils.h"
#include "mlir/IR/AffineMap.h"

#include <cmath>
#include <numeric>

using namespace mlir;
using namespace kiln::lowering;

namespace {

using IteratorType = utils::IteratorType;

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

/// The type the arithmetic of an op on `elementType` is done in: f32 for the
/// half-precision floats, the type itself otherwise.
Type computeType(Type elementType) {
  if (isa<FloatType>(elementType) && elementType.getIntOrFloatBitWidth() < 32)
    return Float32Type::get(elementType.getContext());
  return elementType;
}

/// `value` (a scalar) extended to the compute type `type` when narrower.
Value extendScalar(OpBuilder &b, Location loc, Value value, Type type) {
  if (value.getType() == type)
    return value;
  return arith::ExtFOp::create(b, loc, type, value);
}

/// `value` (a scalar of a compute type) truncated to `type` when wider.
Value truncateScalar(OpBuilder &b, Location loc, Value value, Type type) {
  if (value.getType() == type)
    return value;
  return arith::TruncFOp::create(b, loc, type, value);
}

RankedTensorType tensorType(Value value) {
  return cast<RankedTensorType>(value.getType());
}

bool isNone(Value value) { return !value || isa<NoneType>(value.getType()); }

using BodyFn =
    llvm::function_ref<Value(OpBuilder &, Location, ValueRange args)>;

/// A linalg.generic with one result: `maps` holds the inputs' maps then the
/// output's; `body` gets the input scalars and the output (accumulator)
/// scalar and returns the value to yield.
Value buildGeneric(OpBuilder &b, Location loc, ValueRange inputs, Value init,
                   ArrayRef<AffineMap> maps, ArrayRef<IteratorType> iterators,
                   BodyFn body) {
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{init.getType()}, inputs, ValueRange{init}, maps,
      iterators, [&](OpBuilder &nested, Location nestedLoc, ValueRange args) {
        linalg::YieldOp::create(nested, nestedLoc,
                                body(nested, nestedLoc, args));
      });
  return generic.getResult(0);
}

/// The map of `rank` loop dims selecting the dims `keep` marks.
AffineMap selectMap(unsigned rank, ArrayRef<bool> keep, MLIRContext *context) {
  SmallVector<AffineExpr> exprs;
  for (unsigned i = 0; i < rank; ++i)
    if (keep[i])
      exprs.push_back(getAffineDimExpr(i, context));
  return AffineMap::get(rank, 0, exprs, context);
}

/// `value` reshaped to the static `shape` with the same number of elements,
/// by a collapse_shape, an expand_shape, or (when the two differ in more than
/// grouping) a collapse to 1-D followed by an expand.
Value reshapeTo(OpBuilder &b, Location loc, Value value,
                ArrayRef<int64_t> shape) {
  auto source = tensorType(value);
  if (source.getShape() == shape)
    return value;
  auto target = source.clone(shape);
  if (source.getRank() > target.getRank()) {
    if (auto reassociation = getReassociationIndicesForReshape(source, target))
      return tensor::CollapseShapeOp::create(b, loc, target, value,
                                             *reassociation);
  } else if (source.getRank() < target.getRank()) {
    if (auto reassociation = getReassociationIndicesForReshape(target, source))
      return tensor::ExpandShapeOp::create(b, loc, target, value,
                                           *reassociation);
  }
  // General case: through 1-D (rank 0 is 1-D with no reassociation).
  auto allDims = [](int64_t rank) {
    SmallVector<ReassociationIndices> groups;
    if (rank) {
      groups.emplace_back();
      for (int64_t i = 0; i < rank; ++i)
        groups[0].push_back(i);
    }
    return groups;
  };
  auto flatType = source.clone({source.getNumElements()});
  Value flat = value;
  if (source.getRank() > 1)
    flat = tensor::CollapseShapeOp::create(b, loc, flatType, value,
                                           allDims(source.getRank()));
  else if (source.getRank() == 0)
    flat = tensor::ExpandShapeOp::create(b, loc, flatType, value, allDims(0));
  if (target.getRank() == 1)
    return flat;
  if (target.getRank() == 0)
    return tensor::CollapseShapeOp::create(b, loc, target, flat, allDims(0));
  return tensor::ExpandShapeOp::create(b, loc, target, flat,
                                       allDims(target.getRank()));
}

/// `value` converted elementwise to element type `elementType` (truncating
/// a compute type back to the op's type); unchanged when it already is.
Value truncateTensor(OpBuilder &b, Location loc, Value value,
                     Type elementType) {
  auto type = tensorType(value);
  if (type.getElementType() == elementType)
    return value;
  return buildElementwise(b, loc, value, type.clone(elementType),
                          [&](OpBuilder &nb, Location nl, ValueRange args) {
                            return truncateScalar(nb, nl, args[0],
                                                  elementType);
                          });
}

/// `value` with element type `elementType` (a wider float): elementwise
/// extension, or `value` itself.
Value extendTensor(OpBuilder &b, Location loc, Value value, Type elementType) {
  auto type = tensorType(value);
  if (type.getElementType() == elementType)
    return value;
  return buildElementwise(b, loc, value, type.clone(elementType),
                          [&](OpBuilder &nb, Location nl, ValueRange args) {
                            return extendScalar(nb, nl, args[0], elementType);
                          });
}

/// A reduction of `input` (read through identity) over the dims marked in
/// `reduced`, into a tensor of the kept dims of element type `accType`
/// starting from `identity`; `combine(element, acc)` folds one element in
/// (the element is passed as stored, the caller extends it).
Value reduceDims(OpBuilder &b, Location loc, ValueRange inputs,
                 ArrayRef<AffineMap> inputMaps, ArrayRef<int64_t> loopShape,
                 ArrayRef<bool> reduced, Type accType, Value identity,
                 BodyFn combine) {
  MLIRContext *context = b.getContext();
  unsigned rank = loopShape.size();
  SmallVector<bool> keep;
  SmallVector<int64_t> keptShape;
  SmallVector<IteratorType> iterators;
  for (unsigned i = 0; i < rank; ++i) {
    keep.push_back(!reduced[i]);
    if (!reduced[i])
      keptShape.push_back(loopShape[i]);
    iterators.push_back(reduced[i] ? IteratorType::reduction
                                   : IteratorType::parallel);
  }
  Value init = filledTensor(b, loc, RankedTensorType::get(keptShape, accType),
                            identity);
  SmallVector<AffineMap> maps(inputMaps);
  maps.push_back(selectMap(rank, keep, context));
  return buildGeneric(b, loc, inputs, init, maps, iterators, combine);
}

//===----------------------------------------------------------------------===//
// MatMul, Gemm
//===----------------------------------------------------------------------===//

/// `acc` = lhs x rhs for 2-D lhs/rhs with linalg.matmul, accumulating into a
/// zero-filled tensor of `accType` elements (named ops extend their inputs).
Value buildMatmul(OpBuilder &b, Location loc, Value lhs, Value rhs,
                  Type accType) {
  int64_t m = tensorType(lhs).getDimSize(0), n = tensorType(rhs).getDimSize(1);
  Value init = filledTensor(b, loc, RankedTensorType::get({m, n}, accType),
                            scalarConstant(b, loc, accType, 0));
  return linalg::MatmulOp::create(b, loc, TypeRange{init.getType()},
                                  ValueRange{lhs, rhs}, ValueRange{init})
      .getResult(0);
}

/// ONNX MatMul (numpy): 2-D x 2-D is one linalg.matmul; an N-D lhs against
/// a 2-D rhs folds its batch dims into the rows; otherwise both operands are
/// broadcast to the common batch dims, collapsed to one batch dim, and
/// multiplied with linalg.batch_matmul.
struct MatMulLowering : OpConversionPattern<kiln::MatMulOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(kiln::MatMulOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto resultType = cast<RankedTensorType>(
        getTypeConverter()->convertType(op.getType()));
    Value lhs = adaptor.getA(), rhs = adaptor.getB();
    Type elementType = resultType.getElementType();
    Type accType = computeType(elementType);
    if (isa<IntegerType>(elementType) && elementType.getIntOrFloatBitWidth() < 32)
      return unsupported(op, "matmul of " + std::to_string(
                                 elementType.getIntOrFloatBitWidth()) +
                                 "-bit integers (ONNX MatMul takes 32/64-bit)");
    // numpy promotion of 1-D operands.
    if (tensorType(lhs).getRank() == 1)
      lhs = reshapeTo(rewriter, loc, lhs, {1, tensorType(lhs).getDimSize(0)});
    if (tensorType(rhs).getRank() == 1)
      rhs = reshapeTo(rewriter, loc, rhs, {tensorType(rhs).getDimSize(0), 1});
    auto lhsType = tensorType(lhs), rhsType = tensorType(rhs);
    int64_t m = lhsType.getDimSize(lhsType.getRank() - 2);
    int64_t k = lhsType.getDimSize(lhsType.getRank() - 1);
    int64_t n = rhsType.getDimSize(rhsType.getRank() - 1);
    ArrayRef<int64_t> lhsBatch = lhsType.getShape().drop_back(2);
    ArrayRef<int64_t> rhsBatch = rhsType.getShape().drop_back(2);

    Value product;
    SmallVector<int64_t> productShape;
    if (rhsBatch.empty()) {
      // [batch..., M, K] x [K, N]: the batch dims are more rows.
      int64_t rows = m;
      for (int64_t d : lhsBatch)
        rows *= d;
      Value flat = reshapeTo(rewriter, loc, lhs, {rows, k});
      product = buildMatmul(rewriter, loc, flat, rhs, accType);
      productShape.assign(lhsBatch.begin(), lhsBatch.end());
    } else {
      // Broadcast the batch dims (right-aligned, 1 stretches).
      size_t batchRank = std::max(lhsBatch.size(), rhsBatch.size());
      SmallVector<int64_t> batch(batchRank, 1);
      for (size_t i = 0; i < batchRank; ++i) {
        int64_t l = i + lhsBatch.size() >= batchRank
                        ? lhsBatch[i + lhsBatch.size() - batchRank]
                        : 1;
        int64_t r = i + rhsBatch.size() >= batchRank
                        ? rhsBatch[i + rhsBatch.size() - batchRank]
                        : 1;
        batch[i] = std::max(l, r);
      }
      int64_t batchSize = 1;
      for (int64_t d : batch)
        batchSize *= d;
      auto toBatched = [&](Value operand, int64_t rows, int64_t cols) {
        SmallVector<int64_t> full(batch);
        full.append({rows, cols});
        auto type = tensorType(operand);
        if (type.getShape() != ArrayRef<int64_t>(full))
          operand = buildElementwise(
              rewriter, loc, operand, type.clone(full),
              [](OpBuilder &, Location, ValueRange args) { return args[0]; });
        return reshapeTo(rewriter, loc, operand, {batchSize, rows, cols});
      };
      Value lhs3 = toBatched(lhs, m, k), rhs3 = toBatched(rhs, k, n);
      Value init = filledTensor(
          rewriter, loc, RankedTensorType::get({batchSize, m, n}, accType),
          scalarConstant(rewriter, loc, accType, 0));
      product = linalg::BatchMatmulOp::create(rewriter, loc,
                                              TypeRange{init.getType()},
                                              ValueRange{lhs3, rhs3},
                                              ValueRange{init})
                    .getResult(0);
      productShape = batch;
    }
    productShape.append({m, n});
    product = reshapeTo(rewriter, loc, product, productShape);
    // Drop the promoted dims of 1-D operands.
    product = reshapeTo(rewriter, loc, product, resultType.getShape());
    rewriter.replaceOp(op, truncateTensor(rewriter, loc, product, elementType));
    return success();
  }
};

/// ONNX Gemm: transposes by linalg.transpose, the product by linalg.matmul,
/// then one elementwise epilogue alpha * AB + beta * C (and the truncation
/// of a half-precision accumulator).
struct GemmLowering : OpConversionPattern<kiln::GemmOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(kiln::GemmOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto resultType = cast<RankedTensorType>(
        getTypeConverter()->convertType(op.getType()));
    Type elementType = resultType.getElementType();
    Type accType = computeType(elementType);
    double alpha = op.getAlpha().convertToDouble();
    double beta = op.getBeta().convertToDouble();
    Value c = adaptor.getC();
    bool hasC = !isNone(c) && beta != 0.0;
    bool isInt = isa<IntegerType>(elementType);
    if (isInt && (alpha != 1.0 || (hasC && beta != 1.0)))
      return unsupported(op, "integer Gemm with alpha or beta other than 1");
    if (isInt && elementType.getIntOrFloatBitWidth() < 32)
      return unsupported(op, "Gemm of integers narrower than 32 bits");

    auto transpose = [&](Value value) {
      auto type = tensorType(value);
      Value init = emptyTensor(
          rewriter, loc,
          type.clone({type.getDimSize(1), type.getDimSize(0)}));
      return linalg::TransposeOp::create(rewriter, loc, value, init,
                                         ArrayRef<int64_t>{1, 0})
          .getResult()[0];
    };
    Value a = adaptor.getA(), b = adaptor.getB();
    if (op.getTransA())
      a = transpose(a);
    if (op.getTransB())
      b = transpose(b);
    Value product = buildMatmul(rewriter, loc, a, b, accType);
    if (!hasC && alpha == 1.0) {
      rewriter.replaceOp(op,
                         truncateTensor(rewriter, loc, product, elementType));
      return success();
    }
    SmallVector<Value> inputs{product};
    if (hasC)
      inputs.push_back(c);
    Value result = buildElementwise(
        rewriter, loc, inputs, resultType,
        [&](OpBuilder &nb, Location nl, ValueRange args) -> Value {
          Value y = args[0];
          if (isInt)
            return hasC ? (Value)arith::AddIOp::create(nb, nl, y, args[1]) : y;
          if (alpha != 1.0)
            y = arith::MulFOp::create(nb, nl, y,
                                      scalarConstant(nb, nl, accType, alpha));
          if (hasC) {
            Value cv = extendScalar(nb, nl, args[1], accType);
            if (beta != 1.0)
              cv = arith::MulFOp::create(nb, nl, cv,
                                         scalarConstant(nb, nl, accType, beta));
            y = arith::AddFOp::create(nb, nl, y, cv);
          }
          return truncateScalar(nb, nl, y, elementType);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Softmax, LogSoftmax, Hardmax
//===----------------------------------------------------------------------===//

/// The maps and iterators of a computation along one axis of a rank-`rank`
/// tensor: the identity, the map dropping `axis`, and the iterators with
/// `axis` a reduction.
struct AxisMaps {
  AffineMap full, reduced;
  SmallVector<IteratorType> reduceIterators, parallelIterators;
  SmallVector<bool> reducedDims;
  AxisMaps(unsigned rank, ArrayRef<int64_t> axes, MLIRContext *context) {
    full = AffineMap::getMultiDimIdentityMap(rank, context);
    reducedDims.assign(rank, false);
    for (int64_t axis : axes)
      reducedDims[axis] = true;
    SmallVector<bool> keep;
    for (unsigned i = 0; i < rank; ++i) {
      keep.push_back(!reducedDims[i]);
      reduceIterators.push_back(reducedDims[i] ? IteratorType::reduction
                                               : IteratorType::parallel);
    }
    parallelIterators.assign(rank, IteratorType::parallel);
    reduced = selectMap(rank, keep, context);
  }
};

/// Softmax and LogSoftmax along `axis`, numerically stable: the max along
/// the axis, the sum of exp(x - max), then exp(x - max) / sum or
/// x - max - log(sum).
template <typename OpTy, bool IsLog>
struct SoftmaxLowering : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;
  using OpAdaptor = typename OpTy::Adaptor;
  LogicalResult
  matchAndRewrite(OpTy op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = adaptor.getInput();
    auto type = tensorType(x);
    int64_t rank = type.getRank();
    if (rank == 0)
      return unsupported(op, "rank-0 input");
    int64_t axis = normalizeAxis(op.getAxis(), rank);
    Type elementType = type.getElementType();
    Type ct = computeType(elementType);
    AxisMaps maps(rank, {axis}, rewriter.getContext());

    Value max = reduceDims(
        rewriter, loc, x, {maps.full}, type.getShape(), maps.reducedDims, ct,
        lowestValue(rewriter, loc, ct),
        [&](OpBuilder &b, Location l, ValueRange args) -> Value {
          return arith::MaximumFOp::create(
              b, l, extendScalar(b, l, args[0], ct), args[1]);
        });
    Value sum = reduceDims(
        rewriter, loc, {x, max}, {maps.full, maps.reduced}, type.getShape(),
        maps.reducedDims, ct, scalarConstant(rewriter, loc, ct, 0),
        [&](OpBuilder &b, Location l, ValueRange args) -> Value {
          Value shifted = arith::SubFOp::create(
              b, l, extendScalar(b, l, args[0], ct), args[1]);
          return arith::AddFOp::create(b, l, math::ExpOp::create(b, l, shifted),
                                       args[2]);
        });
    Value result = buildGeneric(
        rewriter, loc, {x, max, sum}, emptyTensor(rewriter, loc, type),
        {maps.full, maps.reduced, maps.reduced, maps.full},
        maps.parallelIterators,
        [&](OpBuilder &b, Location l, ValueRange args) -> Value {
          Value shifted = arith::SubFOp::create(
              b, l, extendScalar(b, l, args[0], ct), args[1]);
          Value y;
          if (IsLog)
            y = arith::SubFOp::create(b, l, shifted,
                                      math::LogOp::create(b, l, args[2]));
          else
            y = arith::DivFOp::create(b, l, math::ExpOp::create(b, l, shifted),
                                      args[2]);
          return truncateScalar(b, l, y, elementType);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// Hardmax: the max along the axis, the first index holding it, then 1
/// there and 0 elsewhere.
struct HardmaxLowering : OpConversionPattern<kiln::HardmaxOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(kiln::HardmaxOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = adaptor.getInput();
    auto type = tensorType(x);
    int64_t rank = type.getRank();
    if (rank == 0)
      return unsupported(op, "rank-0 input");
    int64_t axis = normalizeAxis(op.getAxis(), rank);
    Type elementType = type.getElementType();
    AxisMaps maps(rank, {axis}, rewriter.getContext());
    Type i64 = rewriter.getI64Type();

    Value max = reduceDims(
        rewriter, loc, x, {maps.full}, type.getShape(), maps.reducedDims,
        elementType, lowestValue(rewriter, loc, elementType),
        [&](OpBuilder &b, Location l, ValueRange args) -> Value {
          return arith::MaximumFOp::create(b, l, args[0], args[1]);
        });
    Value first = reduceDims(
        rewriter, loc, {x, max}, {maps.full, maps.reduced}, type.getShape(),
        maps.reducedDims, i64,
        scalarConstant(rewriter, loc, i64, type.getDimSize(axis)),
        [&](OpBuilder &b, Location l, ValueRange args) -> Value {
          Value index = arith::IndexCastOp::create(
              b, l, b.getI64Type(), linalg::IndexOp::create(b, l, axis));
          Value isMax = arith::CmpFOp::create(b, l, arith::CmpFPredicate::OEQ,
                                              args[0], args[1]);
          Value lower = arith::MinSIOp::create(b, l, index, args[2]);
          return arith::SelectOp::create(b, l, isMax, lower, args[2]);
        });
    Value result = buildGeneric(
        rewriter, loc, {first}, emptyTensor(rewriter, loc, type),
        {maps.reduced, maps.full}, maps.parallelIterators,
        [&](OpBuilder &b, Location l, ValueRange args) -> Value {
          Value index = arith::IndexCastOp::create(
              b, l, b.getI64Type(), linalg::IndexOp::create(b, l, axis));
          Value hit = arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq,
                                            index, args[0]);
          return arith::SelectOp::create(
              b, l, hit, scalarConstant(b, l, elementType, 1),
              scalarConstant(b, l, elementType, 0));
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

} // namespace

void kiln::populateNNToLinalgPatterns(const TypeConverter &converter,
                                      RewritePatternSet &patterns) {
  MLIRContext *context = patterns.getContext();
  patterns.add<MatMulLowering, GemmLowering,
               SoftmaxLowering<kiln::SoftmaxOp, false>,
               SoftmaxLowering<kiln::LogSoftmaxOp, true>, HardmaxLowering>(
      converter, context);
}
