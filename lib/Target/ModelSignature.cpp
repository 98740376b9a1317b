//===- ModelSignature.cpp - What an artifact's metadata describes ---------===//

#include "kiln/Target/ModelSignature.h"

#include "kiln/Analysis/SymbolicShapes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinDialect.h"
#include "mlir/IR/DialectResourceBlobManager.h"

using namespace mlir;

namespace kiln {

std::string dtypeName(Type type) {
  if (type.isF32())
    return "float32";
  if (type.isF16())
    return "float16";
  if (type.isBF16())
    return "bfloat16";
  if (type.isF64())
    return "float64";
  if (auto intType = dyn_cast<IntegerType>(type)) {
    unsigned width = intType.getWidth();
    if (width == 1)
      return "bool";
    if (width != 8 && width != 16 && width != 32 && width != 64)
      return "";
    return (intType.isUnsigned() ? "uint" : "int") + std::to_string(width);
  }
  return "";
}

/// The elements of a weight as the runtime reads them: dense, row-major,
/// bool as one byte per element.
static FailureOr<std::string> serialize(ElementsAttr attr) {
  auto type = cast<ShapedType>(attr.getType());
  Type element = type.getElementType();
  int64_t count = type.getNumElements();
  if (element.isInteger(1)) {
    std::string bytes;
    bytes.reserve(count);
    for (bool v : attr.getValues<bool>())
      bytes.push_back(v ? 1 : 0);
    return bytes;
  }
  size_t elementBytes = element.getIntOrFloatBitWidth() / 8;
  if (auto resource = dyn_cast<DenseResourceElementsAttr>(attr)) {
    AsmResourceBlob *blob = resource.getRawHandle().getBlob();
    if (!blob)
      return failure();
    ArrayRef<char> data = blob->getData();
    if (data.size() != count * elementBytes)
      return failure();
    return std::string(data.begin(), data.end());
  }
  if (auto dense = dyn_cast<DenseElementsAttr>(attr)) {
    ArrayRef<char> raw = dense.getRawData();
    if (dense.isSplat()) {
      std::string bytes;
      bytes.reserve(count * elementBytes);
      for (int64_t i = 0; i < count; ++i)
        bytes.append(raw.begin(), raw.begin() + elementBytes);
      return bytes;
    }
    return std::string(raw.begin(), raw.end());
  }
  return failure();
}

/// `dims`: the symbolic dims of a dynamic tensor (its dynamic dims named).
static FailureOr<TensorSpec>
describeTensor(Operation *where, Type type, StringRef name, StringRef what,
               const std::vector<std::string> *dims = nullptr) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || (!tensor.hasStaticShape() && !dims)) {
    where->emitError() << what << " '" << name << "' has type " << type
                       << "; its dims must be static";
    return failure();
  }
  std::string dtype = dtypeName(tensor.getElementType());
  if (dtype.empty()) {
    where->emitError() << what << " '" << name << "' has element type "
                       << tensor.getElementType()
                       << ", which an artifact cannot carry";
    return failure();
  }
  TensorSpec spec{name.str(), dtype, {}, {}};
  for (int64_t d = 0; d < tensor.getRank(); ++d)
    spec.shape.push_back(tensor.isDynamicDim(d) ? -1 : tensor.getDimSize(d));
  if (!tensor.hasStaticShape())
    spec.dimNames = *dims;
  return spec;
}

/// The ONNX node (or op) that `op` came from, for messages.
static std::string nodeOf(Operation *op) {
  Location loc = op->getLoc();
  while (auto fused = dyn_cast<FusedLoc>(loc))
    loc = fused.getLocations().empty() ? loc : fused.getLocations().front();
  if (auto nameLoc = dyn_cast<NameLoc>(loc))
    return "'" + nameLoc.getName().str() + "' (" +
           op->getName().getStringRef().str() + ")";
  return op->getName().getStringRef().str();
}

