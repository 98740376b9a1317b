//===- KilnBase.td - The kiln dialect and its op base classes -*- tablegen -*-===//
//
// Every op family file (KilnElementwiseOps.td, KilnShapeOps.td, ...) includes
// this file and nothing that defines ops, so that mlir-tblgen run on a family
// file emits exactly that family's ops.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_BASE_TD
#define KILN_BASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"
include "mlir/IR/CommonAttrConstraints.td"
include "mlir/IR/CommonTypeConstraints.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Kiln_Dialect : Dialect {
  let name = "kiln";
  let cppNamespace = "::kiln";
  let summary = "Tensor-level graph ops with ONNX semantics";
  let description = [{
    The kiln dialect is Kiln's graph-level IR. Each op has the semantics of
    the ONNX operator of the same name (at the newest opset Kiln implements),
    on ranked tensors with static or dynamic (`?`) dimensions.

    Conventions shared by every op:
    * Attributes keep their ONNX names (`kernel_shape`, `keepdims`, ...).
      ONNX INT is `i64`, FLOAT is `f32`, INTS is `array<i64: ...>`, FLOATS is
      `array<f32: ...>`, STRING is a string attribute, TENSOR an elements
      attribute. The importer writes every attribute, defaults included.
    * A missing optional input is a value of type `none`, made by `kiln.none`;
      operands keep the ONNX input order.
    * Signed integers are signless (`i8`, `i32`, ...), unsigned ones are
      `ui8`, `ui16`, ...; ONNX bool is `i1`.
    * Result types are inferred from operand types, attributes and, for
      shape-like operands (Reshape's shape, Slice's starts, ...), from their
      values where these are known at compile time. A declared result type may
      be more static than the inferred one (a dynamic dim refined to a size),
      never contradict it.
  }];
  let hasConstantMaterializer = 1;
  let useDefaultAttributePrinterParser = 0;
  let useDefaultTypePrinterParser = 0;
  let usePropertiesForAttributes = 0;
}

//===----------------------------------------------------------------------===//
// Type constraints
//===----------------------------------------------------------------------===//

def Kiln_Float : AnyTypeOf<[F16, BF16, F32, F64]>;
def Kiln_Int : AnyTypeOf<[I8, I16, I32, I64, UI8, UI16, UI32, UI64]>;
def Kiln_Bool : I<1>;
def Kiln_Element : AnyTypeOf<[Kiln_Float, Kiln_Int, Kiln_Bool]>;

def Kiln_Tensor : RankedTensorOf<[Kiln_Element]>;
def Kiln_FloatTensor : RankedTensorOf<[Kiln_Float]>;
def Kiln_IntTensor : RankedTensorOf<[Kiln_Int]>;
def Kiln_BoolTensor : RankedTensorOf<[Kiln_Bool]>;
def Kiln_NumericTensor : RankedTensorOf<[Kiln_Float, Kiln_Int]>;
def Kiln_IndexTensor : RankedTensorOf<[I32, I64]>;
def Kiln_I64Tensor : RankedTensorOf<[I64]>;
def Kiln_QuantTensor : RankedTensorOf<[I8, UI8, I16, UI16, I32]>;

/// An optional input: a tensor, or the `none` value of a missing ONNX input.
class Kiln_Optional<Type t> : AnyTypeOf<[t, NoneType], "optional " # t.summary>;
def Kiln_OptTensor : Kiln_Optional<Kiln_Tensor>;
def Kiln_OptI64Tensor : Kiln_Optional<Kiln_I64Tensor>;
def Kiln_OptFloatTensor : Kiln_Optional<Kiln_FloatTensor>;

//===----------------------------------------------------------------------===//
// Op base classes
//===----------------------------------------------------------------------===//

/// Result types are inferred through InferTypeOpInterface. Each op defines
///   static LogicalResult inferReturnTypes(MLIRContext *, std::optional<Location>,
///                                         Adaptor, SmallVectorImpl<Type> &);
/// A declared result type may be a refinement of the inferred one (see
/// kiln::areCompatibleReturnTypes).
def Kiln_InferTypes : InferTypeOpAdaptorBase<[{
    static bool isCompatibleReturnTypes(::mlir::TypeRange inferred,
                                        ::mlir::TypeRange actual) {
      return ::kiln::areCompatibleReturnTypes(inferred, actual);
    }
  }]>;

class Kiln_Op<string mnemonic, list<Trait> traits = []>
    : Op<Kiln_Dialect, mnemonic, traits>;

/// An op with ONNX semantics, pure, with inferred result types and the
/// generic readable syntax
///   kiln.conv %x, %w, %b {strides = array<i64: 1, 1>, ...}
///       : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, none) -> tensor<1x4x6x6xf32>
class Kiln_OnnxOp<string mnemonic, list<Trait> traits = []>
    : Kiln_Op<mnemonic, !listconcat([Pure, Kiln_InferTypes], traits)> {
  let assemblyFormat = [{
    operands attr-dict `:` functional-type(operands, results)
  }];
}

/// Elementwise ops whose result has the type of their single operand:
///   kiln.relu %x : tensor<2x3xf32>
/// ODS generates their inferReturnTypes from SameOperandsAndResultType.
class Kiln_SameTypeUnaryOp<string mnemonic, Type t, list<Trait> traits = []>
    : Kiln_Op<mnemonic, !listconcat([Pure, Elementwise, SameOperandsAndResultType,
                                     InferTypeOpInterface], traits)> {
  let arguments = (ins t:$X);
  let results = (outs t:$Y);
  let assemblyFormat = "$X attr-dict `:` type($X)";
}

#endif // KILN_BASE_TD
