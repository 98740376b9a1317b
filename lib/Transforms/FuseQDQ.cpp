//===- FuseQDQ.cpp - QDQ graphs into integer matmuls and convs -----------===//
//
// kiln-fuse-qdq: a QDQ model (onnxruntime.quantization.quantize_static's
// QDQ format) computes in float between DequantizeLinear and
// QuantizeLinear. Lowered as written, every quantized layer is a float
// matmul plus extra elementwise passes: slower than the float model. This
// pass makes the integer arithmetic explicit:
//
//   Q(DQ(y)) with the same scale, zero point and axis          -> y (exact)
//
//   DQ(a) x DQ(w) (MatMul, or Gemm with transA = 0, alpha = beta = 1),
//   then an optional bias (Gemm's C, or an Add) that is DQ of an i32
//   constant whose scale is a_scale * w_scale, then an optional Relu, then
//   an optional per-tensor Q
//                                  -> kiln.quantized_matmul (int8 or f32)
//
//   Conv(DQ(x), DQ(w constant), bias) with group 1 on NCHW (bias: DQ of
//   i32 with the combined scale, added in i32; or any constant bias,
//   added in f32), then an optional Relu, then an optional per-tensor Q
//                                  -> kiln.quantized_conv (int8 or f32)
//
// The conv weight is permuted at compile time to OHWI [M, KH, KW, C]
// (still int8): the lowering's im2col then copies runs of contiguous
// channels. Grouped and depthwise convs stay float.
//
// `a` is an i8/ui8 activation with a per-tensor scale and zero point; `w`
// a constant i8/ui8 weight quantized per tensor or per output column. The
// weight is stored [N, K] (transposed here at compile time when the graph
// has it [K, N]) and stays int8; its row sums, the combined scales
// a_scale * w_scale[n] and the bias are folded at compile time. Each
// intermediate must have one use; without a Q after it (float consumers,
// several uses) the op has an f32 result.
//
// The float and integer forms agree up to rounding: the integer op adds the
// bias in i32 (exact) and multiplies by the combined scale once, where the
// QDQ graph rounds the dequantized operands and the float sum.
//
//===----------------------------------------------------------------------===//

#include "FoldUtils.h"
#include "FusionMatchers.h"

#include "kiln/Dialect/KilnOps.h"
#include "kiln/Dialect/KilnQuantConvOps.h"
#include "kiln/Transforms/Passes.h"
#include "kiln/Transforms/Statistics.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <cmath>

