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
                     ArrayRef<int64_t> output, Value padValue) {
  auto type = tensorType(x);
  SmallVector<int64_t> low{0, 0}, high{0, 0};
  for (int64_t i = 0; i < w.rank(); ++i) {
    int64_t in = type.getDimSize(2 + i);
    int64_t extra = std::max<int64_t>(
        0, w.reach(i, output[i]) - (in + w.padBegin[i] + w.padEnd[i]));
    low.push_back(w.padBegin[i]);
    high.push_back(w.padEnd[i] + extra);
  }
  return padTensor(b, loc, x, low, high, padValue);
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

/// ONNX Conv. Group 1 with 1-3 spatial dims uses linalg.conv_{1d_ncw_fcw,
/// 2d_nchw_fchw,3d_ncdhw_fcdhw}; grouped and depthwise convolutions a
/// linalg.generic over [N, G, M/G, out..., C/G, k...]. Padding is an
/// explicit tensor.pad; the bias initializes the accumulator.
struct ConvLowering : OpConversionPattern<kiln::ConvOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(kiln::ConvOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *context = rewriter.getContext();
    auto resultType = cast<RankedTensorType>(
        getTypeConverter()->convertType(op.getType()));
    Value x = adaptor.getX(), weight = adaptor.getW(), bias = adaptor.getB();
    auto xType = tensorType(x), wType = tensorType(weight);
    int64_t rank = xType.getRank(), spatial = rank - 2;
    ArrayRef<int64_t> outShape = resultType.getShape().drop_front(2);
    FailureOr<Window> w =
        resolveWindow(op, xType.getShape().drop_front(2),
                      wType.getShape().drop_front(2),
                      kiln::getConvWindowAttrs(op), outShape);
    if (failed(w))
      return failure();
    Type elementType = resultType.getElementType();
    Type ct = computeType(elementType);
    Value padded = padWindowInput(rewriter, loc, x, *w, outShape,
                                  scalarConstant(rewriter, loc, elementType, 0));

    auto accType = resultType.clone(ct);
    Value init;
    if (isNone(bias)) {
      init = filledTensor(rewriter, loc, accType,
                          scalarConstant(rewriter, loc, ct, 0));
    } else {
      AffineMap channel = AffineMap::get(
          rank, 0, {getAffineDimExpr(1, context)}, context);
      init = buildGeneric(
          rewriter, loc, bias, emptyTensor(rewriter, loc, accType),
          {channel, AffineMap::getMultiDimIdentityMap(rank, context)},
          SmallVector<IteratorType>(rank, IteratorType::parallel),
          [&](OpBuilder &b, Location l, ValueRange args) {
            return extendScalar(b, l, args[0], ct);
          });
    }

    int64_t group = op.getGroup();
    Value acc;
    if (group == 1 && spatial >= 1 && spatial <= 3) {
      Attribute strides = rewriter.getI64TensorAttr(w->strides);
      Attribute dilations = rewriter.getI64TensorAttr(w->dilations);
      SmallVector<Type> types{accType};
      if (spatial == 1)
        acc = linalg::Conv1DNcwFcwOp::create(rewriter, loc, types,
                                             ValueRange{padded, weight},
                                             ValueRange{init}, strides,
                                             dilations)
                  .getResult(0);
      else if (spatial == 2)
        acc = linalg::Conv2DNchwFchwOp::create(rewriter, loc, types,
                                               ValueRange{padded, weight},
                                               ValueRange{init}, strides,
                                               dilations)
                  .getResult(0);
      else
        acc = linalg::Conv3DNcdhwFcdhwOp::create(rewriter, loc, types,
                                                 ValueRange{padded, weight},
                                                 ValueRange{init}, strides,
                                                 dilations)
                  .getResult(0);
    } else {
      acc = buildGroupedConv(rewriter, loc, padded, weight, init, *w, group,
                             ct);
    }
    rewriter.replaceOp(op, truncateTensor(rewriter, loc, acc, elementType));
    return success();
  }

  /// The grouped convolution as a generic: X as [N, G, C/G, D...], W as
  /// [G, M/G, C/G, k...], the accumulator as [N, G, M/G, out...].
  static Value buildGroupedConv(OpBuilder &b, Location loc, Value padded,
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
template <typename OpTy, PoolKind Kind>
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
    ArrayRef<int64_t> inShape = xType.getShape().drop_front(2);
    ArrayRef<int64_t> outShape = resultType.getShape().drop_front(2);
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
    if constexpr (Kind == PoolKind::Max) {
      if (!op.getIndices().use_empty())
        return lowerWithIndices(op, rewriter, x, resultType, *w);
    }

    Type elementType = resultType.getElementType();
    Type accElement = Kind == PoolKind::Max ? elementType
                                            : computeType(elementType);
    Value padValue = Kind == PoolKind::Max
                         ? lowestValue(rewriter, loc, kilnElementType)
                         : scalarConstant(rewriter, loc, elementType, 0);
    Value padded = padWindowInput(rewriter, loc, x, *w, outShape, padValue);
    Value identity = Kind == PoolKind::Max
                         ? lowestValue(rewriter, loc, kilnElementType)
                         : scalarConstant(rewriter, loc, accElement, 0);
    Value init =
        filledTensor(rewriter, loc, resultType.clone(accElement), identity);
    unsigned numLoops = 2 + 2 * s;
    auto d = [&](unsigned i) { return getAffineDimExpr(i, context); };
    AffineMap xMap = windowInputMap(numLoops, {d(0), d(1)}, 2, 2 + s, *w,
                                    context);
    SmallVector<AffineExpr> outExprs;
    for (unsigned i = 0; i < 2 + s; ++i)
      outExprs.push_back(d(i));
    SmallVector<IteratorType> iterators(2 + s, IteratorType::parallel);
    iterators.append(s, IteratorType::reduction);
    Value acc = buildGeneric(
        rewriter, loc,
        {padded, windowShape(rewriter, loc, *w, xType.getElementType())},
        init,
        {xMap, windowMap(numLoops, 2 + s, s, context),
         AffineMap::get(numLoops, 0, outExprs, context)},
        iterators, [&](OpBuilder &b, Location l, ValueRange args) {
          return poolCombine(b, l, Kind, args[0], args[2], isUnsigned, p);
        });
    if constexpr (Kind == PoolKind::Max) {
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
          spatialExprs.push_back(d(2 + i));
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
    if constexpr (Kind != PoolKind::Max) {
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
template <typename OpTy, PoolKind Kind>
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
    SmallVector<bool> reduced(rank, true);
    reduced[0] = reduced[1] = false;
    int64_t count = 1;
    for (int64_t i = 2; i < rank; ++i)
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
        {xType.getDimSize(0), xType.getDimSize(1)}, elementType);
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
               GlobalPoolLowering<kiln::GlobalLpPoolOp, PoolKind::Lp>>(
      converter, context);
}
