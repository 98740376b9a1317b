//===- InsertQDQ.cpp - Post-training quantization: Q/DQ around layers -----===//
//
// kiln-insert-qdq (and kiln::insertQDQ, which kiln-compile --precision=int8
// calls with the ranges its calibration observed) rewrites a float graph
// into the QDQ form onnxruntime.quantization.quantize_static writes:
//
//   MatMul(x, W)            MatMul(DQ(Q(x, s, z)), DQ(Wq, ws[n], 0, axis))
//   Gemm(x, W, C)     ->    Gemm(DQ(Q(x)), DQ(Wq), DQ(Cq, s * ws[n]))
//   Conv(x, W, B)           Conv(DQ(Q(x)), DQ(Wq), B)
//
// Activations per tensor (int8 asymmetric by default, as onnxruntime), the
// weight per output channel, symmetric int8 in [-127, 127], the bias of a
// Gemm (or of a MatMul's single Add) as i32 in units of the accumulator.
// kiln-fuse-qdq then makes each MatMul/Gemm one kiln.quantized_matmul and
// folds the next layer's Q into its epilogue, and each 2-D Conv with group
// 1 one kiln.quantized_conv (its float bias added in f32). Grouped and
// depthwise convs keep their DQ'd operands (int8 numerics at float speed).
// Conv is quantized only when asked for (ops=Conv).
//
//===----------------------------------------------------------------------===//

#include "FoldUtils.h"

#include "kiln/Dialect/KilnOps.h"
#include "kiln/Transforms/Passes.h"
#include "kiln/Transforms/Quantize.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Matchers.h"

#include <cmath>
#include <limits>