namespace kiln {
#define GEN_PASS_DEF_KILNFUSEQDQ
#include "kiln/Transforms/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;
using fold::ConstTensor;

namespace {

struct QDQCounts {
  int64_t roundTrips = 0, quantized = 0, dequantized = 0;
  int64_t convsQuantized = 0, convsDequantized = 0;
};

std::optional<ConstTensor> readConstant(Value v) {
  ElementsAttr attr;
  if (!v || !matchPattern(v, m_Constant(&attr)))
    return std::nullopt;
  return ConstTensor::read(attr);
}

/// True when `a` and `b` are the same value or equal constants (both none
/// counts as equal).
bool sameParam(Value a, Value b) {
  if (a == b)
    return true;
  if (isNone(a) || isNone(b))
    return false;
  ElementsAttr x, y;
  return matchPattern(a, m_Constant(&x)) && matchPattern(b, m_Constant(&y)) &&
         x == y;
}

bool isPerTensor(Value v) {
  return isNone(v) || cast<RankedTensorType>(v.getType()).getNumElements() == 1;
}

/// Q(DQ(y)) -> y when both use the same scale, zero point and (for
/// per-axis parameters) axis, and y has Q's result type: dequantizing then
/// quantizing again with the same parameters gives y back exactly.
struct FoldRoundTrip : OpRewritePattern<QuantizeLinearOp> {
  FoldRoundTrip(MLIRContext *context, QDQCounts &counts)
      : OpRewritePattern(context), counts(counts) {}
  LogicalResult matchAndRewrite(QuantizeLinearOp q,
                                PatternRewriter &rewriter) const override {
    auto dq = q.getX().getDefiningOp<DequantizeLinearOp>();
    if (!dq || dq.getX().getType() != q.getType() ||
        !sameParam(q.getYScale(), dq.getXScale()) ||
        !sameParam(q.getYZeroPoint(), dq.getXZeroPoint()) ||
        q.getBlockSize() != 0 || dq.getBlockSize() != 0)
      return failure();
    // Without a zero point Q makes ui8; DQ's x must then be ui8 too (the
    // type check above), so a missing zero point on both sides is zero.
    if (!isPerTensor(q.getYScale())) {
      int64_t rank = cast<RankedTensorType>(q.getType()).getRank();
      auto norm = [&](int64_t axis) { return axis < 0 ? axis + rank : axis; };
      if (norm(q.getAxis()) != norm(dq.getAxis()))
        return failure();
    }
    rewriter.replaceOp(q, dq.getX());
    ++counts.roundTrips;
    return success();
  }
  QDQCounts &counts;
};

/// The per-tensor quantization parameters of a DQ's input.
struct ActivationQuant {
  Value q;          // the i8/ui8 tensor
  Value zeroPoint;  // constant, or none
  float scale;
  int64_t zp = 0;
};

std::optional<ActivationQuant> matchActivation(Value v) {
  auto dq = v.getDefiningOp<DequantizeLinearOp>();
  if (!dq || dq.getBlockSize() != 0 ||
      !cast<RankedTensorType>(dq.getType()).getElementType().isF32())
    return std::nullopt;
  Type element = cast<RankedTensorType>(dq.getX().getType()).getElementType();
  if (!element.isInteger(8))
    return std::nullopt;
  std::optional<double> scale = fusion::getScalarConstant(dq.getXScale());
  if (!scale || !isPerTensor(dq.getXScale()))
    return std::nullopt;
  ActivationQuant result{dq.getX(), dq.getXZeroPoint(), float(*scale)};
  if (!isNone(dq.getXZeroPoint())) {
    std::optional<double> zp = fusion::getScalarConstant(dq.getXZeroPoint());
    if (!zp)
      return std::nullopt;
    result.zp = int64_t(*zp);
  }
  return result;
}

/// A constant weight DQ(w) of a matmul or a convolution: w an i8/ui8
/// constant of static shape, its scale and zero point constants too, the
/// result f32.
struct ConstWeightDQ {
  DequantizeLinearOp dq;
  RankedTensorType type;     // w's
  ConstTensor w;
  std::vector<float> scale;  // one per element of the scale, or one
  std::vector<int64_t> zp;   // one per element of the zero point, or one 0
};

std::optional<ConstWeightDQ> matchConstWeightDQ(Value v, int64_t rank) {
  auto dq = v.getDefiningOp<DequantizeLinearOp>();
  if (!dq || dq.getBlockSize() != 0 ||
      !cast<RankedTensorType>(dq.getType()).getElementType().isF32())
    return std::nullopt;
  auto type = cast<RankedTensorType>(dq.getX().getType());
  if (type.getRank() != rank || !type.hasStaticShape() ||
      !type.getElementType().isInteger(8))
    return std::nullopt;
  std::optional<ConstTensor> w = readConstant(dq.getX());
  std::optional<ConstTensor> scale = readConstant(dq.getXScale());
  if (!w || !scale)
    return std::nullopt;
  std::optional<ConstTensor> zp;
  if (!isNone(dq.getXZeroPoint()) &&
      !(zp = readConstant(dq.getXZeroPoint())))
    return std::nullopt;
  ConstWeightDQ result{dq, type, *w, {}, {}};
  for (int64_t i = 0; i < scale->getNumElements(); ++i)
    result.scale.push_back(float(scale->getFloat(i)));
  if (zp)
    for (int64_t i = 0; i < zp->getNumElements(); ++i)
      result.zp.push_back(zp->getInt(i));
  else
    result.zp.push_back(0);
  return result;
}

/// A constant weight DQ(w) whose quantization runs along the output
/// columns (or per tensor), read as [N, K].
struct WeightQuant {
  ConstTensor w;                 // [N, K]
  std::vector<float> scale;      // one per column n, or one
  std::vector<int64_t> zp;       // one per column n, or one
};

/// `v` = DQ(w constant) used as the right operand of a matmul; `transposed`
/// when it is stored [N, K] (Gemm's transB).
std::optional<WeightQuant> matchWeight(Value v, bool transposed) {
  std::optional<ConstWeightDQ> dq = matchConstWeightDQ(v, 2);
  if (!dq)
    return std::nullopt;
  RankedTensorType type = dq->type;
  int64_t nDim = transposed ? 0 : 1;
  int64_t n = type.getDimSize(nDim), k = type.getDimSize(1 - nDim);
  int64_t numScales = dq->scale.size();
  if (numScales != 1) {
    // The accessor is unsigned (I64Attr): a negative ONNX axis wraps.
    int64_t axis = static_cast<int64_t>(dq->dq.getAxis());
    if (axis < 0)
      axis += 2;
    // Per-axis along K would scale the reduction: not an integer matmul.
    if (axis != nDim || numScales != n)
      return std::nullopt;
  }
  WeightQuant result;
  result.scale = std::move(dq->scale);
  result.zp = std::move(dq->zp);
  auto nkType = RankedTensorType::get({n, k}, type.getElementType());
  if (transposed) {
    result.w = dq->w.withType(nkType);
  } else {
    result.w = ConstTensor::getDense(nkType);
    for (int64_t r = 0; r < k; ++r)
      for (int64_t c = 0; c < n; ++c)
        result.w.setInt(c * k + r, dq->w.getInt(r * n + c));
  }
  return result;
}

/// `v` = DQ(b) with b an i32 constant of N elements and zero point 0 whose
/// scale is (within an ulp or two) `scale[n]`: b is then the bias in units
/// of the accumulator, to be added in i32.
std::optional<std::vector<int64_t>> matchBias(Value v,
                                              ArrayRef<float> scale,
                                              int64_t n) {
  auto dq = v.getDefiningOp<DequantizeLinearOp>();
  if (!dq || dq.getBlockSize() != 0)
    return std::nullopt;
  auto type = cast<RankedTensorType>(dq.getX().getType());
  if (!type.getElementType().isInteger(32) || type.getNumElements() != n ||
      llvm::count_if(type.getShape(), [](int64_t d) { return d != 1; }) > 1)
    return std::nullopt;
  std::optional<ConstTensor> b = readConstant(dq.getX());
  std::optional<ConstTensor> s = readConstant(dq.getXScale());
  if (!b || !s)
    return std::nullopt;
  if (!isNone(dq.getXZeroPoint())) {
    std::optional<ConstTensor> zp = readConstant(dq.getXZeroPoint());
    if (!zp)
      return std::nullopt;
    for (int64_t i = 0; i < zp->getNumElements(); ++i)
      if (zp->getInt(i) != 0)
        return std::nullopt;
  }
  if (s->getNumElements() != 1 && s->getNumElements() != n)
    return std::nullopt;
  std::vector<int64_t> bias;
  for (int64_t i = 0; i < n; ++i) {
    double want = scale[scale.size() == 1 ? 0 : i];
    double have = float(s->getFloat(s->getNumElements() == 1 ? 0 : i));
    if (std::abs(have - want) > 4e-7 * std::abs(want))
      return std::nullopt;
    bias.push_back(b->getInt(i));
  }
  return bias;
}

Value constantOf(PatternRewriter &rewriter, Location loc, ConstTensor t,
                 StringRef name) {
  return ConstantOp::create(rewriter, loc, t.toAttr(name));
}

Operation *singleUser(Value v) {
  return v.hasOneUse() ? *v.getUsers().begin() : nullptr;
}

/// The optional Relu and per-tensor Q that follow `last` (each the single
/// user of its operand): advances `last` past the Relu and returns the Q,
/// or null when the result stays f32.
QuantizeLinearOp matchReluAndQuantize(Value &last, bool &relu) {
  relu = false;
  if (auto r = dyn_cast_or_null<ReluOp>(singleUser(last))) {
    relu = true;
    last = r.getResult();
  }
  auto q = dyn_cast_or_null<QuantizeLinearOp>(singleUser(last));
  if (q && (q.getBlockSize() != 0 || !isPerTensor(q.getYScale()) ||
            isNone(q.getYZeroPoint()) ||
            !fusion::getScalarConstant(q.getYScale()) ||
            !fusion::getScalarConstant(q.getYZeroPoint())))
    q = nullptr;
  return q;
}

/// MatMul / Gemm of DQ(a) and DQ(w constant), with the optional bias,
/// Relu and Q after it, into kiln.quantized_matmul.
template <typename OpTy>
struct FuseQuantizedMatMul : OpRewritePattern<OpTy> {
  FuseQuantizedMatMul(MLIRContext *context, QDQCounts &counts)
      : OpRewritePattern<OpTy>(context), counts(counts) {}

  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    bool transB = false;
    Value gemmBias;
    if constexpr (std::is_same_v<OpTy, GemmOp>) {
      if (op.getTransA() != 0 || op.getAlpha().convertToFloat() != 1.0f)
        return failure();
      transB = op.getTransB() != 0;
      gemmBias = op.getC();
      if (!isNone(op.getC()) && op.getBeta().convertToFloat() != 1.0f)
        return failure();
    }
    auto aType = cast<RankedTensorType>(op.getA().getType());
    if (aType.getRank() < 2)
      return failure();
    std::optional<ActivationQuant> a = matchActivation(op.getA());
    std::optional<WeightQuant> w = matchWeight(op.getB(), transB);
    if (!a || !w)
      return failure();
    int64_t n = w->w.getType().getDimSize(0), k = w->w.getType().getDimSize(1);

