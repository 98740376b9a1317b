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
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringExtras.h"

#include <map>

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

/// The map of a per-channel vector (dim 1) over loops of `rank`.
AffineMap channelMap(unsigned rank, MLIRContext *context) {
  return AffineMap::get(rank, 0, {getAffineDimExpr(1, context)}, context);
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

/// numpy matmul (ONNX MatMul) of `lhs` and `rhs` into a tensor of
/// `resultShape` with element type `accType` (the inputs are extended by the
/// named ops). 2-D x 2-D is one linalg.matmul; an N-D lhs against a 2-D rhs
/// folds its batch dims into the rows; otherwise both operands are broadcast
/// to the common batch dims, collapsed to one batch dim, and multiplied with
/// linalg.batch_matmul.
Value buildNumpyMatmul(OpBuilder &b, Location loc, Value lhs, Value rhs,
                       ArrayRef<int64_t> resultShape, Type accType) {
  // numpy promotion of 1-D operands.
  if (tensorType(lhs).getRank() == 1)
    lhs = reshapeTo(b, loc, lhs, {1, tensorType(lhs).getDimSize(0)});
  if (tensorType(rhs).getRank() == 1)
    rhs = reshapeTo(b, loc, rhs, {tensorType(rhs).getDimSize(0), 1});
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
    Value flat = reshapeTo(b, loc, lhs, {rows, k});
    product = buildMatmul(b, loc, flat, rhs, accType);
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
            b, loc, operand, type.clone(full),
            [](OpBuilder &, Location, ValueRange args) { return args[0]; });
      return reshapeTo(b, loc, operand, {batchSize, rows, cols});
    };
    Value lhs3 = toBatched(lhs, m, k), rhs3 = toBatched(rhs, k, n);
    Value init = filledTensor(
        b, loc, RankedTensorType::get({batchSize, m, n}, accType),
        scalarConstant(b, loc, accType, 0));
    product = linalg::BatchMatmulOp::create(b, loc,
                                            TypeRange{init.getType()},
                                            ValueRange{lhs3, rhs3},
                                            ValueRange{init})
                  .getResult(0);
    productShape = batch;
  }
  productShape.append({m, n});
  product = reshapeTo(b, loc, product, productShape);
  // Drop the promoted dims of 1-D operands.
  return reshapeTo(b, loc, product, resultShape);
}

/// ONNX MatMul: buildNumpyMatmul, then the truncation of a half-precision
/// accumulator.
struct MatMulLowering : OpConversionPattern<kiln::MatMulOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(kiln::MatMulOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto resultType = cast<RankedTensorType>(
        getTypeConverter()->convertType(op.getType()));
    Type elementType = resultType.getElementType();
    if (isa<IntegerType>(elementType) && elementType.getIntOrFloatBitWidth() < 32)
      return unsupported(op, "matmul of " + std::to_string(
                                 elementType.getIntOrFloatBitWidth()) +
                                 "-bit integers (ONNX MatMul takes 32/64-bit)");
    Value product =
        buildNumpyMatmul(rewriter, loc, adaptor.getA(), adaptor.getB(),
                         resultType.getShape(), computeType(elementType));
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


//===----------------------------------------------------------------------===//
// Convolution and pooling
//===----------------------------------------------------------------------===//

/// A sliding window with every ONNX default and auto_pad resolved.
struct Window {
  SmallVector<int64_t> kernel, strides, dilations, padBegin, padEnd;
  int64_t rank() const { return kernel.size(); }
  /// The input extent (padding included) the window reads for `out`
  /// outputs along `i`.
  int64_t reach(int64_t i, int64_t out) const {
    return (out - 1) * strides[i] + dilations[i] * (kernel[i] - 1) + 1;
  }
};

/// Resolves the window of an op over the spatial dims `input` producing the
/// spatial dims `output`; `weightKernel` is a conv weight's spatial dims
/// (empty for pools). SAME_UPPER/SAME_LOWER split the total padding with the
/// odd element at the end/beginning.
FailureOr<Window> resolveWindow(Operation *op, ArrayRef<int64_t> input,
                                ArrayRef<int64_t> weightKernel,
                                const kiln::WindowAttrs &attrs,
                                ArrayRef<int64_t> output) {
  size_t rank = input.size();
  Window w;
  if (attrs.kernelShape)
    w.kernel.assign(attrs.kernelShape->begin(), attrs.kernelShape->end());
  else
    w.kernel.assign(weightKernel.begin(), weightKernel.end());
  auto list = [&](std::optional<ArrayRef<int64_t>> values, size_t size,
                  int64_t fallback) {
    return values ? SmallVector<int64_t>(*values)
                  : SmallVector<int64_t>(size, fallback);
  };
  w.strides = list(attrs.strides, rank, 1);
  w.dilations = list(attrs.dilations, rank, 1);
  SmallVector<int64_t> pads = list(attrs.pads, 2 * rank, 0);
  if (w.kernel.size() != rank || w.strides.size() != rank ||
      w.dilations.size() != rank || pads.size() != 2 * rank ||
      output.size() != rank)
    return unsupported(op, "window attributes of the wrong length");
  StringRef autoPad = attrs.autoPad;
  for (size_t i = 0; i < rank; ++i) {
    if (autoPad == "NOTSET") {
      w.padBegin.push_back(pads[i]);
      w.padEnd.push_back(pads[rank + i]);
    } else if (autoPad == "VALID") {
      w.padBegin.push_back(0);
      w.padEnd.push_back(0);
    } else if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
      int64_t total = std::max<int64_t>(0, w.reach(i, output[i]) - input[i]);
      int64_t small = total / 2;
      int64_t begin = autoPad == "SAME_UPPER" ? small : total - small;
      w.padBegin.push_back(begin);
      w.padEnd.push_back(total - begin);
    } else {
      return unsupported(op, "auto_pad '" + autoPad + "'");
    }
  }
  return w;
}

/// `value` padded with `low`/`high` elements per dim holding `padValue`
/// (tensor.pad), or `value` itself when nothing is padded.
Value padTensor(OpBuilder &b, Location loc, Value value, ArrayRef<int64_t> low,
                ArrayRef<int64_t> high, Value padValue) {
  if (llvm::all_of(low, [](int64_t v) { return v == 0; }) &&
      llvm::all_of(high, [](int64_t v) { return v == 0; }))
    return value;
  auto type = tensorType(value);
  SmallVector<int64_t> shape;
  SmallVector<OpFoldResult> lowValues, highValues;
  for (int64_t i = 0; i < type.getRank(); ++i) {
    shape.push_back(type.getDimSize(i) + low[i] + high[i]);
    lowValues.push_back(b.getIndexAttr(low[i]));
    highValues.push_back(b.getIndexAttr(high[i]));
  }
  return tensor::PadOp::create(b, loc, type.clone(shape), value, lowValues,
                               highValues, padValue);
}

/// The input of a window op padded for `w` (dims 0 and 1 are N and C): the
/// begin and end pads, plus end padding for ceil_mode windows reaching past
/// the padded input (their extra elements hold `padValue` too, and the
/// reductions below treat them like padding).
Value padWindowInput(OpBuilder &b, Location loc, Value x, const Window &w,
                     ArrayRef<int64_t> output, Value padValue,
                     bool channelsLast = false) {
  auto type = tensorType(x);
  int64_t first = channelsLast ? 1 : 2;
  SmallVector<int64_t> low(type.getRank(), 0), high(type.getRank(), 0);
  for (int64_t i = 0; i < w.rank(); ++i) {
    int64_t in = type.getDimSize(first + i);
    int64_t extra = std::max<int64_t>(
        0, w.reach(i, output[i]) - (in + w.padBegin[i] + w.padEnd[i]));
    low[first + i] = w.padBegin[i];
    high[first + i] = w.padEnd[i] + extra;
  }
  return padTensor(b, loc, x, low, high, padValue);
}

/// The map reading a padded channels-last window input [N, D..., C] over
/// loops (n, o..., c, k...): (n, o_i * stride + k_i * dilation ..., c).
AffineMap windowInputMapNhwc(unsigned numLoops, const Window &w,
                             MLIRContext *context) {
  int64_t s = w.rank();
  SmallVector<AffineExpr> exprs{getAffineDimExpr(0, context)};
  for (int64_t i = 0; i < s; ++i)
    exprs.push_back(getAffineDimExpr(1 + i, context) * w.strides[i] +
                    getAffineDimExpr(s + 2 + i, context) * w.dilations[i]);
  exprs.push_back(getAffineDimExpr(s + 1, context));
  return AffineMap::get(numLoops, 0, exprs, context);
}

/// The map reading a padded window input of loop dims (lead..., o..., k...):
/// the first `lead` input dims are `leadDims`, then o_i * stride + k_i *
/// dilation.
AffineMap windowInputMap(unsigned numLoops, ArrayRef<AffineExpr> leadDims,
                         unsigned firstOut, unsigned firstKernel,
                         const Window &w, MLIRContext *context) {
  SmallVector<AffineExpr> exprs(leadDims);
  for (int64_t i = 0; i < w.rank(); ++i)
    exprs.push_back(getAffineDimExpr(firstOut + i, context) * w.strides[i] +
                    getAffineDimExpr(firstKernel + i, context) *
                        w.dilations[i]);
  return AffineMap::get(numLoops, 0, exprs, context);
}


/// The grouped convolution as a generic: X as [N, G, C/G, D...], W as
/// [G, M/G, C/G, k...], the accumulator as [N, G, M/G, out...].
Value buildGroupedConv(OpBuilder &b, Location loc, Value padded,
                              Value weight, Value init, const Window &w,
                              int64_t group, Type ct) {
  MLIRContext *context = b.getContext();
  auto xType = tensorType(padded), wType = tensorType(weight),
       accType = tensorType(init);
  int64_t s = w.rank();
  int64_t n = xType.getDimSize(0), c = xType.getDimSize(1);
  int64_t m = wType.getDimSize(0);
  SmallVector<int64_t> xShape{n, group, c / group}, wShape{group, m / group,
                                                           c / group},
      accShape{n, group, m / group};
  xShape.append(xType.getShape().begin() + 2, xType.getShape().end());
  wShape.append(wType.getShape().begin() + 2, wType.getShape().end());
  accShape.append(accType.getShape().begin() + 2, accType.getShape().end());
  Value xg = reshapeTo(b, loc, padded, xShape);
  Value wg = reshapeTo(b, loc, weight, wShape);
  Value accg = reshapeTo(b, loc, init, accShape);
  // Loops: n, g, mg, o..., cg, k....
  unsigned numLoops = 4 + 2 * s, firstOut = 3, cLoop = 3 + s,
           firstKernel = 4 + s;
  auto d = [&](unsigned i) { return getAffineDimExpr(i, context); };
  AffineMap xMap = windowInputMap(numLoops, {d(0), d(1), d(cLoop)},
                                  firstOut, firstKernel, w, context);
  SmallVector<AffineExpr> wExprs{d(1), d(2), d(cLoop)}, outExprs{d(0), d(1),
                                                                 d(2)};
  for (int64_t i = 0; i < s; ++i) {
    wExprs.push_back(d(firstKernel + i));
    outExprs.push_back(d(firstOut + i));
  }
  SmallVector<AffineMap> maps{xMap,
                              AffineMap::get(numLoops, 0, wExprs, context),
                              AffineMap::get(numLoops, 0, outExprs, context)};
  SmallVector<IteratorType> iterators(3 + s, IteratorType::parallel);
  iterators.append(1 + s, IteratorType::reduction);
  Value result = buildGeneric(
      b, loc, {xg, wg}, accg, maps, iterators,
      [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
        Value product = arith::MulFOp::create(
            nb, l, extendScalar(nb, l, args[0], ct),
            extendScalar(nb, l, args[1], ct));
        return arith::AddFOp::create(nb, l, args[2], product);
      });
  return reshapeTo(b, loc, result, accType.getShape());
}

/// The accumulator of a convolution: the bias broadcast along the channels
/// (dim 1), or zeros.
Value convInit(OpBuilder &b, Location loc, Value bias,
               RankedTensorType accType) {
  MLIRContext *context = b.getContext();
  Type ct = accType.getElementType();
  unsigned rank = accType.getRank();
  if (isNone(bias))
    return filledTensor(b, loc, accType, scalarConstant(b, loc, ct, 0));
  return buildGeneric(
      b, loc, bias, emptyTensor(b, loc, accType),
      {channelMap(rank, context),
       AffineMap::getMultiDimIdentityMap(rank, context)},
      SmallVector<IteratorType>(rank, IteratorType::parallel),
      [&](OpBuilder &nb, Location l, ValueRange args) {
        return extendScalar(nb, l, args[0], ct);
      });
}

/// A convolution of the padded input `padded` with `weight` ([M, C/group,
/// k...]) accumulated into `init`: the named linalg conv op for group 1 and
/// 1-3 spatial dims, else the grouped generic.
Value buildConv(OpBuilder &b, Location loc, Value padded, Value weight,
                Value init, const Window &w, int64_t group, Type ct) {
  int64_t spatial = w.rank();
  Attribute strides = b.getI64TensorAttr(w.strides);
  Attribute dilations = b.getI64TensorAttr(w.dilations);
  SmallVector<Type> types{init.getType()};
  // Depthwise 2-D with one filter per channel ([C, 1, kh, kw], group = C =
  // M): linalg.depthwise_conv_2d_nchw_chw on the [C, kh, kw] filter.
  auto wType = tensorType(weight);
  int64_t channels = tensorType(padded).getDimSize(1);
  if (spatial == 2 && group == channels && group > 1 &&
      wType.getDimSize(0) == channels && wType.getDimSize(1) == 1) {
    Value filter = reshapeTo(
        b, loc, weight,
        {channels, wType.getDimSize(2), wType.getDimSize(3)});
    SmallVector<NamedAttribute> attrs{b.getNamedAttr("strides", strides),
                                      b.getNamedAttr("dilations", dilations)};
    return linalg::DepthwiseConv2DNchwChwOp::create(
               b, loc, types, ValueRange{padded, filter}, ValueRange{init},
               attrs)
        .getResult(0);
  }
  if (group != 1 || spatial < 1 || spatial > 3)
    return buildGroupedConv(b, loc, padded, weight, init, w, group, ct);
  SmallVector<Value> ins{padded, weight};
  if (spatial == 1)
    return linalg::Conv1DNcwFcwOp::create(b, loc, types, ins, init, strides,
                                          dilations)
        .getResult(0);
  if (spatial == 2)
    return linalg::Conv2DNchwFchwOp::create(b, loc, types, ins, init, strides,
                                            dilations)
        .getResult(0);
  return linalg::Conv3DNcdhwFcdhwOp::create(b, loc, types, ins, init, strides,
                                            dilations)
      .getResult(0);
}