namespace kiln {
#define GEN_PASS_DEF_KILNINSERTQDQ
#include "kiln/Transforms/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;
using fold::ConstTensor;

quant::Params quant::computeParams(float rmin, float rmax, int64_t qmin,
                                   int64_t qmax, bool symmetric) {
  rmin = std::min(rmin, 0.0f);
  rmax = std::max(rmax, 0.0f);
  if (symmetric) {
    float absmax = std::max(std::fabs(rmin), std::fabs(rmax));
    rmin = -absmax;
    rmax = absmax;
  }
  double scale = (double(rmax) - double(rmin)) / (double(qmax) - double(qmin));
  Params p;
  if (scale < double(std::numeric_limits<float>::min())) {
    p.scale = 1.0f;
    p.zeroPoint = 0;
    return p;
  }
  // std::nearbyint rounds half to even in the default rounding mode, as
  // numpy.round does.
  p.zeroPoint = symmetric ? int64_t(std::nearbyint((qmin + qmax) / 2.0))
                          : int64_t(std::nearbyint(double(qmin) -
                                                   double(rmin) / scale));
  p.zeroPoint = std::clamp(p.zeroPoint, qmin, qmax);
  p.scale = float(scale);
  return p;
}

quant::Params quant::activationParams(float rmin, float rmax,
                                      ActivationType type) {
  return computeParams(rmin, rmax, type.qmin(), type.qmax(), type.symmetric);
}

namespace {

std::optional<ConstTensor> readConstant(Value v) {
  ElementsAttr attr;
  if (!v || !matchPattern(v, m_Constant(&attr)))
    return std::nullopt;
  return ConstTensor::read(attr);
}

bool isF32Tensor(Value v) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  return type && type.getElementType().isF32();
}

/// A constant float bias of `n` elements along the last axis ([N] or
/// [1, .., N]), or nullopt.
std::optional<ConstTensor> readBias(Value v, int64_t n) {
  if (!v || isNone(v) || !isF32Tensor(v))
    return std::nullopt;
  auto type = cast<RankedTensorType>(v.getType());
  if (type.getRank() < 1 || type.getShape().back() != n ||
      type.getNumElements() != n)
    return std::nullopt;
  return readConstant(v);
}

/// The reason `op` cannot be quantized, or "".
std::string checkLayer(Operation *op) {
  Value a = op->getOperand(0), w = op->getOperand(1);
  if (!isF32Tensor(a) || !isF32Tensor(w))
    return "not float32";
  if (a.getDefiningOp<DequantizeLinearOp>() ||
      w.getDefiningOp<DequantizeLinearOp>())
    return "already quantized (QDQ)";
  ElementsAttr attr;
  if (!matchPattern(w, m_Constant(&attr)))
    return "weight is not a constant";
  auto wType = cast<RankedTensorType>(w.getType());
  auto aType = cast<RankedTensorType>(a.getType());
  if (isa<MatMulOp>(op)) {
    if (wType.getRank() != 2 || aType.getRank() < 2)
      return "not a [.., K] x [K, N] matmul";
  } else if (auto gemm = dyn_cast<GemmOp>(op)) {
    if (gemm.getTransA() != 0 || gemm.getAlpha().convertToFloat() != 1.0f)
      return "Gemm with transA or alpha != 1";
    int64_t n = wType.getDimSize(gemm.getTransB() ? 0 : 1);
    if (!isNone(gemm.getC()) &&
        (gemm.getBeta().convertToFloat() != 1.0f ||
         !readBias(gemm.getC(), n)))
      return "Gemm bias is not a constant [N] vector with beta = 1";
  } else if (wType.getRank() < 3) {
    return "Conv weight of rank < 3";
  }
  if (!wType.hasStaticShape())
    return "weight shape is not static";
  return "";
}

Value scalarConstant(OpBuilder &b, Location loc, Attribute value) {
  return ConstantOp::create(b, loc, cast<ElementsAttr>(value));
}

/// The 8-bit activation element type.
Type activationElement(MLIRContext *context, quant::ActivationType type) {
  return IntegerType::get(context, 8,
                          type.isUnsigned ? IntegerType::Unsigned
                                          : IntegerType::Signless);
}

/// DQ(Q(v)) with per-tensor parameters `p`, inserted after v's definition.
Value quantizeActivation(Value v, quant::Params p,
                         quant::ActivationType activation, StringRef node) {
  MLIRContext *context = v.getContext();
  OpBuilder b(context);
  if (auto arg = dyn_cast<BlockArgument>(v))
    b.setInsertionPointToStart(arg.getOwner());
  else
    b.setInsertionPointAfter(v.getDefiningOp());
  auto loc = [&](StringRef suffix) {
    return NameLoc::get(StringAttr::get(context, (node + suffix).str()),
                        v.getLoc());
  };
  Type element = activationElement(context, activation);
  auto scalarF32 = RankedTensorType::get({}, b.getF32Type());
  auto scalarQ = RankedTensorType::get({}, element);
  Value scale = scalarConstant(b, loc("/input_scale"),
                               DenseElementsAttr::get(scalarF32, p.scale));
  APInt zpValue(8, uint64_t(p.zeroPoint), /*isSigned=*/!activation.isUnsigned);
  Value zp = scalarConstant(b, loc("/input_zero_point"),
                            DenseElementsAttr::get(scalarQ, zpValue));
  auto vType = cast<RankedTensorType>(v.getType());
  auto qType = RankedTensorType::get(vType.getShape(), element);
  Value q = QuantizeLinearOp::create(b, loc("/input_QuantizeLinear"),
                                     TypeRange{qType}, ValueRange{v, scale, zp},
                                     ArrayRef<NamedAttribute>{})
                .getResult();
  return DequantizeLinearOp::create(b, loc("/input_DequantizeLinear"),
                                    TypeRange{vType}, ValueRange{q, scale, zp},
                                    ArrayRef<NamedAttribute>{})
      .getResult();
}

/// The weight of `op` quantized per channel along `axis` (symmetric int8)
/// behind a DQ inserted before `op`; returns the channel scales.
std::vector<float> quantizeWeight(Operation *op, int64_t axis,
                                  StringRef node) {
  OpBuilder b(op);
  MLIRContext *context = op->getContext();
  Value weight = op->getOperand(1);
  ConstTensor w = *readConstant(weight);
  auto type = cast<RankedTensorType>(weight.getType());
  int64_t channels = type.getDimSize(axis);
  int64_t inner = 1;
  for (int64_t d = axis + 1; d < type.getRank(); ++d)
    inner *= type.getDimSize(d);
  auto channelOf = [&](int64_t i) { return (i / inner) % channels; };

  std::vector<float> lo(channels, 0.0f), hi(channels, 0.0f);
  for (int64_t i = 0; i < w.getNumElements(); ++i) {
    float x = float(w.getFloat(i));
    int64_t c = channelOf(i);
    lo[c] = std::min(lo[c], x);
    hi[c] = std::max(hi[c], x);
  }
  std::vector<float> scales(channels);
  for (int64_t c = 0; c < channels; ++c)
    scales[c] = quant::computeParams(lo[c], hi[c], -127, 127,
                                     /*symmetric=*/true)
                    .scale;
  Type i8 = b.getIntegerType(8);
  ConstTensor q = ConstTensor::getDense(
      RankedTensorType::get(type.getShape(), i8));
  for (int64_t i = 0; i < w.getNumElements(); ++i) {
    float v = std::nearbyint(float(w.getFloat(i)) / scales[channelOf(i)]);
    q.setInt(i, int64_t(std::clamp(v, -127.0f, 127.0f)));
  }
  auto loc = [&](StringRef suffix) {
    return NameLoc::get(StringAttr::get(context, (node + suffix).str()),
                        op->getLoc());
  };
  auto vecF32 = RankedTensorType::get({channels}, b.getF32Type());
  auto vecI8 = RankedTensorType::get({channels}, i8);
  Value qv = ConstantOp::create(b, loc("/weight_quantized"),
                                q.toAttr((node + "/weight_quantized").str()));
  Value scale = ConstantOp::create(
      b, loc("/weight_scale"),
      DenseElementsAttr::get(vecF32, ArrayRef<float>(scales)));
  Value zp = ConstantOp::create(b, loc("/weight_zero_point"),
                                DenseElementsAttr::get(vecI8, APInt(8, 0)));
  Value dq = DequantizeLinearOp::create(
                 b, loc("/weight_DequantizeLinear"), TypeRange{type},
                 ValueRange{qv, scale, zp},
                 {b.getNamedAttr("axis", b.getI64IntegerAttr(axis))})
                 .getResult();
  op->setOperand(1, dq);
  // The float weight is dead unless another layer reads it: no fp32 copy
  // stays in the graph (or in an exported QDQ model).
  if (weight.use_empty())
    weight.getDefiningOp()->erase();
  return scales;
}

/// DQ(bias as i32 in units of aScale * wScale[n]) for the float constant
/// `bias` ([N] or [1, .., N]), inserted before `user`.
Value quantizeBias(Operation *user, Value bias, float aScale,
                   ArrayRef<float> wScale, StringRef node) {
  OpBuilder b(user);
  MLIRContext *context = user->getContext();
  auto type = cast<RankedTensorType>(bias.getType());
  int64_t n = type.getShape().back();
  ConstTensor c = *readConstant(bias);
  std::vector<float> scales(n);
  ConstTensor q = ConstTensor::getDense(
      RankedTensorType::get(type.getShape(), b.getI32Type()));
  for (int64_t i = 0; i < n; ++i) {
    // f32 products and quotient, as onnxruntime's quantize_bias_static.
    scales[i] = aScale * wScale[wScale.size() == 1 ? 0 : i];
    double v = std::nearbyint(float(c.getFloat(i)) / scales[i]);
    v = std::clamp(v, double(std::numeric_limits<int32_t>::min()),
                   double(std::numeric_limits<int32_t>::max()));
    q.setInt(i, int64_t(v));
  }
  auto loc = [&](StringRef suffix) {
    return NameLoc::get(StringAttr::get(context, (node + suffix).str()),
                        user->getLoc());
  };
  auto vecF32 = RankedTensorType::get({n}, b.getF32Type());
  Value qv = ConstantOp::create(b, loc("/bias_quantized"),
                                q.toAttr((node + "/bias_quantized").str()));
  Value scale = ConstantOp::create(
      b, loc("/bias_scale"),
      DenseElementsAttr::get(vecF32, ArrayRef<float>(scales)));
  Value none = NoneOp::create(b, loc("/bias_none"));
  return DequantizeLinearOp::create(
             b, loc("/bias_DequantizeLinear"), TypeRange{type},
             ValueRange{qv, scale, none},
             {b.getNamedAttr("axis", b.getI64IntegerAttr(type.getRank() - 1))})
      .getResult();
}

} // namespace

