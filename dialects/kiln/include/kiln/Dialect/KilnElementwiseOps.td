//===- KilnElementwiseOps.td - Elementwise ops ---------------*- tablegen -*-===//
//
// Unary ops, broadcasting binary and variadic ops, comparisons, logic and
// bitwise ops, Where, Clip and Cast. Result types are inferred: same-type
// unary ops by ODS from SameOperandsAndResultType, the others by the helpers
// at the top of lib/ElementwiseOps.cpp, named in each op class below.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_ELEMENTWISE_OPS_TD
#define KILN_ELEMENTWISE_OPS_TD

include "kiln/Dialect/KilnBase.td"

//===----------------------------------------------------------------------===//
// Element type constraints of ONNX's elementwise operators
//===----------------------------------------------------------------------===//

def Kiln_SignedNumericTensor : RankedTensorOf<[Kiln_Float, I8, I16, I32, I64]>;
def Kiln_F32Tensor : RankedTensorOf<[F32]>;
def Kiln_PowBaseTensor : RankedTensorOf<[Kiln_Float, I32, I64]>;
def Kiln_PReluTensor : RankedTensorOf<[Kiln_Float, I32, I64, UI32, UI64]>;
def Kiln_UnsignedTensor : RankedTensorOf<[UI8, UI16, UI32, UI64]>;
def Kiln_ScalarBound : Kiln_Optional<Kiln_NumericTensor>;

/// An ONNX INT attribute used as a flag: 0 or 1.
def Kiln_FlagAttr : ConfinedAttr<I64Attr, [AttrConstraint<
    CPred<"::llvm::cast<::mlir::IntegerAttr>($_self).getInt() == 0 || "
          "::llvm::cast<::mlir::IntegerAttr>($_self).getInt() == 1">,
    "whose value is 0 or 1">]>;

/// An ONNX STRING attribute restricted to the listed values.
class Kiln_StrOneOf<list<string> values>
    : StringBasedAttr<And<[StrAttrPred, Or<!foreach(v, values,
          CPred<"::llvm::cast<::mlir::StringAttr>($_self).getValue() == \"" # v # "\"">)>]>,
        "string attribute whose value is one of \"" # !interleave(values, "\", \"") # "\"">;

//===----------------------------------------------------------------------===//
// Op classes
//===----------------------------------------------------------------------===//

/// A same-type unary op computing `math` elementwise.
class Kiln_UnaryOp<string mnemonic, string onnx, Type t, string math,
                   string exampleType = "f32", list<Trait> traits = []>
    : Kiln_SameTypeUnaryOp<mnemonic, t, traits> {
  let summary = "ONNX " # onnx # ": y = " # math # ", elementwise";
  let description = "Computes `y = " # math # "` for each element of `X`; the "
    # "result has the type of `X`.\n\n```mlir\n%y = kiln." # mnemonic
    # " %x : tensor<2x?x" # exampleType # ">\n```\n";
  let hasFolder = 1;
}

/// An op whose inferReturnTypes calls `inferFn(loc, operands, results)`, one
/// of the helpers of lib/ElementwiseOps.cpp.
class Kiln_InferredByOp<string mnemonic, string inferFn, list<Trait> traits = []>
    : Kiln_OnnxOp<mnemonic, traits> {
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *, std::optional<::mlir::Location> loc,
        Adaptor adaptor, ::llvm::SmallVectorImpl<::mlir::Type> &results) {
      return }] # inferFn # [{(loc, adaptor.getOperands(), results);
    }
  }];
}

/// A binary op with numpy broadcasting, both operands of one element type.
/// The result has that element type, or `i1` for comparisons
/// (`inferFn` = inferCompareBroadcast).
class Kiln_BroadcastOp<string mnemonic, string onnx, Type t, string math,
                       Type resultT = t,
                       string inferFn = "inferSameTypeBroadcast",
                       list<Trait> traits = [], string exampleType = "f32">
    : Kiln_InferredByOp<mnemonic, inferFn, traits> {
  let summary = "ONNX " # onnx # ": C = " # math # ", with numpy broadcasting";
  let description = "Computes `C = " # math # "` elementwise after numpy "
    # "(multidirectional) broadcasting of `A` and `B`, which have the same "
    # "element type.\n\n```mlir\n%c = kiln." # mnemonic # " %a, %b : "
    # "(tensor<?x3x" # exampleType # ">, tensor<3x" # exampleType
    # ">) -> tensor<?x3x" # !if(!eq(inferFn, "inferCompareBroadcast"), "i1",
    exampleType) # ">\n```\n";
  let arguments = (ins t:$A, t:$B);
  let results = (outs resultT:$C);
  let hasFolder = 1;
}

