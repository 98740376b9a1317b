//===- KilnReductionOps.td - Reductions ----------------------*- tablegen -*-===//
//
// ReduceX over a set of axes, and ArgMax/ArgMin over one axis. Result types
// are inferred in lib/ReductionOps.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_REDUCTION_OPS_TD
#define KILN_REDUCTION_OPS_TD

include "kiln/Dialect/KilnBase.td"

/// ONNX's types for ReduceSum, ReduceMean, ReduceProd, ReduceL1, ... .
def Kiln_ReduceTensor : RankedTensorOf<[Kiln_Float, I32, I64, UI32, UI64]>;
/// ReduceMax and ReduceMin also take 8-bit integers and bool.
def Kiln_ReduceMinMaxTensor
    : RankedTensorOf<[Kiln_Float, I8, I32, I64, UI8, UI32, UI64, Kiln_Bool]>;

/// An ONNX INT attribute used as a flag: 0 or 1.
def Kiln_ReduceFlagAttr : ConfinedAttr<I64Attr, [AttrConstraint<
    CPred<"::llvm::cast<::mlir::IntegerAttr>($_self).getInt() == 0 || "
          "::llvm::cast<::mlir::IntegerAttr>($_self).getInt() == 1">,
    "whose value is 0 or 1">]>;

/// ReduceX(data, axes?) with keepdims and noop_with_empty_axes. The axes are
/// the operand (opset 18 form) or the `axes` attribute (the older form, which
/// the importer may keep), never both. The operand's ODS name is `axes_input`
/// because an ODS operand and attribute cannot share a name.
class Kiln_ReduceOp<string mnemonic, string onnx, string what,
                    Type t = Kiln_ReduceTensor>
    : Kiln_OnnxOp<mnemonic> {
  let summary = "ONNX " # onnx # ": the " # what # " of `data` over `axes`";
  let description = "Reduces `data` to the " # what # " of its elements "
    # "along `axes` (an i64 1-d tensor operand, `none`, or the `axes` "
    # "attribute). Reduced dims are kept as 1 when `keepdims` is 1 and "
    # "dropped when 0. Empty or missing axes reduce every dim, unless "
    # "`noop_with_empty_axes` is 1, which makes the op an identity.\n\n"
    # "```mlir\n%r = kiln." # mnemonic # " %x, %axes {keepdims = 0 : i64} : "
    # "(tensor<2x?x4xf32>, tensor<1xi64>) -> tensor<?x4xf32>\n%none = kiln.none\n"
    # "%s = kiln." # mnemonic # " %x, %none {axes = array<i64: -1>} : "
    # "(tensor<2x?x4xf32>, none) -> tensor<2x?x1xf32>\n```\n";
  let arguments = (ins t:$data, Kiln_OptI64Tensor:$axes_input,
                   DefaultValuedAttr<Kiln_ReduceFlagAttr, "1">:$keepdims,
                   DefaultValuedAttr<Kiln_ReduceFlagAttr, "0">:$noop_with_empty_axes,
                   OptionalAttr<DenseI64ArrayAttr>:$axes);
  let results = (outs t:$reduced);
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *, std::optional<::mlir::Location> loc,
        Adaptor adaptor, ::llvm::SmallVectorImpl<::mlir::Type> &results) {
      return inferReduction(loc, adaptor.getData(), adaptor.getAxesInput(),
                            adaptor.getAxesAttr(), adaptor.getKeepdims(),
                            adaptor.getNoopWithEmptyAxes(), results);
    }
  }];
}

def Kiln_ReduceMeanOp : Kiln_ReduceOp<"reduce_mean", "ReduceMean", "mean">;
def Kiln_ReduceSumOp : Kiln_ReduceOp<"reduce_sum", "ReduceSum", "sum">;
def Kiln_ReduceMaxOp
    : Kiln_ReduceOp<"reduce_max", "ReduceMax", "maximum", Kiln_ReduceMinMaxTensor>;
def Kiln_ReduceMinOp
    : Kiln_ReduceOp<"reduce_min", "ReduceMin", "minimum", Kiln_ReduceMinMaxTensor>;
def Kiln_ReduceProdOp : Kiln_ReduceOp<"reduce_prod", "ReduceProd", "product">;
def Kiln_ReduceL1Op : Kiln_ReduceOp<"reduce_l1", "ReduceL1", "sum of absolute values">;
def Kiln_ReduceL2Op
    : Kiln_ReduceOp<"reduce_l2", "ReduceL2", "square root of the sum of squares">;
def Kiln_ReduceLogSumOp
    : Kiln_ReduceOp<"reduce_log_sum", "ReduceLogSum", "logarithm of the sum">;
def Kiln_ReduceLogSumExpOp : Kiln_ReduceOp<"reduce_log_sum_exp",
    "ReduceLogSumExp", "logarithm of the sum of exponentials">;
def Kiln_ReduceSumSquareOp
    : Kiln_ReduceOp<"reduce_sum_square", "ReduceSumSquare", "sum of squares">;

/// ArgMax / ArgMin over one axis; the result holds i64 indices.
class Kiln_ArgReduceOp<string mnemonic, string onnx, string what>
    : Kiln_OnnxOp<mnemonic> {
  let summary = "ONNX " # onnx # ": indices of the " # what # " along `axis`";
  let description = "The i64 index of the " # what # " element of `data` along "
    # "`axis` (the first one, or the last when `select_last_index` is 1). The "
    # "axis is kept as 1 when `keepdims` is 1 and dropped when 0.\n\n"
    # "```mlir\n%i = kiln." # mnemonic # " %x {axis = 1 : i64, keepdims = 0 : i64} : "
    # "(tensor<2x?x4xf32>) -> tensor<2x4xi64>\n```\n";
  let arguments = (ins Kiln_NumericTensor:$data,
                   DefaultValuedAttr<I64Attr, "0">:$axis,
                   DefaultValuedAttr<Kiln_ReduceFlagAttr, "1">:$keepdims,
                   DefaultValuedAttr<Kiln_ReduceFlagAttr, "0">:$select_last_index);
  let results = (outs Kiln_I64Tensor:$reduced);
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *, std::optional<::mlir::Location> loc,
        Adaptor adaptor, ::llvm::SmallVectorImpl<::mlir::Type> &results) {
      return inferArgReduction(loc, adaptor.getData(),
                               adaptor.getAxisAttr().getInt(),
                               adaptor.getKeepdims(), results);
    }
  }];
}

def Kiln_ArgMaxOp : Kiln_ArgReduceOp<"arg_max", "ArgMax", "largest">;
def Kiln_ArgMinOp : Kiln_ArgReduceOp<"arg_min", "ArgMin", "smallest">;

#endif // KILN_REDUCTION_OPS_TD
