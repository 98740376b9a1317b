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
// The patterns live in one file per op family (MatMul.cpp, Softmax.cpp,
// Conv.cpp, Pool.cpp, Normalization.cpp, Pad.cpp, Resize.cpp,
// Attention.cpp; see NN.h); this file holds the helpers several of them
// share and registers all of their patterns.
//
//===----------------------------------------------------------------------===//

#include "NN.h"

#include "kiln/Conversion/KilnToLinalg.h"

#include <cmath>

using namespace mlir;
using namespace kiln::lowering;

namespace kiln::lowering {

AffineMap channelMap(unsigned rank, MLIRContext *context) {
  return AffineMap::get(rank, 0, {getAffineDimExpr(1, context)}, context);
}

//===----------------------------------------------------------------------===//
// Convolution and pooling
//===----------------------------------------------------------------------===//

SmallVector<int64_t> listOrDefault(std::optional<ArrayRef<int64_t>> values,
                                   size_t size, int64_t fallback) {
  return values ? SmallVector<int64_t>(*values)
                : SmallVector<int64_t>(size, fallback);
}

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
  w.strides = listOrDefault(attrs.strides, rank, 1);
  w.dilations = listOrDefault(attrs.dilations, rank, 1);
  SmallVector<int64_t> pads = listOrDefault(attrs.pads, 2 * rank, 0);
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

Value padTensor(OpBuilder &b, Location loc, Value value, ArrayRef<int64_t> low,
                ArrayRef<int64_t> high, Value padValue) {
  if (llvm::all_of(low, [](int64_t v) { return v == 0; }) &&
      llvm::all_of(high, [](int64_t v) { return v == 0; }))
    return value;
  auto type = tensorType(value);
  SmallVector<int64_t> shape;
  SmallVector<OpFoldResult> lowValues, highValues;
  for (int64_t i = 0; i < type.getRank(); ++i) {
    shape.push_back(type.isDynamicDim(i) ? ShapedType::kDynamic
                                         : type.getDimSize(i) + low[i] +
                                               high[i]);
    lowValues.push_back(b.getIndexAttr(low[i]));
    highValues.push_back(b.getIndexAttr(high[i]));
  }
  return tensor::PadOp::create(b, loc, type.clone(shape), value, lowValues,
                               highValues, padValue);
}

Value padWindowInput(OpBuilder &b, Location loc, Value x, const Window &w,
                     ArrayRef<int64_t> output, Value padValue,
                     bool channelsLast) {
  auto type = tensorType(x);
  int64_t first = channelsLast ? 1 : 2;
  SmallVector<int64_t> low(type.getRank(), 0), high(type.getRank(), 0);
  for (int64_t i = 0; i < w.rank(); ++i) {
    int64_t in = type.getDimSize(first + i);
    // A run-time size: no ceil_mode overhang (supportsDynamicShapes).
    int64_t extra =
        ShapedType::isDynamic(in) || ShapedType::isDynamic(output[i])
            ? 0
            : std::max<int64_t>(0, w.reach(i, output[i]) -
                                       (in + w.padBegin[i] + w.padEnd[i]));
    low[first + i] = w.padBegin[i];
    high[first + i] = w.padEnd[i] + extra;
  }
  return padTensor(b, loc, x, low, high, padValue);
}

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

Value lpRoot(OpBuilder &b, Location loc, Value sum, int64_t p) {
  if (p == 1)
    return sum;
  if (p == 2)
    return math::SqrtOp::create(b, loc, sum);
  return math::PowFOp::create(
      b, loc, sum, scalarConstant(b, loc, sum.getType(), 1.0 / p));
}

//===----------------------------------------------------------------------===//
// Kiln's fused ops
//===----------------------------------------------------------------------===//

/// The epilogue activation `act` of a fused op on scalar `v`.
static Value applyActivation(OpBuilder &b, Location l, StringRef act, Value v) {
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
  auto clamp = [&](Value x, double lo, double hi) -> Value {
    return arith::MinimumFOp::create(b, l,
                                     arith::MaximumFOp::create(b, l, x, c(lo)),
                                     c(hi));
  };
  if (act == "relu6")
    return clamp(v, 0, 6);
  if (act == "hard_swish") // x * clamp(x / 6 + 1/2, 0, 1), as kiln.hard_swish
    return arith::MulFOp::create(
        b, l, v,
        clamp(arith::AddFOp::create(
                  b, l, arith::MulFOp::create(b, l, v, c(1.0 / 6.0)), c(0.5)),
              0, 1));
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

} // namespace kiln::lowering

void kiln::populateNNToLinalgPatterns(const TypeConverter &converter,
                                      RewritePatternSet &patterns) {
  populateMatMulPatterns(converter, patterns);
  populateSoftmaxPatterns(converter, patterns);
  populateConvPatterns(converter, patterns);
  populatePoolPatterns(converter, patterns);
  populateNormalizationPatterns(converter, patterns);
  populatePadPatterns(converter, patterns);
  populateResizePatterns(converter, patterns);
  populateAttentionPatterns(converter, patterns);
}