    std::vector<float> scale;
    for (float ws : w->scale)
      scale.push_back(a->scale * ws); // f32, as ONNX Runtime's bias scale

    // The chain after the matmul: bias, Relu, Q; each step single-use.
    Value last = op.getResult();
    std::optional<std::vector<int64_t>> bias;
    if (gemmBias && !isNone(gemmBias)) {
      bias = matchBias(gemmBias, scale, n);
      if (!bias)
        return failure(); // a float bias: left to kiln-fuse-epilogues
    }
    if (!bias) {
      if (auto add = dyn_cast_or_null<AddOp>(singleUser(last))) {
        Value other = add.getA() == last ? add.getB() : add.getA();
        if (add.getType() == last.getType())
          if ((bias = matchBias(other, scale, n)))
            last = add.getResult();
      }
    }
    bool relu = false;
    QuantizeLinearOp q = matchReluAndQuantize(last, relu);

    Location loc = op.getLoc();
    Type i32 = rewriter.getI32Type();
    auto vecType = [&](int64_t size, Type element) {
      return RankedTensorType::get({size}, element);
    };
    ConstTensor sums = ConstTensor::getDense(vecType(n, i32));
    for (int64_t r = 0; r < n; ++r) {
      int64_t s = 0;
      for (int64_t c = 0; c < k; ++c)
        s += w->w.getInt(r * k + c);
      sums.setInt(r, s);
    }
    ConstTensor scaleT = ConstTensor::getDense(
        vecType(int64_t(scale.size()), rewriter.getF32Type()));
    for (size_t i = 0; i < scale.size(); ++i)
      scaleT.setFloat(i, scale[i]);
    Value none = NoneOp::create(rewriter, loc);
    Value wZp = none;
    if (llvm::any_of(w->zp, [](int64_t z) { return z != 0; })) {
      ConstTensor zpT = ConstTensor::getDense(
          vecType(int64_t(w->zp.size()), w->w.getElementType()));
      for (size_t i = 0; i < w->zp.size(); ++i)
        zpT.setInt(i, w->zp[i]);
      wZp = constantOf(rewriter, loc, zpT, "qdq_w_zero_point");
    }
    Value biasV = none;
    if (bias) {
      ConstTensor biasT = ConstTensor::getDense(vecType(n, i32));
      for (int64_t i = 0; i < n; ++i)
        biasT.setInt(i, (*bias)[i]);
      biasV = constantOf(rewriter, loc, biasT, "qdq_bias");
    }
    Value aZp = a->zp != 0 ? a->zeroPoint : none;
    Value yScale = q ? q.getYScale() : none;
    Value yZp = q ? q.getYZeroPoint() : none;
    Value replaced = q ? q.getResult() : last;