/// ONNX Conv. Group 1 with 1-3 spatial dims uses linalg.conv_{1d_ncw_fcw,
/// 2d_nchw_fchw,3d_ncdhw_fcdhw}; grouped and depthwise convolutions a
/// linalg.generic over [N, G, M/G, out..., C/G, k...]. Padding is an
/// explicit tensor.pad; the bias initializes the accumulator. Returns the
/// accumulator (element type computeType of the result's); shared by
/// kiln.conv and kiln.fused_conv.
template <typename OpTy>
FailureOr<Value> buildConvAccumulator(OpTy op, OpBuilder &b, Value x,
                                      Value weight, Value bias,
                                      RankedTensorType resultType) {
  Location loc = op.getLoc();
  auto xType = tensorType(x), wType = tensorType(weight);
  ArrayRef<int64_t> outShape = resultType.getShape().drop_front(2);
  FailureOr<Window> w = resolveWindow(op, xType.getShape().drop_front(2),
                                      wType.getShape().drop_front(2),
                                      kiln::getConvWindowAttrs(op), outShape);
  if (failed(w))
    return failure();
  Type elementType = resultType.getElementType();
  Type ct = computeType(elementType);
  Value padded = padWindowInput(b, loc, x, *w, outShape,
                                scalarConstant(b, loc, elementType, 0));
  Value init = convInit(b, loc, bias, resultType.clone(ct));
  return buildConv(b, loc, padded, weight, init, *w, op.getGroup(), ct);
}

struct ConvLowering : OpConversionPattern<kiln::ConvOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(kiln::ConvOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto resultType = cast<RankedTensorType>(
        getTypeConverter()->convertType(op.getType()));
    FailureOr<Value> acc =
        buildConvAccumulator(op, rewriter, adaptor.getX(), adaptor.getW(),
                             adaptor.getB(), resultType);
    if (failed(acc))
      return failure();
    rewriter.replaceOp(op, truncateTensor(rewriter, op.getLoc(), *acc,
                                          resultType.getElementType()));
    return success();
  }
};

/// ConvTranspose as a convolution: X upsampled by the strides (zeros
/// between the elements, tensor.insert_slice with strides), padded by
/// dilation * (k - 1) - pad_begin before and what the output size needs
/// after (negative amounts crop), convolved at stride 1 with the kernel
/// flipped and its channel dims swapped ([C, M/G, k...] to [M, C/G, k...]).
/// With output_shape or SAME auto_pad the total padding follows from the
/// output size, its odd element at the end for SAME_UPPER and at the
/// beginning otherwise (as ONNX Runtime does).
struct ConvTransposeLowering : OpConversionPattern<kiln::ConvTransposeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(kiln::ConvTransposeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *context = rewriter.getContext();
    auto resultType = cast<RankedTensorType>(
        getTypeConverter()->convertType(op.getType()));
    Value x = adaptor.getX(), weight = adaptor.getW();
    auto xType = tensorType(x), wType = tensorType(weight);
    int64_t rank = xType.getRank(), s = rank - 2;
    int64_t group = op.getGroup();
    int64_t channels = xType.getDimSize(1), mg = wType.getDimSize(1);
    if (group < 1 || channels % group != 0)
      return unsupported(op, "group not dividing the input channels");
    int64_t cg = channels / group;
    ArrayRef<int64_t> in = xType.getShape().drop_front(2);
    ArrayRef<int64_t> out = resultType.getShape().drop_front(2);
    SmallVector<int64_t> kernel(wType.getShape().drop_front(2));
    if (auto k = op.getKernelShape())
      if (ArrayRef<int64_t>(*k) != ArrayRef<int64_t>(kernel))
        return unsupported(op, "kernel_shape different from W's shape");
    auto list = [&](std::optional<ArrayRef<int64_t>> v, size_t n,
                    int64_t fallback) {
      return v ? SmallVector<int64_t>(*v) : SmallVector<int64_t>(n, fallback);
    };
    SmallVector<int64_t> strides = list(op.getStrides(), s, 1);
    SmallVector<int64_t> dilations = list(op.getDilations(), s, 1);
    SmallVector<int64_t> pads = list(op.getPads(), 2 * s, 0);
    SmallVector<int64_t> outputPadding = list(op.getOutputPadding(), s, 0);
    if ((int64_t)strides.size() != s || (int64_t)dilations.size() != s ||
        (int64_t)pads.size() != 2 * s || (int64_t)outputPadding.size() != s)
      return unsupported(op, "window attributes of the wrong length");
    StringRef autoPad = op.getAutoPad();
    bool derivePads =
        op.getOutputShape().has_value() || autoPad.starts_with("SAME");
    Type elementType = resultType.getElementType();
    Type ct = computeType(elementType);

    // Upsample.
    SmallVector<int64_t> upShape{xType.getDimSize(0), channels};
    for (int64_t i = 0; i < s; ++i)
      upShape.push_back((in[i] - 1) * strides[i] + 1);
    Value up = x;
    if (llvm::any_of(strides, [](int64_t v) { return v != 1; })) {
      Value zeros = filledTensor(rewriter, loc, xType.clone(upShape),
                                 scalarConstant(rewriter, loc, elementType, 0));
      SmallVector<OpFoldResult> offsets(rank, rewriter.getIndexAttr(0)),
          sizes, steps{rewriter.getIndexAttr(1), rewriter.getIndexAttr(1)};
      for (int64_t d : xType.getShape())
        sizes.push_back(rewriter.getIndexAttr(d));
      for (int64_t v : strides)
        steps.push_back(rewriter.getIndexAttr(v));
      up = tensor::InsertSliceOp::create(rewriter, loc, x, zeros, offsets,
                                         sizes, steps);
    }
    // Pad (or crop) around the upsampled input.
    SmallVector<int64_t> low{0, 0}, high{0, 0}, cropOffsets(rank, 0),
        cropSizes(upShape);
    bool crop = false;
    for (int64_t i = 0; i < s; ++i) {
      int64_t extent = dilations[i] * (kernel[i] - 1);
      int64_t padBegin;
      if (derivePads) {
        int64_t total = strides[i] * (in[i] - 1) + outputPadding[i] +
                        extent + 1 - out[i];
        // Floor division, as ONNX's reference: a negative total (an
        // output_shape past the natural size) pads at the end.
        int64_t half = llvm::divideFloorSigned(total, 2);
        padBegin = autoPad == "SAME_UPPER" ? half : total - half;
      } else {
        padBegin = autoPad == "VALID" ? 0 : pads[i];
      }
      int64_t before = extent - padBegin;
      int64_t after = out[i] - upShape[2 + i] + padBegin;
      if (before < 0) {
        cropOffsets[2 + i] = -before;
        cropSizes[2 + i] += before;
        before = 0;
        crop = true;
      }
      if (after < 0) {
        cropSizes[2 + i] += after;
        after = 0;
        crop = true;
      }
      low.push_back(before);
      high.push_back(after);
    }
    if (crop)
      up = tensor::ExtractSliceOp::create(
          rewriter, loc, xType.clone(cropSizes), up, ValueRange{},
          ValueRange{}, ValueRange{}, cropOffsets, cropSizes,
          SmallVector<int64_t>(rank, 1));
    Value padded = padTensor(rewriter, loc, up, low, high,
                             scalarConstant(rewriter, loc, elementType, 0));

    // The flipped, channel-swapped kernel [G, M/G, C/G, k...] from W as
    // [G, C/G, M/G, k...].
    SmallVector<int64_t> wgShape{group, cg, mg}, flippedShape{group, mg, cg};
    wgShape.append(kernel);
    flippedShape.append(kernel);
    Value wg = reshapeTo(rewriter, loc, weight, wgShape);
    auto d = [&](unsigned i) { return getAffineDimExpr(i, context); };
    SmallVector<AffineExpr> readExprs{d(0), d(2), d(1)};
    for (int64_t i = 0; i < s; ++i)
      readExprs.push_back(getAffineConstantExpr(kernel[i] - 1, context) -
                          d(3 + i));
    unsigned wRank = 3 + s;
    Value flipped = buildGeneric(
        rewriter, loc, wg,
        emptyTensor(rewriter, loc, wType.clone(flippedShape)),
        {AffineMap::get(wRank, 0, readExprs, context),
         AffineMap::getMultiDimIdentityMap(wRank, context)},
        SmallVector<IteratorType>(wRank, IteratorType::parallel),
        [](OpBuilder &, Location, ValueRange args) { return args[0]; });
    SmallVector<int64_t> convWeightShape{group * mg, cg};
    convWeightShape.append(kernel);
    Value convWeight = reshapeTo(rewriter, loc, flipped, convWeightShape);

    Window w;
    w.kernel = kernel;
    w.strides.assign(s, 1);
    w.dilations = dilations;
    w.padBegin.assign(s, 0);
    w.padEnd.assign(s, 0);
    Value init = convInit(rewriter, loc, adaptor.getB(), resultType.clone(ct));
    Value acc =
        buildConv(rewriter, loc, padded, convWeight, init, w, group, ct);
    rewriter.replaceOp(op, truncateTensor(rewriter, loc, acc, elementType));
    return success();
  }
};

/// An empty tensor of the kernel's shape: a pool's generic reads it (and
/// ignores the values) only so that its kernel loops get their extent, as
/// linalg's named pooling ops do.
Value windowShape(OpBuilder &b, Location loc, const Window &w,
                  Type elementType) {
  return emptyTensor(b, loc, RankedTensorType::get(w.kernel, elementType));
}

/// The map of a pool's window operand: the `count` loops from `first`.
AffineMap windowMap(unsigned numLoops, unsigned first, unsigned count,
                    MLIRContext *context) {
  SmallVector<AffineExpr> exprs;
  for (unsigned i = 0; i < count; ++i)
    exprs.push_back(getAffineDimExpr(first + i, context));
  return AffineMap::get(numLoops, 0, exprs, context);
}

enum class PoolKind { Max, Average, Lp };

/// Folds one window element `x` into the pool accumulator `acc`.
Value poolCombine(OpBuilder &b, Location loc, PoolKind kind, Value x,
                  Value acc, bool isUnsigned, int64_t p) {
  Type accType = acc.getType();
  if (kind == PoolKind::Max) {
    if (isa<FloatType>(accType))
      return arith::MaximumFOp::create(b, loc, x, acc);
    if (isUnsigned)
      return arith::MaxUIOp::create(b, loc, x, acc);
    return arith::MaxSIOp::create(b, loc, x, acc);
  }
  Value v = extendScalar(b, loc, x, accType);
  if (kind == PoolKind::Lp) {
    if (p == 2) {
      v = arith::MulFOp::create(b, loc, v, v);
    } else {
      v = math::AbsFOp::create(b, loc, v);
      if (p != 1)
        v = math::PowFOp::create(b, loc, v,
                                 scalarConstant(b, loc, accType, p));
    }
  }
  return arith::AddFOp::create(b, loc, acc, v);
}

/// The p-th root of an LpPool sum.
Value lpRoot(OpBuilder &b, Location loc, Value sum, int64_t p) {
  if (p == 1)
    return sum;
  if (p == 2)
    return math::SqrtOp::create(b, loc, sum);
  return math::PowFOp::create(
      b, loc, sum, scalarConstant(b, loc, sum.getType(), 1.0 / p));
}

/// The number of kernel taps of window `o` along dim `i` that fall in
/// [lo, hi) of the unpadded input coordinates.
int64_t tapsInside(const Window &w, int64_t i, int64_t o, int64_t lo,
                   int64_t hi) {
  int64_t count = 0;
  for (int64_t k = 0; k < w.kernel[i]; ++k) {
    int64_t pos = o * w.strides[i] - w.padBegin[i] + k * w.dilations[i];
    count += pos >= lo && pos < hi;
  }
  return count;
}