std::vector<QuantLayer> kiln::findQuantLayers(func::FuncOp fn,
                                              const QDQOptions &options) {
  std::vector<QuantLayer> layers;
  fn.walk([&](Operation *op) {
    std::string type;
    if (isa<MatMulOp>(op))
      type = "MatMul";
    else if (isa<GemmOp>(op))
      type = "Gemm";
    else if (isa<ConvOp>(op))
      type = "Conv";
    else
      return;
    auto loc = op->getLoc()->findInstanceOf<NameLoc>();
    if (!loc)
      return;
    QuantLayer layer;
    layer.node = loc.getName().str();
    layer.opType = type;
    layer.op = op;
    layer.activation = op->getOperand(0);
    bool typeWanted = llvm::any_of(options.opTypes, [&](const std::string &t) {
      return StringRef(t).equals_insensitive(type);
    });
    if (!typeWanted)
      layer.skipReason = "op type not quantized";
    else if (llvm::is_contained(options.keepNodes, layer.node))
      layer.skipReason = "kept in float (keep list)";
    else
      layer.skipReason = checkLayer(op);
    layers.push_back(std::move(layer));
  });
  return layers;
}

LogicalResult kiln::insertQDQ(func::FuncOp fn, const QDQOptions &options,
                              const std::map<std::string, Range> &ranges) {
  std::vector<QuantLayer> layers = findQuantLayers(fn, options);
  // Every range first: a failure leaves the function as it was.
  for (QuantLayer &layer : layers)
    if (layer.skipReason.empty() && !ranges.count(layer.node))
      return layer.op->emitError("no calibrated range for the input of ONNX "
                                 "node '")
             << layer.node << "'";
  llvm::DenseMap<Value, std::pair<Value, float>> quantized;
  for (QuantLayer &layer : layers) {
    if (!layer.skipReason.empty())
      continue;
    auto range = ranges.find(layer.node);
    Value a = layer.activation;
    auto found = quantized.find(a);
    if (found == quantized.end()) {
      quant::Params p = quant::activationParams(
          range->second.min, range->second.max, options.activation);
      Value dq = quantizeActivation(a, p, options.activation, layer.node);
      found = quantized.insert({a, {dq, p.scale}}).first;
    }
    auto [dq, aScale] = found->second;
    layer.op->setOperand(0, dq);

    Operation *op = layer.op;
    int64_t axis = 0; // Conv: [M, C/group, k...]; Gemm with transB: [N, K]
    if (isa<MatMulOp>(op))
      axis = 1;
    else if (auto gemm = dyn_cast<GemmOp>(op))
      axis = gemm.getTransB() ? 0 : 1;
    std::vector<float> wScale = quantizeWeight(op, axis, layer.node);
    int64_t n = int64_t(wScale.size());

    // The float bias goes when nothing else reads it.
    auto replaceBias = [&](Operation *user, unsigned index) {
      Value bias = user->getOperand(index);
      user->setOperand(index, quantizeBias(user, bias, aScale, wScale,
                                           layer.node));
      if (bias.use_empty())
        bias.getDefiningOp()->erase();
    };
    if (auto gemm = dyn_cast<GemmOp>(op)) {
      if (!isNone(gemm.getC()))
        replaceBias(op, 2);
      continue;
    }
    // A MatMul's bias: its single Add with a constant [N] vector, which
    // kiln-fuse-qdq folds into the integer op's epilogue when it is i32.
    if (auto matmul = dyn_cast<MatMulOp>(op)) {
      Value result = matmul.getResult();
      if (!result.hasOneUse())
        continue;
      auto add = dyn_cast<AddOp>(*result.getUsers().begin());
      if (!add || add.getType() != result.getType())
        continue;
      unsigned other = add.getA() == result ? 1 : 0;
      Value bias = add->getOperand(other);
      if (bias == result || !readBias(bias, n))
        continue;
      replaceBias(add, other);
    }
  }
  return success();
}