    Value wV = constantOf(rewriter, loc, w->w, "qdq_weight");
    auto fused = QuantizedMatMulOp::create(
        rewriter, loc, a->q, aZp, wV, wZp,
        constantOf(rewriter, loc, sums, "qdq_w_row_sums"),
        constantOf(rewriter, loc, scaleT, "qdq_scale"), biasV, yScale, yZp,
        rewriter.getStringAttr(relu ? "relu" : "none"));
    if (fused.getType() != replaced.getType()) {
      rewriter.eraseOp(fused);
      return rewriter.notifyMatchFailure(op, "result type differs");
    }
    rewriter.replaceAllUsesWith(replaced, fused.getResult());
    ++(q ? counts.quantized : counts.dequantized);
    return success();
  }
  QDQCounts &counts;
};

/// A constant weight DQ(w) of a 2-D convolution, [M, C, KH, KW], quantized
/// per tensor or per output channel (axis 0).
struct ConvWeightQuant {
  Value w;                  // the i8/ui8 constant [M, C, KH, KW]
  ConstTensor values;       // its elements
  std::vector<float> scale; // one per output channel m, or one
  std::vector<int64_t> zp;  // one per output channel m, or one
};

std::optional<ConvWeightQuant> matchConvWeight(Value v) {
  std::optional<ConstWeightDQ> dq = matchConstWeightDQ(v, 4);
  if (!dq)
    return std::nullopt;
  int64_t m = dq->type.getDimSize(0);
  int64_t numScales = dq->scale.size(), numZeroPoints = dq->zp.size();
  if (numScales != 1) {
    // The accessor is unsigned (I64Attr): a negative ONNX axis wraps.
    int64_t axis = static_cast<int64_t>(dq->dq.getAxis());
    if (axis < 0)
      axis += 4;
    // Per-axis along an input dim would scale the reduction.
    if (axis != 0 || numScales != m)
      return std::nullopt;
  }
  if (numZeroPoints != 1 && numZeroPoints != m)
    return std::nullopt;
  return ConvWeightQuant{dq->dq.getX(), std::move(dq->w),
                         std::move(dq->scale), std::move(dq->zp)};
}

/// A bias that is not in accumulator units: an f32 constant of `m`
/// elements, or DQ of an i32 constant with another scale, folded to the
/// f32 values the float graph adds ((b - zp) * scale, in f32).
std::optional<std::vector<float>> matchFloatBias(Value v, int64_t m) {
  auto oneDim = [&](RankedTensorType type) {
    return type.getNumElements() == m &&
           llvm::count_if(type.getShape(), [](int64_t d) { return d != 1; }) <=
               1;
  };
  std::vector<float> bias;
  if (auto dq = v.getDefiningOp<DequantizeLinearOp>()) {
    auto type = cast<RankedTensorType>(dq.getX().getType());
    if (dq.getBlockSize() != 0 || !oneDim(type) ||
        !type.getElementType().isInteger(32))
      return std::nullopt;
    std::optional<ConstTensor> b = readConstant(dq.getX());
    std::optional<ConstTensor> s = readConstant(dq.getXScale());
    std::optional<ConstTensor> zp;
    if (!b || !s || (!isNone(dq.getXZeroPoint()) &&
                     !(zp = readConstant(dq.getXZeroPoint()))))
      return std::nullopt;
    if ((s->getNumElements() != 1 && s->getNumElements() != m) ||
        (zp && zp->getNumElements() != s->getNumElements()))
      return std::nullopt;
    for (int64_t i = 0; i < m; ++i) {
      int64_t j = s->getNumElements() == 1 ? 0 : i;
      int64_t z = zp ? zp->getInt(j) : 0;
      bias.push_back(float(b->getInt(i) - z) * float(s->getFloat(j)));
    }
    return bias;
  }
  std::optional<ConstTensor> b = readConstant(v);
  auto type = cast<RankedTensorType>(v.getType());
  if (!b || !type.getElementType().isF32() || !oneDim(type))
    return std::nullopt;
  for (int64_t i = 0; i < m; ++i)
    bias.push_back(float(b->getFloat(i)));
  return bias;
}

/// Conv(DQ(x), DQ(w constant), bias) with group 1 on NCHW, with the
/// optional Relu and Q after it, into kiln.quantized_conv. Grouped and
/// depthwise convolutions, other ranks and dynamic shapes stay float
/// (counted as convs-left-float).
struct FuseQuantizedConv : OpRewritePattern<ConvOp> {
  FuseQuantizedConv(MLIRContext *context, QDQCounts &counts)
      : OpRewritePattern(context), counts(counts) {}