/// MaxPool, AveragePool, LpPool: a linalg.generic over [N, C, out..., k...]
/// reading the padded input (-inf / the lowest integer for max, 0 for the
/// sums); AveragePool then divides by the number of taps counted (inside
/// the input, or inside the explicit padding with count_include_pad, never
/// the ceil_mode overhang); LpPool takes the p-th root.
template <typename OpTy, PoolKind Kind, bool ChannelsLast = false>
struct PoolLowering : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;
  using OpAdaptor = typename OpTy::Adaptor;
  LogicalResult
  matchAndRewrite(OpTy op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *context = rewriter.getContext();
    Value x = adaptor.getX();
    auto xType = tensorType(x);
    auto resultType = cast<RankedTensorType>(
        this->getTypeConverter()->convertType(op.getY().getType()));
    Type kilnElementType =
        cast<RankedTensorType>(op.getX().getType()).getElementType();
    bool isUnsigned = isUnsignedInt(kilnElementType);
    int64_t rank = xType.getRank();
    // The spatial dims: after N and C, or (channels last) between them.
    int64_t firstSpatial = ChannelsLast ? 1 : 2;
    ArrayRef<int64_t> inShape =
        xType.getShape().slice(firstSpatial, rank - 2);
    ArrayRef<int64_t> outShape =
        resultType.getShape().slice(firstSpatial, rank - 2);
    FailureOr<Window> w = resolveWindow(op, inShape, {},
                                        kiln::getPoolWindowAttrs(op), outShape);
    if (failed(w))
      return failure();
    int64_t s = w->rank();
    int64_t p = 0;
    if constexpr (Kind == PoolKind::Lp) {
      p = op.getP();
      if (p < 1)
        return unsupported(op, "p = " + std::to_string(p) + " (must be >= 1)");
    }
    if constexpr (Kind == PoolKind::Max && !ChannelsLast) {
      if (!op.getIndices().use_empty())
        return lowerWithIndices(op, rewriter, x, resultType, *w);
    }

    Type elementType = resultType.getElementType();
    Type accElement = Kind == PoolKind::Max ? elementType
                                            : computeType(elementType);
    Value padValue = Kind == PoolKind::Max
                         ? lowestValue(rewriter, loc, kilnElementType)
                         : scalarConstant(rewriter, loc, elementType, 0);
    Value padded = padWindowInput(rewriter, loc, x, *w, outShape, padValue,
                                  ChannelsLast);
    Value identity = Kind == PoolKind::Max
                         ? lowestValue(rewriter, loc, kilnElementType)
                         : scalarConstant(rewriter, loc, accElement, 0);
    Value init =
        filledTensor(rewriter, loc, resultType.clone(accElement), identity);
    unsigned numLoops = 2 + 2 * s;
    auto d = [&](unsigned i) { return getAffineDimExpr(i, context); };
    // Loops (n, c, o..., k...), or (n, o..., c, k...) channels last: the
    // result is the identity over the first 2 + s either way.
    AffineMap xMap =
        ChannelsLast
            ? windowInputMapNhwc(numLoops, *w, context)
            : windowInputMap(numLoops, {d(0), d(1)}, 2, 2 + s, *w, context);
    SmallVector<AffineExpr> outExprs;
    for (unsigned i = 0; i < 2 + s; ++i)
      outExprs.push_back(d(i));
    SmallVector<IteratorType> iterators(2 + s, IteratorType::parallel);
    iterators.append(s, IteratorType::reduction);
    Value window = windowShape(rewriter, loc, *w, xType.getElementType());
    Value acc;
    // 2-D float max and sum pools are linalg's named pooling ops (their
    // bodies are maximumf / addf after extending to the accumulator).
    bool named = s == 2 && (Kind == PoolKind::Average ||
                            (Kind == PoolKind::Max &&
                             isa<FloatType>(xType.getElementType())));
    if (named) {
      SmallVector<NamedAttribute> attrs{
          rewriter.getNamedAttr("strides",
                                rewriter.getI64TensorAttr(w->strides)),
          rewriter.getNamedAttr("dilations",
                                rewriter.getI64TensorAttr(w->dilations))};
      SmallVector<Type> types{init.getType()};
      SmallVector<Value> ins{padded, window};
      if (Kind == PoolKind::Max && ChannelsLast)
        acc = linalg::PoolingNhwcMaxOp::create(rewriter, loc, types, ins,
                                               init, attrs)
                  .getResult(0);
      else if (Kind == PoolKind::Max)
        acc = linalg::PoolingNchwMaxOp::create(rewriter, loc, types, ins,
                                               init, attrs)
                  .getResult(0);
      else if (ChannelsLast)
        acc = linalg::PoolingNhwcSumOp::create(rewriter, loc, types, ins,
                                               init, attrs)
                  .getResult(0);
      else
        acc = linalg::PoolingNchwSumOp::create(rewriter, loc, types, ins,
                                               init, attrs)
                  .getResult(0);
    } else {
      acc = buildGeneric(
          rewriter, loc, {padded, window}, init,
          {xMap, windowMap(numLoops, 2 + s, s, context),
           AffineMap::get(numLoops, 0, outExprs, context)},
          iterators, [&](OpBuilder &b, Location l, ValueRange args) {
            return poolCombine(b, l, Kind, args[0], args[2], isUnsigned, p);
          });
    }
    if constexpr (Kind == PoolKind::Max && ChannelsLast) {
      rewriter.replaceOp(op, acc);
      return success();
    } else if constexpr (Kind == PoolKind::Max) {
      rewriter.replaceOp(op, {acc, Value()});
      return success();
    }

    AffineMap identityMap = AffineMap::getMultiDimIdentityMap(rank, context);
    SmallVector<IteratorType> parallel(rank, IteratorType::parallel);
    Value result;
    if constexpr (Kind == PoolKind::Lp) {
      result = buildGeneric(
          rewriter, loc, acc, emptyTensor(rewriter, loc, resultType),
          {identityMap, identityMap}, parallel,
          [&](OpBuilder &b, Location l, ValueRange args) {
            return truncateScalar(b, l, lpRoot(b, l, args[0], p), elementType);
          });
    } else if constexpr (Kind == PoolKind::Average) {
      // Divisors: separable per spatial dim.
      bool includePad = op.getCountIncludePad() != 0;
      SmallVector<SmallVector<int64_t>> perDim;
      for (int64_t i = 0; i < s; ++i) {
        int64_t lo = includePad ? -w->padBegin[i] : 0;
        int64_t hi = inShape[i] + (includePad ? w->padEnd[i] : 0);
        SmallVector<int64_t> counts;
        for (int64_t o = 0; o < outShape[i]; ++o)
          counts.push_back(tapsInside(*w, i, o, lo, hi));
        perDim.push_back(counts);
      }
      int64_t numOut = 1;
      for (int64_t o : outShape)
        numOut *= o;
      SmallVector<float> divisors;
      for (int64_t flat = 0; flat < numOut; ++flat) {
        int64_t rest = flat, count = 1;
        for (int64_t i = s - 1; i >= 0; --i) {
          count *= perDim[i][rest % outShape[i]];
          rest /= outShape[i];
        }
        divisors.push_back(static_cast<float>(count));
      }
      bool uniform = llvm::all_equal(divisors);
      SmallVector<Value> inputs{acc};
      SmallVector<AffineMap> maps{identityMap};
      if (!uniform) {
        auto divType = RankedTensorType::get(outShape, rewriter.getF32Type());
        inputs.push_back(arith::ConstantOp::create(
            rewriter, loc, DenseElementsAttr::get(divType, ArrayRef(divisors))));
        SmallVector<AffineExpr> spatialExprs;
        for (int64_t i = 0; i < s; ++i)
          spatialExprs.push_back(d(firstSpatial + i));
        maps.push_back(AffineMap::get(rank, 0, spatialExprs, context));
      }
      maps.push_back(identityMap);
      float uniformDivisor = divisors.empty() ? 1.0f : divisors.front();
      result = buildGeneric(
          rewriter, loc, inputs, emptyTensor(rewriter, loc, resultType), maps,
          parallel, [&](OpBuilder &b, Location l, ValueRange args) {
            Value divisor =
                uniform ? scalarConstant(b, l, accElement, uniformDivisor)
                        : extendScalar(b, l, args[1], accElement);
            if (divisor.getType() != accElement)
              divisor = arith::TruncFOp::create(b, l, accElement, divisor);
            Value mean = arith::DivFOp::create(b, l, args[0], divisor);
            return truncateScalar(b, l, mean, elementType);
          });
    }
    rewriter.replaceOp(op, result);
    return success();
  }

  /// MaxPool with its Indices output: one generic with two accumulators,
  /// the max and its flattened index into X (row-major, or column-major
  /// over the spatial dims with storage_order 1, offset by (n * C + c) *
  /// prod(spatial)). Ties keep the smaller index whatever order the
  /// reduction runs in.
  LogicalResult lowerWithIndices(OpTy op, ConversionPatternRewriter &rewriter,
                                 Value x, RankedTensorType resultType,
                                 const Window &w) const {
    if constexpr (Kind != PoolKind::Max || ChannelsLast) {
      return failure();
    } else {
      Location loc = op.getLoc();
      MLIRContext *context = rewriter.getContext();
      auto xType = tensorType(x);
      if (!isa<FloatType>(xType.getElementType()))
        return unsupported(op, "MaxPool Indices of an integer tensor");
      int64_t s = w.rank(), channels = xType.getDimSize(1);
      ArrayRef<int64_t> inShape = xType.getShape().drop_front(2);
      ArrayRef<int64_t> outShape = resultType.getShape().drop_front(2);
      bool columnMajor = op.getStorageOrder() != 0;
      Type elementType = xType.getElementType();
      Value padded = padWindowInput(rewriter, loc, x, w, outShape,
                                    lowestValue(rewriter, loc, elementType));
      Type i64 = rewriter.getI64Type();
      Value maxInit = filledTensor(rewriter, loc, resultType,
                                   lowestValue(rewriter, loc, elementType));
      Value indexInit =
          filledTensor(rewriter, loc, resultType.clone(i64),
                       scalarConstant(rewriter, loc, i64, 0));
      unsigned numLoops = 2 + 2 * s;
      auto d = [&](unsigned i) { return getAffineDimExpr(i, context); };
      AffineMap xMap =
          windowInputMap(numLoops, {d(0), d(1)}, 2, 2 + s, w, context);
      SmallVector<AffineExpr> outExprs;
      for (unsigned i = 0; i < 2 + s; ++i)
        outExprs.push_back(d(i));
      AffineMap outMap = AffineMap::get(numLoops, 0, outExprs, context);
      SmallVector<IteratorType> iterators(2 + s, IteratorType::parallel);
      iterators.append(s, IteratorType::reduction);
      int64_t spatialSize = 1;
      for (int64_t v : inShape)
        spatialSize *= v;
      auto generic = linalg::GenericOp::create(
          rewriter, loc, TypeRange{maxInit.getType(), indexInit.getType()},
          ValueRange{padded, windowShape(rewriter, loc, w, elementType)},
          ValueRange{maxInit, indexInit},
          ArrayRef<AffineMap>{xMap, windowMap(numLoops, 2 + s, s, context),
                              outMap, outMap},
          iterators,
          [&](OpBuilder &b, Location l, ValueRange args) {
            auto index = [&](unsigned dim) -> Value {
              return arith::IndexCastOp::create(
                  b, l, i64, linalg::IndexOp::create(b, l, dim));
            };
            auto constant = [&](int64_t v) {
              return scalarConstant(b, l, i64, v);
            };
            // (n * C + c) * prod(spatial)
            Value flat = arith::MulIOp::create(
                b, l,
                arith::AddIOp::create(
                    b, l, arith::MulIOp::create(b, l, index(0),
                                                constant(channels)),
                    index(1)),
                constant(spatialSize));
            Value spatialIndex = constant(0);
            for (int64_t j = 0; j < s; ++j) {
              int64_t i = columnMajor ? s - 1 - j : j;
              Value pos = arith::AddIOp::create(
                  b, l,
                  arith::MulIOp::create(b, l, index(2 + i),
                                        constant(w.strides[i])),
                  arith::MulIOp::create(b, l, index(2 + s + i),
                                        constant(w.dilations[i])));
              pos = arith::SubIOp::create(b, l, pos, constant(w.padBegin[i]));
              spatialIndex = arith::AddIOp::create(
                  b, l,
                  arith::MulIOp::create(b, l, spatialIndex,
                                        constant(inShape[i])),
                  pos);
            }
            flat = arith::AddIOp::create(b, l, flat, spatialIndex);
            Value value = args[0], best = args[2], bestIndex = args[3];
            Value greater = arith::CmpFOp::create(
                b, l, arith::CmpFPredicate::OGT, value, best);
            Value equal = arith::CmpFOp::create(
                b, l, arith::CmpFPredicate::OEQ, value, best);
            Value earlier = arith::CmpIOp::create(
                b, l, arith::CmpIPredicate::slt, flat, bestIndex);
            Value take = arith::OrIOp::create(
                b, l, greater, arith::AndIOp::create(b, l, equal, earlier));
            linalg::YieldOp::create(
                b, l,
                ValueRange{arith::SelectOp::create(b, l, take, value, best),
                           arith::SelectOp::create(b, l, take, flat,
                                                   bestIndex)});
          });
      rewriter.replaceOp(op, generic.getResults());
      return success();
    }
  }
};

/// GlobalAveragePool, GlobalMaxPool, GlobalLpPool: a reduction over the
/// spatial dims into [N, C], the mean / root, reshaped to [N, C, 1...].
template <typename OpTy, PoolKind Kind, bool ChannelsLast = false>
struct GlobalPoolLowering : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;
  using OpAdaptor = typename OpTy::Adaptor;
  LogicalResult
  matchAndRewrite(OpTy op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *context = rewriter.getContext();
    Value x = adaptor.getX();
    auto xType = tensorType(x);
    auto resultType = cast<RankedTensorType>(
        this->getTypeConverter()->convertType(op.getType()));
    int64_t rank = xType.getRank();
    int64_t p = 0;
    if constexpr (Kind == PoolKind::Lp) {
      p = op.getP();
      if (p < 1)
        return unsupported(op, "p = " + std::to_string(p) + " (must be >= 1)");
    }
    Type elementType = xType.getElementType();
    Type accElement = Kind == PoolKind::Max ? elementType
                                            : computeType(elementType);
    // Reduce the spatial dims, keeping N and C ([N, C] either way).
    int64_t channelDim = ChannelsLast ? rank - 1 : 1;
    SmallVector<bool> reduced(rank, true);
    reduced[0] = reduced[channelDim] = false;
    int64_t count = 1;
    for (int64_t i = 1; i < rank; ++i)
      if (i != channelDim)
        count *= xType.getDimSize(i);
    Value identity = Kind == PoolKind::Max
                         ? lowestValue(rewriter, loc, elementType)
                         : scalarConstant(rewriter, loc, accElement, 0);
    Value acc = reduceDims(
        rewriter, loc, x, {AffineMap::getMultiDimIdentityMap(rank, context)},
        xType.getShape(), reduced, accElement, identity,
        [&](OpBuilder &b, Location l, ValueRange args) {
          return poolCombine(b, l, Kind, args[0], args[1], false, p);
        });
    auto flatType = RankedTensorType::get(
        {xType.getDimSize(0), xType.getDimSize(channelDim)}, elementType);
    Value result = buildElementwise(
        rewriter, loc, acc, flatType,
        [&](OpBuilder &b, Location l, ValueRange args) {
          Value v = args[0];
          if (Kind == PoolKind::Average)
            v = arith::DivFOp::create(b, l, v,
                                      scalarConstant(b, l, accElement, count));
          else if (Kind == PoolKind::Lp)
            v = lpRoot(b, l, v, p);
          return truncateScalar(b, l, v, elementType);
        });
    rewriter.replaceOp(op, reshapeTo(rewriter, loc, result,
                                     resultType.getShape()));
    return success();
  }
};


//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

/// The mean and the population variance of `x` (read through `xMap` over
/// loops of `loopShape`) over the loops marked in `reduced`, as tensors of
/// the kept loops with element type `ct`. Two passes (mean, then the mean
/// of the squared deviations) for accuracy.
std::pair<Value, Value> meanAndVariance(OpBuilder &b, Location loc, Value x,
                                        AffineMap xMap,
                                        ArrayRef<int64_t> loopShape,
                                        ArrayRef<bool> reduced, Type ct) {
  MLIRContext *context = b.getContext();
  int64_t count = 1;
  SmallVector<bool> keep;
  for (auto [i, r] : llvm::enumerate(reduced)) {
    if (r)
      count *= loopShape[i];
    keep.push_back(!r);
  }
  AffineMap keptMap = selectMap(loopShape.size(), keep, context);
  Value zero = scalarConstant(b, loc, ct, 0);
  Value sum = reduceDims(b, loc, x, {xMap}, loopShape, reduced, ct, zero,
                         [&](OpBuilder &nb, Location l, ValueRange args) {
                           return arith::AddFOp::create(
                               nb, l, args[1],
                               extendScalar(nb, l, args[0], ct));
                         });
  auto scale = [&](Value total) {
    return buildElementwise(b, loc, total, tensorType(total),
                            [&](OpBuilder &nb, Location l, ValueRange args) {
                              return arith::DivFOp::create(
                                  nb, l, args[0],
                                  scalarConstant(nb, l, ct, count));
                            });
  };
  Value mean = scale(sum);
  Value squares = reduceDims(
      b, loc, {x, mean}, {xMap, keptMap}, loopShape, reduced, ct, zero,
      [&](OpBuilder &nb, Location l, ValueRange args) {
        Value dev = arith::SubFOp::create(
            nb, l, extendScalar(nb, l, args[0], ct), args[1]);
        return arith::AddFOp::create(nb, l, args[2],
                                     arith::MulFOp::create(nb, l, dev, dev));
      });
  return {mean, scale(squares)};
}

/// 1 / sqrt(var + epsilon).
Value invStdDev(OpBuilder &b, Location loc, Value var, double epsilon) {
  Value sum = arith::AddFOp::create(
      b, loc, var, scalarConstant(b, loc, var.getType(), epsilon));
  return math::RsqrtOp::create(b, loc, sum);
}


