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
#include "mlir/Dialect/Utils/ReshapeOpsUtils.h"

#include <numeric>

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

/// `value` (static shape) reshaped to the static `type` of the same element
/// count: one collapse_shape or expand_shape when a reassociation exists,
/// else a collapse to 1-D followed by an expand.
Value reshapeTo(OpBuilder &b, Location loc, Value value,
                RankedTensorType type) {
  auto source = cast<RankedTensorType>(value.getType());
  if (source.getShape() == type.getShape())
    return value;
  if (source.getRank() != type.getRank()) {
    if (auto reassociation = getReassociationIndicesForReshape(source, type)) {
      if (source.getRank() > type.getRank())
        return tensor::CollapseShapeOp::create(b, loc, type, value,
                                               *reassociation);
      return tensor::ExpandShapeOp::create(b, loc, type, value,
                                           *reassociation);
    }
  }
  auto flatType =
      RankedTensorType::get({source.getNumElements()}, type.getElementType());
  auto all = [](int64_t rank) {
    ReassociationIndices group(rank);
    std::iota(group.begin(), group.end(), 0);
    return SmallVector<ReassociationIndices>{group};
  };
  // A rank-0 tensor has one element: it expands to tensor<1x...> with an
  // empty reassociation (and a tensor<1x...> collapses to it likewise).
  Value flat =
      source.getRank() == 0
          ? Value(tensor::ExpandShapeOp::create(
                b, loc, flatType, value, SmallVector<ReassociationIndices>{}))
          : Value(tensor::CollapseShapeOp::create(b, loc, flatType, value,
                                                  all(source.getRank())));
  if (type.getRank() == 1)
    return flat;
  if (type.getRank() == 0)
    return tensor::CollapseShapeOp::create(b, loc, type, flat,
                                           SmallVector<ReassociationIndices>{});
  return tensor::ExpandShapeOp::create(b, loc, type, flat,
                                       all(type.getRank()));
}

/// A linalg.generic copying `input` into a new tensor of `resultType`, input
/// element (map applied to the result index) to result element.
Value copyGeneric(OpBuilder &b, Location loc, Value input, AffineMap inputMap,
                  RankedTensorType resultType) {
  MLIRContext *context = b.getContext();
  int64_t rank = resultType.getRank();
  SmallVector<AffineMap> maps = {
      inputMap, AffineMap::getMultiDimIdentityMap(rank, context)};
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  return linalg::GenericOp::create(
             b, loc, TypeRange{resultType}, ValueRange{input},
             ValueRange{emptyTensor(b, loc, resultType)}, maps, iterators,
             [](OpBuilder &nested, Location nestedLoc, ValueRange args) {
               linalg::YieldOp::create(nested, nestedLoc, args[0]);
             })
      .getResult(0);
}

/// A linalg.generic over `resultType` whose body computes each element from
/// the loop indices (linalg.index), typically with tensor.extract.
Value indexGeneric(
    OpBuilder &b, Location loc, RankedTensorType resultType,
    function_ref<Value(OpBuilder &, Location, ArrayRef<Value>)> body) {
  MLIRContext *context = b.getContext();
  int64_t rank = resultType.getRank();
  SmallVector<AffineMap> maps = {
      AffineMap::getMultiDimIdentityMap(rank, context)};
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  return linalg::GenericOp::create(
             b, loc, TypeRange{resultType}, ValueRange{},
             ValueRange{emptyTensor(b, loc, resultType)}, maps, iterators,
             [&](OpBuilder &nested, Location nestedLoc, ValueRange) {
               SmallVector<Value> indices;
               for (int64_t d = 0; d < rank; ++d)
                 indices.push_back(
                     linalg::IndexOp::create(nested, nestedLoc, d));
               linalg::YieldOp::create(nested, nestedLoc,
                                       body(nested, nestedLoc, indices));
             })
      .getResult(0);
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

/// Reads element 0 of a rank-0 or one-element tensor.
Value extractFirst(OpBuilder &b, Location loc, Value tensor) {
  auto type = cast<RankedTensorType>(tensor.getType());
  SmallVector<Value> indices(type.getRank(),
                             arith::ConstantIndexOp::create(b, loc, 0));
  return tensor::ExtractOp::create(b, loc, tensor, indices);
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
    SmallVector<int64_t> offsets(rank, 0), strides(rank, 1);
    SmallVector<Value> results;
    for (Value output : op.getOutputs()) {
      auto type = convertedType(getTypeConverter(), output.getType());
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

/// Slice: the result size comes from the static result type; the starts
/// and steps must be constants. Positive steps are a strided extract_slice;
/// negative ones a generic reading start + step * i.
struct SliceLowering : OpConversionPattern<kiln::SliceOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(kiln::SliceOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = convertedType(getTypeConverter(), op.getType());
    Location loc = op.getLoc();
    Value data = adaptor.getData();
    auto dataType = cast<RankedTensorType>(data.getType());
    int64_t rank = dataType.getRank();

    auto starts = constantInts(op.getStarts());
    if (failed(starts))
      return unsupported(op, "starts is not a constant");
    SmallVector<int64_t> axes, steps(starts->size(), 1);
    if (isa<NoneType>(op.getAxes().getType())) {
      for (int64_t i = 0, e = starts->size(); i < e; ++i)
        axes.push_back(i);
    } else {
      auto values = constantInts(op.getAxes());
      if (failed(values))
        return unsupported(op, "axes is not a constant");
      axes = *values;
    }
    if (!isa<NoneType>(op.getSteps().getType())) {
      auto values = constantInts(op.getSteps());
      if (failed(values))
        return unsupported(op, "steps is not a constant");
      steps = *values;
    }
    if (axes.size() != starts->size() || steps.size() != starts->size())
      return unsupported(op, "starts, axes and steps differ in length");

    if (type.getNumElements() == 0) {
      rewriter.replaceOp(op, emptyTensor(rewriter, loc, type));
      return success();
    }
    SmallVector<int64_t> offsets(rank, 0), strides(rank, 1);
    bool negative = false;
    for (auto [i, rawAxis] : llvm::enumerate(axes)) {
      int64_t axis = normalizeAxis(rawAxis, rank);
      if (axis < 0 || axis >= rank)
        return unsupported(op, "axis out of range");
      int64_t dim = dataType.getDimSize(axis);
      int64_t step = steps[i];
      if (step == 0)
        return unsupported(op, "a step is 0");
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
        [&](OpBuilder &b, Location l, ArrayRef<Value> ivs) -> Value {
          SmallVector<Value> in;
          for (int64_t d = 0; d < rank; ++d) {
            // offset + stride * i
            Value scaled = arith::MulIOp::create(
                b, l, ivs[d], arith::ConstantIndexOp::create(b, l, strides[d]));
            in.push_back(arith::AddIOp::create(
                b, l, scaled,
                arith::ConstantIndexOp::create(b, l, offsets[d])));
          }
          return tensor::ExtractOp::create(b, l, data, in);
        });
    rewriter.replaceOp(op, result);
    return success();
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
               SliceLowering>(converter, context);
}