FailureOr<ModelSignature> collectSignature(ModuleOp module) {
  auto main = module.lookupSymbol<func::FuncOp>("main");
  if (!main) {
    module.emitError("no @main function to compile");
    return failure();
  }
  ModelSignature signature;
  auto isDynamic = [](Type t) {
    auto r = dyn_cast<RankedTensorType>(t);
    return r && !r.hasStaticShape();
  };
  // (Outputs too: control flow makes data-dependent dims from static
  // inputs, and the analysis says where.)
  bool dynamic = llvm::any_of(main.getFunctionType().getInputs(), isDynamic) ||
                 llvm::any_of(main.getFunctionType().getResults(), isDynamic);
  std::optional<SymbolicShapes> shapes;
  if (dynamic) {
    shapes.emplace(main);
    for (const ShapeSymbol &symbol : shapes->symbols())
      signature.symbols.push_back(symbol.name);
    for (const ShapeConstraint &c : shapes->constraints())
      signature.constraints.push_back(shapes->print(c.lhs) +
                                      (c.equal ? " == " : " <= ") +
                                      shapes->print(c.rhs));
  }
  for (unsigned i = 0; i < main.getNumArguments(); ++i) {
    Type type = main.getArgument(i).getType();
    if (auto weight = main.getArgAttrOfType<StringAttr>(i, "kiln.weight")) {
      auto value = main.getArgAttrOfType<ElementsAttr>(i, "kiln.weight_value");
      FailureOr<TensorSpec> spec =
          describeTensor(main, type, weight.getValue(), "weight");
      if (failed(spec))
        return failure();
      FailureOr<std::string> bytes =
          value ? serialize(value) : FailureOr<std::string>(failure());
      if (failed(bytes)) {
        main.emitError() << "weight '" << weight.getValue()
                         << "' has no readable elements";
        return failure();
      }
      WeightSpec w;
      static_cast<TensorSpec &>(w) = *spec;
      w.bytes = std::move(*bytes);
      signature.weights.push_back(std::move(w));
      continue;
    }
    if (!signature.weights.empty()) {
      main.emitError("graph inputs must come before the weights");
      return failure();
    }
    auto name = main.getArgAttrOfType<StringAttr>(i, "kiln.name");
    std::string fallback = "input_" + std::to_string(i);
    std::vector<std::string> dims;
    if (shapes)
      for (int64_t s : shapes->inputSymbols(i))
        dims.push_back(s < 0 ? "" : signature.symbols[s]);
    FailureOr<TensorSpec> spec =
        describeTensor(main, type, name ? name.getValue() : StringRef(fallback),
                       "input", shapes ? &dims : nullptr);
    if (failed(spec))
      return failure();
    signature.inputs.push_back(*spec);
  }
  auto ret = cast<func::ReturnOp>(main.getBody().front().getTerminator());
  for (unsigned i = 0; i < main.getNumResults(); ++i) {
    auto name = main.getResultAttrOfType<StringAttr>(i, "kiln.name");
    std::string outputName =
        name ? name.str() : "output_" + std::to_string(i);
    Type type = main.getResultTypes()[i];
    std::vector<std::string> dims;
    auto tensor = dyn_cast<RankedTensorType>(type);
    if (shapes && tensor && !tensor.hasStaticShape()) {
      Value value = ret.getOperand(i);
      std::optional<SymbolicDims> exprs = shapes->shapeOf(value);
      if (!exprs) {
        Operation *at = shapes->whyUnknown(value);
        // Control flow: the size depends on the data, not on the inputs'
        // dims; no shape flag helps.
        StringRef why;
        auto result = dyn_cast<OpResult>(value);
        if (at && at->getName().getStringRef() == "kiln.loop")
          why = result && result.getOwner() == at &&
                        result.getResultNumber() + 2 >= at->getNumOperands()
                    ? ": a Loop's scan output has one row per iteration, "
                      "and the number of iterations is known only at run "
                      "time"
                    : ": a value the Loop carries changes size from one "
                      "iteration to the next";
        else if (at && at->getName().getStringRef() == "kiln.if")
          why = ": the If's branches give it different sizes";
        if (!why.empty()) {
          main.emitError() << "output '" << outputName << "' has type "
                           << type << ": the size of a dynamic dim depends "
                           << "on the data (" << nodeOf(at) << why
                           << "); an artifact's output dims must follow "
                              "from its inputs' dims";
          return failure();
        }
        main.emitError() << "output '" << outputName << "' has type " << type
                         << ": the size of a dynamic dim is not known in "
                            "terms of the inputs' dims"
                         << (at ? " (since " + nodeOf(at) + ")" : "")
                         << "; give static shapes with "
                            "--input-shapes=name:AxBxC";
        return failure();
      }
      for (int64_t d = 0; d < tensor.getRank(); ++d)
        dims.push_back(tensor.isDynamicDim(d) ? shapes->print((*exprs)[d])
                                              : "");
    }
    FailureOr<TensorSpec> spec =
        describeTensor(main, type, outputName, "output",
                       dims.empty() ? nullptr : &dims);
    if (failed(spec))
      return failure();
    signature.outputs.push_back(*spec);
  }
  return signature;
}

} // namespace kiln