/// BatchNormalization (inference): one elementwise generic,
/// (x - mean[c]) * rsqrt(var[c] + eps) * scale[c] + B[c].
struct BatchNormLowering : OpConversionPattern<kiln::BatchNormalizationOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(kiln::BatchNormalizationOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (op.getTrainingMode() != 0)
      return unsupported(op, "training_mode = 1 (inference only)");
    Location loc = op.getLoc();
    MLIRContext *context = rewriter.getContext();
    Value x = adaptor.getX();
    auto type = tensorType(x);
    unsigned rank = type.getRank();
    Type elementType = type.getElementType(), ct = computeType(elementType);
    double epsilon = op.getEpsilon().convertToDouble();
    AffineMap id = AffineMap::getMultiDimIdentityMap(rank, context);
    AffineMap ch = channelMap(rank, context);
    Value result = buildGeneric(
        rewriter, loc,
        {x, adaptor.getScale(), adaptor.getB(), adaptor.getInputMean(),
         adaptor.getInputVar()},
        emptyTensor(rewriter, loc, type), {id, ch, ch, ch, ch, id},
        SmallVector<IteratorType>(rank, IteratorType::parallel),
        [&](OpBuilder &b, Location l, ValueRange args) {
          auto ext = [&](Value v) { return extendScalar(b, l, v, ct); };
          Value centered = arith::SubFOp::create(b, l, ext(args[0]),
                                                 ext(args[3]));
          Value y = arith::MulFOp::create(
              b, l, centered, invStdDev(b, l, ext(args[4]), epsilon));
          y = arith::MulFOp::create(b, l, y, ext(args[1]));
          y = arith::AddFOp::create(b, l, y, ext(args[2]));
          return truncateScalar(b, l, y, elementType);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// Applies (x - mean) * rsqrt(var + eps) * scale + bias over the loops of
/// x's shape; `statsMap` reads mean/var, `scaleMap`/`biasMap` the affine
/// parameters (bias optional).
Value normalizeApply(OpBuilder &b, Location loc, Value x, Value mean,
                     Value var, AffineMap statsMap, Value scale,
                     AffineMap scaleMap, Value bias, AffineMap biasMap,
                     double epsilon, Type ct, Type resultElement) {
  MLIRContext *context = b.getContext();
  auto type = tensorType(x);
  unsigned rank = type.getRank();
  AffineMap id = AffineMap::getMultiDimIdentityMap(rank, context);
  SmallVector<Value> inputs{x, mean, var};
  SmallVector<AffineMap> maps{id, statsMap, statsMap};
  if (scale) {
    inputs.push_back(scale);
    maps.push_back(scaleMap);
  }
  if (bias) {
    inputs.push_back(bias);
    maps.push_back(biasMap);
  }
  maps.push_back(id);
  return buildGeneric(
      b, loc, inputs, emptyTensor(b, loc, type.clone(resultElement)), maps,
      SmallVector<IteratorType>(rank, IteratorType::parallel),
      [&](OpBuilder &nb, Location l, ValueRange args) {
        Value centered = arith::SubFOp::create(
            nb, l, extendScalar(nb, l, args[0], ct), args[1]);
        Value y = arith::MulFOp::create(nb, l, centered,
                                        invStdDev(nb, l, args[2], epsilon));
        unsigned next = 3;
        if (scale) {
          Value sv = args[next++];
          y = arith::MulFOp::create(nb, l, y, extendScalar(nb, l, sv, ct));
        }
        if (bias) {
          Value bv = args[next++];
          y = arith::AddFOp::create(nb, l, y, extendScalar(nb, l, bv, ct));
        }
        return truncateScalar(nb, l, y, resultElement);
      });
}

/// InstanceNormalization: statistics over the spatial dims per (n, c).
struct InstanceNormLowering
    : OpConversionPattern<kiln::InstanceNormalizationOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(kiln::InstanceNormalizationOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *context = rewriter.getContext();
    Value x = adaptor.getInput();
    auto type = tensorType(x);
    unsigned rank = type.getRank();
    Type elementType = type.getElementType(), ct = computeType(elementType);
    SmallVector<bool> reduced(rank, true);
    reduced[0] = reduced[1] = false;
    auto [mean, var] = meanAndVariance(
        rewriter, loc, x, AffineMap::getMultiDimIdentityMap(rank, context),
        type.getShape(), reduced, ct);
    SmallVector<bool> keep{true, true};
    keep.resize(rank, false);
    AffineMap ch = channelMap(rank, context);
    rewriter.replaceOp(
        op, normalizeApply(rewriter, loc, x, mean, var,
                           selectMap(rank, keep, context), adaptor.getScale(),
                           ch, adaptor.getB(), ch,
                           op.getEpsilon().convertToDouble(), ct,
                           elementType));
    return success();
  }
};

/// The float type of an ONNX stash_type code, or null.
Type stashType(MLIRContext *context, int64_t code) {
  switch (code) {
  case 1:
    return Float32Type::get(context);
  case 10:
    return Float16Type::get(context);
  case 11:
    return Float64Type::get(context);
  case 16:
    return BFloat16Type::get(context);
  default:
    return nullptr;
  }
}

/// LayerNormalization: statistics over the dims from `axis` in the stash
/// type (the Mean/InvStdDev outputs' element type), Scale and B broadcast
/// against X's trailing dims.
struct LayerNormLowering : OpConversionPattern<kiln::LayerNormalizationOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(kiln::LayerNormalizationOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *context = rewriter.getContext();
    Value x = adaptor.getX();
    auto type = tensorType(x);
    int64_t rank = type.getRank();
    int64_t axis = normalizeAxis(op.getAxis(), rank);
    Type elementType = type.getElementType();
    auto meanType = cast<RankedTensorType>(
        getTypeConverter()->convertType(op.getMean().getType()));
    auto invType = cast<RankedTensorType>(
        getTypeConverter()->convertType(op.getInvStdDev().getType()));
    // Compute in the stash type, but never below f32.
    Type ct = computeType(meanType.getElementType());
    if (ct.getIntOrFloatBitWidth() < elementType.getIntOrFloatBitWidth())
      ct = elementType;
    SmallVector<bool> reduced(rank, false);
    for (int64_t i = axis; i < rank; ++i)
      reduced[i] = true;
    auto [mean, var] = meanAndVariance(
        rewriter, loc, x, AffineMap::getMultiDimIdentityMap(rank, context),
        type.getShape(), reduced, ct);
    SmallVector<bool> keep;
    for (bool r : reduced)
      keep.push_back(!r);
    AffineMap statsMap = selectMap(rank, keep, context);
    Value scale = adaptor.getScale(), bias = adaptor.getB();
    double epsilon = op.getEpsilon().convertToDouble();
    Value y = normalizeApply(
        rewriter, loc, x, mean, var, statsMap, scale,
        broadcastMap(tensorType(scale).getShape(), type.getShape(), context),
        isNone(bias) ? Value() : bias,
        isNone(bias) ? AffineMap()
                     : broadcastMap(tensorType(bias).getShape(),
                                    type.getShape(), context),
        epsilon, ct, elementType);
    // Mean and InvStdDev keep the normalized dims as 1s.
    Value meanOut = reshapeTo(
        rewriter, loc,
        truncateTensor(rewriter, loc, mean, meanType.getElementType()),
        meanType.getShape());
    Value inv = buildElementwise(
        rewriter, loc, var, tensorType(var).clone(invType.getElementType()),
        [&](OpBuilder &b, Location l, ValueRange args) {
          return truncateScalar(b, l, invStdDev(b, l, args[0], epsilon),
                                invType.getElementType());
        });
    rewriter.replaceOp(
        op, {y, meanOut, reshapeTo(rewriter, loc, inv, invType.getShape())});
    return success();
  }
};

/// GroupNormalization (opset 21): X viewed as [N, G, C/G, D...], statistics
/// over [C/G, D...], the per-channel scale and bias viewed as [G, C/G].
struct GroupNormLowering : OpConversionPattern<kiln::GroupNormalizationOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(kiln::GroupNormalizationOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *context = rewriter.getContext();
    Value x = adaptor.getX();
    auto type = tensorType(x);
    int64_t groups = op.getNumGroups(), channels = type.getDimSize(1);
    if (groups < 1 || channels % groups != 0)
      return unsupported(op, "num_groups not dividing the channels");
    if (tensorType(adaptor.getScale()).getNumElements() != channels)
      return unsupported(op, "scale with num_groups elements (opset 18 form)");
    Type elementType = type.getElementType();
    Type stash = stashType(context, op.getStashType());
    if (!stash)
      return unsupported(op, "stash_type " +
                                 std::to_string(op.getStashType()));
    Type ct = computeType(stash);
    if (ct.getIntOrFloatBitWidth() < elementType.getIntOrFloatBitWidth())
      ct = elementType;
    SmallVector<int64_t> shape{type.getDimSize(0), groups, channels / groups};
    shape.append(type.getShape().begin() + 2, type.getShape().end());
    unsigned rank = shape.size();
    Value xg = reshapeTo(rewriter, loc, x, shape);
    SmallVector<bool> reduced(rank, true);
    reduced[0] = reduced[1] = false;
    auto [mean, var] = meanAndVariance(
        rewriter, loc, xg, AffineMap::getMultiDimIdentityMap(rank, context),
        shape, reduced, ct);
    SmallVector<bool> keepStats(rank, false), keepParams(rank, false);
    keepStats[0] = keepStats[1] = true;
    keepParams[1] = keepParams[2] = true;
    Value scale = reshapeTo(rewriter, loc, adaptor.getScale(),
                            {groups, channels / groups});
    Value bias = reshapeTo(rewriter, loc, adaptor.getBias(),
                           {groups, channels / groups});
    AffineMap paramMap = selectMap(rank, keepParams, context);
    Value y = normalizeApply(rewriter, loc, xg, mean, var,
                             selectMap(rank, keepStats, context), scale,
                             paramMap, bias, paramMap,
                             op.getEpsilon().convertToDouble(), ct,
                             elementType);
    rewriter.replaceOp(op, reshapeTo(rewriter, loc, y, type.getShape()));
    return success();
  }
};

