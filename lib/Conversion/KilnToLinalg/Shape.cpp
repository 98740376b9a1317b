//===- Shape.cpp - Lowering of the Shape kiln ops to linalg -------------===//
//
// Shapes are static here (the pass checks), so most shape-like operands
// (Reshape's shape, Squeeze's axes, Split's sizes, ...) are not needed at
// all: the result types already carry what they determine. The operands
// that still matter (Slice's starts and steps, CumSum's axis) must be
// constants.
//
//===----------------------------------------------------------------------===//

#include "Common.h"

#include "kiln/Conversion/KilnToLinalg.h"
#include "kiln/Dialect/KilnOps.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Utils/ReshapeOpsUtils.h"

#include <functional>

using namespace mlir;
using namespace kiln::lowering;

namespace {

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

RankedTensorType convertedType(const TypeConverter *converter, Type type) {
  return cast<RankedTensorType>(converter->convertType(type));
}

SmallVector<OpFoldResult> indexAttrs(OpBuilder &b, ArrayRef<int64_t> values) {
  return llvm::map_to_vector(values, [&](int64_t v) -> OpFoldResult {
    return b.getIndexAttr(v);
  });
}

using IndexBodyFn = function_ref<Value(OpBuilder &, Location,
                                        ArrayRef<Value> ivs, ValueRange args)>;

/// A parallel linalg.generic over `resultType` reading `inputs` through
/// `inputMaps`; `body` gets the loop indices (linalg.index) and the input
/// scalars and returns the result element (typically via tensor.extract).
Value indexGeneric(OpBuilder &b, Location loc, RankedTensorType resultType,
                   ValueRange inputs, ArrayRef<AffineMap> inputMaps,
                   IndexBodyFn body) {
  int64_t rank = resultType.getRank();
  return buildParallel(
      b, loc, inputs, inputMaps, resultType,
      [&](OpBuilder &nested, Location nestedLoc, ValueRange args) {
        SmallVector<Value> ivs;
        for (int64_t d = 0; d < rank; ++d)
          ivs.push_back(linalg::IndexOp::create(nested, nestedLoc, d));
        return body(nested, nestedLoc, ivs, args);
      });
}

Value indexGeneric(OpBuilder &b, Location loc, RankedTensorType resultType,
                   IndexBodyFn body) {
  return indexGeneric(b, loc, resultType, {}, {}, body);
}

/// The ONNX index `raw` (an i32/i64 scalar) as an index into a dim of `size`:
/// negative values count from the end. Out-of-range indices (invalid in
/// ONNX; ONNX Runtime rejects them) are clamped to stay in bounds rather
/// than read or write outside the buffer.
Value normalizeIndex(OpBuilder &b, Location loc, Value raw, int64_t size) {
  Value index = arith::IndexCastOp::create(b, loc, b.getIndexType(), raw);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value dim = arith::ConstantIndexOp::create(b, loc, size);
  Value negative =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, index, zero);
  Value wrapped = arith::AddIOp::create(b, loc, index, dim);
  index = arith::SelectOp::create(b, loc, negative, wrapped, index);
  Value last = arith::ConstantIndexOp::create(b, loc, std::max<int64_t>(size - 1, 0));
  index = arith::MaxSIOp::create(b, loc, index, zero);
  return arith::MinSIOp::create(b, loc, index, last);
}

/// normalizeIndex for a dim whose size `size` (an index) is known at run
/// time only (a symbolic dim, at least 1): negative indices count from the
/// run-time end.
Value normalizeIndex(OpBuilder &b, Location loc, Value raw, Value size) {
  Value index = arith::IndexCastOp::create(b, loc, b.getIndexType(), raw);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value negative =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, index, zero);
  Value wrapped = arith::AddIOp::create(b, loc, index, size);
  index = arith::SelectOp::create(b, loc, negative, wrapped, index);
  Value last = arith::MaxSIOp::create(
      b, loc, arith::SubIOp::create(b, loc, size, one), zero);
  index = arith::MaxSIOp::create(b, loc, index, zero);
  return arith::MinSIOp::create(b, loc, index, last);
}

//===----------------------------------------------------------------------===//
// Shape queries
//===----------------------------------------------------------------------===//

struct ShapeLowering : OpConversionPattern<kiln::ShapeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(kiln::ShapeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto dataType = cast<RankedTensorType>(op.getData().getType());
    auto type = convertedType(getTypeConverter(), op.getType());
    int64_t rank = dataType.getRank();
    auto clampDim = [&](int64_t v) {
      if (v < 0)
        v += rank;
      return std::clamp<int64_t>(v, 0, rank);
    };
    int64_t start = clampDim(static_cast<int64_t>(op.getStart()));
    int64_t end = op.getEnd() ? clampDim(static_cast<int64_t>(*op.getEnd()))
                              : rank;
    SmallVector<int64_t> dims;
    for (int64_t d = start; d < end; ++d)
      dims.push_back(dataType.getDimSize(d));
    if (static_cast<int64_t>(dims.size()) != type.getNumElements())
      return unsupported(op, "result length does not match [start, end)");
    if (llvm::any_of(dims, ShapedType::isDynamic)) {
      // The run-time sizes of the dynamic dims.
      Location loc = op.getLoc();
      SmallVector<Value> elements;
      for (int64_t d = start; d < end; ++d)
        elements.push_back(arith::IndexCastOp::create(
            rewriter, loc, rewriter.getI64Type(),
            dimOf(rewriter, loc, adaptor.getData(), d)));
      rewriter.replaceOpWithNewOp<tensor::FromElementsOp>(op, type, elements);
      return success();
    }
    rewriter.replaceOpWithNewOp<arith::ConstantOp>(
        op, type, DenseElementsAttr::get(type, ArrayRef<int64_t>(dims)));
    return success();
  }
};

struct SizeLowering : OpConversionPattern<kiln::SizeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(kiln::SizeOp op, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto dataType = cast<RankedTensorType>(op.getData().getType());
    auto type = convertedType(getTypeConverter(), op.getType());
    rewriter.replaceOpWithNewOp<arith::ConstantOp>(
        op, type,
        DenseElementsAttr::get(type,
                               ArrayRef<int64_t>{dataType.getNumElements()}));
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Reshaping
//===----------------------------------------------------------------------===//

/// Reshape, Flatten, Squeeze, Unsqueeze: the static result type says it all.
template <typename OpTy>
struct ReshapeLikeLowering : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;
  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = convertedType(this->getTypeConverter(), op.getType());
    Value input = adaptor.getOperands()[0];
    // Nothing to move for an empty result (and zero-sized dims make for
    // odd reassociations).
    if (type.hasStaticShape() && type.getNumElements() == 0) {
      rewriter.replaceOp(op, emptyTensor(rewriter, op.getLoc(), type));
      return success();
    }
    rewriter.replaceOp(op, reshapeTo(rewriter, op.getLoc(), input, type));
    return success();
  }
};

struct TransposeLowering : OpConversionPattern<kiln::TransposeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(kiln::TransposeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = convertedType(getTypeConverter(), op.getType());
    int64_t rank = type.getRank();
    SmallVector<int64_t> perm;
    if (auto attr = op.getPerm()) {
      perm.assign(attr->begin(), attr->end());
      for (int64_t &p : perm)
        p = normalizeAxis(p, rank);
    } else {
      for (int64_t d = rank - 1; d >= 0; --d)
        perm.push_back(d);
    }
    if (rank <= 1) {
      rewriter.replaceOp(op, adaptor.getData());
      return success();
    }
    Location loc = op.getLoc();
    Value init = emptyTensor(rewriter, loc, type);
    rewriter.replaceOp(op, linalg::TransposeOp::create(
                               rewriter, loc, adaptor.getData(), init, perm)
                               .getResult()[0]);
    return success();
  }
};

/// Expand: numpy broadcast of the input to the static result.
struct ExpandLowering : OpConversionPattern<kiln::ExpandOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(kiln::ExpandOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = convertedType(getTypeConverter(), op.getType());
    Value input = adaptor.getInput();
    auto inputType = cast<RankedTensorType>(input.getType());
    if (inputType == type) {
      rewriter.replaceOp(op, input);
      return success();
    }
    rewriter.replaceOp(
        op, copyGeneric(rewriter, op.getLoc(), input,
                        broadcastMap(inputType.getShape(), type.getShape(),
                                     getContext()),
                        type));
    return success();
  }
};

