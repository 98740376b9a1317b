//===- OnnxExporter.h - kiln IR back to an ONNX model -----------*- C++ -*-===//
#ifndef KILN_EXPORT_ONNXEXPORTER_H
#define KILN_EXPORT_ONNXEXPORTER_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>

namespace kiln {

/// Writes the module's public function (`main`, or its only public function)
/// as a serialized ONNX ModelProto (opset 21, IR version 10): every kiln op
/// with an ONNX operator of its name becomes a node, constants become
/// initializers, argument and result names come from `kiln.name`. Kiln's own
/// ops (attention, fused ops, channels-last ops) have no ONNX form: run
/// kiln-decompose-fused first. On failure emits a diagnostic at the op and
/// returns failure; nothing is written.
mlir::LogicalResult exportOnnxModel(mlir::ModuleOp module,
                                    llvm::raw_ostream &os);

/// The model's entry: the public function @main, else the first public
/// function with a body; null when there is none.
mlir::func::FuncOp findEntryFunction(mlir::ModuleOp module);

/// The ONNX dtype (onnx::TensorProto::DataType) of a kiln element type;
/// none when ONNX has no such dtype.
std::optional<int32_t> getOnnxDataType(mlir::Type type);

} // namespace kiln

#endif // KILN_EXPORT_ONNXEXPORTER_H
