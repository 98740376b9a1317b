//===- Resize.cpp - Lowering of Resize to linalg --------------------------===//
//
// Resize (nearest, linear, cubic): one linalg.generic over the result
// reading X with tensor.extract.
//
//===----------------------------------------------------------------------===//

#include "NN.h"

#include "kiln/Dialect/KilnOps.h"

using namespace mlir;
using namespace kiln::lowering;

namespace {

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
    if (useScales)
      scaleValues = constantElements(scales);
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
              Value scaled = arith::MulFOp::create(b, l, xo, span);
              Value lengthLess1 = arith::SubFOp::create(b, l, length, cf(1));
              Value stepped =
                  arith::DivFOp::create(b, l, scaled, lengthLess1);
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
                  Value aboveZero = arith::CmpIOp::create(
                      b, l, arith::CmpIPredicate::sge, raw, ci(0));
                  Value belowEnd = arith::CmpIOp::create(
                      b, l, arith::CmpIPredicate::slt, raw, ci(in));
                  Value inside =
                      arith::AndIOp::create(b, l, aboveZero, belowEnd);
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

} // namespace

void kiln::lowering::populateResizePatterns(const TypeConverter &converter,
                                            RewritePatternSet &patterns) {
  patterns.add<ResizeLowering>(converter, patterns.getContext());
}