/// A variadic op (one or more operands) with numpy broadcasting.
class Kiln_VariadicOp<string mnemonic, string onnx, Type t, string what>
    : Kiln_InferredByOp<mnemonic, "inferSameTypeBroadcast", [Commutative]> {
  let summary = "ONNX " # onnx # ": elementwise " # what # " of its operands";
  let description = "The elementwise " # what # " of one or more operands of "
    # "one element type, after numpy broadcasting of all of them.\n\n"
    # "```mlir\n%y = kiln." # mnemonic # " %a, %b, %c : (tensor<2x3xf32>, "
    # "tensor<3xf32>, tensor<2x1xf32>) -> tensor<2x3xf32>\n```\n";
  let arguments = (ins Variadic<t>:$data_0);
  let results = (outs t:$result);
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Unary ops
//===----------------------------------------------------------------------===//

def Kiln_AbsOp : Kiln_UnaryOp<"abs", "Abs", Kiln_NumericTensor, "|x|">;
def Kiln_NegOp : Kiln_UnaryOp<"neg", "Neg", Kiln_SignedNumericTensor, "-x">;
def Kiln_ExpOp : Kiln_UnaryOp<"exp", "Exp", Kiln_FloatTensor, "exp(x)">;
def Kiln_LogOp : Kiln_UnaryOp<"log", "Log", Kiln_FloatTensor, "log(x)">;
def Kiln_SqrtOp : Kiln_UnaryOp<"sqrt", "Sqrt", Kiln_FloatTensor, "sqrt(x)">;
def Kiln_ReciprocalOp
    : Kiln_UnaryOp<"reciprocal", "Reciprocal", Kiln_FloatTensor, "1 / x">;
def Kiln_ReluOp : Kiln_UnaryOp<"relu", "Relu", Kiln_SignedNumericTensor, "max(x, 0)">;
def Kiln_SigmoidOp
    : Kiln_UnaryOp<"sigmoid", "Sigmoid", Kiln_FloatTensor, "1 / (1 + exp(-x))">;
def Kiln_TanhOp : Kiln_UnaryOp<"tanh", "Tanh", Kiln_FloatTensor, "tanh(x)">;
def Kiln_ErfOp : Kiln_UnaryOp<"erf", "Erf", Kiln_NumericTensor, "erf(x)">;
def Kiln_SinOp : Kiln_UnaryOp<"sin", "Sin", Kiln_FloatTensor, "sin(x)">;
def Kiln_CosOp : Kiln_UnaryOp<"cos", "Cos", Kiln_FloatTensor, "cos(x)">;
def Kiln_FloorOp : Kiln_UnaryOp<"floor", "Floor", Kiln_FloatTensor, "floor(x)">;
def Kiln_CeilOp : Kiln_UnaryOp<"ceil", "Ceil", Kiln_FloatTensor, "ceil(x)">;
def Kiln_RoundOp : Kiln_UnaryOp<"round", "Round", Kiln_FloatTensor,
                                "x rounded to the nearest integer, halves to even">;
def Kiln_SignOp : Kiln_UnaryOp<"sign", "Sign", Kiln_NumericTensor, "sign(x)">;
def Kiln_NotOp : Kiln_UnaryOp<"not", "Not", Kiln_BoolTensor, "!x", "i1">;
def Kiln_IdentityOp : Kiln_UnaryOp<"identity", "Identity", Kiln_Tensor, "x">;

def Kiln_HardSwishOp : Kiln_UnaryOp<"hard_swish", "HardSwish", Kiln_FloatTensor,
                                    "x * max(0, min(1, x / 6 + 1 / 2))">;
def Kiln_SoftplusOp
    : Kiln_UnaryOp<"softplus", "Softplus", Kiln_FloatTensor, "log(exp(x) + 1)">;
def Kiln_SoftsignOp
    : Kiln_UnaryOp<"softsign", "Softsign", Kiln_FloatTensor, "x / (1 + |x|)">;
def Kiln_MishOp
    : Kiln_UnaryOp<"mish", "Mish", Kiln_FloatTensor, "x * tanh(softplus(x))">;
def Kiln_TanOp : Kiln_UnaryOp<"tan", "Tan", Kiln_FloatTensor, "tan(x)">;
def Kiln_AsinOp : Kiln_UnaryOp<"asin", "Asin", Kiln_FloatTensor, "asin(x)">;
def Kiln_AcosOp : Kiln_UnaryOp<"acos", "Acos", Kiln_FloatTensor, "acos(x)">;
def Kiln_AtanOp : Kiln_UnaryOp<"atan", "Atan", Kiln_FloatTensor, "atan(x)">;
def Kiln_SinhOp : Kiln_UnaryOp<"sinh", "Sinh", Kiln_FloatTensor, "sinh(x)">;
def Kiln_CoshOp : Kiln_UnaryOp<"cosh", "Cosh", Kiln_FloatTensor, "cosh(x)">;
def Kiln_AsinhOp : Kiln_UnaryOp<"asinh", "Asinh", Kiln_FloatTensor, "asinh(x)">;
def Kiln_AcoshOp : Kiln_UnaryOp<"acosh", "Acosh", Kiln_FloatTensor, "acosh(x)">;
def Kiln_AtanhOp : Kiln_UnaryOp<"atanh", "Atanh", Kiln_FloatTensor, "atanh(x)">;
def Kiln_BitwiseNotOp
    : Kiln_UnaryOp<"bitwise_not", "BitwiseNot", Kiln_IntTensor, "~x", "i32">;

// Unary ops with attributes: the attributes follow the operand in attr-dict.

def Kiln_LeakyReluOp : Kiln_SameTypeUnaryOp<"leaky_relu", Kiln_FloatTensor> {
  let summary = "ONNX LeakyRelu: y = x < 0 ? alpha * x : x";
  let description = [{
    ```mlir
    %y = kiln.leaky_relu %x {alpha = 1.000000e-01 : f32} : tensor<2x?xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$X,
                   DefaultValuedAttr<F32Attr, "0.01">:$alpha);
  let hasFolder = 1;
}

def Kiln_HardSigmoidOp : Kiln_SameTypeUnaryOp<"hard_sigmoid", Kiln_FloatTensor> {
  let summary = "ONNX HardSigmoid: y = max(0, min(1, alpha * x + beta))";
  let description = [{
    ```mlir
    %y = kiln.hard_sigmoid %x {alpha = 2.000000e-01 : f32, beta = 5.000000e-01 : f32} : tensor<4xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$X,
                   DefaultValuedAttr<F32Attr, "0.2">:$alpha,
                   DefaultValuedAttr<F32Attr, "0.5">:$beta);
  let hasFolder = 1;
}

def Kiln_EluOp : Kiln_SameTypeUnaryOp<"elu", Kiln_FloatTensor> {
  let summary = "ONNX Elu: y = x < 0 ? alpha * (exp(x) - 1) : x";
  let description = [{
    ```mlir
    %y = kiln.elu %x {alpha = 1.000000e+00 : f32} : tensor<4xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$X,
                   DefaultValuedAttr<F32Attr, "1.0">:$alpha);
  let hasFolder = 1;
}

def Kiln_SeluOp : Kiln_SameTypeUnaryOp<"selu", Kiln_FloatTensor> {
  let summary = "ONNX Selu: y = gamma * (x <= 0 ? alpha * (exp(x) - 1) : x)";
  let description = [{
    The defaults are ONNX's: alpha = 1.67326319217681884765625 and
    gamma = 1.05070102214813232421875 (as f32).

    ```mlir
    %y = kiln.selu %x : tensor<4xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$X,
                   DefaultValuedAttr<F32Attr, "1.67326319217681884765625">:$alpha,
                   DefaultValuedAttr<F32Attr, "1.05070102214813232421875">:$gamma);
  let hasFolder = 1;
}

def Kiln_CeluOp : Kiln_SameTypeUnaryOp<"celu", Kiln_F32Tensor> {
  let summary = "ONNX Celu: y = max(0, x) + min(0, alpha * (exp(x / alpha) - 1))";
  let description = [{
    ONNX defines Celu on f32 only.

    ```mlir
    %y = kiln.celu %x {alpha = 2.000000e+00 : f32} : tensor<4xf32>
    ```
  }];
  let arguments = (ins Kiln_F32Tensor:$X,
                   DefaultValuedAttr<F32Attr, "1.0">:$alpha);
  let hasFolder = 1;
}

def Kiln_ThresholdedReluOp
    : Kiln_SameTypeUnaryOp<"thresholded_relu", Kiln_FloatTensor> {
  let summary = "ONNX ThresholdedRelu: y = x > alpha ? x : 0";
  let description = [{
    ```mlir
    %y = kiln.thresholded_relu %x {alpha = 1.000000e+00 : f32} : tensor<4xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$X,
                   DefaultValuedAttr<F32Attr, "1.0">:$alpha);
  let hasFolder = 1;
}

def Kiln_GeluOp : Kiln_SameTypeUnaryOp<"gelu", Kiln_FloatTensor> {
  let summary = "ONNX Gelu: y = x * Phi(x), exactly or with the tanh approximation";
  let description = [{
    `approximate` is `"none"` (y = 0.5 x (1 + erf(x / sqrt 2))) or `"tanh"`
    (y = 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))).

    ```mlir
    %y = kiln.gelu %x {approximate = "tanh"} : tensor<2x8xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$X,
                   DefaultValuedAttr<Kiln_StrOneOf<["none", "tanh"]>,
                                     "\"none\"">:$approximate);
  let hasFolder = 1;
}

def Kiln_ShrinkOp : Kiln_SameTypeUnaryOp<"shrink", Kiln_NumericTensor> {
  let summary = "ONNX Shrink: y = x < -lambd ? x + bias : x > lambd ? x - bias : 0";
  let description = [{
    ```mlir
    %y = kiln.shrink %x {bias = 0.000000e+00 : f32, lambd = 5.000000e-01 : f32} : tensor<4xf32>
    ```
  }];
  let arguments = (ins Kiln_NumericTensor:$X,
                   DefaultValuedAttr<F32Attr, "0.0">:$bias,
                   DefaultValuedAttr<F32Attr, "0.5">:$lambd);
  let hasFolder = 1;
}

def Kiln_IsNaNOp : Kiln_InferredByOp<"is_nan", "inferBoolOfSameShape"> {
  let summary = "ONNX IsNaN: whether each element is NaN";
  let description = [{
    ```mlir
    %y = kiln.is_nan %x : (tensor<?x4xf32>) -> tensor<?x4xi1>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$X);
  let results = (outs Kiln_BoolTensor:$Y);
  let hasFolder = 1;
}

def Kiln_IsInfOp : Kiln_InferredByOp<"is_inf", "inferBoolOfSameShape"> {
  let summary = "ONNX IsInf: whether each element is an infinity";
  let description = [{
    Detects +inf when `detect_positive` is 1 and -inf when `detect_negative`
    is 1.

    ```mlir
    %y = kiln.is_inf %x {detect_negative = 0 : i64, detect_positive = 1 : i64}
        : (tensor<4xf32>) -> tensor<4xi1>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$X,
                   DefaultValuedAttr<Kiln_FlagAttr, "1">:$detect_negative,
                   DefaultValuedAttr<Kiln_FlagAttr, "1">:$detect_positive);
  let results = (outs Kiln_BoolTensor:$Y);
  let hasFolder = 1;
}

def Kiln_ClipOp : Kiln_InferredByOp<"clip", "inferClip"> {
  let summary = "ONNX Clip: y = min(max(x, min), max)";
  let description = [{
    Clamps each element of `input` to [`min`, `max`]. Either bound may be
    missing (`none`). A bound is a scalar of the input's element type: a 0-d
    tensor, or (as ONNX Runtime accepts) a one-element 1-d tensor.

    ```mlir
    %none = kiln.none
    %y = kiln.clip %x, %none, %max : (tensor<4xf32>, none, tensor<f32>) -> tensor<4xf32>
    ```
  }];
  let arguments = (ins Kiln_NumericTensor:$input, Kiln_ScalarBound:$min,
                   Kiln_ScalarBound:$max);
  let results = (outs Kiln_NumericTensor:$output);
  let hasFolder = 1;
}

def Kiln_CastOp : Kiln_OnnxOp<"cast"> {
  let summary = "ONNX Cast: converts each element to the element type `to`";
  let description = [{
    Float to integer truncates toward zero; a number cast to `i1` is `x != 0`.
    `saturate` only matters for float8 types, which Kiln does not have; it is
    kept for the importer.

    ```mlir
    %y = kiln.cast %x {to = i64} : (tensor<2x?xf32>) -> tensor<2x?xi64>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input, TypeAttr:$to,
                   DefaultValuedAttr<I64Attr, "1">:$saturate);
  let results = (outs Kiln_Tensor:$output);
  let hasFolder = 1;
}

def Kiln_CastLikeOp : Kiln_OnnxOp<"cast_like"> {
  let summary = "ONNX CastLike: casts `input` to the element type of `target_type`";
  let description = [{
    Like `kiln.cast` with `to` the element type of `target_type`, whose values
    are not used.

    ```mlir
    %y = kiln.cast_like %x, %t : (tensor<4xi32>, tensor<1xf16>) -> tensor<4xf16>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input, Kiln_Tensor:$target_type,
                   DefaultValuedAttr<I64Attr, "1">:$saturate);
  let results = (outs Kiln_Tensor:$output);
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Binary and variadic ops with numpy broadcasting
//===----------------------------------------------------------------------===//

def Kiln_AddOp : Kiln_BroadcastOp<"add", "Add", Kiln_NumericTensor, "A + B",
    Kiln_NumericTensor, "inferSameTypeBroadcast", [Commutative]>;
def Kiln_SubOp : Kiln_BroadcastOp<"sub", "Sub", Kiln_NumericTensor, "A - B">;
def Kiln_MulOp : Kiln_BroadcastOp<"mul", "Mul", Kiln_NumericTensor, "A * B",
    Kiln_NumericTensor, "inferSameTypeBroadcast", [Commutative]>;
def Kiln_DivOp : Kiln_BroadcastOp<"div", "Div", Kiln_NumericTensor,
    "A / B (integers: truncated toward zero)">;

def Kiln_EqualOp : Kiln_BroadcastOp<"equal", "Equal", Kiln_Tensor, "A == B",
    Kiln_BoolTensor, "inferCompareBroadcast", [Commutative]>;
def Kiln_LessOp : Kiln_BroadcastOp<"less", "Less", Kiln_NumericTensor, "A < B",
    Kiln_BoolTensor, "inferCompareBroadcast">;
def Kiln_LessOrEqualOp : Kiln_BroadcastOp<"less_or_equal", "LessOrEqual",
    Kiln_NumericTensor, "A <= B", Kiln_BoolTensor, "inferCompareBroadcast">;
def Kiln_GreaterOp : Kiln_BroadcastOp<"greater", "Greater", Kiln_NumericTensor,
    "A > B", Kiln_BoolTensor, "inferCompareBroadcast">;
def Kiln_GreaterOrEqualOp : Kiln_BroadcastOp<"greater_or_equal",
    "GreaterOrEqual", Kiln_NumericTensor, "A >= B", Kiln_BoolTensor,
    "inferCompareBroadcast">;

def Kiln_AndOp : Kiln_BroadcastOp<"and", "And", Kiln_BoolTensor, "A && B",
    Kiln_BoolTensor, "inferSameTypeBroadcast", [Commutative], "i1">;
def Kiln_OrOp : Kiln_BroadcastOp<"or", "Or", Kiln_BoolTensor, "A || B",
    Kiln_BoolTensor, "inferSameTypeBroadcast", [Commutative], "i1">;
def Kiln_XorOp : Kiln_BroadcastOp<"xor", "Xor", Kiln_BoolTensor, "A != B",
    Kiln_BoolTensor, "inferSameTypeBroadcast", [Commutative], "i1">;

def Kiln_MaxOp : Kiln_VariadicOp<"max", "Max", Kiln_NumericTensor, "maximum">;
def Kiln_MinOp : Kiln_VariadicOp<"min", "Min", Kiln_NumericTensor, "minimum">;
def Kiln_SumOp : Kiln_VariadicOp<"sum", "Sum", Kiln_FloatTensor, "sum">;
def Kiln_MeanOp : Kiln_VariadicOp<"mean", "Mean", Kiln_FloatTensor, "mean">;

def Kiln_BitwiseAndOp : Kiln_BroadcastOp<"bitwise_and", "BitwiseAnd",
    Kiln_IntTensor, "A & B", Kiln_IntTensor, "inferSameTypeBroadcast",
    [Commutative], "i32">;
def Kiln_BitwiseOrOp : Kiln_BroadcastOp<"bitwise_or", "BitwiseOr",
    Kiln_IntTensor, "A | B", Kiln_IntTensor, "inferSameTypeBroadcast",
    [Commutative], "i32">;
def Kiln_BitwiseXorOp : Kiln_BroadcastOp<"bitwise_xor", "BitwiseXor",
    Kiln_IntTensor, "A ^ B", Kiln_IntTensor, "inferSameTypeBroadcast",
    [Commutative], "i32">;

def Kiln_ModOp : Kiln_BroadcastOp<"mod", "Mod", Kiln_NumericTensor, "A mod B"> {
  let description = [{
    With `fmod = 0` (integers only) the remainder has the sign of the divisor,
    as Python's `%`; with `fmod = 1` it has the sign of the dividend, as C's
    `fmod`. ONNX forbids `fmod = 0` on floating-point operands.

    ```mlir
    %c = kiln.mod %a, %b {fmod = 1 : i64} : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
    ```
  }];
  let arguments = (ins Kiln_NumericTensor:$A, Kiln_NumericTensor:$B,
                   DefaultValuedAttr<Kiln_FlagAttr, "0">:$fmod);
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Kiln_PowOp : Kiln_InferredByOp<"pow", "inferBaseTypeBroadcast"> {
  let summary = "ONNX Pow: Z = X ^ Y, with numpy broadcasting";
  let description = [{
    The result has the base's element type; the exponent may have another
    numeric element type.

    ```mlir
    %z = kiln.pow %x, %y : (tensor<2x3xf32>, tensor<i64>) -> tensor<2x3xf32>
    ```
  }];
  let arguments = (ins Kiln_PowBaseTensor:$X, Kiln_NumericTensor:$Y);
  let results = (outs Kiln_PowBaseTensor:$Z);
  let hasFolder = 1;
}

def Kiln_BitShiftOp : Kiln_InferredByOp<"bit_shift", "inferSameTypeBroadcast"> {
  let summary = "ONNX BitShift: Z = X << Y or X >> Y on unsigned integers";
  let description = [{
    ```mlir
    %z = kiln.bit_shift %x, %y {direction = "LEFT"} : (tensor<4xui8>, tensor<ui8>) -> tensor<4xui8>
    ```
  }];
  let arguments = (ins Kiln_UnsignedTensor:$X, Kiln_UnsignedTensor:$Y,
                   Kiln_StrOneOf<["LEFT", "RIGHT"]>:$direction);
  let results = (outs Kiln_UnsignedTensor:$Z);
  let hasFolder = 1;
}

def Kiln_WhereOp : Kiln_InferredByOp<"where", "inferWhere"> {
  let summary = "ONNX Where: output = condition ? X : Y, with numpy broadcasting";
  let description = [{
    `condition`, `X` and `Y` broadcast together; `X` and `Y` have one element
    type, which the result has.

    ```mlir
    %y = kiln.where %c, %a, %b : (tensor<2x1xi1>, tensor<3xf32>, tensor<f32>) -> tensor<2x3xf32>
    ```
  }];
  let arguments = (ins Kiln_BoolTensor:$condition, Kiln_Tensor:$X, Kiln_Tensor:$Y);
  let results = (outs Kiln_Tensor:$output);
  let hasFolder = 1;
}

def Kiln_PReluOp : Kiln_InferredByOp<"prelu", "inferPRelu"> {
  let summary = "ONNX PRelu: y = x < 0 ? slope * x : x";
  let description = [{
    `slope` is unidirectionally broadcastable to `X` (broadcasting it gives
    X's shape); the result has X's type.

    ```mlir
    %y = kiln.prelu %x, %slope : (tensor<1x3x?x?xf32>, tensor<3x1x1xf32>) -> tensor<1x3x?x?xf32>
    ```
  }];
  let arguments = (ins Kiln_PReluTensor:$X, Kiln_PReluTensor:$slope);
  let results = (outs Kiln_PReluTensor:$Y);
  let hasFolder = 1;
}

#endif // KILN_ELEMENTWISE_OPS_TD
