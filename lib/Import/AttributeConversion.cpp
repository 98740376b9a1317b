//===- AttributeConversion.cpp - ONNX attributes to MLIR attributes -------===//
//
// The conventions of docs/design/dialect-conventions.md: INT → i64,
// FLOAT → f32, INTS → array<i64>, FLOATS → array<f32>, STRING → string,
// TENSOR → elements; dtype-valued INT attributes → TypeAttr.
//
//===----------------------------------------------------------------------===//

#include "ImporterInternal.h"


using namespace mlir;

namespace kiln::import {

/// ONNX attributes whose INT value is a TensorProto.DataType.
static bool isDtypeAttribute(llvm::StringRef name) {
  return name == "to" || name == "dtype" || name == "output_dtype";
}

Attribute convertAttribute(const onnx::AttributeProto &attr,
                           MLIRContext *context) {
  Builder b(context);
  const std::string &name = attr.name();
  using AP = onnx::AttributeProto;
  switch (attr.type()) {
  case AP::INT:
    if (isDtypeAttribute(name))
      return TypeAttr::get(
          convertDataType(int32_t(attr.i()), context, "attribute " + name));
    return b.getI64IntegerAttr(attr.i());
  case AP::FLOAT:
    return b.getF32FloatAttr(attr.f());
  case AP::INTS:
    return b.getDenseI64ArrayAttr(
        SmallVector<int64_t>(attr.ints().begin(), attr.ints().end()));
  case AP::FLOATS:
    return b.getDenseF32ArrayAttr(
        SmallVector<float>(attr.floats().begin(), attr.floats().end()));
  case AP::STRING:
    return b.getStringAttr(attr.s());
  case AP::TENSOR:
    // Attribute tensors are small (Constant values go through the
    // initializer path): keep them inline.
    return convertTensor(attr.t(), context, "attribute " + name,
                         /*resourceThresholdBytes=*/-1);
  case AP::GRAPH:
  case AP::GRAPHS:
    fail("not supported yet: control flow (graph attribute '{0}')", name);
  case AP::TYPE_PROTO:
  case AP::TYPE_PROTOS:
    fail("not supported yet: sequence types (type attribute '{0}')", name);
  default:
    fail("unsupported attribute '{0}' of ONNX type {1}", name,
         AP::AttributeType_Name(attr.type()));
  }
}

} // namespace kiln::import
