//===- KilnShapeOps.td - Shape and data-movement ops ---------*- tablegen -*-===//

#ifndef KILN_SHAPE_OPS_TD
#define KILN_SHAPE_OPS_TD

include "kiln/Dialect/KilnBase.td"

def Kiln_ShapeOp : Kiln_OnnxOp<"shape"> {
  let summary = "ONNX Shape";
  let arguments = (ins Kiln_Tensor:$data, I64Attr:$start, OptionalAttr<I64Attr>:$end);
  let results = (outs Kiln_I64Tensor:$shape);
}

#endif // KILN_SHAPE_OPS_TD
