//===- Quantize.h - Post-training quantization: Q/DQ insertion --*- C++ -*-===//
//
// The graph half of kiln-compile --precision=int8 (post-training static
// quantization): which layers are quantized, the quantization parameters
// computed from calibrated ranges (as onnxruntime.quantization computes
// them), and the insertion of QuantizeLinear/DequantizeLinear pairs around
// the layers' inputs, with int8 weights, so that kiln-fuse-qdq turns them
// into integer ops. The calibration half (running the float graph and
// observing the ranges) is lib/Quantization. See docs/quantization.md.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_TRANSFORMS_QUANTIZE_H
#define KILN_TRANSFORMS_QUANTIZE_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Value.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace kiln {
namespace quant {

/// Scale and zero point of one tensor (or one channel).
struct Params {
  float scale = 1.0f;
  int64_t zeroPoint = 0;
};

/// onnxruntime.quantization's compute_scale_zp: the range is widened to
/// hold 0 (and made [-absmax, absmax] when symmetric); scale = (rmax - rmin)
/// / (qmax - qmin) in double, zero point = round-half-even(qmin - rmin /
/// scale) (symmetric: (qmin + qmax) / 2 rounded), scale then rounded to
/// float. A range narrower than the smallest normal float gives scale 1 and
/// zero point 0.
Params computeParams(float rmin, float rmax, int64_t qmin, int64_t qmax,
                     bool symmetric);

/// The activation types: int8 (onnxruntime's QDQ default, asymmetric
/// [-128, 127]; symmetric [-127, 127] with zero point 0) or uint8
/// (asymmetric [0, 255]; symmetric zero point 128).
struct ActivationType {
  bool isUnsigned = false;
  bool symmetric = false;
  int64_t qmin() const { return isUnsigned ? 0 : (symmetric ? -127 : -128); }
  int64_t qmax() const { return isUnsigned ? 255 : 127; }
};

/// Activation parameters for the calibrated range [rmin, rmax].
Params activationParams(float rmin, float rmax, ActivationType type);

} // namespace quant

struct QDQOptions {
  /// ONNX op types to quantize: MatMul, Gemm, Conv.
  std::vector<std::string> opTypes = {"MatMul", "Gemm"};
  /// ONNX node names left in float.
  std::vector<std::string> keepNodes;
  quant::ActivationType activation;
};

/// A layer that can be quantized: an op of one of the types whose right
/// operand is a constant float weight.
struct QuantLayer {
  std::string node;       ///< the ONNX node name
  std::string opType;     ///< MatMul, Gemm or Conv
  mlir::Operation *op = nullptr;
  mlir::Value activation; ///< the float input whose range is calibrated
  std::string skipReason; ///< non-empty: left in float, and why
};

/// The candidate layers of `fn` in program order, each with the reason it
/// is skipped when it is (a keep list, a weight that is not a constant, a
/// Gemm with transA or alpha != 1, ...). Layers without a node name are not
/// listed.
std::vector<QuantLayer> findQuantLayers(mlir::func::FuncOp fn,
                                        const QDQOptions &options);

/// A calibrated activation range.
struct Range {
  float min = 0, max = 0;
};

/// Quantizes every layer of findQuantLayers that is not skipped: its
/// activation through Q/DQ with the parameters of ranges[node] (one pair per
/// tensor, shared by the layers that read it), its weight as an int8
/// constant quantized per output channel, symmetric ([-127, 127]), behind a
/// DQ; a Gemm's constant bias (or a MatMul's constant bias Add) as i32 in
/// units of a_scale * w_scale[n], behind a DQ. Fails, naming the node, when
/// a layer has no range.
mlir::LogicalResult insertQDQ(mlir::func::FuncOp fn, const QDQOptions &options,
                              const std::map<std::string, Range> &ranges);

} // namespace kiln

#endif // KILN_TRANSFORMS_QUANTIZE_H
