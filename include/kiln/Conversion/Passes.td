//===- Passes.td - Kiln's lowering passes ---------------------*- tablegen -*-===//
//
// The passes that take the optimized kiln graph towards code: weights out of
// the IR into the artifact, kiln ops into linalg/tensor/arith/math.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CONVERSION_PASSES_TD
#define KILN_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def KilnHoistWeights : Pass<"kiln-hoist-weights", "mlir::ModuleOp"> {
  let summary = "Turn the large constants of @main into weight arguments";
  let description = [{
    Every `kiln.constant` in `@main` larger than `min-bytes` becomes a
    function argument after the graph inputs, marked `kiln.weight` (its
    name: the initializer's, else `const_N`) and `kiln.weight_value` (the
    elements). The artifact writer stores these bytes in the weights section
    and the runtime passes them to the code, so the weights are never
    compiled into the code (compile time and code size stay independent of
    model size) and never copied at run time. Constants used only by shape
    computations or small enough to be immediates stay in the IR.
  }];
  let options = [
    Option<"minBytes", "min-bytes", "int64_t", /*default=*/"256",
           "Constants of at most this many bytes stay in the IR">,
  ];
  let dependentDialects = ["mlir::func::FuncDialect"];
}

def ConvertKilnToLinalg : Pass<"convert-kiln-to-linalg", "mlir::ModuleOp"> {
  let summary = "Lower kiln ops to linalg, tensor, arith and math";
  let description = [{
    Rewrites every kiln op into upstream ops on tensors: elementwise ops and
    broadcasting into `linalg.generic`, MatMul/Gemm into `linalg.matmul` /
    `linalg.batch_matmul`, Conv into `linalg.conv_2d_nchw_fchw` (grouped and
    1-D/3-D forms as generics), reductions, pooling, normalizations, shape
    ops into `tensor` ops. Unsigned element types become signless, with the
    unsigned arith ops chosen from the kiln type. Shapes must be static; an
    op this pass cannot lower is reported with its ONNX node name and what is
    missing, and the pass fails.
  }];
  let dependentDialects = [
    "mlir::arith::ArithDialect", "mlir::linalg::LinalgDialect",
    "mlir::math::MathDialect", "mlir::tensor::TensorDialect",
    "mlir::scf::SCFDialect", "mlir::bufferization::BufferizationDialect",
    "mlir::func::FuncDialect"
  ];
}

#endif // KILN_CONVERSION_PASSES_TD