namespace {
struct KilnInsertQDQPass
    : kiln::impl::KilnInsertQDQBase<KilnInsertQDQPass> {
  using Base::Base;

  void runOnOperation() override {
    QDQOptions qdq;
    if (!ops.empty())
      qdq.opTypes.assign(ops.begin(), ops.end());
    qdq.keepNodes.assign(keepNodes.begin(), keepNodes.end());
    if (activationType != "int8" && activationType != "uint8") {
      getOperation().emitError("kiln-insert-qdq: activation-type must be "
                               "int8 or uint8, got '")
          << activationType << "'";
      return signalPassFailure();
    }
    qdq.activation.isUnsigned = activationType == "uint8";
    qdq.activation.symmetric = activationSymmetric;
    std::map<std::string, Range> parsed;
    for (const std::string &spec : ranges) {
      // node=min:max; node names may hold '=' or ':', numbers do not.
      auto [node, values] = StringRef(spec).rsplit('=');
      auto [lo, hi] = values.split(':');
      double min, max;
      if (node.empty() || lo.trim().getAsDouble(min) ||
          hi.trim().getAsDouble(max) || min > max) {
        getOperation().emitError("kiln-insert-qdq: ranges: expected "
                                 "node=min:max with min <= max, got '")
            << spec << "'";
        return signalPassFailure();
      }
      parsed[node.str()] = {float(min), float(max)};
    }
    if (failed(insertQDQ(getOperation(), qdq, parsed)))
      return signalPassFailure();
  }
};
} // namespace