/// LpNormalization: x / ||x||_p along `axis` (p 1 or 2).
struct LpNormLowering : OpConversionPattern<kiln::LpNormalizationOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(kiln::LpNormalizationOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = adaptor.getInput();
    auto type = tensorType(x);
    int64_t rank = type.getRank();
    int64_t p = op.getP();
    if (p != 1 && p != 2)
      return unsupported(op, "p = " + std::to_string(p) + " (1 or 2)");
    int64_t axis = normalizeAxis(op.getAxis(), rank);
    Type elementType = type.getElementType(), ct = computeType(elementType);
    AxisMaps maps(rank, {axis}, rewriter.getContext());
    Value norm = reduceDims(
        rewriter, loc, x, {maps.full}, type.getShape(), maps.reducedDims, ct,
        scalarConstant(rewriter, loc, ct, 0),
        [&](OpBuilder &b, Location l, ValueRange args) {
          return poolCombine(b, l, PoolKind::Lp, args[0], args[1], false, p);
        });
    Value result = buildGeneric(
        rewriter, loc, {x, norm}, emptyTensor(rewriter, loc, type),
        {maps.full, maps.reduced, maps.full}, maps.parallelIterators,
        [&](OpBuilder &b, Location l, ValueRange args) {
          Value y = arith::DivFOp::create(b, l,
                                          extendScalar(b, l, args[0], ct),
                                          lpRoot(b, l, args[1], p));
          return truncateScalar(b, l, y, elementType);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// MeanVarianceNormalization: (x - mean) / (sqrt(var) + 1e-9) over `axes`,
/// as ONNX's function body defines it.
struct MVNLowering : OpConversionPattern<kiln::MeanVarianceNormalizationOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(kiln::MeanVarianceNormalizationOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = adaptor.getX();
    auto type = tensorType(x);
    int64_t rank = type.getRank();
    Type elementType = type.getElementType(), ct = computeType(elementType);
    SmallVector<int64_t> axes;
    for (int64_t a : op.getAxes())
      axes.push_back(normalizeAxis(a, rank));
    AxisMaps maps(rank, axes, rewriter.getContext());
    auto [mean, var] = meanAndVariance(rewriter, loc, x, maps.full,
                                       type.getShape(), maps.reducedDims, ct);
    Value result = buildGeneric(
        rewriter, loc, {x, mean, var}, emptyTensor(rewriter, loc, type),
        {maps.full, maps.reduced, maps.reduced, maps.full},
        maps.parallelIterators,
        [&](OpBuilder &b, Location l, ValueRange args) {
          Value centered = arith::SubFOp::create(
              b, l, extendScalar(b, l, args[0], ct), args[1]);
          Value std = arith::AddFOp::create(
              b, l, math::SqrtOp::create(b, l, args[2]),
              scalarConstant(b, l, ct, 1e-9));
          return truncateScalar(
              b, l, arith::DivFOp::create(b, l, centered, std), elementType);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// LRN: the sum of squares over the channel window [c - floor((size-1)/2),
/// c + ceil((size-1)/2)] (X zero-padded along C), then
/// x / (bias + alpha / size * sum)^beta.
struct LRNLowering : OpConversionPattern<kiln::LRNOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(kiln::LRNOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *context = rewriter.getContext();
    Value x = adaptor.getX();
    auto type = tensorType(x);
    unsigned rank = type.getRank();
    int64_t size = op.getSize();
    Type elementType = type.getElementType(), ct = computeType(elementType);
    int64_t before = (size - 1) / 2, after = size - 1 - before;
    SmallVector<int64_t> low(rank, 0), high(rank, 0);
    low[1] = before;
    high[1] = after;
    Value padded = padTensor(rewriter, loc, x, low, high,
                             scalarConstant(rewriter, loc, elementType, 0));
    // Loops: x's dims, then the window k.
    unsigned numLoops = rank + 1;
    SmallVector<AffineExpr> xExprs;
    for (unsigned i = 0; i < rank; ++i)
      xExprs.push_back(getAffineDimExpr(i, context));
    xExprs[1] = xExprs[1] + getAffineDimExpr(rank, context);
    SmallVector<bool> reduced(numLoops, false);
    reduced[rank] = true;
    SmallVector<int64_t> loopShape(type.getShape());
    loopShape.push_back(size);
    Value window = emptyTensor(rewriter, loc,
                               RankedTensorType::get({size}, elementType));
    Value sum = reduceDims(
        rewriter, loc, {padded, window},
        {AffineMap::get(numLoops, 0, xExprs, context),
         windowMap(numLoops, rank, 1, context)},
        loopShape, reduced, ct, scalarConstant(rewriter, loc, ct, 0),
        [&](OpBuilder &b, Location l, ValueRange args) {
          Value v = extendScalar(b, l, args[0], ct);
          return arith::AddFOp::create(b, l, args[2],
                                       arith::MulFOp::create(b, l, v, v));
        });
    double alpha = op.getAlpha().convertToDouble();
    double beta = op.getBeta().convertToDouble();
    double bias = op.getBias().convertToDouble();
    Value result = buildElementwise(
        rewriter, loc, {x, sum}, type,
        [&](OpBuilder &b, Location l, ValueRange args) {
          Value scaled = arith::MulFOp::create(
              b, l, args[1], scalarConstant(b, l, ct, alpha / size));
          Value base = arith::AddFOp::create(b, l, scaled,
                                             scalarConstant(b, l, ct, bias));
          Value denom = math::PowFOp::create(b, l, base,
                                             scalarConstant(b, l, ct, beta));
          return truncateScalar(
              b, l,
              arith::DivFOp::create(b, l, extendScalar(b, l, args[0], ct),
                                    denom),
              elementType);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// Dropout in inference: the data itself and an all-true mask. A
/// training_mode that is not a constant false is rejected.
struct DropoutLowering : OpConversionPattern<kiln::DropoutOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(kiln::DropoutOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value training = adaptor.getTrainingMode();
    if (!isNone(training)) {
      FailureOr<SmallVector<int64_t>> values = constantInts(training);
      if (failed(values))
        return unsupported(op, "training_mode is not a constant (inference "
                               "only)");
      if (llvm::any_of(*values, [](int64_t v) { return v != 0; }))
        return unsupported(op, "training_mode = true (inference only)");
    }
    Location loc = op.getLoc();
    auto maskType = cast<RankedTensorType>(
        getTypeConverter()->convertType(op.getMask().getType()));
    Value mask = filledTensor(rewriter, loc, maskType,
                              arith::ConstantOp::create(
                                  rewriter, loc, rewriter.getBoolAttr(true)));
    rewriter.replaceOp(op, {adaptor.getData(), mask});
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Pad
//===----------------------------------------------------------------------===//

/// The index read for output position `src` (already shifted by the begin
/// pad, so in [0, n) inside the data) along a dim of `n` elements in Pad
/// mode `mode`; constant mode clamps (the caller selects the pad value).
Value sourceIndex(OpBuilder &b, Location l, StringRef mode, Value src,
                  int64_t n) {
  auto c = [&](int64_t v) { return arith::ConstantIndexOp::create(b, l, v); };
  auto positiveMod = [&](Value v, int64_t m) -> Value {
    Value r = arith::RemSIOp::create(b, l, v, c(m));
    r = arith::AddIOp::create(b, l, r, c(m));
    return arith::RemSIOp::create(b, l, r, c(m));
  };
  if (mode == "edge" || mode == "constant") {
    src = arith::MaxSIOp::create(b, l, src, c(0));
    return arith::MinSIOp::create(b, l, src, c(n - 1));
  }
  if (mode == "wrap")
    return positiveMod(src, n);
  if (n == 1)
    return c(0);
  // Reflect with period 2(n-1): m < n reads m, else 2(n-1) - m.
  Value m = positiveMod(src, 2 * (n - 1));
  Value mirrored = arith::SubIOp::create(b, l, c(2 * (n - 1)), m);
  Value inRange =
      arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt, m, c(n));
  return arith::SelectOp::create(b, l, inRange, m, mirrored);
}

/// Pad with pads computed at run time (the result shape is static, so only
/// the split between begin and end is unknown): a generic over the result
/// reading data at (index - begin pad) per dim, mapped back by the mode;
/// constant mode yields the pad value outside the data (negative pads crop
/// the same way).
Value lowerRuntimePads(kiln::PadOp op, OpBuilder &rewriter, Value data,
                       RankedTensorType resultType, Value pads,
                       ArrayRef<int64_t> axes, Value padValue) {
  Location loc = op.getLoc();
  auto type = tensorType(data);
  int64_t rank = type.getRank();
  StringRef mode = op.getMode();
  return buildGeneric(
      rewriter, loc, {}, emptyTensor(rewriter, loc, resultType),
      {AffineMap::getMultiDimIdentityMap(rank, rewriter.getContext())},
      SmallVector<IteratorType>(rank, IteratorType::parallel),
      [&](OpBuilder &b, Location l, ValueRange) -> Value {
        SmallVector<Value> indices;
        Value inside;
        for (int64_t i = 0; i < rank; ++i) {
          Value index = linalg::IndexOp::create(b, l, i);
          const int64_t *pos = llvm::find(axes, i);
          if (pos == axes.end()) {
            indices.push_back(index);
            continue;
          }
          Value begin = tensor::ExtractOp::create(
              b, l, pads,
              ValueRange{arith::ConstantIndexOp::create(b, l, pos - axes.begin())});
          begin = arith::IndexCastOp::create(b, l, b.getIndexType(), begin);
          Value src = arith::SubIOp::create(b, l, index, begin);
          int64_t n = type.getDimSize(i);
          if (mode == "constant") {
            Value geZero = arith::CmpIOp::create(
                b, l, arith::CmpIPredicate::sge, src,
                arith::ConstantIndexOp::create(b, l, 0));
            Value ltN = arith::CmpIOp::create(
                b, l, arith::CmpIPredicate::slt, src,
                arith::ConstantIndexOp::create(b, l, n));
            Value ok = arith::AndIOp::create(b, l, geZero, ltN);
            inside = inside ? arith::AndIOp::create(b, l, inside, ok) : ok;
          }
          indices.push_back(sourceIndex(b, l, mode, src, n));
        }
        Value value = tensor::ExtractOp::create(b, l, data, indices);
        if (inside)
          value = arith::SelectOp::create(b, l, inside, value, padValue);
        return value;
      });
}

/// Pad: pads, axes (and constant_value, which may be computed) from the
/// operands. Negative pads crop first (tensor.extract_slice); constant mode
/// is a tensor.pad, reflect/edge/wrap a generic that computes the source
/// index of every output element and reads it with tensor.extract.
struct PadLowering : OpConversionPattern<kiln::PadOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(kiln::PadOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value data = adaptor.getData();
    auto type = tensorType(data);
    int64_t rank = type.getRank();
    auto resultType = cast<RankedTensorType>(
        getTypeConverter()->convertType(op.getType()));
    SmallVector<int64_t> axes;
    if (isNone(adaptor.getAxes())) {
      for (int64_t i = 0; i < rank; ++i)
        axes.push_back(i);
    } else {
      FailureOr<SmallVector<int64_t>> values = constantInts(adaptor.getAxes());
      if (failed(values))
        return unsupported(op, "axes is not a constant");
      for (int64_t a : *values)
        axes.push_back(normalizeAxis(a, rank));
    }
    StringRef mode = op.getMode();
    if (mode != "constant" && mode != "reflect" && mode != "edge" &&
        mode != "wrap")
      return unsupported(op, "mode '" + mode + "'");
    Type elementType = type.getElementType();
    Value padValue;
    Value constant = adaptor.getConstantValue();
    if (isNone(constant) || tensorType(constant).getNumElements() == 0) {
      padValue = scalarConstant(rewriter, loc, elementType, 0);
    } else {
      SmallVector<Value> zeros(tensorType(constant).getRank(),
                               arith::ConstantIndexOp::create(rewriter, loc, 0));
      padValue = tensor::ExtractOp::create(rewriter, loc, constant, zeros);
    }
    FailureOr<SmallVector<int64_t>> pads = constantInts(adaptor.getPads());
    if (failed(pads)) {
      if (tensorType(adaptor.getPads()).getNumElements() !=
          static_cast<int64_t>(2 * axes.size()))
        return unsupported(op, "pads of the wrong length");
      rewriter.replaceOp(op, lowerRuntimePads(op, rewriter, data, resultType,
                                              adaptor.getPads(), axes,
                                              padValue));
      return success();
    }
    if (pads->size() != 2 * axes.size())
      return unsupported(op, "pads has " + std::to_string(pads->size()) +
                                 " values for " + std::to_string(axes.size()) +
                                 " axes");
    SmallVector<int64_t> low(rank, 0), high(rank, 0);
    for (auto [i, a] : llvm::enumerate(axes)) {
      low[a] = (*pads)[i];
      high[a] = (*pads)[axes.size() + i];
    }
    // Crop negative pads.
    SmallVector<int64_t> offsets(rank, 0), sizes(type.getShape()),
        strides(rank, 1);
    bool crop = false;
    for (int64_t i = 0; i < rank; ++i) {
      if (low[i] < 0) {
        offsets[i] = -low[i];
        sizes[i] += low[i];
        low[i] = 0;
        crop = true;
      }
      if (high[i] < 0) {
        sizes[i] += high[i];
        high[i] = 0;
        crop = true;
      }
    }
    if (crop)
      data = tensor::ExtractSliceOp::create(
          rewriter, loc, type.clone(sizes), data,
          ValueRange{}, ValueRange{}, ValueRange{}, offsets, sizes, strides);
    if (mode == "constant") {
      rewriter.replaceOp(op, padTensor(rewriter, loc, data, low, high,
                                       padValue));
      return success();
    }
    for (int64_t i = 0; i < rank; ++i)
      if ((low[i] || high[i]) && sizes[i] == 0)
        return unsupported(op, "padding an empty dim in mode '" + mode + "'");
    Value result = buildGeneric(
        rewriter, loc, {}, emptyTensor(rewriter, loc, resultType),
        {AffineMap::getMultiDimIdentityMap(rank, rewriter.getContext())},
        SmallVector<IteratorType>(rank, IteratorType::parallel),
        [&](OpBuilder &b, Location l, ValueRange) {
          SmallVector<Value> indices;
          for (int64_t i = 0; i < rank; ++i) {
            Value index = linalg::IndexOp::create(b, l, i);
            if (low[i] == 0 && high[i] == 0) {
              indices.push_back(index);
              continue;
            }
            Value src = arith::SubIOp::create(
                b, l, index, arith::ConstantIndexOp::create(b, l, low[i]));
            indices.push_back(sourceIndex(b, l, mode, src, sizes[i]));
          }
          return tensor::ExtractOp::create(b, l, data, indices);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Resize
//===----------------------------------------------------------------------===//

/// Resize, nearest and linear: a generic over the result computing, per
/// resized axis, the source coordinate from the output index in f32 (as
/// ONNX Runtime does) with the coordinate_transformation_mode, then either
/// the nearest index (nearest_mode, clamped) or the two neighbours and their
/// weights (the coordinate clamped to the input), reading X with
/// tensor.extract. Scales may be run-time values (read from the tensor);
/// with sizes the scale is the static output/input ratio (or the one
/// keep_aspect_ratio_policy picks from constant sizes).
struct ResizeLowering : OpConversionPattern<kiln::ResizeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(kiln::ResizeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = adaptor.getX();
    auto xType = tensorType(x);
    auto resultType = cast<RankedTensorType>(
        getTypeConverter()->convertType(op.getType()));
    int64_t rank = xType.getRank();
    StringRef mode = op.getMode();
    StringRef ctm = op.getCoordinateTransformationMode();
    StringRef nearestMode = op.getNearestMode();
    if (mode != "nearest" && mode != "linear" && mode != "cubic")
      return unsupported(op, "mode '" + mode + "'");
    double cubicA = op.getCubicCoeffA().convertToDouble();
    bool excludeOutside = op.getExcludeOutside() != 0;
    if (op.getAntialias())
      return unsupported(op, "antialias = 1");
    if (!llvm::is_contained({"half_pixel", "pytorch_half_pixel",
                             "align_corners", "asymmetric",
                             "half_pixel_symmetric", "tf_crop_and_resize"},
                            ctm))
      return unsupported(op, "coordinate_transformation_mode '" + ctm + "'");
    bool crop = ctm == "tf_crop_and_resize";
    Value roi = adaptor.getRoi();
    if (crop && isNone(roi))
      return unsupported(op, "tf_crop_and_resize without roi");
    Type elementType = resultType.getElementType();
    if (mode != "nearest" && !isa<FloatType>(elementType))
      return unsupported(op, mode + " mode on an integer tensor");

    SmallVector<int64_t> axes;
    if (auto attr = op.getAxes()) {
      for (int64_t a : *attr)
        axes.push_back(normalizeAxis(a, rank));
    } else {
      for (int64_t i = 0; i < rank; ++i)
        axes.push_back(i);
    }
    Value scales = adaptor.getScales();
    bool useScales =
        !isNone(scales) && tensorType(scales).getNumElements() != 0;
    Value sizes = adaptor.getSizes();
    if (!useScales && isNone(sizes))
      return unsupported(op, "neither scales nor sizes");
    if (useScales &&
        tensorType(scales).getNumElements() != (int64_t)axes.size())
      return unsupported(op, "scales has a length other than the axes'");
    // With sizes: the per-axis ratio, or one ratio for all axes.
    SmallVector<float> staticScale(rank, 1.0f);
    if (!useScales) {
      StringRef policy = op.getKeepAspectRatioPolicy();
      std::optional<float> common;
      if (policy != "stretch") {
        FailureOr<SmallVector<int64_t>> values = constantInts(sizes);
        if (failed(values) || values->size() != axes.size())
          return unsupported(op, "keep_aspect_ratio_policy with run-time "
                                 "sizes");
        for (auto [k, a] : llvm::enumerate(axes)) {
          float r = static_cast<float>((*values)[k]) /
                    static_cast<float>(xType.getDimSize(a));
          common = !common ? r
                   : policy == "not_larger" ? std::min(*common, r)
                                            : std::max(*common, r);
        }
      }
      for (int64_t a : axes)
        staticScale[a] =
            common ? *common
                   : static_cast<float>(resultType.getDimSize(a)) /
                         static_cast<float>(xType.getDimSize(a));
    }

    // Axes mapped one to one: not resized, with a scale known to be 1 (or
    // irrelevant, as with align_corners).
    SmallVector<bool> identity(rank, true);
    DenseElementsAttr scaleValues;
    if (useScales) {
      if (auto constant = scales.getDefiningOp<kiln::ConstantOp>())
        scaleValues = dyn_cast<DenseElementsAttr>(constant.getValue());
      else
        matchPattern(scales, m_Constant(&scaleValues));
    }
    for (auto [k, a] : llvm::enumerate(axes)) {
      bool unitScale = useScales ? scaleValues &&
                                       scaleValues.getValues<APFloat>()[k]
                                               .convertToDouble() == 1.0
                                 : staticScale[a] == 1.0f;
      identity[a] = xType.getDimSize(a) == resultType.getDimSize(a) &&
                    (unitScale || ctm == "align_corners");
      // A crop reads at the roi, not the identity (unless there is only
      // element 0 to read).
      if (crop)
        identity[a] = xType.getDimSize(a) == 1 && resultType.getDimSize(a) == 1;
    }
    SmallVector<int64_t> scaleIndex(rank, -1);
    for (auto [k, a] : llvm::enumerate(axes))
      scaleIndex[a] = k;

    Type ct = isa<FloatType>(elementType) ? computeType(elementType)
                                          : rewriter.getF32Type();
    Value result = buildGeneric(
        rewriter, loc, {}, emptyTensor(rewriter, loc, resultType),
        {AffineMap::getMultiDimIdentityMap(rank, rewriter.getContext())},
        SmallVector<IteratorType>(rank, IteratorType::parallel),
        [&](OpBuilder &b, Location l, ValueRange) -> Value {
          Type f32 = b.getF32Type();
          auto cf = [&](double v) { return scalarConstant(b, l, f32, v); };
          auto ci = [&](int64_t v) {
            return arith::ConstantIndexOp::create(b, l, v);
          };
          // Per axis: the nearest index, or the taps and their weights.
          SmallVector<Value> nearest(rank);
          SmallVector<SmallVector<Value>> tapIndex(rank), tapWeight(rank);
          SmallVector<int64_t> tapAxes;
          Value outside; // tf_crop_and_resize: extrapolate
          auto extrapolate = [&](Value v) -> Value {
            if (!outside)
              return v;
            Value fill = scalarConstant(
                b, l, v.getType(),
                op.getExtrapolationValue().convertToDouble());
            return arith::SelectOp::create(b, l, outside, fill, v);
          };
          for (int64_t a = 0; a < rank; ++a) {
            Value index = linalg::IndexOp::create(b, l, a);
            if (identity[a]) {
              nearest[a] = index;
              continue;
            }
            int64_t in = xType.getDimSize(a), out = resultType.getDimSize(a);
            Value scale;
            if (useScales)
              scale = tensor::ExtractOp::create(
                  b, l, scales, ValueRange{ci(scaleIndex[a])});
            else
              scale = cf(staticScale[a]);
            Value xo = arith::UIToFPOp::create(
                b, l, f32, arith::IndexCastOp::create(b, l, b.getI64Type(),
                                                      index));
            Value coord;
            auto halfPixel = [&]() -> Value {
              Value v = arith::AddFOp::create(b, l, xo, cf(0.5));
              v = arith::DivFOp::create(b, l, v, scale);
              return arith::SubFOp::create(b, l, v, cf(0.5));
            };
            // ONNX's length_resized: in * scale, unrounded (with sizes,
            // the output size).
            auto resizedLength = [&]() -> Value {
              return arith::MulFOp::create(b, l, cf(in), scale);
            };
            if (ctm == "half_pixel") {
              coord = halfPixel();
            } else if (ctm == "pytorch_half_pixel") {
              Value longer = arith::CmpFOp::create(
                  b, l, arith::CmpFPredicate::OGT, resizedLength(), cf(1));
              coord = arith::SelectOp::create(b, l, longer, halfPixel(),
                                              cf(0));
            } else if (ctm == "align_corners") {
              Value length = resizedLength();
              Value one = arith::CmpFOp::create(
                  b, l, arith::CmpFPredicate::OEQ, length, cf(1));
              Value ratio = arith::DivFOp::create(
                  b, l, cf(in - 1), arith::SubFOp::create(b, l, length, cf(1)));
              coord = arith::SelectOp::create(
                  b, l, one, cf(0), arith::MulFOp::create(b, l, xo, ratio));
            } else if (ctm == "asymmetric") {
              coord = arith::DivFOp::create(b, l, xo, scale);
            } else if (crop) {
              // start * (in - 1) + x * (end - start) * (in - 1) /
              // (length - 1), or the roi's centre when length <= 1; a
              // coordinate outside the input yields extrapolation_value.
              int64_t k = scaleIndex[a];
              Value start = tensor::ExtractOp::create(b, l, roi,
                                                      ValueRange{ci(k)});
              Value end = tensor::ExtractOp::create(
                  b, l, roi, ValueRange{ci(k + (int64_t)axes.size())});
              start = extendScalar(b, l, start, f32);
              end = extendScalar(b, l, end, f32);
              Value length = resizedLength();
              Value span = arith::MulFOp::create(
                  b, l, arith::SubFOp::create(b, l, end, start), cf(in - 1));
              Value stepped = arith::DivFOp::create(
                  b, l, arith::MulFOp::create(b, l, xo, span),
                  arith::SubFOp::create(b, l, length, cf(1)));
              Value strided = arith::AddFOp::create(
                  b, l, arith::MulFOp::create(b, l, start, cf(in - 1)),
                  stepped);
              Value centre = arith::MulFOp::create(
                  b, l, arith::MulFOp::create(
                            b, l, arith::AddFOp::create(b, l, start, end),
                            cf(0.5)),
                  cf(in - 1));
              Value longer = arith::CmpFOp::create(
                  b, l, arith::CmpFPredicate::OGT, length, cf(1));
              coord = arith::SelectOp::create(b, l, longer, strided, centre);
              Value below = arith::CmpFOp::create(
                  b, l, arith::CmpFPredicate::OLT, coord, cf(0));
              Value above = arith::CmpFOp::create(
                  b, l, arith::CmpFPredicate::OGT, coord, cf(in - 1));
              Value out = arith::OrIOp::create(b, l, below, above);
              outside = outside ? arith::OrIOp::create(b, l, outside, out)
                                : out;
            } else {
              // half_pixel_symmetric
              // offset = in/2 * (1 - out / (scale * in))
              Value adjustment = arith::DivFOp::create(
                  b, l, cf(out),
                  arith::MulFOp::create(b, l, scale, cf(in)));
              Value offset = arith::MulFOp::create(
                  b, l, cf(in / 2.0),
                  arith::SubFOp::create(b, l, cf(1), adjustment));
              coord = arith::AddFOp::create(b, l, offset, halfPixel());
            }
            auto toIndex = [&](Value v) -> Value {
              Value i = arith::FPToSIOp::create(b, l, b.getI64Type(), v);
              i = arith::IndexCastOp::create(b, l, b.getIndexType(), i);
              i = arith::MaxSIOp::create(b, l, i, ci(0));
              return arith::MinSIOp::create(b, l, i, ci(in - 1));
            };
            if (mode == "nearest") {
              Value r;
              if (nearestMode == "round_prefer_floor")
                r = math::CeilOp::create(
                    b, l, arith::SubFOp::create(b, l, coord, cf(0.5)));
              else if (nearestMode == "round_prefer_ceil")
                r = math::FloorOp::create(
                    b, l, arith::AddFOp::create(b, l, coord, cf(0.5)));
              else if (nearestMode == "floor")
                r = math::FloorOp::create(b, l, coord);
              else
                r = math::CeilOp::create(b, l, coord);
              nearest[a] = toIndex(r);
              continue;
            }
            auto toCt = [&](Value v) -> Value {
              return ct == f32 ? v : (Value)arith::ExtFOp::create(b, l, ct, v);
            };
            if (mode == "linear") {
              // The coordinate clamped to the input; the two neighbours.
              coord = arith::MaximumFOp::create(b, l, coord, cf(0));
              coord = arith::MinimumFOp::create(b, l, coord, cf(in - 1));
              Value floor = math::FloorOp::create(b, l, coord);
              Value low = toIndex(floor);
              Value high = arith::MinSIOp::create(
                  b, l, arith::AddIOp::create(b, l, low, ci(1)), ci(in - 1));
              Value w = arith::SubFOp::create(b, l, coord, floor);
              tapIndex[a] = {low, high};
              tapWeight[a] = {toCt(arith::SubFOp::create(b, l, cf(1), w)),
                              toCt(w)};
            } else {
              // Cubic: taps floor - 1 .. floor + 2 read edge-clamped, with
              // Keys' coefficients for cubic_coeff_a (ONNX Runtime's
              // formulas); exclude_outside zeroes the taps outside the
              // input and renormalizes.
              Value floor = math::FloorOp::create(b, l, coord);
              Value t = arith::SubFOp::create(b, l, coord, floor);
              Value base = arith::IndexCastOp::create(
                  b, l, b.getIndexType(),
                  arith::FPToSIOp::create(b, l, b.getI64Type(), floor));
              auto far = [&](Value d) -> Value { // |d| in [1, 2]
                // ((A d - 5A) d + 8A) d - 4A
                Value v = arith::SubFOp::create(
                    b, l, arith::MulFOp::create(b, l, cf(cubicA), d),
                    cf(5 * cubicA));
                v = arith::AddFOp::create(b, l,
                                          arith::MulFOp::create(b, l, v, d),
                                          cf(8 * cubicA));
                return arith::SubFOp::create(
                    b, l, arith::MulFOp::create(b, l, v, d), cf(4 * cubicA));
              };
              auto near = [&](Value d) -> Value { // |d| in [0, 1]
                // ((A + 2) d - (A + 3)) d d + 1
                Value v = arith::SubFOp::create(
                    b, l, arith::MulFOp::create(b, l, cf(cubicA + 2), d),
                    cf(cubicA + 3));
                v = arith::MulFOp::create(
                    b, l, arith::MulFOp::create(b, l, v, d), d);
                return arith::AddFOp::create(b, l, v, cf(1));
              };
              Value oneMinus = arith::SubFOp::create(b, l, cf(1), t);
              SmallVector<Value> coeffs{
                  far(arith::AddFOp::create(b, l, t, cf(1))), near(t),
                  near(oneMinus),
                  far(arith::AddFOp::create(b, l, oneMinus, cf(1)))};
              SmallVector<Value> indices;
              for (int64_t j = 0; j < 4; ++j) {
                Value raw = arith::AddIOp::create(b, l, base, ci(j - 1));
                if (excludeOutside) {
                  Value inside = arith::AndIOp::create(
                      b, l,
                      arith::CmpIOp::create(b, l, arith::CmpIPredicate::sge,
                                            raw, ci(0)),
                      arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt,
                                            raw, ci(in)));
                  coeffs[j] =
                      arith::SelectOp::create(b, l, inside, coeffs[j], cf(0));
                }
                Value clamped = arith::MaxSIOp::create(b, l, raw, ci(0));
                indices.push_back(
                    arith::MinSIOp::create(b, l, clamped, ci(in - 1)));
              }
              if (excludeOutside) {
                Value total = coeffs[0];
                for (int64_t j = 1; j < 4; ++j)
                  total = arith::AddFOp::create(b, l, total, coeffs[j]);
                for (Value &c : coeffs)
                  c = arith::DivFOp::create(b, l, c, total);
              }
              tapIndex[a] = indices;
              for (Value c : coeffs)
                tapWeight[a].push_back(toCt(c));
            }
            tapAxes.push_back(a);
          }
          if (mode == "nearest")
            return extrapolate(tensor::ExtractOp::create(b, l, x, nearest));
          // Sum over every combination of the axes' taps.
          int64_t combinations = 1;
          for (int64_t a : tapAxes)
            combinations *= tapIndex[a].size();
          Value sum = scalarConstant(b, l, ct, 0);
          for (int64_t combo = 0; combo < combinations; ++combo) {
            SmallVector<Value> indices(nearest);
            Value weight;
            int64_t rest = combo;
            for (int64_t a : tapAxes) {
              int64_t n = tapIndex[a].size(), tap = rest % n;
              rest /= n;
              indices[a] = tapIndex[a][tap];
              weight = weight ? (Value)arith::MulFOp::create(
                                    b, l, weight, tapWeight[a][tap])
                              : tapWeight[a][tap];
            }
            Value v = extendScalar(
                b, l, tensor::ExtractOp::create(b, l, x, indices), ct);
            if (weight)
              v = arith::MulFOp::create(b, l, v, weight);
            sum = arith::AddFOp::create(b, l, sum, v);
          }
          return extrapolate(truncateScalar(b, l, sum, elementType));
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Einsum
//===----------------------------------------------------------------------===//

/// Einsum: one linalg.generic with a loop per label, the output's labels
/// parallel and the others reductions; each input reads its labels' loops
/// (a label repeated in one input is a diagonal; a size-1 dim against a
/// larger loop broadcasts), and the body accumulates the product.
/// `...` stands for the same right-aligned broadcast dims in every term;
/// without `->` the output is the ellipsis dims then the labels that occur
/// once, in ASCII order (numpy's rule).
struct EinsumLowering : OpConversionPattern<kiln::EinsumOp> {
  using OpConversionPattern::OpConversionPattern;

  /// A term's labels: letters as their char, ellipsis dims as 256 + the
  /// global ellipsis dim. Fails on malformed terms.
  static FailureOr<SmallVector<int>> parseTerm(StringRef term, int64_t rank,
                                               int64_t ellipsisRank) {
    SmallVector<int> labels;
    size_t dots = term.find("...");
    StringRef before = dots == StringRef::npos ? term : term.take_front(dots);
    StringRef after =
        dots == StringRef::npos ? StringRef() : term.drop_front(dots + 3);
    if (after.contains('.') || before.contains('.'))
      return failure();
    for (char c : before) {
      if (!llvm::isAlpha(c))
        return failure();
      labels.push_back(c);
    }
    if (dots != StringRef::npos) {
      int64_t count = rank < 0 ? ellipsisRank
                               : rank - (int64_t)before.size() -
                                     (int64_t)after.size();
      if (count < 0 || count > ellipsisRank)
        return failure();
      for (int64_t j = ellipsisRank - count; j < ellipsisRank; ++j)
        labels.push_back(256 + j);
    }
    for (char c : after) {
      if (!llvm::isAlpha(c))
        return failure();
      labels.push_back(c);
    }
    if (rank >= 0 && (int64_t)labels.size() != rank)
      return failure();
    return labels;
  }

  LogicalResult
  matchAndRewrite(kiln::EinsumOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *context = rewriter.getContext();
    auto resultType = cast<RankedTensorType>(
        getTypeConverter()->convertType(op.getType()));
    std::string equation;
    for (char c : op.getEquation())
      if (!llvm::isSpace(c))
        equation.push_back(c);
    StringRef eq(equation);
    auto [lhs, rhs] = eq.split("->");
    bool explicitOutput = eq.contains("->");
    SmallVector<StringRef> terms;
    lhs.split(terms, ',');
    ValueRange inputs = adaptor.getInputs();
    if (terms.size() != inputs.size())
      return unsupported(op, "equation has " + std::to_string(terms.size()) +
                                 " terms for " +
                                 std::to_string(inputs.size()) + " inputs");
    // The ellipsis rank: the most dims any `...` covers.
    int64_t ellipsisRank = 0;
    for (auto [term, input] : llvm::zip(terms, inputs)) {
      if (!term.contains("..."))
        continue;
      int64_t letters = llvm::count_if(term, llvm::isAlpha);
      ellipsisRank = std::max(ellipsisRank,
                              tensorType(input).getRank() - letters);
    }
    SmallVector<SmallVector<int>> inputLabels;
    llvm::MapVector<int, int64_t> sizes; // label -> loop size, in order
    std::map<int, int> occurrences;
    for (auto [term, input] : llvm::zip(terms, inputs)) {
      auto type = tensorType(input);
      FailureOr<SmallVector<int>> labels =
          parseTerm(term, type.getRank(), ellipsisRank);
      if (failed(labels))
        return unsupported(op, "equation term '" + term +
                                   "' does not match an input of rank " +
                                   std::to_string(type.getRank()));
      for (auto [d, label] : llvm::enumerate(*labels)) {
        int64_t size = type.getDimSize(d);
        auto [it, inserted] = sizes.insert({label, size});
        if (!inserted && it->second != size) {
          if (it->second != 1 && size != 1)
            return unsupported(op, "label sizes " +
                                       std::to_string(it->second) + " and " +
                                       std::to_string(size) + " disagree");
          it->second = std::max(it->second, size);
        }
      }
      SmallVector<int> distinct(*labels);
      llvm::sort(distinct);
      distinct.erase(llvm::unique(distinct), distinct.end());
      for (int label : *labels)
        ++occurrences[label];
      inputLabels.push_back(std::move(*labels));
    }
    SmallVector<int> outputLabels;
    if (explicitOutput) {
      FailureOr<SmallVector<int>> labels =
          parseTerm(rhs, -1, ellipsisRank);
      if (failed(labels))
        return unsupported(op, "output term '" + rhs + "'");
      outputLabels = std::move(*labels);
    } else {
      for (int64_t j = 0; j < ellipsisRank; ++j)
        outputLabels.push_back(256 + j);
      SmallVector<int> once;
      for (auto [label, count] : occurrences)
        if (label < 256 && count == 1)
          once.push_back(label);
      llvm::sort(once);
      outputLabels.append(once);
    }
    if ((int64_t)outputLabels.size() != resultType.getRank())
      return unsupported(op, "output term of rank " +
                                 std::to_string(outputLabels.size()) +
                                 " for a result of rank " +
                                 std::to_string(resultType.getRank()));
    // Loops: output labels, then the others in order of appearance.
    llvm::DenseMap<int, unsigned> loopOf;
    SmallVector<IteratorType> iterators;
    for (auto [i, label] : llvm::enumerate(outputLabels)) {
      if (!sizes.count(label) || loopOf.count(label))
        return unsupported(op, "output label not in an input, or repeated");
      if (sizes[label] != resultType.getDimSize(i))
        return unsupported(op, "output dim size mismatch");
      loopOf[label] = loopOf.size();
      iterators.push_back(IteratorType::parallel);
    }
    for (auto &[label, size] : sizes)
      if (!loopOf.count(label)) {
        loopOf[label] = loopOf.size();
        iterators.push_back(IteratorType::reduction);
      }
    unsigned numLoops = loopOf.size();
    SmallVector<AffineMap> maps;
    for (auto [labels, input] : llvm::zip(inputLabels, inputs)) {
      auto type = tensorType(input);
      SmallVector<AffineExpr> exprs;
      for (auto [d, label] : llvm::enumerate(labels)) {
        if (type.getDimSize(d) == 1 && sizes[label] != 1)
          exprs.push_back(getAffineConstantExpr(0, context));
        else
          exprs.push_back(getAffineDimExpr(loopOf[label], context));
      }
      maps.push_back(AffineMap::get(numLoops, 0, exprs, context));
    }
    SmallVector<AffineExpr> outExprs;
    for (int label : outputLabels)
      outExprs.push_back(getAffineDimExpr(loopOf[label], context));
    maps.push_back(AffineMap::get(numLoops, 0, outExprs, context));

    Type elementType = resultType.getElementType();
    Type ct = computeType(elementType);
    bool isFloat = isa<FloatType>(ct);
    Value init = filledTensor(rewriter, loc, resultType.clone(ct),
                              scalarConstant(rewriter, loc, ct, 0));
    Value acc = buildGeneric(
        rewriter, loc, inputs, init, maps, iterators,
        [&](OpBuilder &b, Location l, ValueRange args) -> Value {
          Value product;
          for (Value v : args.drop_back()) {
            v = extendScalar(b, l, v, ct);
            product = !product ? v
                      : isFloat
                          ? (Value)arith::MulFOp::create(b, l, product, v)
                          : (Value)arith::MulIOp::create(b, l, product, v);
          }
          if (isFloat)
            return arith::AddFOp::create(b, l, args.back(), product);
          return arith::AddIOp::create(b, l, args.back(), product);
        });
    rewriter.replaceOp(op, truncateTensor(rewriter, loc, acc, elementType));
    return success();
  }
};


//===----------------------------------------------------------------------===//
// Kiln's fused ops
//===----------------------------------------------------------------------===//

/// The epilogue activation `act` of a fused op on scalar `v`.
Value applyActivation(OpBuilder &b, Location l, StringRef act, Value v) {
  Type t = v.getType();
  auto c = [&](double x) { return scalarConstant(b, l, t, x); };
  auto sigmoid = [&](Value x) -> Value {
    Value e = math::ExpOp::create(b, l, arith::NegFOp::create(b, l, x));
    return arith::DivFOp::create(b, l, c(1),
                                 arith::AddFOp::create(b, l, c(1), e));
  };
  if (act == "relu")
    return arith::MaximumFOp::create(b, l, v, c(0));
  if (act == "sigmoid")
    return sigmoid(v);
  if (act == "silu")
    return arith::MulFOp::create(b, l, v, sigmoid(v));
  if (act == "tanh")
    return math::TanhOp::create(b, l, v);
  Value half = arith::MulFOp::create(b, l, v, c(0.5));
  if (act == "gelu") {
    Value erf = math::ErfOp::create(
        b, l, arith::MulFOp::create(b, l, v, c(M_SQRT1_2)));
    return arith::MulFOp::create(b, l, half,
                                 arith::AddFOp::create(b, l, c(1), erf));
  }
  if (act == "gelu_tanh") {
    Value cube = arith::MulFOp::create(
        b, l, v, arith::MulFOp::create(b, l, v, v));
    Value inner = arith::AddFOp::create(
        b, l, v, arith::MulFOp::create(b, l, cube, c(0.044715)));
    inner = arith::MulFOp::create(b, l, inner, c(std::sqrt(2.0 / M_PI)));
    return arith::MulFOp::create(
        b, l, half,
        arith::AddFOp::create(b, l, c(1), math::TanhOp::create(b, l, inner)));
  }
  return v; // "none"
}

/// The elementwise epilogue of a fused op on the accumulator `acc`:
/// alpha * acc (+ bias), the activation and the residual in the requested
/// order, truncated to `resultType`. `bias`/`residual` may be null; both
/// broadcast numpy-style against the result.
Value buildEpilogue(OpBuilder &b, Location loc, Value acc, Value bias,
                    Value residual, StringRef activation,
                    bool residualBeforeActivation, double alpha,
                    RankedTensorType resultType) {
  Type ct = tensorType(acc).getElementType();
  SmallVector<Value> inputs{acc};
  if (bias)
    inputs.push_back(bias);
  if (residual)
    inputs.push_back(residual);
  return buildElementwise(
      b, loc, inputs, resultType,
      [&](OpBuilder &nb, Location l, ValueRange args) {
        Value y = args[0];
        unsigned next = 1;
        if (alpha != 1.0)
          y = arith::MulFOp::create(nb, l, y, scalarConstant(nb, l, ct, alpha));
        if (bias)
          y = arith::AddFOp::create(nb, l, y,
                                    extendScalar(nb, l, args[next++], ct));
        Value res =
            residual ? extendScalar(nb, l, args[next++], ct) : Value();
        if (res && residualBeforeActivation)
          y = arith::AddFOp::create(nb, l, y, res);
        y = applyActivation(nb, l, activation, y);
        if (res && !residualBeforeActivation)
          y = arith::AddFOp::create(nb, l, y, res);
        return truncateScalar(nb, l, y, resultType.getElementType());
      });
}

/// kiln.fused_matmul: the numpy matmul (B's last two dims swapped first
/// with trans_b) into an f32 (or f64) accumulator, then one epilogue.
struct FusedMatMulLowering : OpConversionPattern<kiln::FusedMatMulOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(kiln::FusedMatMulOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto resultType = cast<RankedTensorType>(
        getTypeConverter()->convertType(op.getType()));
    Value b = adaptor.getB();
    if (op.getTransB()) {
      auto type = tensorType(b);
      int64_t rank = type.getRank();
      if (rank < 2)
        return unsupported(op, "trans_b with a 1-D B");
      SmallVector<int64_t> perm, shape;
      for (int64_t i = 0; i < rank; ++i)
        perm.push_back(i);
      std::swap(perm[rank - 1], perm[rank - 2]);
      for (int64_t i : perm)
        shape.push_back(type.getDimSize(i));
      b = linalg::TransposeOp::create(rewriter, loc, b,
                                      emptyTensor(rewriter, loc,
                                                  type.clone(shape)),
                                      perm)
              .getResult()[0];
    }
    Type ct = computeType(resultType.getElementType());
    Value product = buildNumpyMatmul(rewriter, loc, adaptor.getA(), b,
                                     resultType.getShape(), ct);
    Value bias = isNone(adaptor.getBias()) ? Value() : adaptor.getBias();
    Value residual =
        isNone(adaptor.getResidual()) ? Value() : adaptor.getResidual();
    rewriter.replaceOp(
        op, buildEpilogue(rewriter, loc, product, bias, residual,
                          op.getActivation(), op.getResidualBeforeActivation(),
                          op.getAlpha().convertToDouble(), resultType));
    return success();
  }
};

/// kiln.rms_norm: the mean of the squares over the dims from `axis` in the
/// stash type, N = X * rsqrt(mean + epsilon) rounded to X's type, then
/// N * scale (scale broadcast against X's trailing dims).
struct RMSNormLowering : OpConversionPattern<kiln::RMSNormOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(kiln::RMSNormOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *context = rewriter.getContext();
    Value x = adaptor.getX(), scale = adaptor.getScale();
    auto type = tensorType(x);
    int64_t rank = type.getRank();
    int64_t axis = normalizeAxis(op.getAxis(), rank);
    Type elementType = type.getElementType();
    Type stash = stashType(context, op.getStashType());
    if (!stash)
      return unsupported(op, "stash_type " + std::to_string(op.getStashType()));
    Type ct = computeType(stash);
    if (ct.getIntOrFloatBitWidth() < elementType.getIntOrFloatBitWidth())
      ct = elementType;
    SmallVector<int64_t> axes;
    for (int64_t i = axis; i < rank; ++i)
      axes.push_back(i);
    AxisMaps maps(rank, axes, context);
    int64_t count = 1;
    for (int64_t i : axes)
      count *= type.getDimSize(i);
    Value sumSquares = reduceDims(
        rewriter, loc, x, {maps.full}, type.getShape(), maps.reducedDims, ct,
        scalarConstant(rewriter, loc, ct, 0),
        [&](OpBuilder &b, Location l, ValueRange args) {
          return poolCombine(b, l, PoolKind::Lp, args[0], args[1], false, 2);
        });
    double epsilon = op.getEpsilon().convertToDouble();
    Value result = buildGeneric(
        rewriter, loc, {x, sumSquares, scale},
        emptyTensor(rewriter, loc, type),
        {maps.full, maps.reduced,
         broadcastMap(tensorType(scale).getShape(), type.getShape(), context),
         maps.full},
        maps.parallelIterators,
        [&](OpBuilder &b, Location l, ValueRange args) {
          Value mean = arith::DivFOp::create(
              b, l, args[1], scalarConstant(b, l, ct, count));
          Value n = arith::MulFOp::create(b, l,
                                          extendScalar(b, l, args[0], ct),
                                          invStdDev(b, l, mean, epsilon));
          // N is rounded to X's type before the scale, as the op defines.
          n = truncateScalar(b, l, n, elementType);
          Type wide = computeType(elementType);
          Value y = arith::MulFOp::create(b, l, extendScalar(b, l, n, wide),
                                          extendScalar(b, l, args[2], wide));
          return truncateScalar(b, l, y, elementType);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Channels-last convolution and pools (kiln-optimize-layout's ops)
//===----------------------------------------------------------------------===//

/// kiln.conv_nhwc / kiln.fused_conv_nhwc's convolution: X [N, D..., C], W
/// OHWI [M, k..., C/G], result [N, out..., M]. Group 1 2-D is
/// linalg.conv_2d_nhwc_fhwc; otherwise a generic over
/// [N, out..., G, M/G, C/G, k...]. The bias (broadcast along the last dim)
/// initializes the accumulator.
template <typename OpTy>
FailureOr<Value> buildConvNhwcAccumulator(OpTy op, OpBuilder &b, Value x,
                                          Value weight, Value bias,
                                          RankedTensorType resultType) {
  Location loc = op.getLoc();
  MLIRContext *context = b.getContext();
  auto xType = tensorType(x), wType = tensorType(weight);
  int64_t rank = xType.getRank(), s = rank - 2;
  ArrayRef<int64_t> outShape = resultType.getShape().slice(1, s);
  FailureOr<Window> w = resolveWindow(op, xType.getShape().slice(1, s),
                                      wType.getShape().slice(1, s),
                                      kiln::getConvWindowAttrs(op), outShape);
  if (failed(w))
    return failure();
  Type elementType = resultType.getElementType();
  Type ct = computeType(elementType);
  Value padded =
      padWindowInput(b, loc, x, *w, outShape,
                     scalarConstant(b, loc, elementType, 0), true);
  auto accType = resultType.clone(ct);
  Value init =
      isNone(bias)
          ? filledTensor(b, loc, accType, scalarConstant(b, loc, ct, 0))
          : buildElementwise(b, loc, bias, accType,
                             [&](OpBuilder &nb, Location l, ValueRange args) {
                               return extendScalar(nb, l, args[0], ct);
                             });
  int64_t group = op.getGroup();
  if (group == 1 && s == 2) {
    SmallVector<NamedAttribute> attrs{
        b.getNamedAttr("strides", b.getI64TensorAttr(w->strides)),
        b.getNamedAttr("dilations", b.getI64TensorAttr(w->dilations))};
    return linalg::Conv2DNhwcFhwcOp::create(b, loc, TypeRange{accType},
                                            ValueRange{padded, weight},
                                            ValueRange{init}, attrs)
        .getResult(0);
  }
  int64_t n = xType.getDimSize(0), c = xType.getDimSize(rank - 1);
  int64_t m = wType.getDimSize(0);
  SmallVector<int64_t> xShape{n}, wShape{group, m / group}, accShape{n};
  auto paddedType = tensorType(padded);
  for (int64_t i = 0; i < s; ++i) {
    xShape.push_back(paddedType.getDimSize(1 + i));
    wShape.push_back(wType.getDimSize(1 + i));
    accShape.push_back(outShape[i]);
  }
  xShape.append({group, c / group});
  wShape.push_back(c / group);
  accShape.append({group, m / group});
  Value xg = reshapeTo(b, loc, padded, xShape);
  Value wg = reshapeTo(b, loc, weight, wShape);
  Value accg = reshapeTo(b, loc, init, accShape);
  // Loops: n, o..., g, mg, cg, k....
  unsigned gLoop = 1 + s, mgLoop = 2 + s, cLoop = 3 + s, firstKernel = 4 + s;
  unsigned numLoops = 4 + 2 * s;
  auto d = [&](unsigned i) { return getAffineDimExpr(i, context); };
  SmallVector<AffineExpr> xExprs{d(0)}, wExprs{d(gLoop), d(mgLoop)},
      outExprs{d(0)};
  for (int64_t i = 0; i < s; ++i) {
    xExprs.push_back(d(1 + i) * w->strides[i] +
                     d(firstKernel + i) * w->dilations[i]);
    wExprs.push_back(d(firstKernel + i));
    outExprs.push_back(d(1 + i));
  }
  xExprs.append({d(gLoop), d(cLoop)});
  wExprs.push_back(d(cLoop));
  outExprs.append({d(gLoop), d(mgLoop)});
  SmallVector<IteratorType> iterators(3 + s, IteratorType::parallel);
  iterators.append(1 + s, IteratorType::reduction);
  Value result = buildGeneric(
      b, loc, {xg, wg}, accg,
      {AffineMap::get(numLoops, 0, xExprs, context),
       AffineMap::get(numLoops, 0, wExprs, context),
       AffineMap::get(numLoops, 0, outExprs, context)},
      iterators, [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
        Value product =
            arith::MulFOp::create(nb, l, extendScalar(nb, l, args[0], ct),
                                  extendScalar(nb, l, args[1], ct));
        return arith::AddFOp::create(nb, l, args[2], product);
      });
  return reshapeTo(b, loc, result, accType.getShape());
}

struct ConvNhwcLowering : OpConversionPattern<kiln::ConvNhwcOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(kiln::ConvNhwcOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto resultType = cast<RankedTensorType>(
        getTypeConverter()->convertType(op.getType()));
    FailureOr<Value> acc =
        buildConvNhwcAccumulator(op, rewriter, adaptor.getX(), adaptor.getW(),
                                 adaptor.getB(), resultType);
    if (failed(acc))
      return failure();
    rewriter.replaceOp(op, truncateTensor(rewriter, op.getLoc(), *acc,
                                          resultType.getElementType()));
    return success();
  }
};

/// kiln.fused_conv and kiln.fused_conv_nhwc: the convolution (bias in the
/// accumulator), then the activation and residual epilogue.
template <typename OpTy>
struct FusedConvLowering : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;
  using OpAdaptor = typename OpConversionPattern<OpTy>::OpAdaptor;
  LogicalResult
  matchAndRewrite(OpTy op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto resultType = cast<RankedTensorType>(
        this->getTypeConverter()->convertType(op.getType()));
    FailureOr<Value> acc;
    if constexpr (std::is_same_v<OpTy, kiln::FusedConvNhwcOp>)
      acc = buildConvNhwcAccumulator(op, rewriter, adaptor.getX(),
                                     adaptor.getW(), adaptor.getB(),
                                     resultType);
    else
      acc = buildConvAccumulator(op, rewriter, adaptor.getX(), adaptor.getW(),
                                 adaptor.getB(), resultType);
    if (failed(acc))
      return failure();
    Value residual =
        isNone(adaptor.getResidual()) ? Value() : adaptor.getResidual();
    rewriter.replaceOp(
        op, buildEpilogue(rewriter, op.getLoc(), *acc, Value(), residual,
                          op.getActivation(), op.getResidualBeforeActivation(),
                          1.0, resultType));
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Attention and rotary embedding
//===----------------------------------------------------------------------===//

/// kiln.attention: the scores Q·Kᵀ (a generic over [B, Hkv, rep, Sq, Skv,
/// D], query head h = g * rep + r reading KV head g, so grouped KV heads
/// are never copied), scaled and masked (float mask added, i1 mask and the
/// bottom-right causal mask replacing scores by the lowest finite value),
/// a max-shifted softmax along the keys, then P·V. Both layouts are read in
/// place through the maps. Half-precision inputs compute in f32.
struct AttentionLowering : OpConversionPattern<kiln::AttentionOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(kiln::AttentionOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *context = rewriter.getContext();
    auto resultType = cast<RankedTensorType>(
        getTypeConverter()->convertType(op.getType()));
    Value q = adaptor.getQ(), k = adaptor.getK(), v = adaptor.getV();
    Value mask = adaptor.getMask();
    bool bshd = op.isBSHD();
    auto qType = tensorType(q), kType = tensorType(k), vType = tensorType(v);
    if (qType.getRank() != 4 || kType.getRank() != 4 || vType.getRank() != 4)
      return unsupported(op, "Q, K and V must be 4-D");
    int64_t heads = op.getNumHeads(), kvHeads = op.getNumKvHeads();
    if (kvHeads < 1 || heads % kvHeads != 0)
      return unsupported(op, "num_heads not a multiple of num_kv_heads");
    int64_t rep = heads / kvHeads;
    int64_t seqDim = bshd ? 1 : 2;
    int64_t batch = qType.getDimSize(0), sq = qType.getDimSize(seqDim);
    int64_t skv = kType.getDimSize(seqDim), depth = qType.getDimSize(3);
    int64_t dv = vType.getDimSize(3);
    Type elementType = resultType.getElementType();
    Type ct = computeType(elementType);
    auto d = [&](unsigned i) { return getAffineDimExpr(i, context); };

    // Q as [B, Hkv, rep, Sq, D] (bshd: [B, Sq, Hkv, rep, D]).
    SmallVector<int64_t> qShape =
        bshd ? SmallVector<int64_t>{batch, sq, kvHeads, rep, depth}
             : SmallVector<int64_t>{batch, kvHeads, rep, sq, depth};
    Value qv = reshapeTo(rewriter, loc, q, qShape);
    // Scores: loops (b, g, r, i, j, d).
    auto map6 = [&](ArrayRef<AffineExpr> exprs) {
      return AffineMap::get(6, 0, exprs, context);
    };
    AffineMap qMap = bshd ? map6({d(0), d(3), d(1), d(2), d(5)})
                          : map6({d(0), d(1), d(2), d(3), d(5)});
    AffineMap kMap = bshd ? map6({d(0), d(4), d(1), d(5)})
                          : map6({d(0), d(1), d(4), d(5)});
    auto scoreType =
        RankedTensorType::get({batch, kvHeads, rep, sq, skv}, ct);
    Value scores = buildGeneric(
        rewriter, loc, {qv, k},
        filledTensor(rewriter, loc, scoreType,
                     scalarConstant(rewriter, loc, ct, 0)),
        {qMap, kMap, map6({d(0), d(1), d(2), d(3), d(4)})},
        {IteratorType::parallel, IteratorType::parallel,
         IteratorType::parallel, IteratorType::parallel,
         IteratorType::parallel, IteratorType::reduction},
        [&](OpBuilder &b, Location l, ValueRange args) -> Value {
          Value product =
              arith::MulFOp::create(b, l, extendScalar(b, l, args[0], ct),
                                    extendScalar(b, l, args[1], ct));
          return arith::AddFOp::create(b, l, args[2], product);
        });

    // Scale and masks over (b, g, r, i, j).
    auto map5 = [&](ArrayRef<AffineExpr> exprs) {
      return AffineMap::get(5, 0, exprs, context);
    };
    AffineMap id5 = AffineMap::getMultiDimIdentityMap(5, context);
    SmallVector<Value> inputs{scores};
    SmallVector<AffineMap> maps{id5};
    bool boolMask = false;
    if (!isNone(mask)) {
      auto maskType = tensorType(mask);
      // The mask broadcasts right-aligned against [B, H, Sq, Skv].
      SmallVector<int64_t> full{batch, heads, sq, skv};
      SmallVector<AffineExpr> fullExprs{d(0), d(1) * rep + d(2), d(3), d(4)};
      SmallVector<AffineExpr> exprs;
      int64_t offset = 4 - maskType.getRank();
      if (offset < 0)
        return unsupported(op, "mask of rank > 4");
      for (int64_t i = 0; i < maskType.getRank(); ++i) {
        bool broadcast =
            maskType.getDimSize(i) == 1 && full[offset + i] != 1;
        exprs.push_back(broadcast ? getAffineConstantExpr(0, context)
                                  : fullExprs[offset + i]);
      }
      inputs.push_back(mask);
      maps.push_back(map5(exprs));
      boolMask = maskType.getElementType().isInteger(1);
    }
    maps.push_back(id5);
    double scale = op.getScale().convertToDouble();
    bool causal = op.getCausal();
    const llvm::fltSemantics &semantics =
        cast<FloatType>(elementType).getFloatSemantics();
    double lowest = APFloat::getLargest(semantics, /*Negative=*/true)
                        .convertToDouble();
    Value masked = buildGeneric(
        rewriter, loc, inputs, emptyTensor(rewriter, loc, scoreType), maps,
        SmallVector<IteratorType>(5, IteratorType::parallel),
        [&](OpBuilder &b, Location l, ValueRange args) -> Value {
          Value s = arith::MulFOp::create(b, l, args[0],
                                          scalarConstant(b, l, ct, scale));
          Value low = scalarConstant(b, l, ct, lowest);
          if (inputs.size() > 1) {
            if (boolMask)
              s = arith::SelectOp::create(b, l, args[1], s, low);
            else
              s = arith::AddFOp::create(b, l, s,
                                        extendScalar(b, l, args[1], ct));
          }
          if (causal) {
            Value i = linalg::IndexOp::create(b, l, 3);
            Value j = linalg::IndexOp::create(b, l, 4);
            Value limit = arith::AddIOp::create(
                b, l, i, arith::ConstantIndexOp::create(b, l, skv - sq));
            Value keep = arith::CmpIOp::create(
                b, l, arith::CmpIPredicate::sle, j, limit);
            s = arith::SelectOp::create(b, l, keep, s, low);
          }
          return s;
        });

    // Softmax along j.
    AxisMaps axis(5, {4}, context);
    Value max = reduceDims(
        rewriter, loc, masked, {id5}, scoreType.getShape(), axis.reducedDims,
        ct, lowestValue(rewriter, loc, ct),
        [&](OpBuilder &b, Location l, ValueRange args) -> Value {
          return arith::MaximumFOp::create(b, l, args[0], args[1]);
        });
    Value sum = reduceDims(
        rewriter, loc, {masked, max}, {id5, axis.reduced},
        scoreType.getShape(), axis.reducedDims, ct,
        scalarConstant(rewriter, loc, ct, 0),
        [&](OpBuilder &b, Location l, ValueRange args) -> Value {
          Value e = math::ExpOp::create(
              b, l, arith::SubFOp::create(b, l, args[0], args[1]));
          return arith::AddFOp::create(b, l, e, args[2]);
        });
    Value probs = buildGeneric(
        rewriter, loc, {masked, max, sum},
        emptyTensor(rewriter, loc, scoreType),
        {id5, axis.reduced, axis.reduced, id5},
        SmallVector<IteratorType>(5, IteratorType::parallel),
        [&](OpBuilder &b, Location l, ValueRange args) -> Value {
          Value e = math::ExpOp::create(
              b, l, arith::SubFOp::create(b, l, args[0], args[1]));
          return arith::DivFOp::create(b, l, e, args[2]);
        });

    // Y = P·V: loops (b, g, r, i, e, j).
    AffineMap pMap = map6({d(0), d(1), d(2), d(3), d(5)});
    AffineMap vMap = bshd ? map6({d(0), d(5), d(1), d(4)})
                          : map6({d(0), d(1), d(5), d(4)});
    AffineMap yMap = bshd ? map6({d(0), d(3), d(1), d(2), d(4)})
                          : map6({d(0), d(1), d(2), d(3), d(4)});
    SmallVector<int64_t> yShape =
        bshd ? SmallVector<int64_t>{batch, sq, kvHeads, rep, dv}
             : SmallVector<int64_t>{batch, kvHeads, rep, sq, dv};
    Value y = buildGeneric(
        rewriter, loc, {probs, v},
        filledTensor(rewriter, loc, RankedTensorType::get(yShape, ct),
                     scalarConstant(rewriter, loc, ct, 0)),
        {pMap, vMap, yMap},
        {IteratorType::parallel, IteratorType::parallel,
         IteratorType::parallel, IteratorType::parallel,
         IteratorType::parallel, IteratorType::reduction},
        [&](OpBuilder &b, Location l, ValueRange args) -> Value {
          Value product = arith::MulFOp::create(
              b, l, args[0], extendScalar(b, l, args[1], ct));
          return arith::AddFOp::create(b, l, args[2], product);
        });
    y = truncateTensor(rewriter, loc, y, elementType);
    rewriter.replaceOp(op, reshapeTo(rewriter, loc, y, resultType.getShape()));
    return success();
  }
};

/// kiln.rotary_embedding (rotate-half): one generic over X reading the
/// partner feature (i +- D/2) with tensor.extract:
/// Y = X * cos + rotate_half(X) * sin.
struct RotaryEmbeddingLowering : OpConversionPattern<kiln::RotaryEmbeddingOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(kiln::RotaryEmbeddingOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *context = rewriter.getContext();
    Value x = adaptor.getX();
    auto type = tensorType(x);
    int64_t rank = type.getRank();
    if (rank < 1)
      return unsupported(op, "rank-0 X");
    int64_t depth = type.getDimSize(rank - 1);
    if (depth % 2 != 0)
      return unsupported(op, "odd last dim");
    int64_t half = depth / 2;
    Type elementType = type.getElementType(), ct = computeType(elementType);
    Value cos = adaptor.getCos(), sin = adaptor.getSin();
    AffineMap id = AffineMap::getMultiDimIdentityMap(rank, context);
    Value result = buildGeneric(
        rewriter, loc, {x, cos, sin}, emptyTensor(rewriter, loc, type),
        {id, broadcastMap(tensorType(cos).getShape(), type.getShape(), context),
         broadcastMap(tensorType(sin).getShape(), type.getShape(), context),
         id},
        SmallVector<IteratorType>(rank, IteratorType::parallel),
        [&](OpBuilder &b, Location l, ValueRange args) -> Value {
          SmallVector<Value> indices;
          for (int64_t i = 0; i < rank; ++i)
            indices.push_back(linalg::IndexOp::create(b, l, i));
          Value last = indices.back();
          Value firstHalf = arith::CmpIOp::create(
              b, l, arith::CmpIPredicate::slt, last,
              arith::ConstantIndexOp::create(b, l, half));
          Value up = arith::AddIOp::create(
              b, l, last, arith::ConstantIndexOp::create(b, l, half));
          Value down = arith::SubIOp::create(
              b, l, last, arith::ConstantIndexOp::create(b, l, half));
          indices.back() = arith::SelectOp::create(b, l, firstHalf, up, down);
          Value partner = extendScalar(
              b, l, tensor::ExtractOp::create(b, l, x, indices), ct);
          Value rotated = arith::SelectOp::create(
              b, l, firstHalf, arith::NegFOp::create(b, l, partner), partner);
          Value y = arith::AddFOp::create(
              b, l,
              arith::MulFOp::create(b, l, extendScalar(b, l, args[0], ct),
                                    extendScalar(b, l, args[1], ct)),
              arith::MulFOp::create(b, l, rotated,
                                    extendScalar(b, l, args[2], ct)));
          return truncateScalar(b, l, y, elementType);
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
               SoftmaxLowering<kiln::LogSoftmaxOp, true>, HardmaxLowering,
               ConvLowering, PoolLowering<kiln::MaxPoolOp, PoolKind::Max>,
               PoolLowering<kiln::AveragePoolOp, PoolKind::Average>,
               PoolLowering<kiln::LpPoolOp, PoolKind::Lp>,
               GlobalPoolLowering<kiln::GlobalAveragePoolOp, PoolKind::Average>,
               GlobalPoolLowering<kiln::GlobalMaxPoolOp, PoolKind::Max>,
               GlobalPoolLowering<kiln::GlobalLpPoolOp, PoolKind::Lp>,
               BatchNormLowering, InstanceNormLowering, LayerNormLowering,
               GroupNormLowering, LpNormLowering, MVNLowering, LRNLowering,
               DropoutLowering, PadLowering, ConvTransposeLowering,
               ResizeLowering, EinsumLowering, FusedMatMulLowering,
               FusedConvLowering<kiln::FusedConvOp>, RMSNormLowering,
               ConvNhwcLowering, FusedConvLowering<kiln::FusedConvNhwcOp>,
               PoolLowering<kiln::MaxPoolNhwcOp, PoolKind::Max, true>,
               PoolLowering<kiln::AveragePoolNhwcOp, PoolKind::Average, true>,
               GlobalPoolLowering<kiln::GlobalAveragePoolNhwcOp,
                                  PoolKind::Average, true>,
               AttentionLowering, RotaryEmbeddingLowering>(
      converter, context);
}