  LogicalResult matchAndRewrite(ConvOp op,
                                PatternRewriter &rewriter) const override {
    auto xType = cast<RankedTensorType>(op.getX().getType());
    auto yType = cast<RankedTensorType>(op.getType());
    if (xType.getRank() != 4 || !xType.hasStaticShape() ||
        !yType.hasStaticShape() || op.getGroup() != 1)
      return failure();
    std::optional<ActivationQuant> x = matchActivation(op.getX());
    std::optional<ConvWeightQuant> w = matchConvWeight(op.getW());
    if (!x || !w)
      return failure();
    auto wType = cast<RankedTensorType>(w->w.getType());
    int64_t m = wType.getDimSize(0), c = wType.getDimSize(1),
            kh = wType.getDimSize(2), kw = wType.getDimSize(3);
    int64_t k = wType.getNumElements() / m;
    if (wType.getDimSize(1) != xType.getDimSize(1))
      return failure();

    // The window, with auto_pad resolved to explicit pads.
    SmallVector<int64_t> strides{1, 1}, dilations{1, 1}, pads{0, 0, 0, 0};
    if (auto a = op.getStrides())
      strides.assign(a->begin(), a->end());
    if (auto a = op.getDilations())
      dilations.assign(a->begin(), a->end());
    if (auto a = op.getKernelShape())
      if (ArrayRef<int64_t>(*a) != wType.getShape().drop_front(2))
        return failure();
    if (strides.size() != 2 || dilations.size() != 2)
      return failure();
    StringRef autoPad = op.getAutoPad();
    for (int64_t i = 0; i < 2; ++i) {
      int64_t in = xType.getDimSize(2 + i);
      int64_t extent = (wType.getDimSize(2 + i) - 1) * dilations[i] + 1;
      if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
        int64_t out = (in + strides[i] - 1) / strides[i];
        int64_t total =
            std::max<int64_t>(0, (out - 1) * strides[i] + extent - in);
        int64_t small = total / 2;
        pads[i] = autoPad == "SAME_UPPER" ? small : total - small;
        pads[2 + i] = total - pads[i];
      } else if (autoPad == "NOTSET") {
        if (auto a = op.getPads()) {
          if (a->size() != 4)
            return failure();
          pads[i] = (*a)[i];
          pads[2 + i] = (*a)[2 + i];
        }
      } else if (autoPad != "VALID") {
        return failure();
      }
      int64_t padded = in + pads[i] + pads[2 + i];
      if (strides[i] < 1 || dilations[i] < 1 || padded < extent ||
          yType.getDimSize(2 + i) != (padded - extent) / strides[i] + 1)
        return failure();
    }

