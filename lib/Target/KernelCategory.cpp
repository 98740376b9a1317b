//===- KernelCategory.cpp - The profiler's kernel categories --------------===//

#include "kiln/Target/KernelCategory.h"

#include "llvm/ADT/StringSwitch.h"

namespace kiln {

const char *kernelCategoryName(KernelCategory category) {
  switch (category) {
  case KernelCategory::Attention: return "attention";
  case KernelCategory::GEMM: return "gemm";
  case KernelCategory::Quantize: return "quantize";
  case KernelCategory::Reduction: return "reduction";
  case KernelCategory::Elementwise: return "elementwise";
  case KernelCategory::Copy: return "copy";
  case KernelCategory::Other: return "other";
  }
  return "other";
}

std::optional<KernelCategory> categoryOfKilnOp(llvm::StringRef name) {
  name.consume_front("kiln.");
  if (name == "attention" || name == "linear_attention")
    return KernelCategory::Attention;
  if (name.starts_with("reduce_") || name.ends_with("_normalization") ||
      name.ends_with("pool") || name.ends_with("pool_nhwc"))
    return KernelCategory::Reduction;
  return llvm::StringSwitch<std::optional<KernelCategory>>(name)
      .Cases({"matmul", "gemm", "einsum", "conv", "conv_transpose",
              "conv_nhwc", "fused_matmul", "fused_conv", "fused_conv_nhwc"},
             KernelCategory::GEMM)
      .Cases({"matmul_integer", "conv_integer", "qlinear_matmul",
              "quantized_matmul",
              "qlinear_conv"},
             KernelCategory::GEMM)
      .Cases({"quantize_linear", "dequantize_linear",
              "dynamic_quantize_linear"},
             KernelCategory::Quantize)
      .Cases({"softmax", "log_softmax", "hardmax", "rms_norm", "lrn",
              "arg_max", "arg_min", "cum_sum", "top_k"},
             KernelCategory::Reduction)
      // batch_normalization at inference is a per-channel scale and shift.
      .Case("batch_normalization", KernelCategory::Elementwise)
      .Cases({"reshape", "flatten", "squeeze", "unsqueeze", "transpose",
              "expand", "tile", "concat", "split", "slice", "gather",
              "gather_elements", "gather_nd", "scatter_elements",
              "scatter_nd", "tensor_scatter", "pad", "depth_to_space",
              "space_to_depth", "reverse_sequence", "identity", "dropout"},
             KernelCategory::Copy)
      .Cases({"constant_of_shape", "range", "eye_like", "one_hot", "shape",
              "size", "non_zero"},
             KernelCategory::Other)
      .Default(KernelCategory::Elementwise);
}

} // namespace kiln
