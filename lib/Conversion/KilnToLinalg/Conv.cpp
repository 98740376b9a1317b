//===- Conv.cpp - Lowering of the convolutions to linalg ------------------===//
//
// Convolutions become the named linalg conv ops when they fit (group 1),
// else a grouped linalg.generic; ConvTranspose a convolution of the
// upsampled input; kiln-optimize-layout's channels-last convolutions and
// kiln's fused convolutions (the convolution, then buildEpilogue) likewise.
// The window helpers they share with the pools are in NN.h.
//
//===----------------------------------------------------------------------===//

#include "NN.h"

#include "kiln/Dialect/KilnOps.h"

using namespace mlir;
using namespace kiln::lowering;

namespace {

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
    SmallVector<int64_t> strides = listOrDefault(op.getStrides(), s, 1);
    SmallVector<int64_t> dilations = listOrDefault(op.getDilations(), s, 1);
    SmallVector<int64_t> pads = listOrDefault(op.getPads(), 2 * s, 0);
    SmallVector<int64_t> outputPadding =
        listOrDefault(op.getOutputPadding(), s, 0);
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

/// kiln.conv, kiln.conv_nhwc, kiln.fused_conv and kiln.fused_conv_nhwc: the
/// convolution (bias in the accumulator), then for the fused ops the
/// activation and residual epilogue, for the others the truncation of a
/// half-precision accumulator.
template <typename OpTy>
struct ConvLikeLowering : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;
  using OpAdaptor = typename OpConversionPattern<OpTy>::OpAdaptor;
  static constexpr bool nhwc = std::is_same_v<OpTy, kiln::ConvNhwcOp> ||
                               std::is_same_v<OpTy, kiln::FusedConvNhwcOp>;
  static constexpr bool fused = std::is_same_v<OpTy, kiln::FusedConvOp> ||
                                std::is_same_v<OpTy, kiln::FusedConvNhwcOp>;
  LogicalResult
  matchAndRewrite(OpTy op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto resultType = cast<RankedTensorType>(
        this->getTypeConverter()->convertType(op.getType()));
    FailureOr<Value> acc;
    if constexpr (nhwc)
      acc = buildConvNhwcAccumulator(op, rewriter, adaptor.getX(),
                                     adaptor.getW(), adaptor.getB(),
                                     resultType);
    else
      acc = buildConvAccumulator(op, rewriter, adaptor.getX(), adaptor.getW(),
                                 adaptor.getB(), resultType);
    if (failed(acc))
      return failure();
    if constexpr (fused) {
      Value residual =
          isNone(adaptor.getResidual()) ? Value() : adaptor.getResidual();
      rewriter.replaceOp(
          op, buildEpilogue(rewriter, op.getLoc(), *acc, Value(), residual,
                            op.getActivation(),
                            op.getResidualBeforeActivation(), 1.0,
                            resultType));
    } else {
      rewriter.replaceOp(op, truncateTensor(rewriter, op.getLoc(), *acc,
                                            resultType.getElementType()));
    }
    return success();
  }
};

} // namespace

void kiln::lowering::populateConvPatterns(const TypeConverter &converter,
                                          RewritePatternSet &patterns) {
  patterns.add<ConvLikeLowering<kiln::ConvOp>, ConvTransposeLowering,
               ConvLikeLowering<kiln::FusedConvOp>,
               ConvLikeLowering<kiln::ConvNhwcOp>,
               ConvLikeLowering<kiln::FusedConvNhwcOp>>(converter,
                                                        patterns.getContext());
}
