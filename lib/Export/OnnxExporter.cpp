//===- OnnxExporter.cpp - kiln IR back to an ONNX model -------------------===//
//
// The inverse of lib/Import for the ops that have an ONNX operator: the
// OnnxOps.def tables give each op's ONNX name, attributes map back by the
// conventions of docs/design/dialect-conventions.md (i64 → INT, f32 → FLOAT,
// array<i64> → INTS, array<f32> → FLOATS, string → STRING, elements →
// TENSOR, TypeAttr → INT dtype). It lets another runtime (ONNX Runtime) run
// what Kiln's passes produced: the test that passes preserve results, and
// quantized graphs checked elsewhere.
//
//===----------------------------------------------------------------------===//

#include "kiln/Export/OnnxExporter.h"
#include "kiln/Dialect/KilnOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"

#include "onnx/onnx_pb.h"

#include <functional>

using namespace mlir;

/// kiln op name → ONNX operator name.
static const llvm::StringMap<std::string> &getOnnxNames() {
  static const llvm::StringMap<std::string> table = [] {
    llvm::StringMap<std::string> t;
#define KILN_ONNX_OP(OnnxName, CppClass, NumOperands)                          \
  t[::kiln::CppClass::getOperationName()] = #OnnxName;
#include "kiln/Dialect/OnnxOps.def"
    return t;
  }();
  return table;
}

std::optional<int32_t> kiln::getOnnxDataType(Type type) {
  if (type.isF32())
    return onnx::TensorProto::FLOAT;
  if (type.isF16())
    return onnx::TensorProto::FLOAT16;
  if (type.isBF16())
    return onnx::TensorProto::BFLOAT16;
  if (type.isF64())
    return onnx::TensorProto::DOUBLE;
  auto integer = dyn_cast<IntegerType>(type);
  if (!integer)
    return std::nullopt;
  bool isUnsigned = integer.isUnsigned();
  switch (integer.getWidth()) {
  case 1:
    return onnx::TensorProto::BOOL;
  case 8:
    return isUnsigned ? onnx::TensorProto::UINT8 : onnx::TensorProto::INT8;
  case 16:
    return isUnsigned ? onnx::TensorProto::UINT16 : onnx::TensorProto::INT16;
  case 32:
    return isUnsigned ? onnx::TensorProto::UINT32 : onnx::TensorProto::INT32;
  case 64:
    return isUnsigned ? onnx::TensorProto::UINT64 : onnx::TensorProto::INT64;
  default:
    return std::nullopt;
  }
}

/// Fills `tensor` with `value`'s dtype, dims and little-endian raw data.
static LogicalResult fillTensor(onnx::TensorProto &tensor, ElementsAttr value,
                                Location loc) {
  auto type = cast<ShapedType>(value.getType());
  std::optional<int32_t> dtype = kiln::getOnnxDataType(type.getElementType());
  if (!dtype)
    return emitError(loc, "no ONNX dtype for ") << type.getElementType();
  tensor.set_data_type(*dtype);
  for (int64_t d : type.getShape())
    tensor.add_dims(d);
  int64_t n = type.getNumElements();
  std::string &raw = *tensor.mutable_raw_data();
  if (type.getElementType().isInteger(1)) {
    // MLIR packs i1 elements; ONNX stores one byte per bool.
    raw.reserve(n);
    for (bool b : value.getValues<bool>())
      raw.push_back(b ? 1 : 0);
    return success();
  }
  ArrayRef<char> data;
  if (auto dense = dyn_cast<DenseElementsAttr>(value)) {
    data = dense.getRawData();
    if (dense.isSplat()) {
      raw.reserve(data.size() * n);
      for (int64_t i = 0; i < n; ++i)
        raw.append(data.data(), data.size());
      return success();
    }
  } else if (auto resource = dyn_cast<DenseResourceElementsAttr>(value)) {
    AsmResourceBlob *blob = resource.getRawHandle().getBlob();
    if (!blob)
      return emitError(loc, "constant ")
             << resource.getRawHandle().getKey()
             << " has no data (its blob was elided when the IR was printed)";
    data = blob->getData();
  } else {
    return emitError(loc, "unsupported constant attribute ") << value;
  }
  raw.assign(data.data(), data.size());
  return success();
}