    std::vector<float> scale;
    for (float ws : w->scale)
      scale.push_back(x->scale * ws); // f32, as ONNX Runtime's bias scale

    Location loc = op.getLoc();
    Type i32 = rewriter.getI32Type(), f32 = rewriter.getF32Type();
    auto vecType = [&](int64_t size, Type element) {
      return RankedTensorType::get({size}, element);
    };
    Value none = NoneOp::create(rewriter, loc);
    Value biasV = none;
    if (!isNone(op.getB())) {
      if (auto bias = matchBias(op.getB(), scale, m)) {
        ConstTensor t = ConstTensor::getDense(vecType(m, i32));
        for (int64_t i = 0; i < m; ++i)
          t.setInt(i, (*bias)[i]);
        biasV = constantOf(rewriter, loc, t, "qdq_bias");
      } else if (auto fbias = matchFloatBias(op.getB(), m)) {
        ConstTensor t = ConstTensor::getDense(vecType(m, f32));
        for (int64_t i = 0; i < m; ++i)
          t.setFloat(i, (*fbias)[i]);
        biasV = constantOf(rewriter, loc, t, "qdq_float_bias");
      } else {
        rewriter.eraseOp(none.getDefiningOp());
        return rewriter.notifyMatchFailure(op, "a bias that is not constant");
      }
    }

    Value last = op.getResult();
    bool relu = false;
    QuantizeLinearOp q = matchReluAndQuantize(last, relu);
    Value replaced = q ? q.getResult() : last;

