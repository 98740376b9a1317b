//===- KilnQuantOps.td - Quantization ops --------------------*- tablegen -*-===//

#ifndef KILN_QUANT_OPS_TD
#define KILN_QUANT_OPS_TD

include "kiln/Dialect/KilnBase.td"

def Kiln_DequantizeLinearOp : Kiln_OnnxOp<"dequantize_linear"> {
  let summary = "ONNX DequantizeLinear";
  let arguments = (ins Kiln_QuantTensor:$x, Kiln_FloatTensor:$x_scale,
                   Kiln_Optional<Kiln_QuantTensor>:$x_zero_point, I64Attr:$axis);
  let results = (outs Kiln_FloatTensor:$y);
}

#endif // KILN_QUANT_OPS_TD