static void fillValueInfo(onnx::ValueInfoProto &info, StringRef name,
                          RankedTensorType type) {
  info.set_name(name.str());
  auto *tensor = info.mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(*kiln::getOnnxDataType(type.getElementType()));
  auto *shape = tensor->mutable_shape();
  for (auto [i, d] : llvm::enumerate(type.getShape())) {
    if (ShapedType::isDynamic(d))
      shape->add_dim()->set_dim_param(name.str() + "_d" + std::to_string(i));
    else
      shape->add_dim()->set_dim_value(d);
  }
}

static LogicalResult addAttribute(onnx::NodeProto &node, StringRef name,
                                  Attribute attr, Location loc) {
  onnx::AttributeProto &a = *node.add_attribute();
  a.set_name(name.str());
  using AP = onnx::AttributeProto;
  if (auto type = dyn_cast<TypeAttr>(attr)) {
    std::optional<int32_t> dtype = kiln::getOnnxDataType(type.getValue());
    if (!dtype)
      return emitError(loc, "no ONNX dtype for ") << type.getValue();
    a.set_type(AP::INT);
    a.set_i(*dtype);
  } else if (auto i = dyn_cast<IntegerAttr>(attr)) {
    a.set_type(AP::INT);
    a.set_i(i.getValue().getSExtValue());
  } else if (auto f = dyn_cast<FloatAttr>(attr)) {
    a.set_type(AP::FLOAT);
    a.set_f(float(f.getValueAsDouble()));
  } else if (auto ints = dyn_cast<DenseI64ArrayAttr>(attr)) {
    a.set_type(AP::INTS);
    for (int64_t v : ints.asArrayRef())
      a.add_ints(v);
  } else if (auto floats = dyn_cast<DenseF32ArrayAttr>(attr)) {
    a.set_type(AP::FLOATS);
    for (float v : floats.asArrayRef())
      a.add_floats(v);
  } else if (auto s = dyn_cast<StringAttr>(attr)) {
    a.set_type(AP::STRING);
    a.set_s(s.str());
  } else if (auto elements = dyn_cast<ElementsAttr>(attr)) {
    a.set_type(AP::TENSOR);
    return fillTensor(*a.mutable_t(), elements, loc);
  } else {
    return emitError(loc, "attribute '")
           << name << "' has no ONNX form: " << attr;
  }
  return success();
}

func::FuncOp kiln::findEntryFunction(ModuleOp module) {
  func::FuncOp entry;
  for (auto fn : module.getOps<func::FuncOp>()) {
    if (fn.isPrivate() || fn.isExternal())
      continue;
    if (fn.getName() == "main")
      return fn;
    if (!entry)
      entry = fn;
  }
  return entry;
}