    // The weight as OHWI [M, KH, KW, C] (still int8): the lowering's
    // im2col then copies runs of C contiguous channels.
    ConstTensor ohwi = ConstTensor::getDense(RankedTensorType::get(
        {m, kh, kw, c}, wType.getElementType()));
    ConstTensor sums = ConstTensor::getDense(vecType(m, i32));
    for (int64_t r = 0; r < m; ++r) {
      int64_t s = 0;
      for (int64_t ci = 0; ci < c; ++ci)
        for (int64_t i = 0; i < kh; ++i)
          for (int64_t j = 0; j < kw; ++j) {
            int64_t v = w->values.getInt(((r * c + ci) * kh + i) * kw + j);
            ohwi.setInt(((r * kh + i) * kw + j) * c + ci, v);
            s += v;
          }
      sums.setInt(r, s);
    }
    ConstTensor scaleT =
        ConstTensor::getDense(vecType(int64_t(scale.size()), f32));
    for (size_t i = 0; i < scale.size(); ++i)
      scaleT.setFloat(i, scale[i]);
    Value wZp = none;
    if (llvm::any_of(w->zp, [](int64_t z) { return z != 0; })) {
      ConstTensor zpT = ConstTensor::getDense(
          vecType(int64_t(w->zp.size()), wType.getElementType()));
      for (size_t i = 0; i < w->zp.size(); ++i)
        zpT.setInt(i, w->zp[i]);
      wZp = constantOf(rewriter, loc, zpT, "qdq_w_zero_point");
    }
    Value xZp = x->zp != 0 ? x->zeroPoint : none;
    auto fused = QuantizedConvOp::create(
        rewriter, loc, replaced.getType(), x->q, xZp,
        constantOf(rewriter, loc, ohwi, "qdq_weight"), wZp,
        constantOf(rewriter, loc, sums, "qdq_w_row_sums"),
        constantOf(rewriter, loc, scaleT, "qdq_scale"), biasV,
        q ? q.getYScale() : none, q ? q.getYZeroPoint() : none,
        rewriter.getDenseI64ArrayAttr(strides),
        rewriter.getDenseI64ArrayAttr(pads),
        rewriter.getDenseI64ArrayAttr(dilations),
        rewriter.getStringAttr(relu ? "relu" : "none"));
    rewriter.replaceAllUsesWith(replaced, fused.getResult());
    ++(q ? counts.convsQuantized : counts.convsDequantized);
    return success();
  }
  QDQCounts &counts;
};

/// Conv whose input and weight are both DequantizeLinear: a quantized
/// convolution that this pass leaves in float.
bool isQuantizedFloatConv(ConvOp op) {
  return op.getX().getDefiningOp<DequantizeLinearOp>() &&
         op.getW().getDefiningOp<DequantizeLinearOp>();
}

struct KilnFuseQDQPass : kiln::impl::KilnFuseQDQBase<KilnFuseQDQPass> {
  kiln::Statistic numRoundTrips{this, "round-trips-removed",
                                "Q(DQ(y)) pairs replaced by y"};
  kiln::Statistic numQuantized{
      this, "matmuls-quantized",
      "kiln.quantized_matmul ops with an int8 (requantized) result"};
  kiln::Statistic numDequantized{
      this, "matmuls-dequantized",
      "kiln.quantized_matmul ops with an f32 (dequantized) result"};
  kiln::Statistic numConvsQuantized{
      this, "convs-quantized",
      "kiln.quantized_conv ops with an int8 (requantized) result"};
  kiln::Statistic numConvsDequantized{
      this, "convs-dequantized",
      "kiln.quantized_conv ops with an f32 (dequantized) result"};
  kiln::Statistic numConvsLeftFloat{
      this, "convs-left-float",
      "Convs of DQ'd input and weight left in float (grouped or depthwise, "
      "not 2-D, dynamic shapes, non-constant weight or bias)"};

  void runOnOperation() override {
    QDQCounts counts;
    RewritePatternSet patterns(&getContext());
    patterns.add<FoldRoundTrip, FuseQuantizedMatMul<MatMulOp>,
                 FuseQuantizedMatMul<GemmOp>, FuseQuantizedConv>(
        &getContext(), counts);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns)))) {
      getOperation().emitError("kiln-fuse-qdq did not converge");
      return signalPassFailure();
    }
    numRoundTrips += counts.roundTrips;
    numQuantized += counts.quantized;
    numDequantized += counts.dequantized;
    numConvsQuantized += counts.convsQuantized;
    numConvsDequantized += counts.convsDequantized;
    getOperation()->walk([&](ConvOp conv) {
      if (isQuantizedFloatConv(conv))
        ++numConvsLeftFloat;
    });
  }
};

} // namespace