/// Tile: broadcast [d0, d1, ...] to [r0, d0, r1, d1, ...] and collapse the
/// pairs; the repeats r_i are result_i / d_i.
struct TileLowering : OpConversionPattern<kiln::TileOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(kiln::TileOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = convertedType(getTypeConverter(), op.getType());
    Value input = adaptor.getInput();
    auto inputType = cast<RankedTensorType>(input.getType());
    Location loc = op.getLoc();
    if (type.getNumElements() == 0) {
      rewriter.replaceOp(op, emptyTensor(rewriter, loc, type));
      return success();
    }
    if (inputType == type) {
      rewriter.replaceOp(op, input);
      return success();
    }
    int64_t rank = type.getRank();
    SmallVector<int64_t> wideShape;
    SmallVector<AffineExpr> exprs;
    SmallVector<ReassociationIndices> pairs;
    for (int64_t d = 0; d < rank; ++d) {
      int64_t size = inputType.getDimSize(d);
      if (type.getDimSize(d) % size != 0)
        return unsupported(op, "result dim is not a multiple of the input's");
      wideShape.push_back(type.getDimSize(d) / size);
      wideShape.push_back(size);
      exprs.push_back(rewriter.getAffineDimExpr(2 * d + 1));
      pairs.push_back({2 * d, 2 * d + 1});
    }
    auto wideType = RankedTensorType::get(wideShape, type.getElementType());
    Value wide = copyGeneric(
        rewriter, loc, input,
        AffineMap::get(2 * rank, 0, exprs, getContext()), wideType);
    rewriter.replaceOpWithNewOp<tensor::CollapseShapeOp>(op, type, wide,
                                                         pairs);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Joining and splitting
//===----------------------------------------------------------------------===//

/// Concat: insert_slice of each input into an empty result.
struct ConcatLowering : OpConversionPattern<kiln::ConcatOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(kiln::ConcatOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = convertedType(getTypeConverter(), op.getType());
    Location loc = op.getLoc();
    int64_t rank = type.getRank();
    int64_t axis = normalizeAxis(static_cast<int64_t>(op.getAxis()), rank);
    if (adaptor.getInputs().size() == 1) {
      rewriter.replaceOp(op, adaptor.getInputs()[0]);
      return success();
    }
    Value result = emptyTensor(rewriter, loc, type);
    if (!type.hasStaticShape()) {
      // Run-time offsets along the axis and sizes of each input.
      SmallVector<OpFoldResult> offsets(rank, rewriter.getIndexAttr(0)),
          strides(rank, rewriter.getIndexAttr(1));
      Value offset = arith::ConstantIndexOp::create(rewriter, loc, 0);
      for (Value input : adaptor.getInputs()) {
        SmallVector<OpFoldResult> sizes;
        for (int64_t d = 0; d < rank; ++d)
          sizes.push_back(getAsOpFoldResult(dimOf(rewriter, loc, input, d)));
        offsets[axis] = getAsOpFoldResult(offset);
        result = tensor::InsertSliceOp::create(rewriter, loc, input, result,
                                               offsets, sizes, strides);
        offset = arith::AddIOp::create(rewriter, loc, offset,
                                       dimOf(rewriter, loc, input, axis));
      }
      rewriter.replaceOp(op, result);
      return success();
    }
    SmallVector<int64_t> offsets(rank, 0), strides(rank, 1);
    for (Value input : adaptor.getInputs()) {
      auto inputType = cast<RankedTensorType>(input.getType());
      if (inputType.getNumElements() != 0)
        result = tensor::InsertSliceOp::create(
            rewriter, loc, input, result, indexAttrs(rewriter, offsets),
            indexAttrs(rewriter, inputType.getShape()),
            indexAttrs(rewriter, strides));
      offsets[axis] += inputType.getDimSize(axis);
    }
    if (offsets[axis] != type.getDimSize(axis))
      return unsupported(op, "input sizes along the axis do not add up to "
                             "the result's");
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// Split: one extract_slice per result; the sizes are the results' dims.
struct SplitLowering : OpConversionPattern<kiln::SplitOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(kiln::SplitOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value input = adaptor.getInput();
    auto inputType = cast<RankedTensorType>(input.getType());
    int64_t rank = inputType.getRank();
    int64_t axis = normalizeAxis(static_cast<int64_t>(op.getAxis()), rank);
    if (!inputType.hasStaticShape()) {
      // Dynamic dims: each part's sizes from the symbolic shapes, the offset
      // along the axis accumulated at run time.
      SmallVector<Value> results;
      OpFoldResult offset = rewriter.getIndexAttr(0);
      for (auto [output, kilnOutput] :
           llvm::zip(op.getOutputs(), op->getResults())) {
        auto type = convertedType(getTypeConverter(), output.getType());
        FailureOr<SmallVector<OpFoldResult>> sizes =
            resultMixedSizes(rewriter, loc, kilnOutput, type);
        if (failed(sizes))
          return unsupported(op, "dynamic shape: a part's size is not known "
                                 "in terms of the inputs' dims");
        SmallVector<OpFoldResult> offsets(rank, rewriter.getIndexAttr(0)),
            strides(rank, rewriter.getIndexAttr(1));
        offsets[axis] = offset;
        results.push_back(tensor::ExtractSliceOp::create(
            rewriter, loc, type, input, offsets, *sizes, strides));
        std::optional<int64_t> o = getConstantIntValue(offset);
        std::optional<int64_t> n = getConstantIntValue((*sizes)[axis]);
        offset = o && n ? OpFoldResult(rewriter.getIndexAttr(*o + *n))
                        : OpFoldResult(arith::AddIOp::create(
                                           rewriter, loc,
                                           getValueOrCreateConstantIndexOp(
                                               rewriter, loc, offset),
                                           getValueOrCreateConstantIndexOp(
                                               rewriter, loc, (*sizes)[axis]))
                                           .getResult());
      }
      rewriter.replaceOp(op, results);
      return success();
    }
    SmallVector<int64_t> offsets(rank, 0), strides(rank, 1);
    SmallVector<Value> results;
    for (Value output : op.getOutputs()) {
      auto type = convertedType(getTypeConverter(), output.getType());
      if (type.getNumElements() == 0) {
        // An empty part: nothing to read (and offsets past an empty input
        // dim would not verify).
        results.push_back(emptyTensor(rewriter, loc, type));
        offsets[axis] += type.getDimSize(axis);
        continue;
      }
      results.push_back(tensor::ExtractSliceOp::create(
          rewriter, loc, type, input, indexAttrs(rewriter, offsets),
          indexAttrs(rewriter, type.getShape()),
          indexAttrs(rewriter, strides)));
      offsets[axis] += type.getDimSize(axis);
    }
    if (offsets[axis] > inputType.getDimSize(axis))
      return unsupported(op, "split sizes exceed the input dim");
    rewriter.replaceOp(op, results);
    return success();
  }
};

/// Slice: the result size comes from the static result type, so the ends
/// are not needed. With constant starts, axes and steps, positive steps are
/// a strided extract_slice and negative ones a generic reading
/// start + step * i. Otherwise the clamped starts and the steps are computed
/// at run time (ONNX's rules, per axis) and the generic reads through them.
struct SliceLowering : OpConversionPattern<kiln::SliceOp> {
  using OpConversionPattern::OpConversionPattern;

  /// The i-th entry of a 1-D integer tensor, as i64.
  static Value entry(OpBuilder &b, Location loc, Value tensor, int64_t i) {
    Value value = tensor::ExtractOp::create(
        b, loc, tensor, ValueRange{arith::ConstantIndexOp::create(b, loc, i)});
    if (value.getType() != b.getI64Type())
      value = arith::ExtSIOp::create(b, loc, b.getI64Type(), value);
    return value;
  }

  /// Dynamic dims: a strided extract_slice with the result's sizes from
  /// the symbolic shapes (which assume, and make the runtime check, that
  /// the bounds lie within the dims: no clamping here), constant axes and
  /// positive steps, starts constant or run-time sizes.
  LogicalResult lowerDynamic(kiln::SliceOp op, OpAdaptor adaptor,
                             ConversionPatternRewriter &rewriter,
                             FailureOr<SmallVector<int64_t>> &axes,
                             FailureOr<SmallVector<int64_t>> &steps,
                             FailureOr<SmallVector<int64_t>> &starts) const {
    auto type = convertedType(getTypeConverter(), op.getType());
    Location loc = op.getLoc();
    Value data = adaptor.getData();
    auto dataType = cast<RankedTensorType>(data.getType());
    int64_t rank = dataType.getRank();
    if (failed(axes) || failed(steps) ||
        llvm::any_of(*steps, [](int64_t s) { return s < 0; }))
      return unsupported(op, "dynamic shape: a slice with run-time axes or "
                             "steps, or a negative step");
    FailureOr<SmallVector<OpFoldResult>> sizes =
        resultMixedSizes(rewriter, loc, op.getResult(), type);
    if (failed(sizes))
      return unsupported(op, "dynamic shape: the result's size is not known "
                             "in terms of the inputs' dims");
    SmallVector<OpFoldResult> offsets(rank, rewriter.getIndexAttr(0)),
        strides(rank, rewriter.getIndexAttr(1));
    for (auto [i, axis] : llvm::enumerate(*axes)) {
      strides[axis] = rewriter.getIndexAttr((*steps)[i]);
      if (failed(starts)) {
        offsets[axis] = arith::IndexCastOp::create(
                            rewriter, loc, rewriter.getIndexType(),
                            entry(rewriter, loc, adaptor.getStarts(), i))
                            .getResult();
        continue;
      }
      int64_t start = (*starts)[i];
      if (!dataType.isDynamicDim(axis)) {
        int64_t dim = dataType.getDimSize(axis);
        offsets[axis] = rewriter.getIndexAttr(
            std::clamp<int64_t>(start < 0 ? start + dim : start, 0, dim));
      } else if (start >= 0) {
        offsets[axis] = rewriter.getIndexAttr(start);
      } else {
        offsets[axis] =
            arith::AddIOp::create(
                rewriter, loc, dimOf(rewriter, loc, data, axis),
                arith::ConstantIndexOp::create(rewriter, loc, start))
                .getResult();
      }
    }
    rewriter.replaceOpWithNewOp<tensor::ExtractSliceOp>(op, type, data, offsets,
                                                        *sizes, strides);
    return success();
  }

  LogicalResult
  matchAndRewrite(kiln::SliceOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = convertedType(getTypeConverter(), op.getType());
    Location loc = op.getLoc();
    Value data = adaptor.getData();
    auto dataType = cast<RankedTensorType>(data.getType());
    int64_t rank = dataType.getRank();
    int64_t count =
        cast<RankedTensorType>(op.getStarts().getType()).getDimSize(0);
    bool hasAxes = !isa<NoneType>(op.getAxes().getType());
    bool hasSteps = !isa<NoneType>(op.getSteps().getType());

    auto starts = constantInts(op.getStarts());
    FailureOr<SmallVector<int64_t>> axes = SmallVector<int64_t>();
    for (int64_t i = 0; i < count; ++i)
      axes->push_back(i);
    if (hasAxes)
      axes = constantInts(op.getAxes());
    FailureOr<SmallVector<int64_t>> steps =
        SmallVector<int64_t>(count, 1);
    if (hasSteps)
      steps = constantInts(op.getSteps());
    if (succeeded(axes))
      for (int64_t &axis : *axes) {
        axis = normalizeAxis(axis, rank);
        if (axis < 0 || axis >= rank)
          return unsupported(op, "axis out of range");
      }
    if (succeeded(steps) && llvm::is_contained(*steps, 0))
      return unsupported(op, "a step is 0");
    if (!type.hasStaticShape() || !dataType.hasStaticShape())
      return lowerDynamic(op, adaptor, rewriter, axes, steps, starts);
    if (type.getNumElements() == 0) {
      rewriter.replaceOp(op, emptyTensor(rewriter, loc, type));
      return success();
    }

    if (succeeded(starts) && succeeded(axes) && succeeded(steps)) {
      SmallVector<int64_t> offsets(rank, 0), strides(rank, 1);
      bool negative = false;
      for (int64_t i = 0; i < count; ++i) {
        int64_t axis = (*axes)[i];
        int64_t dim = dataType.getDimSize(axis);
        int64_t step = (*steps)[i];
        int64_t start = (*starts)[i];
        if (start < 0)
          start += dim;
        start = step > 0 ? std::clamp<int64_t>(start, 0, dim)
                         : std::clamp<int64_t>(start, 0, dim - 1);
        offsets[axis] = start;
        strides[axis] = step;
        negative |= step < 0;
      }
      if (!negative) {
        rewriter.replaceOpWithNewOp<tensor::ExtractSliceOp>(
            op, type, data, indexAttrs(rewriter, offsets),
            indexAttrs(rewriter, type.getShape()),
            indexAttrs(rewriter, strides));
        return success();
      }
      Value result = indexGeneric(
          rewriter, loc, type,
          [&](OpBuilder &b, Location l, ArrayRef<Value> ivs,
              ValueRange) -> Value {
            SmallVector<Value> in;
            for (int64_t d = 0; d < rank; ++d) {
              // offset + stride * i
              Value scaled = arith::MulIOp::create(
                  b, l, ivs[d],
                  arith::ConstantIndexOp::create(b, l, strides[d]));
              in.push_back(arith::AddIOp::create(
                  b, l, scaled,
                  arith::ConstantIndexOp::create(b, l, offsets[d])));
            }
            return tensor::ExtractOp::create(b, l, data, in);
          });
      rewriter.replaceOp(op, result);
      return success();
    }

    // Run-time starts/axes/steps: per data dim, the offset and stride as
    // i64 scalars (0 and 1 for the dims not sliced).
    Type i64 = rewriter.getI64Type();
    auto constant = [&](int64_t v) {
      return scalarConstant(rewriter, loc, i64, v);
    };
    SmallVector<Value> offsets, strides;
    for (int64_t d = 0; d < rank; ++d) {
      offsets.push_back(constant(0));
      strides.push_back(constant(1));
    }
    Value zero = constant(0);
    for (int64_t i = 0; i < count; ++i) {
      Value start = entry(rewriter, loc, adaptor.getStarts(), i);
      Value step = succeeded(steps) ? constant((*steps)[i])
                                    : entry(rewriter, loc, adaptor.getSteps(), i);
      Value positive = arith::CmpIOp::create(
          rewriter, loc, arith::CmpIPredicate::sgt, step, zero);
      Value axis;
      if (failed(axes)) {
        axis = entry(rewriter, loc, adaptor.getAxes(), i);
        Value negativeAxis = arith::CmpIOp::create(
            rewriter, loc, arith::CmpIPredicate::slt, axis, zero);
        axis = arith::SelectOp::create(
            rewriter, loc, negativeAxis,
            arith::AddIOp::create(rewriter, loc, axis, constant(rank)), axis);
      }
      for (int64_t d = 0; d < rank; ++d) {
        if (succeeded(axes) && (*axes)[i] != d)
          continue;
        int64_t dim = dataType.getDimSize(d);
        // Negative starts count from the end; then clamp to [0, dim] for a
        // positive step, [0, dim - 1] for a negative one.
        Value negativeStart = arith::CmpIOp::create(
            rewriter, loc, arith::CmpIPredicate::slt, start, zero);
        Value s = arith::SelectOp::create(
            rewriter, loc, negativeStart,
            arith::AddIOp::create(rewriter, loc, start, constant(dim)), start);
        Value high = arith::SelectOp::create(rewriter, loc, positive,
                                             constant(dim), constant(dim - 1));
        s = arith::MaxSIOp::create(rewriter, loc, s, zero);
        s = arith::MinSIOp::create(rewriter, loc, s, high);
        if (succeeded(axes)) {
          offsets[d] = s;
          strides[d] = step;
        } else {
          Value match = arith::CmpIOp::create(
              rewriter, loc, arith::CmpIPredicate::eq, axis, constant(d));
          offsets[d] =
              arith::SelectOp::create(rewriter, loc, match, s, offsets[d]);
          strides[d] =
              arith::SelectOp::create(rewriter, loc, match, step, strides[d]);
        }
      }
    }
    Value result = indexGeneric(
        rewriter, loc, type,
        [&](OpBuilder &b, Location l, ArrayRef<Value> ivs,
            ValueRange) -> Value {
          SmallVector<Value> in;
          for (int64_t d = 0; d < rank; ++d) {
            Value i = arith::IndexCastOp::create(b, l, i64, ivs[d]);
            Value at = arith::AddIOp::create(
                b, l, offsets[d], arith::MulIOp::create(b, l, i, strides[d]));
            in.push_back(
                arith::IndexCastOp::create(b, l, b.getIndexType(), at));
          }
          return tensor::ExtractOp::create(b, l, data, in);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Gather and scatter
//===----------------------------------------------------------------------===//

/// Gather and GatherElements: a generic over `type` reading the index from
/// `indices` through `indicesMap`, then extracting from `data` at
/// `position(ivs, index)`, where `index` is the read one normalized against
/// data's `axis` size.
Value gatherOnAxis(
    OpBuilder &b, Location loc, RankedTensorType type, Value data,
    Value indices, int64_t axis, AffineMap indicesMap,
    function_ref<SmallVector<Value>(ArrayRef<Value> ivs, Value index)>
        position) {
  int64_t dim = cast<RankedTensorType>(data.getType()).getDimSize(axis);
  // A dynamic axis: its run-time size, read once outside the loops.
  Value runtimeDim;
  if (ShapedType::isDynamic(dim))
    runtimeDim = tensor::DimOp::create(b, loc, data, axis);
  return indexGeneric(
      b, loc, type, indices, indicesMap,
      [&](OpBuilder &nested, Location l, ArrayRef<Value> ivs,
          ValueRange args) -> Value {
        Value index = runtimeDim
                          ? normalizeIndex(nested, l, args[0], runtimeDim)
                          : normalizeIndex(nested, l, args[0], dim);
        return tensor::ExtractOp::create(nested, l, data, position(ivs, index));
      });
}

/// Gather: a generic over the result reading the index at the result's
/// indices dims, then extracting from `data`.
struct GatherLowering : OpConversionPattern<kiln::GatherOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(kiln::GatherOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = convertedType(getTypeConverter(), op.getType());
    Value data = adaptor.getData(), indices = adaptor.getIndices();
    int64_t q = cast<RankedTensorType>(indices.getType()).getRank();
    int64_t rank = cast<RankedTensorType>(data.getType()).getRank();
    int64_t axis = normalizeAxis(static_cast<int64_t>(op.getAxis()), rank);
    Value result = gatherOnAxis(
        rewriter, op.getLoc(), type, data, indices, axis,
        dimRangeMap(type.getRank(), axis, q, getContext()),
        [&](ArrayRef<Value> ivs, Value index) {
          SmallVector<Value> at(ivs.take_front(axis));
          at.push_back(index);
          llvm::append_range(at, ivs.drop_front(axis + q));
          return at;
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// GatherElements: result[i] = data[i with i[axis] = indices[i]].
struct GatherElementsLowering : OpConversionPattern<kiln::GatherElementsOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(kiln::GatherElementsOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = convertedType(getTypeConverter(), op.getType());
    Value data = adaptor.getData(), indices = adaptor.getIndices();
    int64_t rank = cast<RankedTensorType>(data.getType()).getRank();
    int64_t axis = normalizeAxis(static_cast<int64_t>(op.getAxis()), rank);
    Value result = gatherOnAxis(
        rewriter, op.getLoc(), type, data, indices, axis,
        AffineMap::getMultiDimIdentityMap(rank, getContext()),
        [&](ArrayRef<Value> ivs, Value index) {
          SmallVector<Value> at(ivs);
          at[axis] = index;
          return at;
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// GatherND: the result index splits into indices' leading dims (the first
/// batch_dims of them shared with data) and data's trailing dims; the k
/// index values are read from `indices` in the body.
struct GatherNDLowering : OpConversionPattern<kiln::GatherNDOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(kiln::GatherNDOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = convertedType(getTypeConverter(), op.getType());
    Value data = adaptor.getData(), indices = adaptor.getIndices();
    auto dataType = cast<RankedTensorType>(data.getType());
    auto indicesType = cast<RankedTensorType>(indices.getType());
    int64_t q = indicesType.getRank();
    int64_t k = indicesType.getDimSize(q - 1);
    int64_t batch = static_cast<int64_t>(op.getBatchDims());
    if (batch + k > dataType.getRank())
      return unsupported(op, "batch_dims + indices.shape[-1] exceeds the "
                             "data rank");
    Value result = indexGeneric(
        rewriter, op.getLoc(), type,
        [&](OpBuilder &b, Location loc, ArrayRef<Value> ivs,
            ValueRange) -> Value {
          SmallVector<Value> at(ivs.take_front(batch));
          SmallVector<Value> indexAt(ivs.take_front(q - 1));
          indexAt.push_back(Value());
          for (int64_t j = 0; j < k; ++j) {
            indexAt.back() = arith::ConstantIndexOp::create(b, loc, j);
            Value raw = tensor::ExtractOp::create(b, loc, indices, indexAt);
            at.push_back(
                normalizeIndex(b, loc, raw, dataType.getDimSize(batch + j)));
          }
          llvm::append_range(at, ivs.drop_front(q - 1));
          return tensor::ExtractOp::create(b, loc, data, at);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// Combines the current value `old` and an update `update` per a Scatter
/// reduction ("add", "mul", "max", "min"); null for an unknown one or one
/// that is not defined on bool.
Value combineScatter(OpBuilder &b, Location loc, StringRef reduction,
                     Type kilnType, Value old, Value update) {
  bool isFloat = isa<FloatType>(kilnType);
  bool isUnsigned = isUnsignedInt(kilnType);
  if (kilnType.isInteger(1))
    return Value();
  if (reduction == "add")
    return isFloat ? Value(arith::AddFOp::create(b, loc, old, update))
                   : Value(arith::AddIOp::create(b, loc, old, update));
  if (reduction == "mul")
    return isFloat ? Value(arith::MulFOp::create(b, loc, old, update))
                   : Value(arith::MulIOp::create(b, loc, old, update));
  if (reduction == "max") {
    if (isFloat)
      return arith::MaximumFOp::create(b, loc, old, update);
    return isUnsigned ? Value(arith::MaxUIOp::create(b, loc, old, update))
                      : Value(arith::MaxSIOp::create(b, loc, old, update));
  }
  if (reduction == "min") {
    if (isFloat)
      return arith::MinimumFOp::create(b, loc, old, update);
    return isUnsigned ? Value(arith::MinUIOp::create(b, loc, old, update))
                      : Value(arith::MinSIOp::create(b, loc, old, update));
  }
  return Value();
}

/// The checks shared by the scatters: a known reduction, defined on the
/// element type.
LogicalResult checkScatterReduction(Operation *op, StringRef reduction,
                                    Type kilnType) {
  if (reduction != "none" && reduction != "add" && reduction != "mul" &&
      reduction != "max" && reduction != "min")
    return unsupported(op, "reduction '" + reduction + "'");
  if (reduction != "none" && kilnType.isInteger(1))
    return unsupported(op, "reduction '" + reduction + "' on bool");
  return success();
}

/// Sequential loops over every update, on tensors: `data` is the initial
/// result and each update is written with tensor.insert (combined with the
/// current value under a reduction). `target` maps the update's indices to
/// the result's. Duplicate indices apply in order, as ONNX Runtime does.
Value scatterLoops(OpBuilder &b, Location loc, Value data, Value updates,
                   StringRef reduction, Type kilnType,
                   function_ref<SmallVector<Value>(OpBuilder &, Location,
                                                   ValueRange)>
                       target) {
  auto updatesType = cast<RankedTensorType>(updates.getType());
  SmallVector<Value> lbs, ubs, steps;
  for (int64_t size : updatesType.getShape()) {
    lbs.push_back(arith::ConstantIndexOp::create(b, loc, 0));
    ubs.push_back(arith::ConstantIndexOp::create(b, loc, size));
    steps.push_back(arith::ConstantIndexOp::create(b, loc, 1));
  }
  scf::LoopNest nest = scf::buildLoopNest(
      b, loc, lbs, ubs, steps, ValueRange{data},
      [&](OpBuilder &nb, Location nl, ValueRange ivs,
          ValueRange iterArgs) -> scf::ValueVector {
        Value acc = iterArgs[0];
        Value update = tensor::ExtractOp::create(nb, nl, updates, ivs);
        SmallVector<Value> at = target(nb, nl, ivs);
        if (reduction != "none") {
          Value old = tensor::ExtractOp::create(nb, nl, acc, at);
          update = combineScatter(nb, nl, reduction, kilnType, old, update);
        }
        return {tensor::InsertOp::create(nb, nl, update, acc, at)};
      });
  return nest.results.front();
}

struct ScatterElementsLowering
    : OpConversionPattern<kiln::ScatterElementsOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(kiln::ScatterElementsOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Type kilnType = getElementTypeOrSelf(op.getData().getType());
    if (failed(checkScatterReduction(op, op.getReduction(), kilnType)))
      return failure();
    Value data = adaptor.getData(), indices = adaptor.getIndices();
    auto dataType = cast<RankedTensorType>(data.getType());
    int64_t rank = dataType.getRank();
    int64_t axis = normalizeAxis(static_cast<int64_t>(op.getAxis()), rank);
    int64_t dim = dataType.getDimSize(axis);
    Value result = scatterLoops(
        rewriter, op.getLoc(), data, adaptor.getUpdates(), op.getReduction(),
        kilnType, [&](OpBuilder &b, Location loc, ValueRange ivs) {
          SmallVector<Value> at(ivs);
          Value raw = tensor::ExtractOp::create(b, loc, indices, ivs);
          at[axis] = normalizeIndex(b, loc, raw, dim);
          return at;
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct ScatterNDLowering : OpConversionPattern<kiln::ScatterNDOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(kiln::ScatterNDOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Type kilnType = getElementTypeOrSelf(op.getData().getType());
    if (failed(checkScatterReduction(op, op.getReduction(), kilnType)))
      return failure();
    Value data = adaptor.getData(), indices = adaptor.getIndices();
    auto dataType = cast<RankedTensorType>(data.getType());
    auto indicesType = cast<RankedTensorType>(indices.getType());
    int64_t q = indicesType.getRank();
    int64_t k = indicesType.getDimSize(q - 1);
    if (k > dataType.getRank())
      return unsupported(op, "indices.shape[-1] exceeds the data rank");
    Value result = scatterLoops(
        rewriter, op.getLoc(), data, adaptor.getUpdates(), op.getReduction(),
        kilnType, [&](OpBuilder &b, Location loc, ValueRange ivs) {
          SmallVector<Value> at;
          SmallVector<Value> indexAt(ivs.take_front(q - 1));
          indexAt.push_back(Value());
          for (int64_t j = 0; j < k; ++j) {
            indexAt.back() = arith::ConstantIndexOp::create(b, loc, j);
            Value raw = tensor::ExtractOp::create(b, loc, indices, indexAt);
            at.push_back(normalizeIndex(b, loc, raw, dataType.getDimSize(j)));
          }
          llvm::append_range(at, ivs.drop_front(q - 1));
          return at;
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// TensorScatter: a loop over the batch entries carrying the cache, each
/// iteration a tensor.insert_slice of the entry's update rows at its write
/// index (circular: one row at a time, at the index modulo the cache
/// length). The loop's init is the past cache itself, so bufferization
/// writes the rows into its buffer: in place when nothing reads the old
/// cache afterwards (a decoder's static cache, whose present then shares
/// past's buffer), into a copy otherwise. A linear write that does not fit
/// (index < 0 or index + rows > cache length, which ONNX leaves undefined)
/// writes nothing rather than outside the buffer.
struct TensorScatterLowering : OpConversionPattern<kiln::TensorScatterOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(kiln::TensorScatterOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value past = adaptor.getPastCache(), update = adaptor.getUpdate();
    auto pastType = cast<RankedTensorType>(past.getType());
    int64_t rank = pastType.getRank();
    int64_t axis = normalizeAxis(static_cast<int64_t>(op.getAxis()), rank);
    bool circular = op.getMode() == "circular";
    Value indices = adaptor.getWriteIndices();
    if (isa<NoneType>(indices.getType()))
      indices = Value();
    Location loc = op.getLoc();
    Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
    Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
    Value batch = tensor::DimOp::create(rewriter, loc, past, 0);
    Value cacheLength = tensor::DimOp::create(rewriter, loc, past, axis);
    Value rows = tensor::DimOp::create(rewriter, loc, update, axis);
    auto loop = scf::ForOp::create(
        rewriter, loc, zero, batch, one, ValueRange{past},
        [&](OpBuilder &b, Location l, Value entry, ValueRange carried) {
          Value cache = carried.front();
          Value start = zero;
          if (indices)
            start = arith::IndexCastOp::create(
                b, l, b.getIndexType(),
                tensor::ExtractOp::create(b, l, indices, ValueRange{entry}));
          // The entry's rows [1, d1, ..., rows, ...] of the update.
          SmallVector<OpFoldResult> offsets(rank, b.getIndexAttr(0));
          SmallVector<OpFoldResult> sizes, strides(rank, b.getIndexAttr(1));
          offsets[0] = entry;
          sizes.push_back(b.getIndexAttr(1));
          for (int64_t d = 1; d < rank; ++d)
            sizes.push_back(tensor::getMixedSize(b, l, update, d));
          if (!circular) {
            Value slice = tensor::ExtractSliceOp::create(b, l, update, offsets,
                                                         sizes, strides);
            Value end = arith::AddIOp::create(b, l, start, rows);
            // (One statement per op: the order of a call's arguments is
            // the host compiler's choice, and the IR must not depend on it.)
            Value fitsHigh = arith::CmpIOp::create(
                b, l, arith::CmpIPredicate::sle, end, cacheLength);
            Value fitsLow = arith::CmpIOp::create(
                b, l, arith::CmpIPredicate::sge, start, zero);
            Value fits = arith::AndIOp::create(b, l, fitsLow, fitsHigh);
            auto written = scf::IfOp::create(
                b, l, fits,
                [&](OpBuilder &tb, Location tl) {
                  SmallVector<OpFoldResult> at(offsets);
                  at[axis] = start;
                  Value inserted = tensor::InsertSliceOp::create(
                      tb, tl, slice, cache, at, sizes, strides);
                  scf::YieldOp::create(tb, tl, inserted);
                },
                [&](OpBuilder &eb, Location el) {
                  scf::YieldOp::create(eb, el, cache);
                });
            scf::YieldOp::create(b, l, written.getResult(0));
            return;
          }
          // Circular: row r goes to (start + r) mod length (no row when the
          // cache is empty).
          Value nonEmpty = arith::CmpIOp::create(
              b, l, arith::CmpIPredicate::sgt, cacheLength, zero);
          Value count = arith::SelectOp::create(b, l, nonEmpty, rows, zero);
          auto inner = scf::ForOp::create(
              b, l, zero, count, one, ValueRange{cache},
              [&](OpBuilder &ib, Location il, Value row, ValueRange c) {
                SmallVector<OpFoldResult> from(offsets), rowSizes(sizes);
                from[axis] = row;
                rowSizes[axis] = ib.getIndexAttr(1);
                Value slice = tensor::ExtractSliceOp::create(
                    ib, il, update, from, rowSizes, strides);
                Value pos = arith::RemSIOp::create(
                    ib, il, arith::AddIOp::create(ib, il, start, row),
                    cacheLength);
                pos = arith::RemSIOp::create(
                    ib, il, arith::AddIOp::create(ib, il, pos, cacheLength),
                    cacheLength);
                SmallVector<OpFoldResult> at(offsets);
                at[axis] = pos;
                Value inserted = tensor::InsertSliceOp::create(
                    ib, il, slice, c.front(), at, rowSizes, strides);
                scf::YieldOp::create(ib, il, inserted);
              });
          scf::YieldOp::create(b, l, inner.getResult(0));
        });
    rewriter.replaceOp(op, loop.getResult(0));
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Generators
//===----------------------------------------------------------------------===//

struct ConstantOfShapeLowering
    : OpConversionPattern<kiln::ConstantOfShapeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(kiln::ConstantOfShapeOp op, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = convertedType(getTypeConverter(), op.getType());
    Type elementType = type.getElementType();
    Location loc = op.getLoc();
    Value scalar;
    if (auto value = op.getValue()) {
      auto dense = dyn_cast<DenseElementsAttr>(*value);
      if (!dense || dense.getNumElements() != 1)
        return unsupported(op, "value is not a one-element dense attribute");
      Attribute element = *dense.value_begin<Attribute>();
      if (auto intAttr = dyn_cast<IntegerAttr>(element))
        scalar = arith::ConstantOp::create(
            rewriter, loc, IntegerAttr::get(elementType, intAttr.getValue()));
      else if (auto floatAttr = dyn_cast<FloatAttr>(element))
        scalar = arith::ConstantOp::create(
            rewriter, loc, FloatAttr::get(elementType, floatAttr.getValue()));
      else
        return unsupported(op, "value of element type " +
                                   describeType(dense.getElementType()));
    } else {
      scalar = scalarConstant(rewriter, loc, elementType, 0.0);
    }
    rewriter.replaceOp(op, filledTensor(rewriter, loc, type, scalar));
    return success();
  }

  static std::string describeType(Type type) {
    std::string text;
    llvm::raw_string_ostream os(text);
    os << type;
    return text;
  }
};

/// Range: start + i * delta for i below the static result length.
struct RangeLowering : OpConversionPattern<kiln::RangeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(kiln::RangeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = convertedType(getTypeConverter(), op.getType());
    Type elementType = type.getElementType();
    Location loc = op.getLoc();
    Value start = extractFirst(rewriter, loc, adaptor.getStart());
    Value delta = extractFirst(rewriter, loc, adaptor.getDelta());
    Value result = indexGeneric(
        rewriter, loc, type,
        [&](OpBuilder &b, Location l, ArrayRef<Value> ivs,
            ValueRange) -> Value {
          if (isa<FloatType>(elementType)) {
            Value i = arith::IndexCastOp::create(b, l, b.getI64Type(), ivs[0]);
            Value f = arith::SIToFPOp::create(b, l, elementType, i);
            Value step = arith::MulFOp::create(b, l, f, delta);
            return arith::AddFOp::create(b, l, start, step);
          }
          Value i = arith::IndexCastOp::create(b, l, elementType, ivs[0]);
          Value step = arith::MulIOp::create(b, l, i, delta);
          return arith::AddIOp::create(b, l, start, step);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// EyeLike: one where column - row == k.
struct EyeLikeLowering : OpConversionPattern<kiln::EyeLikeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(kiln::EyeLikeOp op, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = convertedType(getTypeConverter(), op.getType());
    if (type.getRank() != 2)
      return unsupported(op, "input is not 2-D");
    Type elementType = type.getElementType();
    int64_t k = static_cast<int64_t>(op.getK());
    Value result = indexGeneric(
        rewriter, op.getLoc(), type,
        [&](OpBuilder &b, Location l, ArrayRef<Value> ivs,
            ValueRange) -> Value {
          Value diff = arith::SubIOp::create(b, l, ivs[1], ivs[0]);
          Value onDiagonal = arith::CmpIOp::create(
              b, l, arith::CmpIPredicate::eq, diff,
              arith::ConstantIndexOp::create(b, l, k));
          return arith::SelectOp::create(
              b, l, onDiagonal, scalarConstant(b, l, elementType, 1.0),
              scalarConstant(b, l, elementType, 0.0));
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// OneHot: `on` where the position along `axis` equals the index (negative
/// indices count from depth), else `off`. The depth is the static result
/// dim.
struct OneHotLowering : OpConversionPattern<kiln::OneHotOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(kiln::OneHotOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = convertedType(getTypeConverter(), op.getType());
    Location loc = op.getLoc();
    int64_t rank = type.getRank();
    int64_t axis = normalizeAxis(static_cast<int64_t>(op.getAxis()), rank);
    int64_t depth = type.getDimSize(axis);
    Type indexKilnType = getElementTypeOrSelf(op.getIndices().getType());
    Value values = adaptor.getValues();
    Value off = tensor::ExtractOp::create(
        rewriter, loc, values,
        ValueRange{arith::ConstantIndexOp::create(rewriter, loc, 0)});
    Value on = tensor::ExtractOp::create(
        rewriter, loc, values,
        ValueRange{arith::ConstantIndexOp::create(rewriter, loc, 1)});
    SmallVector<AffineExpr> exprs;
    for (int64_t d = 0; d < rank; ++d)
      if (d != axis)
        exprs.push_back(rewriter.getAffineDimExpr(d));
    Value result = indexGeneric(
        rewriter, loc, type, adaptor.getIndices(),
        AffineMap::get(rank, 0, exprs, getContext()),
        [&](OpBuilder &b, Location l, ArrayRef<Value> ivs,
            ValueRange args) -> Value {
          Type i64 = b.getI64Type();
          // Float indices truncate toward zero (ONNX Runtime casts them).
          Value index = castScalar(b, l, args[0], indexKilnType, i64);
          Value depthValue = scalarConstant(b, l, i64, depth);
          Value zero = scalarConstant(b, l, i64, 0);
          Value negative = arith::CmpIOp::create(
              b, l, arith::CmpIPredicate::slt, index, zero);
          index = arith::SelectOp::create(
              b, l, negative, arith::AddIOp::create(b, l, index, depthValue),
              index);
          Value position = arith::IndexCastOp::create(b, l, i64, ivs[axis]);
          Value hot = arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq,
                                            index, position);
          return arith::SelectOp::create(b, l, hot, on, off);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Same-shape data movement and scans
//===----------------------------------------------------------------------===//

/// Trilu: keeps x[..., i, j] where j - i >= k (upper) or <= k (lower); k
/// may be a run-time value.
struct TriluLowering : OpConversionPattern<kiln::TriluOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(kiln::TriluOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = convertedType(getTypeConverter(), op.getType());
    Location loc = op.getLoc();
    int64_t rank = type.getRank();
    if (rank < 2)
      return unsupported(op, "input rank below 2");
    Value k = isa<NoneType>(adaptor.getK().getType())
                  ? scalarConstant(rewriter, loc, rewriter.getI64Type(), 0)
                  : extractFirst(rewriter, loc, adaptor.getK());
    bool upper = op.getUpper() != 0;
    Type elementType = type.getElementType();
    Value result = indexGeneric(
        rewriter, loc, type, adaptor.getInput(),
        AffineMap::getMultiDimIdentityMap(rank, getContext()),
        [&](OpBuilder &b, Location l, ArrayRef<Value> ivs,
            ValueRange args) -> Value {
          Type i64 = b.getI64Type();
          Value i = arith::IndexCastOp::create(b, l, i64, ivs[rank - 2]);
          Value j = arith::IndexCastOp::create(b, l, i64, ivs[rank - 1]);
          Value diff = arith::SubIOp::create(b, l, j, i);
          Value keep = arith::CmpIOp::create(
              b, l, upper ? arith::CmpIPredicate::sge
                          : arith::CmpIPredicate::sle,
              diff, k);
          return arith::SelectOp::create(
              b, l, keep, args[0], scalarConstant(b, l, elementType, 0.0));
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// CumSum of `x` (of `type`, whose dynamic dims are read from `x`) along
/// `axis`: a loop over the positions along the axis carrying the running sum
/// of the slices (so each step is a vectorizable elementwise add over the
/// other dims); exclusive stores the sum before adding, reverse walks the
/// positions backwards. A run-time size of 0 runs no iteration.
Value cumSumAlong(OpBuilder &b, Location loc, Value x, RankedTensorType type,
                  int64_t axis, bool exclusive, bool reverse) {
  int64_t rank = type.getRank();
  Type elementType = type.getElementType();
  bool isFloat = isa<FloatType>(elementType);
  SmallVector<int64_t> sliceShape(type.getShape());
  sliceShape[axis] = 1;
  auto sliceType = RankedTensorType::get(sliceShape, elementType);
  SmallVector<Value> dynamicSizes, sliceDynamicSizes;
  SmallVector<OpFoldResult> sliceSizes;
  for (int64_t d = 0; d < rank; ++d) {
    if (d == axis) {
      sliceSizes.push_back(b.getIndexAttr(1));
      if (type.isDynamicDim(d))
        dynamicSizes.push_back(dimOf(b, loc, x, d));
      continue;
    }
    if (!type.isDynamicDim(d)) {
      sliceSizes.push_back(b.getIndexAttr(type.getDimSize(d)));
      continue;
    }
    Value size = dimOf(b, loc, x, d);
    dynamicSizes.push_back(size);
    sliceDynamicSizes.push_back(size);
    sliceSizes.push_back(size);
  }

  Value acc = filledTensor(b, loc, sliceType,
                           scalarConstant(b, loc, elementType, 0.0),
                           sliceDynamicSizes);
  Value init = emptyTensor(b, loc, type, dynamicSizes);
  Value lb = arith::ConstantIndexOp::create(b, loc, 0);
  Value ub = dimOf(b, loc, x, axis);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value last = type.isDynamicDim(axis)
                   ? Value(arith::SubIOp::create(b, loc, ub, one))
                   : Value(arith::ConstantIndexOp::create(
                         b, loc, type.getDimSize(axis) - 1));
  auto loop = scf::ForOp::create(
      b, loc, lb, ub, one, ValueRange{acc, init},
      [&](OpBuilder &fb, Location l, Value t, ValueRange iterArgs) {
        Value position = t;
        if (reverse)
          position = arith::SubIOp::create(fb, l, last, t);
        SmallVector<OpFoldResult> offsets(rank, fb.getIndexAttr(0));
        offsets[axis] = position;
        SmallVector<OpFoldResult> sizes = sliceSizes;
        SmallVector<OpFoldResult> strides(rank, fb.getIndexAttr(1));
        Value slice = tensor::ExtractSliceOp::create(fb, l, sliceType, x,
                                                     offsets, sizes, strides);
        // Exclusive: store the running sum before this slice is added.
        Value out = iterArgs[1];
        if (exclusive)
          out = tensor::InsertSliceOp::create(fb, l, iterArgs[0], out, offsets,
                                              sizes, strides);
        // The running sum is updated in place (outs = the carried tensor),
        // so the loop bufferizes without copies.
        SmallVector<AffineMap> maps(
            2, AffineMap::getMultiDimIdentityMap(rank, fb.getContext()));
        Value sum =
            linalg::GenericOp::create(
                fb, l, TypeRange{sliceType}, ValueRange{slice},
                ValueRange{iterArgs[0]}, maps,
                SmallVector<utils::IteratorType>(
                    rank, utils::IteratorType::parallel),
                [&](OpBuilder &bb, Location ll, ValueRange s) {
                  Value add =
                      isFloat
                          ? Value(arith::AddFOp::create(bb, ll, s[1], s[0]))
                          : Value(arith::AddIOp::create(bb, ll, s[1], s[0]));
                  linalg::YieldOp::create(bb, ll, add);
                })
                .getResult(0);
        if (!exclusive)
          out = tensor::InsertSliceOp::create(fb, l, sum, out, offsets, sizes,
                                              strides);
        scf::YieldOp::create(fb, l, ValueRange{sum, out});
      });
  return loop.getResult(1);
}

/// CumSum with a constant axis: cumSumAlong. With a run-time axis (the
/// ONNX backend tests feed it as an input), a chain of scf.if over the
/// possible axes, one cumSumAlong each; an out-of-range axis (invalid ONNX)
/// takes the last one.
struct CumSumLowering : OpConversionPattern<kiln::CumSumOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(kiln::CumSumOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = convertedType(getTypeConverter(), op.getType());
    Location loc = op.getLoc();
    int64_t rank = type.getRank();
    if (rank == 0)
      return unsupported(op, "rank-0 input");
    bool exclusive = op.getExclusive() != 0, reverse = op.getReverse() != 0;
    Value x = adaptor.getX();
    if (type.hasStaticShape() && type.getNumElements() == 0) {
      rewriter.replaceOp(op, emptyTensor(rewriter, loc, type));
      return success();
    }
    auto axisValues = constantInts(op.getAxis());
    if (succeeded(axisValues)) {
      if (axisValues->size() != 1)
        return unsupported(op, "axis has more than one element");
      int64_t axis = normalizeAxis(axisValues->front(), rank);
      if (axis < 0 || axis >= rank)
        return unsupported(op, "axis out of range");
      rewriter.replaceOp(
          op, cumSumAlong(rewriter, loc, x, type, axis, exclusive, reverse));
      return success();
    }

    Value axis = arith::IndexCastOp::create(
        rewriter, loc, rewriter.getIndexType(),
        extractFirst(rewriter, loc, adaptor.getAxis()));
    Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
    Value negative = arith::CmpIOp::create(
        rewriter, loc, arith::CmpIPredicate::slt, axis, zero);
    axis = arith::SelectOp::create(
        rewriter, loc, negative,
        arith::AddIOp::create(rewriter, loc, axis,
                              arith::ConstantIndexOp::create(rewriter, loc,
                                                             rank)),
        axis);
    // if axis == 0 {...} else if axis == 1 {...} ... else {last axis}
    // (scf.if rather than scf.index_switch: it lowers through the plainest
    // control flow).
    std::function<Value(OpBuilder &, int64_t)> choose =
        [&](OpBuilder &b, int64_t d) -> Value {
      if (d == rank - 1)
        return cumSumAlong(b, loc, x, type, d, exclusive, reverse);
      Value isAxis = arith::CmpIOp::create(
          b, loc, arith::CmpIPredicate::eq, axis,
          arith::ConstantIndexOp::create(b, loc, d));
      auto ifOp = scf::IfOp::create(
          b, loc, isAxis,
          [&](OpBuilder &tb, Location l) {
            scf::YieldOp::create(
                tb, l, cumSumAlong(tb, l, x, type, d, exclusive, reverse));
          },
          [&](OpBuilder &eb, Location l) {
            scf::YieldOp::create(eb, l, choose(eb, d + 1));
          });
      return ifOp.getResult(0);
    };
    rewriter.replaceOp(op, choose(rewriter, 0));
    return success();
  }
};

/// ReverseSequence: along the time axis, the first sequence_lens[b]
/// entries of batch b are reversed, the rest copied.
struct ReverseSequenceLowering
    : OpConversionPattern<kiln::ReverseSequenceOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(kiln::ReverseSequenceOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = convertedType(getTypeConverter(), op.getType());
    int64_t rank = type.getRank();
    int64_t batchAxis = static_cast<int64_t>(op.getBatchAxis());
    int64_t timeAxis = static_cast<int64_t>(op.getTimeAxis());
    if (rank < 2 || batchAxis == timeAxis || batchAxis < 0 || batchAxis > 1 ||
        timeAxis < 0 || timeAxis > 1)
      return unsupported(op, "batch_axis and time_axis must be 0 and 1");
    Value input = adaptor.getInput();
    Value result = indexGeneric(
        rewriter, op.getLoc(), type, adaptor.getSequenceLens(),
        dimRangeMap(rank, batchAxis, 1, getContext()),
        [&](OpBuilder &b, Location l, ArrayRef<Value> ivs,
            ValueRange args) -> Value {
          Value length =
              arith::IndexCastOp::create(b, l, b.getIndexType(), args[0]);
          Value t = ivs[timeAxis];
          Value inside = arith::CmpIOp::create(
              b, l, arith::CmpIPredicate::slt, t, length);
          Value last = arith::SubIOp::create(
              b, l, length, arith::ConstantIndexOp::create(b, l, 1));
          Value reversed = arith::SubIOp::create(b, l, last, t);
          SmallVector<Value> at(ivs);
          at[timeAxis] = arith::SelectOp::create(b, l, inside, reversed, t);
          return tensor::ExtractOp::create(b, l, input, at);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// reshape -> transpose -> reshape, the way ONNX defines DepthToSpace and
/// SpaceToDepth.
Value reshapeTransposeReshape(OpBuilder &b, Location loc, Value input,
                              ArrayRef<int64_t> wideShape,
                              ArrayRef<int64_t> perm,
                              RankedTensorType resultType) {
  Type elementType = resultType.getElementType();
  Value wide =
      reshapeTo(b, loc, input, RankedTensorType::get(wideShape, elementType));
  SmallVector<int64_t> permuted;
  for (int64_t p : perm)
    permuted.push_back(wideShape[p]);
  auto permutedType = RankedTensorType::get(permuted, elementType);
  Value transposed =
      linalg::TransposeOp::create(b, loc, wide,
                                  emptyTensor(b, loc, permutedType), perm)
          .getResult()[0];
  return reshapeTo(b, loc, transposed, resultType);
}

struct DepthToSpaceLowering : OpConversionPattern<kiln::DepthToSpaceOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(kiln::DepthToSpaceOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = convertedType(getTypeConverter(), op.getType());
    auto inputType = cast<RankedTensorType>(adaptor.getInput().getType());
    if (inputType.getRank() != 4)
      return unsupported(op, "input is not 4-D");
    int64_t bs = static_cast<int64_t>(op.getBlocksize());
    ArrayRef<int64_t> s = inputType.getShape();
    int64_t n = s[0], c = s[1], h = s[2], w = s[3];
    if (bs <= 0 || c % (bs * bs) != 0)
      return unsupported(op, "channels not divisible by blocksize^2");
    Value result;
    if (op.getMode() == "DCR")
      result = reshapeTransposeReshape(rewriter, op.getLoc(),
                                       adaptor.getInput(),
                                       {n, bs, bs, c / (bs * bs), h, w},
                                       {0, 3, 4, 1, 5, 2}, type);
    else if (op.getMode() == "CRD")
      result = reshapeTransposeReshape(rewriter, op.getLoc(),
                                       adaptor.getInput(),
                                       {n, c / (bs * bs), bs, bs, h, w},
                                       {0, 1, 4, 2, 5, 3}, type);
    else
      return unsupported(op, "mode '" + op.getMode() + "'");
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct SpaceToDepthLowering : OpConversionPattern<kiln::SpaceToDepthOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(kiln::SpaceToDepthOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = convertedType(getTypeConverter(), op.getType());
    auto inputType = cast<RankedTensorType>(adaptor.getInput().getType());
    if (inputType.getRank() != 4)
      return unsupported(op, "input is not 4-D");
    int64_t bs = static_cast<int64_t>(op.getBlocksize());
    ArrayRef<int64_t> s = inputType.getShape();
    int64_t n = s[0], c = s[1], h = s[2], w = s[3];
    if (bs <= 0 || h % bs != 0 || w % bs != 0)
      return unsupported(op, "spatial dims not divisible by blocksize");
    rewriter.replaceOp(
        op, reshapeTransposeReshape(rewriter, op.getLoc(), adaptor.getInput(),
                                    {n, c, h / bs, bs, w / bs, bs},
                                    {0, 3, 5, 1, 2, 4}, type));
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Data-dependent results
//===----------------------------------------------------------------------===//

/// TopK by repeated selection: for each row along the axis, the j-th
/// output is the best element (value, then lower index, as ONNX Runtime
/// breaks ties) among those ordered after the (j-1)-th. O(K * n) per row
/// and no scratch storage; the output is sorted, which `sorted = 0` allows.
struct TopKLowering : OpConversionPattern<kiln::TopKOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(kiln::TopKOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto valuesType =
        convertedType(getTypeConverter(), op.getValues().getType());
    auto indicesType =
        convertedType(getTypeConverter(), op.getIndices().getType());
    Location loc = op.getLoc();
    Value x = adaptor.getX();
    auto xType = cast<RankedTensorType>(x.getType());
    int64_t rank = xType.getRank();
    int64_t axis = normalizeAxis(static_cast<int64_t>(op.getAxis()), rank);
    int64_t n = xType.getDimSize(axis);
    int64_t k = valuesType.getDimSize(axis);
    if (k > n)
      return unsupported(op, "K exceeds the axis dim");
    Value values = emptyTensor(rewriter, loc, valuesType);
    Value indices = emptyTensor(rewriter, loc, indicesType);
    if (valuesType.getNumElements() == 0) {
      rewriter.replaceOp(op, {values, indices});
      return success();
    }
    Type kilnType = getElementTypeOrSelf(op.getX().getType());
    bool isFloat = isa<FloatType>(kilnType);
    bool isUnsigned = isUnsignedInt(kilnType);
    bool largest = op.getLargest() != 0;

    // (a, ai) comes before (b, bi) in the output order.
    auto before = [&](OpBuilder &b, Location l, Value a, Value ai, Value v,
                      Value vi) -> Value {
      Value strict, equal;
      if (isFloat) {
        strict = arith::CmpFOp::create(
            b, l, largest ? arith::CmpFPredicate::OGT : arith::CmpFPredicate::OLT,
            a, v);
        equal = arith::CmpFOp::create(b, l, arith::CmpFPredicate::OEQ, a, v);
      } else {
        arith::CmpIPredicate predicate =
            largest ? (isUnsigned ? arith::CmpIPredicate::ugt
                                  : arith::CmpIPredicate::sgt)
                    : (isUnsigned ? arith::CmpIPredicate::ult
                                  : arith::CmpIPredicate::slt);
        strict = arith::CmpIOp::create(b, l, predicate, a, v);
        equal = arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, a, v);
      }
      Value lowerIndex =
          arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt, ai, vi);
      return arith::OrIOp::create(
          b, l, strict, arith::AndIOp::create(b, l, equal, lowerIndex));
    };

    // One loop per dim other than the axis.
    SmallVector<Value> lbs, ubs, steps;
    for (int64_t d = 0; d < rank; ++d) {
      if (d == axis)
        continue;
      lbs.push_back(arith::ConstantIndexOp::create(rewriter, loc, 0));
      ubs.push_back(
          arith::ConstantIndexOp::create(rewriter, loc, xType.getDimSize(d)));
      steps.push_back(arith::ConstantIndexOp::create(rewriter, loc, 1));
    }
    scf::LoopNest nest = scf::buildLoopNest(
        rewriter, loc, lbs, ubs, steps, ValueRange{values, indices},
        [&](OpBuilder &b, Location l, ValueRange outer,
            ValueRange iterArgs) -> scf::ValueVector {
          auto at = [&](Value position) {
            SmallVector<Value> full(outer);
            full.insert(full.begin() + axis, position);
            return full;
          };
          Value zero = arith::ConstantIndexOp::create(b, l, 0);
          Value one = arith::ConstantIndexOp::create(b, l, 1);
          Value none = arith::ConstantIndexOp::create(b, l, -1);
          Value firstValue = tensor::ExtractOp::create(b, l, x, at(zero));
          auto selection = scf::ForOp::create(
              b, l, zero, arith::ConstantIndexOp::create(b, l, k), one,
              ValueRange{iterArgs[0], iterArgs[1], firstValue, none},
              [&](OpBuilder &jb, Location jl, Value j, ValueRange state) {
                Value prev = state[2], prevIndex = state[3];
                Value isFirst = arith::CmpIOp::create(
                    jb, jl, arith::CmpIPredicate::slt, prevIndex, zero);
                Value falseValue =
                    arith::ConstantIntOp::create(jb, jl, jb.getI1Type(), 0);
                auto scan = scf::ForOp::create(
                    jb, jl, zero, arith::ConstantIndexOp::create(jb, jl, n),
                    one, ValueRange{firstValue, zero, falseValue},
                    [&](OpBuilder &ib, Location il, Value i,
                        ValueRange best) {
                      Value v = tensor::ExtractOp::create(ib, il, x, at(i));
                      Value eligible = arith::OrIOp::create(
                          ib, il, isFirst,
                          before(ib, il, prev, prevIndex, v, i));
                      Value notFound = arith::XOrIOp::create(
                          ib, il, best[2],
                          arith::ConstantIntOp::create(ib, il, ib.getI1Type(),
                                                       1));
                      Value improves = arith::OrIOp::create(
                          ib, il, notFound,
                          before(ib, il, v, i, best[0], best[1]));
                      Value take =
                          arith::AndIOp::create(ib, il, eligible, improves);
                      scf::YieldOp::create(
                          ib, il,
                          ValueRange{
                              arith::SelectOp::create(ib, il, take, v,
                                                      best[0]),
                              arith::SelectOp::create(ib, il, take, i,
                                                      best[1]),
                              arith::OrIOp::create(ib, il, best[2], take)});
                    });
                Value bestValue = scan.getResult(0);
                Value bestIndex = scan.getResult(1);
                Value outValues = tensor::InsertOp::create(
                    jb, jl, bestValue, state[0], at(j));
                Value outIndices = tensor::InsertOp::create(
                    jb, jl,
                    arith::IndexCastOp::create(jb, jl, jb.getI64Type(),
                                               bestIndex),
                    state[1], at(j));
                scf::YieldOp::create(
                    jb, jl,
                    ValueRange{outValues, outIndices, bestValue, bestIndex});
              });
          return {selection.getResult(0), selection.getResult(1)};
        });
    rewriter.replaceOp(op, nest.results);
    return success();
  }
};

struct NonZeroLowering : OpConversionPattern<kiln::NonZeroOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(kiln::NonZeroOp op, OpAdaptor,
                  ConversionPatternRewriter &) const override {
    return unsupported(op, "the number of non-zero elements (the output "
                           "shape) is only known at run time; a constant "
                           "input would have been folded");
  }
};

} // namespace

void kiln::populateShapeToLinalgPatterns(const TypeConverter &converter,
                                         RewritePatternSet &patterns) {
  MLIRContext *context = patterns.getContext();
  patterns.add<ShapeLowering, SizeLowering,
               ReshapeLikeLowering<kiln::ReshapeOp>,
               ReshapeLikeLowering<kiln::FlattenOp>,
               ReshapeLikeLowering<kiln::SqueezeOp>,
               ReshapeLikeLowering<kiln::UnsqueezeOp>, TransposeLowering,
               ExpandLowering, TileLowering, ConcatLowering, SplitLowering,
               SliceLowering, GatherLowering, GatherElementsLowering,
               GatherNDLowering, ScatterElementsLowering, ScatterNDLowering,
               TensorScatterLowering,
               ConstantOfShapeLowering, RangeLowering, EyeLikeLowering,
               OneHotLowering, TriluLowering, CumSumLowering,
               ReverseSequenceLowering, DepthToSpaceLowering,
               SpaceToDepthLowering, TopKLowering, NonZeroLowering>(
      converter, context);
}