LogicalResult kiln::exportOnnxModel(ModuleOp module, llvm::raw_ostream &os) {
  func::FuncOp fn = findEntryFunction(module);
  if (!fn)
    return module.emitError("no public function to export");
  if (!fn.getBody().hasOneBlock())
    return fn.emitError("only single-block functions export to ONNX");

  onnx::ModelProto model;
  model.set_ir_version(10);
  model.set_producer_name("kiln");
  auto *opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(21);
  onnx::GraphProto &graph = *model.mutable_graph();
  graph.set_name(fn.getName().str());

  llvm::DenseMap<Value, std::string> names;
  int64_t counter = 0;
  auto freshName = [&](StringRef prefix) {
    return (prefix + "_" + std::to_string(counter++)).str();
  };

  for (BlockArgument arg : fn.getArguments()) {
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!type || !kiln::getOnnxDataType(type.getElementType()))
      return fn.emitError("argument ")
             << arg.getArgNumber() << " of type " << arg.getType()
             << " has no ONNX form";
    auto name = fn.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "kiln.name");
    names[arg] = name ? name.str() : "input_" + std::to_string(arg.getArgNumber());
    fillValueInfo(*graph.add_input(), names[arg], type);
  }

  const llvm::StringMap<std::string> &onnxNames = getOnnxNames();
  // The ops of a block into `graph`: @main's into the model's graph, a
  // region's (If, Loop, Scan) into its subgraph, whose nodes may read the
  // names of the graphs around it.
  std::function<LogicalResult(Block &, onnx::GraphProto &)> exportBlock;
  auto exportRegionOp = [&](Operation &op,
                            onnx::GraphProto &graph) -> LogicalResult {
    onnx::NodeProto &node = *graph.add_node();
    StringRef opType = isa<IfOp>(op) ? "If" : isa<LoopOp>(op) ? "Loop" : "Scan";
    node.set_op_type(opType.str());
    node.set_name(freshName(opType));
    unsigned numInputs = op.getNumOperands();
    while (numInputs > 0 && isNone(op.getOperand(numInputs - 1)))
      --numInputs;
    for (unsigned i = 0; i < numInputs; ++i) {
      auto found = names.find(op.getOperand(i));
      if (found == names.end())
        return op.emitError("operand ") << i << " is not defined before it";
      node.add_input(found->second);
    }
    for (Value result : op.getResults()) {
      std::string name = freshName("v");
      names[result] = name;
      node.add_output(name);
    }
    for (NamedAttribute attr : op.getAttrs())
      if (failed(
              addAttribute(node, attr.getName(), attr.getValue(), op.getLoc())))
        return failure();
    SmallVector<std::pair<StringRef, Region *>> regions;
    if (auto ifOp = dyn_cast<IfOp>(op))
      regions = {{"then_branch", &ifOp.getThenBranch()},
                 {"else_branch", &ifOp.getElseBranch()}};
    else
      regions = {{"body", &op.getRegion(0)}};
    for (auto [attrName, region] : regions) {
      onnx::AttributeProto &attr = *node.add_attribute();
      attr.set_name(attrName.str());
      attr.set_type(onnx::AttributeProto::GRAPH);
      onnx::GraphProto &subgraph = *attr.mutable_g();
      subgraph.set_name(freshName(attrName));
      Block &block = region->front();
      for (BlockArgument arg : block.getArguments()) {
        auto type = cast<RankedTensorType>(arg.getType());
        names[arg] = freshName("arg");
        fillValueInfo(*subgraph.add_input(), names[arg], type);
      }
      if (failed(exportBlock(block, subgraph)))
        return failure();
      // The outputs through Identity nodes (an output may be an outer
      // value, or the same value twice).
      for (Value value : block.getTerminator()->getOperands()) {
        std::string name = freshName("out");
        onnx::NodeProto &identity = *subgraph.add_node();
        identity.set_op_type("Identity");
        identity.set_name(freshName("Identity"));
        identity.add_input(names[value]);
        identity.add_output(name);
        fillValueInfo(*subgraph.add_output(), name,
                      cast<RankedTensorType>(value.getType()));
      }
    }
    return success();
  };
  exportBlock = [&](Block &block, onnx::GraphProto &graph) -> LogicalResult {
    for (Operation &op : block) {
      if (isa<func::ReturnOp, YieldOp>(op))
        continue;
      if (isa<IfOp, LoopOp, ScanOp>(op)) {
        if (failed(exportRegionOp(op, graph)))
          return failure();
        continue;
      }
      if (isa<NoneOp>(op)) {
        names[op.getResult(0)] = "";
        continue;
      }
      if (auto constant = dyn_cast<ConstantOp>(op)) {
        onnx::TensorProto &init = *graph.add_initializer();
        std::string name = freshName("const");
        init.set_name(name);
        if (failed(fillTensor(init, constant.getValue(), op.getLoc())))
          return failure();
        names[constant.getResult()] = name;
        continue;
      }
      auto it = onnxNames.find(op.getName().getStringRef());
      if (it == onnxNames.end())
        return op.emitError("'")
               << op.getName()
               << "' has no ONNX operator (Kiln's own ops: decompose them "
                  "first with --decompose-fused)";
      // The older attribute forms of reductions', Squeeze's, Unsqueeze's and
      // Split's second input (`axes`, `split`; the operand is then `none`,
      // see the dialect conventions) become that input, as opset 21 has it.
      std::optional<std::string> attributeAsInput1;
      StringRef movedAttribute;
      for (StringRef name : {"axes", "split"}) {
        auto values = op.getAttrOfType<DenseI64ArrayAttr>(name);
        if (!values || op.getNumOperands() < 2 || !isNone(op.getOperand(1)))
          continue;
        onnx::TensorProto &init = *graph.add_initializer();
        init.set_name(freshName(name));
        init.set_data_type(onnx::TensorProto::INT64);
        init.add_dims(values.size());
        for (int64_t v : values.asArrayRef())
          init.add_int64_data(v);
        attributeAsInput1 = init.name();
        movedAttribute = name;
      }
      onnx::NodeProto &node = *graph.add_node();
      node.set_op_type(it->second);
      node.set_name(freshName(it->second));
      // Trailing missing optional inputs are left out, inner ones are "".
      unsigned numInputs = op.getNumOperands();
      while (numInputs > 0 && isNone(op.getOperand(numInputs - 1)) &&
             !(attributeAsInput1 && numInputs == 2))
        --numInputs;
      for (unsigned i = 0; i < numInputs; ++i) {
        if (i == 1 && attributeAsInput1) {
          node.add_input(*attributeAsInput1);
          continue;
        }
        auto found = names.find(op.getOperand(i));
        if (found == names.end())
          return op.emitError("operand ")
                 << i << " is not defined in the function body";
        node.add_input(found->second);
      }
      for (Value result : op.getResults()) {
        std::string name = freshName("v");
        names[result] = name;
        node.add_output(name);
      }
      // Split takes its sizes or num_outputs, not both (Kiln keeps both).
      if (isa<SplitOp>(op) && !isNone(op.getOperand(1)))
        movedAttribute = "num_outputs";
      for (NamedAttribute attr : op.getAttrs())
        if (attr.getName() != movedAttribute &&
            failed(addAttribute(node, attr.getName(), attr.getValue(),
                                op.getLoc())))
          return failure();
    }
    return success();
  };
  if (failed(exportBlock(fn.getBody().front(), graph)))
    return failure();

  // Each result goes through an Identity to carry its name: a value may be
  // returned twice, or be an input or an initializer.
  auto ret = cast<func::ReturnOp>(fn.getBody().front().getTerminator());
  for (auto [i, value] : llvm::enumerate(ret.getOperands())) {
    auto type = dyn_cast<RankedTensorType>(value.getType());
    if (!type || !kiln::getOnnxDataType(type.getElementType()))
      return ret.emitError("result ") << i << " has no ONNX form";
    auto name = fn.getResultAttrOfType<StringAttr>(i, "kiln.name");
    std::string outName = name ? name.str() : "output_" + std::to_string(i);
    onnx::NodeProto &node = *graph.add_node();
    node.set_op_type("Identity");
    node.set_name(freshName("Identity"));
    node.add_input(names[value]);
    node.add_output(outName);
    fillValueInfo(*graph.add_output(), outName, type);
  }

  std::string bytes;
  if (!model.SerializeToString(&bytes))
    return fn.emitError("the ONNX model does not serialize (over 2 GiB?)");
  os << bytes;
  return success();
}
