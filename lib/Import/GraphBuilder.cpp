//===- GraphBuilder.cpp - An ONNX graph as a kiln func.func ---------------===//
//
// One `func.func @main` per model. Initializers become kiln.constant, nodes
// are looked up in the dialect's OnnxOps.def tables and created through the
// op's InferTypeOpInterface, then refined with the types the model declares
// and the ones libonnx infers.
//
//===----------------------------------------------------------------------===//

#include "ImporterInternal.h"

#include "kiln/Dialect/KilnOps.h"
#include "kiln/Export/OnnxExporter.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"

#include "onnx/defs/function.h"
#include "onnx/defs/schema.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSet.h"

#include <algorithm>

using namespace mlir;

namespace kiln::import {

namespace {
struct KilnOpInfo {
  llvm::StringRef opName;
  /// ODS operand count, optional inputs included; -1 for one variadic group.
  int numOperands;
};
} // namespace

static const llvm::StringMap<KilnOpInfo> &getKilnOpTable() {
  static const llvm::StringMap<KilnOpInfo> table = [] {
    llvm::StringMap<KilnOpInfo> t;
#define KILN_ONNX_OP(OnnxName, CppClass, NumOperands)                          \
  t[#OnnxName] = KilnOpInfo{::kiln::CppClass::getOperationName(), NumOperands};
#include "kiln/Dialect/OnnxOps.def"
    return t;
  }();
  return table;
}

bool isKilnOp(llvm::StringRef onnxName) {
  return getKilnOpTable().count(onnxName) != 0;
}

namespace {

/// Collects the first error MLIR reports while alive (inference and
/// verifier messages), so the importer can re-emit it with the node context.
class DiagnosticCapture {
public:
  explicit DiagnosticCapture(MLIRContext *context)
      : handler(context, [this](Diagnostic &diag) -> LogicalResult {
          if (diag.getSeverity() != DiagnosticSeverity::Error)
            return failure();
          if (message.empty()) {
            message = diag.str();
            location = diag.getLocation();
          }
          return success();
        }) {}
  std::string message;
  std::optional<Location> location;

private:
  ScopedDiagnosticHandler handler;
};

/// How an attribute of an older opset that became an input is materialized.
enum class MovedKind {
  I64Vector,        // INTS → tensor<Nxi64>
  I64Vector1,       // INT → tensor<1xi64>
  ScalarLikeInput0, // FLOAT → tensor<T> with the element type of input 0
  F32Scalar,        // FLOAT → tensor<f32>
};

struct MovedAttribute {
  const char *op;
  const char *attr;
  unsigned position;
  MovedKind kind;
};

/// Attributes that later opsets turned into inputs (Clip-11, Pad-11,
/// Slice-10, Squeeze/Unsqueeze/Split/ReduceSum-13, TopK-10, Dropout-12, the
/// other reductions at 18). Used only when the kiln op does not declare the
/// attribute itself.
const MovedAttribute kMovedAttributes[] = {
    {"Clip", "min", 1, MovedKind::ScalarLikeInput0},
    {"Clip", "max", 2, MovedKind::ScalarLikeInput0},
    {"Pad", "pads", 1, MovedKind::I64Vector},
    {"Pad", "value", 2, MovedKind::ScalarLikeInput0},
    {"Slice", "starts", 1, MovedKind::I64Vector},
    {"Slice", "ends", 2, MovedKind::I64Vector},
    {"Slice", "axes", 3, MovedKind::I64Vector},
    {"Squeeze", "axes", 1, MovedKind::I64Vector},
    {"Unsqueeze", "axes", 1, MovedKind::I64Vector},
    {"Split", "split", 1, MovedKind::I64Vector},
    {"TopK", "k", 1, MovedKind::I64Vector1},
    {"Dropout", "ratio", 1, MovedKind::F32Scalar},
    {"Reduce*", "axes", 1, MovedKind::I64Vector},
};

const MovedAttribute *findMovedAttribute(llvm::StringRef op,
                                         llvm::StringRef attr) {
  for (const MovedAttribute &m : kMovedAttributes) {
    llvm::StringRef mop(m.op);
    bool opMatches = mop.ends_with("*") ? op.starts_with(mop.drop_back())
                                        : op == mop;
    if (opMatches && attr == m.attr)
      return &m;
  }
  return nullptr;
}

/// The type of operand 0 when it is a ranked tensor, else null.
RankedTensorType getFirstTensorType(ValueRange operands) {
  return operands.empty() ? RankedTensorType()
                          : dyn_cast<RankedTensorType>(operands[0].getType());
}

/// A sequence (ONNX seq(tensor)) as the importer knows it: no kiln type
/// holds one, so each sequence op is resolved at import time into tensor
/// ops. A sequence is a list of known elements (SequenceConstruct,
/// SequenceEmpty, inserts and erases at constant positions), the slices of
/// a tensor along an axis (SplitToSequence into chunks of one, and the
/// elements a Loop appends, stacked as a scan output), the sequence a Loop
/// body receives and may only append to, or what the body made of it.
struct SequenceValue {
  enum Kind { List, Slices, LoopInput, LoopAppended } kind = List;
  /// List: the elements.
  SmallVector<Value> elements;
  /// Slices: element i is tensor[..., i, ...] along `axis`, that dim kept
  /// (as 1) when `keepdims`. LoopAppended: the element appended.
  Value tensor;
  int64_t axis = 0;
  bool keepdims = false;
  /// LoopInput, LoopAppended: which loop-carried sequence.
  int accumulator = -1;
};

class GraphBuilder {
public:
  GraphBuilder(LoadedModel &loaded, MLIRContext *context, llvm::StringRef path,
               const ImportOptions &options)
      : loaded(loaded), graph(loaded.model.graph()), context(context),
        path(path.str()), options(options), builder(context),
        fileLoc(FileLineColLoc::get(context, path, 0, 0)) {}

  OwningOpRef<ModuleOp> build();

private:
  void importInitializers();
  void importInitializer(const onnx::TensorProto &tensor,
                         llvm::StringRef where);
  void importNode(const onnx::NodeProto &node, const std::string &displayName);
  void expandFunction(const onnx::NodeProto &node,
                      const std::string &displayName,
                      const onnx::OpSchema &schema);
  void expandRecurrent(const onnx::NodeProto &node,
                       const std::string &displayName);
  void importBody(const onnx::NodeProto &node, const std::string &displayName,
                  const onnx::FunctionProto &function, int64_t bodyOpset,
                  const onnx::OpSchema *schema);
  void importConstantNode(const onnx::NodeProto &node, Location loc);
  void importControlFlow(const onnx::NodeProto &node,
                         const std::string &displayName, Location loc);
  void importSequenceOp(const onnx::NodeProto &node, Location loc);
  const SequenceValue *lookupSequence(const std::string &name);
  void defineSequence(const std::string &name, SequenceValue sequence);
  Value sequenceElement(const SequenceValue &sequence, Value position,
                        Location loc);
  Value createSimpleOp(llvm::StringRef opName, ValueRange operands,
                       NamedAttrList attributes, Location loc);
  void importSubgraph(const onnx::NodeProto &node,
                      const std::string &displayName,
                      const onnx::GraphProto &subgraph, llvm::StringRef what,
                      Region &region, TypeRange argumentTypes,
                      llvm::ArrayRef<int> sequenceInputs = {});
  SmallVector<Type> importLoopBody(const onnx::NodeProto &node,
                                   const std::string &displayName,
                                   const onnx::GraphProto &body, Region &region,
                                   TypeRange fixedTypes,
                                   SmallVector<Type> carriedTypes,
                                   unsigned firstCarriedOutput,
                                   llvm::ArrayRef<int> sequenceInputs = {});
  Operation *createRegionOp(llvm::StringRef opName, ValueRange operands,
                            NamedAttrList &attributes,
                            SmallVectorImpl<std::unique_ptr<Region>> &regions,
                            Location loc,
                            llvm::ArrayRef<std::string> resultNames);
  Operation *createOp(llvm::StringRef opName, ValueRange operands,
                      NamedAttrList &attributes, Location loc,
                      llvm::ArrayRef<std::string> resultNames);
  RegisteredOperationName lookupKilnOp(llvm::StringRef name);
  SmallVector<Type> inferResultTypes(RegisteredOperationName opName,
                                     ValueRange operands,
                                     NamedAttrList &attributes,
                                     RegionRange regions, Location loc,
                                     llvm::ArrayRef<std::string> resultNames);
  Value getNone();
  Value lookupValue(const std::string &name);
  void defineValue(const std::string &name, Value value);
  Value materializeMovedAttribute(const MovedAttribute &moved,
                                  const onnx::AttributeProto &attr,
                                  ValueRange operands, Location loc);
  void checkAgainstSchema(const onnx::NodeProto &node,
                          llvm::ArrayRef<Value> operands);
  void addSchemaDefaults(const onnx::NodeProto &node,
                         RegisteredOperationName opName,
                         NamedAttrList &attributes);
  void checkLegacySoftmax(const onnx::NodeProto &node, ValueRange operands,
                          NamedAttrList &attributes);
  void normalizeLegacyPRelu(const onnx::NodeProto &node,
                            SmallVectorImpl<Value> &operands, Location loc);
  bool importSqueezeAsReshape(const onnx::NodeProto &node, ValueRange operands,
                              Location loc);
  RankedTensorType getStaticDeclaredType(const std::string &valueName);
  Value createI64Constant(llvm::ArrayRef<int64_t> values, Location loc);
  Type refineType(Type kilnType, const std::string &valueName);
  void verifyModule(ModuleOp module);
  void refineRangeLengths();

  LoadedModel &loaded;
  const onnx::GraphProto &graph;
  MLIRContext *context;
  std::string path;
  const ImportOptions &options;
  OpBuilder builder;
  Location fileLoc;
  func::FuncOp func;
  Value none;
  /// Named values: the graph's, then one scope per subgraph being imported
  /// (innermost last); a subgraph sees the names of the scopes around it.
  std::vector<llvm::StringMap<Value>> scopes;
  /// The types the subgraphs being imported declare (and libonnx infers)
  /// for their values, innermost last.
  std::vector<std::map<std::string, onnx::TypeProto>> subgraphTypes;
  /// The sequences named in each scope (parallel to `scopes`).
  std::vector<llvm::StringMap<SequenceValue>> sequenceScopes;
  /// Loop-carried sequences handed out so far (their ids).
  int numAccumulators = 0;
  /// While a loop body is imported again with carried types that changed:
  /// what the subgraphs declare (and libonnx infers from the body's
  /// declared inputs) may hold for the first iteration only.
  int staleSubgraphTypes = 0;
  /// Location name → ONNX op type, to name the op type in verifier errors.
  llvm::StringMap<std::string> opTypeOfNode;
  /// The default-domain opset of the nodes being imported: the model's, or
  /// the one a function body imports while it is being expanded.
  int64_t currentOpset = 0;
  /// How many function expansions enclose the node being imported.
  int functionDepth = 0;
  /// Name prefixes of the expanded function bodies, to keep them unique.
  llvm::StringSet<> functionPrefixes;
  /// While a window function (HannWindow, ...) whose output has a declared
  /// static length is expanded: that length.
  std::optional<int64_t> windowLength;
};

} // namespace

Value GraphBuilder::getNone() {
  if (!none) {
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPointToStart(&func.getBody().front());
    none = NoneOp::create(builder, fileLoc).getResult();
  }
  return none;
}

Value GraphBuilder::lookupValue(const std::string &name) {
  for (const llvm::StringMap<Value> &scope : llvm::reverse(scopes)) {
    auto it = scope.find(name);
    if (it != scope.end())
      return it->second;
  }
  if (lookupSequence(name))
    fail("input '{0}' is a sequence: Kiln imports sequences only as the "
         "operands of the sequence ops (SequenceAt, SequenceLength, "
         "ConcatFromSequence, ...) and of Loop",
         name);
  fail("input '{0}' is not defined (no graph input, initializer or earlier "
       "node produces it{1})",
       name, scopes.size() > 1 ? ", in this subgraph or around it" : "");
}

void GraphBuilder::defineValue(const std::string &name, Value value) {
  if (!scopes.back().try_emplace(name, value).second)
    fail("value '{0}' is defined more than once", name);
}

Type GraphBuilder::refineType(Type kilnType, const std::string &valueName) {
  auto refined = dyn_cast<RankedTensorType>(kilnType);
  if (!refined)
    return kilnType;
  auto refineWith = [&](const std::map<std::string, onnx::TypeProto> &types,
                        const char *who) {
    auto it = types.find(valueName);
    if (it == types.end())
      return;
    RankedTensorType onnxType =
        convertTypeProto(it->second, context, valueName, /*needRank=*/false);
    if (!onnxType)
      return;
    // Exporters declare a subgraph's values loosely (PyTorch gives a loop
    // body's outputs the rank of another value): there, a declaration that
    // does not fit is not used.
    bool lenient = !subgraphTypes.empty();
    if (lenient && (onnxType.getElementType() != refined.getElementType() ||
                    onnxType.getRank() != refined.getRank()))
      return;
    // PyTorch declares a Loop's outputs with made-up dims (and rank): a
    // declaration without a single size says nothing to refine with.
    if (onnxType.getRank() != refined.getRank() &&
        llvm::all_of(onnxType.getShape(), ShapedType::isDynamic) &&
        onnxType.getElementType() == refined.getElementType())
      return;
    if (onnxType.getElementType() != refined.getElementType())
      fail("inconsistent types: {0} {1} for '{2}' but Kiln infers {3}", who,
           onnxType, valueName, refined);
    bool conflict = onnxType.getRank() != refined.getRank();
    SmallVector<int64_t> dims(refined.getShape());
    for (int64_t i = 0; !conflict && i < refined.getRank(); ++i) {
      int64_t o = onnxType.getDimSize(i);
      if (ShapedType::isDynamic(o))
        continue;
      if (ShapedType::isDynamic(dims[i]))
        dims[i] = o;
      else if (dims[i] != o)
        conflict = true;
    }
    if (conflict && lenient)
      return;
    if (conflict)
      fail("inconsistent shapes: {0} {1} for '{2}' but Kiln infers {3}", who,
           onnxType, valueName, refined);
    refined = RankedTensorType::get(dims, refined.getElementType());
  };
  if (!subgraphTypes.empty()) {
    if (!staleSubgraphTypes)
      refineWith(subgraphTypes.back(), "the model declares");
    return refined;
  }
  refineWith(loaded.declaredTypes, "the model declares");
  refineWith(loaded.onnxInferredTypes, "ONNX infers");
  return refined;
}

/// The registered kiln op `name`, which must infer its result types.
RegisteredOperationName GraphBuilder::lookupKilnOp(llvm::StringRef name) {
  std::optional<RegisteredOperationName> opName =
      RegisteredOperationName::lookup(name, context);
  if (!opName)
    fail("the kiln dialect has no op '{0}'", name);
  if (!opName->hasInterface<InferTypeOpInterface>())
    fail("'{0}' does not infer its result types", name);
  return *opName;
}

/// The result types `opName` infers, refined by the types the model
/// declares (or ONNX infers) for `resultNames` where the op accepts them.
SmallVector<Type>
GraphBuilder::inferResultTypes(RegisteredOperationName opName,
                               ValueRange operands, NamedAttrList &attributes,
                               RegionRange regions, Location loc,
                               llvm::ArrayRef<std::string> resultNames) {
  auto *inferType = opName.getInterface<InferTypeOpInterface>();
  SmallVector<Type> resultTypes;
  {
    DiagnosticCapture capture(context);
    if (failed(inferType->inferReturnTypes(
            context, loc, operands, attributes.getDictionary(context),
            OpaqueProperties(nullptr), regions, resultTypes)))
      fail("{0}", capture.message.empty()
                      ? "type inference of " + opName.getStringRef().str() +
                            " failed"
                      : capture.message);
  }
  SmallVector<Type> refinedTypes(resultTypes);
  for (auto [type, resultName] : llvm::zip(refinedTypes, resultNames))
    if (!resultName.empty())
      type = refineType(type, resultName);
  // Ops whose result type is their operand's (SameOperandsAndResultType)
  // accept no refinement: they keep the inferred type.
  if (inferType->isCompatibleReturnTypes(resultTypes, refinedTypes))
    resultTypes = std::move(refinedTypes);
  return resultTypes;
}

Operation *GraphBuilder::createOp(llvm::StringRef name, ValueRange operands,
                                  NamedAttrList &attributes, Location loc,
                                  llvm::ArrayRef<std::string> resultNames) {
  RegisteredOperationName opName = lookupKilnOp(name);
  opName.populateDefaultAttrs(attributes);
  SmallVector<Type> resultTypes = inferResultTypes(
      opName, operands, attributes, RegionRange(), loc, resultNames);

  OperationState state(loc, opName);
  state.addOperands(operands);
  state.addAttributes(attributes);
  state.addTypes(resultTypes);
  Operation *op = builder.create(state);
  {
    DiagnosticCapture capture(context);
    if (failed(mlir::verify(op, /*verifyRecursively=*/false)))
      fail("{0}", capture.message.empty() ? "the op does not verify"
                                          : capture.message);
  }
  // Checked after the verifier, whose reason (e.g. "training_mode = 1 is not
  // supported") says more than an output count does.
  if (resultNames.size() > op->getNumResults()) {
    unsigned numResults = op->getNumResults();
    op->erase();
    fail("the node has {0} outputs, but {1} has {2} results",
         resultNames.size(), name, numResults);
  }
  for (auto [result, resultName] : llvm::zip(op->getResults(), resultNames))
    if (!resultName.empty())
      defineValue(resultName, result);
  return op;
}

void GraphBuilder::importInitializers() {
  for (const onnx::TensorProto &tensor : graph.initializer())
    importInitializer(tensor, "");
}

/// `tensor` as a kiln.constant defining its name; `where` starts the
/// message of a failure (a subgraph's "in its ...: ").
void GraphBuilder::importInitializer(const onnx::TensorProto &tensor,
                                     llvm::StringRef where) {
  Location loc = NameLoc::get(builder.getStringAttr(tensor.name()), fileLoc);
  try {
    NamedAttrList attrs;
    attrs.set("value", convertTensor(tensor, context, tensor.name(),
                                     options.resourceThresholdBytes));
    createOp(ConstantOp::getOperationName(), {}, attrs, loc, {tensor.name()});
  } catch (const ImportError &e) {
    fail("{0}initializer '{1}': {2}", where, tensor.name(), e.what());
  }
}

void GraphBuilder::importConstantNode(const onnx::NodeProto &node,
                                      Location loc) {
  if (node.attribute_size() != 1)
    fail("a Constant needs exactly one value attribute, it has {0}",
         node.attribute_size());
  if (node.output_size() != 1)
    fail("a Constant has one output, this one {0}", node.output_size());
  const onnx::AttributeProto &attr = node.attribute(0);
  const std::string &name = attr.name();
  onnx::TensorProto tensor;
  if (name == "value") {
    tensor = attr.t();
  } else if (name == "value_float") {
    tensor.set_data_type(onnx::TensorProto::FLOAT);
    tensor.add_float_data(attr.f());
  } else if (name == "value_floats") {
    tensor.set_data_type(onnx::TensorProto::FLOAT);
    tensor.add_dims(attr.floats_size());
    *tensor.mutable_float_data() = attr.floats();
  } else if (name == "value_int") {
    tensor.set_data_type(onnx::TensorProto::INT64);
    tensor.add_int64_data(attr.i());
  } else if (name == "value_ints") {
    tensor.set_data_type(onnx::TensorProto::INT64);
    tensor.add_dims(attr.ints_size());
    *tensor.mutable_int64_data() = attr.ints();
  } else if (name == "value_string" || name == "value_strings") {
    fail("unsupported dtype STRING for '{0}'", node.output(0));
  } else if (name == "sparse_value") {
    fail("unsupported attribute 'sparse_value': sparse tensors are not "
         "supported");
  } else {
    fail("unsupported attribute '{0}'", name);
  }
  NamedAttrList attrs;
  attrs.set("value", convertTensor(tensor, context, node.output(0),
                                   options.resourceThresholdBytes));
  createOp(ConstantOp::getOperationName(), {}, attrs, loc, {node.output(0)});
}

Value GraphBuilder::materializeMovedAttribute(const MovedAttribute &moved,
                                              const onnx::AttributeProto &attr,
                                              ValueRange operands,
                                              Location loc) {
  DenseElementsAttr value;
  switch (moved.kind) {
  case MovedKind::I64Vector:
  case MovedKind::I64Vector1: {
    SmallVector<int64_t> ints(attr.ints().begin(), attr.ints().end());
    if (moved.kind == MovedKind::I64Vector1)
      ints = {attr.i()};
    value = DenseElementsAttr::get(
        RankedTensorType::get({int64_t(ints.size())}, builder.getI64Type()),
        llvm::ArrayRef(ints));
    break;
  }
  case MovedKind::F32Scalar:
    value = DenseElementsAttr::get(RankedTensorType::get({}, builder.getF32Type()),
                                   attr.f());
    break;
  case MovedKind::ScalarLikeInput0: {
    RankedTensorType input = getFirstTensorType(operands);
    if (!input)
      fail("attribute '{0}' needs a tensor input 0", attr.name());
    Type elementType = input.getElementType();
    Attribute scalar;
    if (isa<FloatType>(elementType))
      scalar = FloatAttr::get(elementType, attr.f());
    else if (elementType.isInteger(1))
      scalar = IntegerAttr::get(elementType, attr.f() != 0);
    else
      scalar = IntegerAttr::get(elementType, int64_t(attr.f()));
    value = DenseElementsAttr::get(RankedTensorType::get({}, elementType),
                                   llvm::ArrayRef(scalar));
    break;
  }
  }
  NamedAttrList attrs;
  attrs.set("value", value);
  return createOp(ConstantOp::getOperationName(), {}, attrs, loc, {})
      ->getResult(0);
}

/// What the node's ONNX schema requires and Kiln's type inference takes for
/// granted: every required input present (an empty name or a missing
/// trailing input is a `none` operand, which only optional inputs may be),
/// no empty name inside a variadic list, every required attribute set.
/// libonnx's checker says so too, but it does not run on models newer than
/// it knows.
void GraphBuilder::checkAgainstSchema(const onnx::NodeProto &node,
                                      llvm::ArrayRef<Value> operands) {
  int opset = int(std::min<int64_t>(currentOpset, kLibOnnxMaxOpset));
  const onnx::OpSchema *schema =
      onnx::OpSchemaRegistry::Schema(node.op_type(), opset, "");
  if (!schema)
    return;
  using Option = onnx::OpSchema::FormalParameterOption;
  const auto &formals = schema->inputs();
  for (size_t i = 0; i < operands.size() && !formals.empty(); ++i) {
    if (!isNone(operands[i]))
      continue;
    bool pastEnd = i >= formals.size();
    const auto &formal = formals[pastEnd ? formals.size() - 1 : i];
    if (formal.GetOption() == Option::Optional)
      continue;
    if (pastEnd && formal.GetOption() != Option::Variadic)
      continue; // operands Kiln's op has beyond the ONNX inputs
    if (formal.GetOption() == Option::Variadic) {
      if (i < size_t(node.input_size()))
        fail("input {0} is empty: '{1}' is a variadic list, whose entries "
             "cannot be omitted",
             i, formal.GetName());
      if (i >= formals.size() - 1 + size_t(formal.GetMinArity()))
        continue;
    }
    fail("input {0} ('{1}') is required, but the node {2}", i,
         formal.GetName(),
         i < size_t(node.input_size()) ? "leaves it empty" : "does not give it");
  }
  // An attribute of another type than the schema's (an `axis` given as a
  // string) would reach the op's accessors, which assume the verified type.
  for (const onnx::AttributeProto &given : node.attribute()) {
    auto it = schema->attributes().find(given.name());
    if (it == schema->attributes().end() ||
        given.type() == onnx::AttributeProto::UNDEFINED ||
        given.type() == it->second.type)
      continue;
    fail("attribute '{0}' has type {1}, but the schema of {2} declares {3}",
         given.name(), onnx::AttributeProto::AttributeType_Name(given.type()),
         node.op_type(),
         onnx::AttributeProto::AttributeType_Name(it->second.type));
  }
  for (const auto &[name, attr] : schema->attributes()) {
    if (!attr.required)
      continue;
    bool given = llvm::any_of(node.attribute(),
                              [&](const onnx::AttributeProto &a) {
                                return a.name() == name;
                              });
    if (!given)
      fail("the required attribute '{0}' is missing", name);
  }
}

void GraphBuilder::addSchemaDefaults(const onnx::NodeProto &node,
                                     RegisteredOperationName opName,
                                     NamedAttrList &attributes) {
  // The schema of the model's opset first; attributes a later opset added
  // (the kiln op has the newest form) take the newest default libonnx has.
  int opset = int(std::min<int64_t>(currentOpset, kLibOnnxMaxOpset));
  for (int version : {opset, int(kLibOnnxMaxOpset)}) {
    const onnx::OpSchema *schema =
        onnx::OpSchemaRegistry::Schema(node.op_type(), version, "");
    if (!schema)
      continue;
    for (const auto &[name, attr] : schema->attributes()) {
      if (!attr.default_value.has_type() || attributes.get(name))
        continue;
      if (!llvm::is_contained(opName.getAttributeNames(),
                              builder.getStringAttr(name)))
        continue;
      onnx::AttributeProto value = attr.default_value;
      value.set_name(name);
      attributes.set(name, convertAttribute(value, context));
    }
  }
}

void GraphBuilder::checkLegacySoftmax(const onnx::NodeProto &node,
                                      ValueRange operands,
                                      NamedAttrList &attributes) {
  const std::string &op = node.op_type();
  if (currentOpset >= 13 ||
      (op != "Softmax" && op != "LogSoftmax" && op != "Hardmax"))
    return;
  RankedTensorType input = getFirstTensorType(operands);
  auto axisAttr = dyn_cast_or_null<IntegerAttr>(attributes.get("axis"));
  int64_t axis = axisAttr ? axisAttr.getInt() : 1;
  if (input && axis < 0)
    axis += input.getRank();
  // Before opset 13 these ops flatten the input to 2-D at `axis`; that is
  // the newer per-axis semantics only when `axis` is the last dim.
  if (!input || axis != input.getRank() - 1)
    fail("not supported: {0} before opset 13 coerces its input to 2-D at "
         "axis {1}; Kiln implements only the last axis there (convert the "
         "model to opset 13)",
         op, axis);
  attributes.set("axis", builder.getI64IntegerAttr(axis));
}

Value GraphBuilder::createI64Constant(llvm::ArrayRef<int64_t> values,
                                      Location loc) {
  NamedAttrList attrs;
  attrs.set("value", DenseElementsAttr::get(
                         RankedTensorType::get({int64_t(values.size())},
                                               builder.getI64Type()),
                         values));
  return createOp(ConstantOp::getOperationName(), {}, attrs, loc, {})
      ->getResult(0);
}

void GraphBuilder::normalizeLegacyPRelu(const onnx::NodeProto &node,
                                        SmallVectorImpl<Value> &operands,
                                        Location loc) {
  // Before opset 7 a 1-D slope of PRelu has one value per channel (dim 1),
  // not numpy broadcasting over the last dim; libonnx's 6 → 7 adapter keeps
  // the slope as it is. Reshaping it to [C, 1, ...] keeps the meaning.
  if (node.op_type() != "PRelu" || functionDepth != 0 ||
      loaded.modelOpset >= 7 || operands.size() != 2)
    return;
  auto x = dyn_cast<RankedTensorType>(operands[0].getType());
  auto slope = dyn_cast<RankedTensorType>(operands[1].getType());
  if (!x || !slope || x.getRank() < 3 || slope.getRank() != 1 ||
      slope.isDynamicDim(0) || slope.getDimSize(0) == 1 ||
      x.getDimSize(1) != slope.getDimSize(0))
    return;
  SmallVector<int64_t> shape(x.getRank() - 1, 1);
  shape[0] = slope.getDimSize(0);
  NamedAttrList attrs;
  operands[1] =
      createOp(ReshapeOp::getOperationName(),
               {operands[1], createI64Constant(shape, loc)}, attrs, loc, {})
          ->getResult(0);
}

RankedTensorType
GraphBuilder::getStaticDeclaredType(const std::string &valueName) {
  SmallVector<const std::map<std::string, onnx::TypeProto> *, 2> maps = {
      &loaded.declaredTypes, &loaded.onnxInferredTypes};
  if (!subgraphTypes.empty())
    maps = {};
  if (!subgraphTypes.empty() && !staleSubgraphTypes)
    maps = {&subgraphTypes.back()};
  for (const auto *types : maps) {
    auto it = types->find(valueName);
    if (it == types->end())
      continue;
    RankedTensorType type =
        convertTypeProto(it->second, context, valueName, /*needRank=*/false);
    if (type && type.hasStaticShape())
      return type;
  }
  return {};
}

bool GraphBuilder::importSqueezeAsReshape(const onnx::NodeProto &node,
                                          ValueRange operands, Location loc) {
  // Squeeze/Unsqueeze with axes known only at run time (a graph input) have
  // a result rank Kiln cannot infer. When the model declares the result's
  // static shape, and it is the input's with 1s added or removed, the node
  // can only be that reshape: import it as one (the axes value is then not
  // read; a run with other axes would contradict the model's own types).
  const std::string &op = node.op_type();
  if ((op != "Squeeze" && op != "Unsqueeze") || operands.size() != 2 ||
      isNone(operands[1]) || operands[1].getDefiningOp<ConstantOp>() ||
      node.output_size() != 1)
    return false;
  auto input = dyn_cast<RankedTensorType>(operands[0].getType());
  auto axes = dyn_cast<RankedTensorType>(operands[1].getType());
  RankedTensorType result = getStaticDeclaredType(node.output(0));
  if (!input || !input.hasStaticShape() || !axes || axes.getRank() != 1 ||
      axes.isDynamicDim(0) || !result ||
      result.getElementType() != input.getElementType())
    return false;
  bool unsqueeze = op == "Unsqueeze";
  ArrayRef<int64_t> longer = unsqueeze ? result.getShape() : input.getShape();
  ArrayRef<int64_t> shorter = unsqueeze ? input.getShape() : result.getShape();
  if (int64_t(longer.size()) - int64_t(shorter.size()) != axes.getDimSize(0))
    return false;
  // `shorter` must be `longer` less some of its 1s.
  size_t j = 0;
  int64_t dropped = 0;
  for (int64_t dim : longer) {
    if (j < shorter.size() && shorter[j] == dim)
      ++j;
    else if (dim == 1)
      ++dropped;
    else
      return false;
  }
  if (j != shorter.size() || dropped != axes.getDimSize(0))
    return false;
  NamedAttrList attrs;
  createOp(ReshapeOp::getOperationName(),
           {operands[0], createI64Constant(result.getShape(), loc)}, attrs, loc,
           {node.output(0)});
  return true;
}

void GraphBuilder::importNode(const onnx::NodeProto &node,
                              const std::string &displayName) {
  opTypeOfNode[displayName] = node.op_type();
  Location loc = NameLoc::get(builder.getStringAttr(displayName), fileLoc);
  if (node.op_type() == "Constant")
    return importConstantNode(node, loc);
  if (isControlFlowOp(node.op_type()) && isDefaultDomain(node.domain()))
    return importControlFlow(node, displayName, loc);
  if (isSequenceOp(node.op_type()) && isDefaultDomain(node.domain()))
    return importSequenceOp(node, loc);

  auto it = getKilnOpTable().find(node.op_type());
  if (it == getKilnOpTable().end() && isRecurrentOp(node.op_type()) &&
      isDefaultDomain(node.domain()))
    return expandRecurrent(node, displayName);
  if (it == getKilnOpTable().end()) {
    // ONNX defines some ops as functions of other ops: import those as the
    // function's body.
    const onnx::OpSchema *schema = nullptr;
    if (isDefaultDomain(node.domain()))
      schema = onnx::OpSchemaRegistry::Schema(
          node.op_type(),
          int(std::min<int64_t>(currentOpset, kLibOnnxMaxOpset)), "");
    if (schema &&
        (schema->HasFunction() || schema->HasContextDependentFunction()))
      return expandFunction(node, displayName, *schema);
    fail("unsupported op type '{0}'", node.op_type());
  }
  const KilnOpInfo &info = it->second;
  std::optional<RegisteredOperationName> opName =
      RegisteredOperationName::lookup(info.opName, context);
  if (!opName)
    fail("the kiln dialect has no op '{0}'", info.opName);

  if (info.numOperands >= 0 && node.input_size() > info.numOperands)
    fail("{0} inputs, but {1} takes at most {2}", node.input_size(),
         info.opName, info.numOperands);
  SmallVector<Value> operands;
  for (const std::string &input : node.input())
    operands.push_back(input.empty() ? getNone() : lookupValue(input));
  while (info.numOperands >= 0 && int(operands.size()) < info.numOperands)
    operands.push_back(getNone());

  NamedAttrList attributes;
  for (const onnx::AttributeProto &attr : node.attribute()) {
    StringAttr name = builder.getStringAttr(attr.name());
    if (llvm::is_contained(opName->getAttributeNames(), name)) {
      attributes.set(name, convertAttribute(attr, context));
      continue;
    }
    const MovedAttribute *moved = findMovedAttribute(node.op_type(), attr.name());
    if (!moved || moved->position >= operands.size() ||
        !isNone(operands[moved->position]))
      fail("unsupported attribute '{0}'", attr.name());
    operands[moved->position] =
        materializeMovedAttribute(*moved, attr, operands, loc);
  }
  checkAgainstSchema(node, operands);
  addSchemaDefaults(node, *opName, attributes);
  StringAttr numOutputs = builder.getStringAttr("num_outputs");
  if (llvm::is_contained(opName->getAttributeNames(), numOutputs) &&
      !attributes.get(numOutputs))
    attributes.set(numOutputs, builder.getI64IntegerAttr(node.output_size()));
  checkLegacySoftmax(node, operands, attributes);
  normalizeLegacyPRelu(node, operands, loc);
  if (importSqueezeAsReshape(node, operands, loc))
    return;

  SmallVector<std::string> resultNames(node.output().begin(),
                                       node.output().end());
  Operation *op = createOp(info.opName, operands, attributes, loc, resultNames);
  // A window function's Range has the window's length, which its `size`
  // input (a run-time value) sets and the model may declare statically.
  if (windowLength && node.op_type() == "Range" && op->getNumResults() == 1)
    if (auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType()))
      if (type.getRank() == 1 && type.isDynamicDim(0))
        op->getResult(0).setType(
            RankedTensorType::get({*windowLength}, type.getElementType()));
}

/// The TypeProto of a value, for libonnx's context-dependent function
/// builders (an empty TypeProto, which they read as "unknown", when the
/// value is no tensor of a known dtype).
static onnx::TypeProto getTypeProto(Value value) {
  onnx::TypeProto proto;
  auto type = dyn_cast<TensorType>(value.getType());
  if (!type)
    return proto;
  std::optional<int32_t> dtype = getOnnxDataType(type.getElementType());
  if (!dtype)
    return proto;
  onnx::TypeProto_Tensor *tensor = proto.mutable_tensor_type();
  tensor->set_elem_type(*dtype);
  if (auto ranked = dyn_cast<RankedTensorType>(type)) {
    onnx::TensorShapeProto *shape = tensor->mutable_shape();
    for (int64_t dim : ranked.getShape()) {
      onnx::TensorShapeProto_Dimension *d = shape->add_dim();
      if (!ShapedType::isDynamic(dim))
        d->set_dim_value(dim);
    }
  }
  return proto;
}

/// Function bodies may contain function ops; a body that (indirectly)
/// contains its own op would never end.
constexpr int kMaxFunctionDepth = 16;

void GraphBuilder::expandFunction(const onnx::NodeProto &node,
                                  const std::string &displayName,
                                  const onnx::OpSchema &schema) {
  onnx::FunctionProto function;
  if (schema.HasFunction()) {
    function = *schema.GetFunction();
  } else {
    // The body depends on the attributes and the input types (NLL loss
    // gathers the weights only when there are weights, ...).
    std::vector<onnx::TypeProto> inputTypes;
    for (const std::string &input : node.input())
      inputTypes.push_back(input.empty() ? onnx::TypeProto()
                                         : getTypeProto(lookupValue(input)));
    onnx::FunctionBodyBuildContextImpl buildContext(node, inputTypes);
    if (!schema.BuildContextDependentFunction(buildContext, function))
      fail("libonnx cannot build the function body of {0}-{1} for this node",
           node.op_type(), schema.SinceVersion());
  }

  // The body's ops have the semantics of the opset the function imports.
  int64_t bodyOpset = schema.SinceVersion();
  for (const onnx::OperatorSetIdProto &opset : function.opset_import())
    if (isDefaultDomain(opset.domain()))
      bodyOpset = opset.version();

  // The window functions' output is [size] with `size` a run-time value:
  // the declared output length is the length of the Range in their body.
  std::optional<int64_t> savedWindowLength = windowLength;
  windowLength.reset();
  if (llvm::StringRef(node.op_type()).ends_with("Window") &&
      node.output_size() == 1)
    if (RankedTensorType declared = getStaticDeclaredType(node.output(0)))
      if (declared.getRank() == 1)
        windowLength = declared.getDimSize(0);
  importBody(node, displayName, function, bodyOpset, &schema);
  windowLength = savedWindowLength;
}

void GraphBuilder::expandRecurrent(const onnx::NodeProto &node,
                                   const std::string &displayName) {
  RecurrentInputs inputs;
  for (int i = 0; i < node.input_size(); ++i) {
    if (node.input(i).empty())
      continue;
    Value value = lookupValue(node.input(i));
    if (i == 0)
      if (auto type = dyn_cast<RankedTensorType>(value.getType())) {
        inputs.xShape.assign(type.getShape().begin(), type.getShape().end());
        inputs.xIsF32 = type.getElementType().isF32();
      }
    if (i == 4)
      if (auto constant = value.getDefiningOp<ConstantOp>())
        if (auto dense = dyn_cast<DenseIntElementsAttr>(constant.getValue())) {
          inputs.constantSequenceLens.emplace();
          for (const APInt &v : dense.getValues<APInt>())
            inputs.constantSequenceLens->push_back(v.getSExtValue());
        }
  }
  onnx::FunctionProto body = buildRecurrentBody(node, inputs);
  importBody(node, displayName, body, kLibOnnxMaxOpset, nullptr);
}

void GraphBuilder::importBody(const onnx::NodeProto &node,
                              const std::string &displayName,
                              const onnx::FunctionProto &function,
                              int64_t bodyOpset, const onnx::OpSchema *schema) {
  if (functionDepth >= kMaxFunctionDepth)
    fail("function ops nest more than {0} deep (recursive function?)",
         kMaxFunctionDepth);

  // Internal values get names no graph value has: the node's name (made
  // unique among the expansions) and '/'.
  std::string prefix = displayName + "/";
  for (int n = 1; !functionPrefixes.insert(prefix).second; ++n)
    prefix = displayName + "#" + std::to_string(n) + "/";

  // Formal inputs and outputs are the node's actual values; an optional
  // input the node omits stays omitted (""), an output it omits is internal.
  std::map<std::string, std::string> rename;
  for (int i = 0; i < function.input_size(); ++i)
    rename[function.input(i)] = i < node.input_size() ? node.input(i) : "";
  for (int i = 0; i < function.output_size(); ++i)
    rename[function.output(i)] =
        i < node.output_size() && !node.output(i).empty()
            ? node.output(i)
            : prefix + function.output(i);
  auto mapName = [&](const std::string &name) -> std::string {
    if (name.empty())
      return name;
    auto it = rename.find(name);
    return it != rename.end() ? it->second : prefix + name;
  };

  // Attribute references take the node's attribute, else the schema's
  // default; an attribute that is neither is left out of the body node.
  auto bindReference = [&](const onnx::AttributeProto &attr)
      -> std::optional<onnx::AttributeProto> {
    for (const onnx::AttributeProto &actual : node.attribute())
      if (actual.name() == attr.ref_attr_name()) {
        onnx::AttributeProto bound = actual;
        bound.set_name(attr.name());
        return bound;
      }
    if (!schema)
      return std::nullopt;
    auto it = schema->attributes().find(attr.ref_attr_name());
    if (it != schema->attributes().end() &&
        it->second.default_value.has_type()) {
      onnx::AttributeProto bound = it->second.default_value;
      bound.set_name(attr.name());
      return bound;
    }
    return std::nullopt;
  };

  struct DepthGuard {
    GraphBuilder &self;
    int64_t savedOpset;
    DepthGuard(GraphBuilder &self, int64_t opset)
        : self(self), savedOpset(self.currentOpset) {
      ++self.functionDepth;
      self.currentOpset = opset;
    }
    ~DepthGuard() {
      --self.functionDepth;
      self.currentOpset = savedOpset;
    }
  } guard(*this, bodyOpset);

  for (int j = 0; j < function.node_size(); ++j) {
    const onnx::NodeProto &body = function.node(j);
    onnx::NodeProto inner;
    inner.set_op_type(body.op_type());
    inner.set_domain(body.domain());
    std::string innerName =
        prefix + (body.name().empty() ? body.op_type() + "_" + std::to_string(j)
                                      : body.name());
    inner.set_name(innerName);
    for (const std::string &input : body.input())
      inner.add_input(mapName(input));
    for (const std::string &output : body.output())
      inner.add_output(mapName(output));
    for (const onnx::AttributeProto &attr : body.attribute()) {
      if (attr.ref_attr_name().empty()) {
        *inner.add_attribute() = attr;
      } else if (std::optional<onnx::AttributeProto> bound =
                     bindReference(attr)) {
        *inner.add_attribute() = std::move(*bound);
      }
    }
    try {
      if (!isDefaultDomain(inner.domain()))
        fail("unsupported domain '{0}'", inner.domain());
      importNode(inner, innerName);
    } catch (const ImportError &e) {
      fail("in the {0} of {1}: node '{2}' ({3}): {4}",
           schema ? "function body" : "decomposition", node.op_type(),
           innerName, inner.op_type(), e.what());
    }
  }
}

//===----------------------------------------------------------------------===//
// Control flow: If, Loop and Scan, their subgraphs as regions
//===----------------------------------------------------------------------===//

Operation *GraphBuilder::createRegionOp(
    llvm::StringRef name, ValueRange operands, NamedAttrList &attributes,
    SmallVectorImpl<std::unique_ptr<Region>> &regions, Location loc,
    llvm::ArrayRef<std::string> resultNames) {
  RegisteredOperationName opName = lookupKilnOp(name);
  SmallVector<Type> resultTypes = inferResultTypes(
      opName, operands, attributes, RegionRange(regions), loc, resultNames);
  if (resultNames.size() > resultTypes.size())
    fail("the node has {0} outputs, but its subgraph gives {1}",
         resultNames.size(), resultTypes.size());

  OperationState state(loc, opName);
  state.addOperands(operands);
  state.addAttributes(attributes);
  state.addTypes(resultTypes);
  for (std::unique_ptr<Region> &region : regions)
    state.addRegion(std::move(region));
  Operation *op = builder.create(state);
  {
    // The op's own invariants (its regions' ops were checked as they were
    // made); mlir::verify would check dominance too, which needs the op to
    // be in a function (a nested If is in a region not attached yet).
    DiagnosticCapture capture(context);
    if (failed(opName.verifyInvariants(op)) ||
        failed(opName.verifyRegionInvariants(op)))
      fail("{0}", capture.message.empty() ? "the op does not verify"
                                          : capture.message);
  }
  for (auto [result, resultName] : llvm::zip(op->getResults(), resultNames))
    if (!resultName.empty())
      defineValue(resultName, result);
  return op;
}

void GraphBuilder::importSubgraph(const onnx::NodeProto &node,
                                  const std::string &displayName,
                                  const onnx::GraphProto &subgraph,
                                  llvm::StringRef what, Region &region,
                                  TypeRange argumentTypes,
                                  llvm::ArrayRef<int> sequenceInputs) {
  // sequenceInputs: the inputs (of a Loop body) that are loop-carried
  // sequences. They get no block argument; the body may only append one
  // element to each (its output one before), which it yields last.
  if (int(scopes.size()) > kMaxSubgraphDepth)
    fail("subgraphs nest more than {0} deep", kMaxSubgraphDepth);
  if (subgraph.input_size() !=
      int(argumentTypes.size() + sequenceInputs.size()))
    fail("its {0} has {1} inputs, {2} gives it {3}", what,
         subgraph.input_size(), node.op_type(),
         argumentTypes.size() + sequenceInputs.size());
  std::string where = "in its " + what.str() + ": ";

  auto *block = new Block();
  region.push_back(block);
  SmallVector<const onnx::ValueInfoProto *> tensorInputs;
  for (int i = 0; i < subgraph.input_size(); ++i)
    if (!llvm::is_contained(sequenceInputs, i))
      tensorInputs.push_back(&subgraph.input(i));
  for (auto [input, type] : llvm::zip(tensorInputs, argumentTypes))
    block->addArgument(
        type, NameLoc::get(builder.getStringAttr(input->name()), fileLoc));

  // The subgraph's names, and the types it declares for them (libonnx's
  // inference adds its own to the subgraph's value_info).
  scopes.emplace_back();
  sequenceScopes.emplace_back();
  subgraphTypes.emplace_back();
  struct ScopeGuard {
    GraphBuilder &self;
    ~ScopeGuard() {
      self.scopes.pop_back();
      self.sequenceScopes.pop_back();
      self.subgraphTypes.pop_back();
    }
  } scopeGuard{*this};
  SmallVector<int> accumulators;
  for (int i : sequenceInputs) {
    SequenceValue input;
    input.kind = SequenceValue::LoopInput;
    input.accumulator = numAccumulators++;
    accumulators.push_back(input.accumulator);
    defineSequence(subgraph.input(i).name(), input);
  }
  for (const auto *infos : {&subgraph.value_info(), &subgraph.output()})
    for (const onnx::ValueInfoProto &info : *infos)
      if (info.type().has_tensor_type())
        subgraphTypes.back()[info.name()] = info.type();

  OpBuilder::InsertionGuard insertionGuard(builder);
  builder.setInsertionPointToEnd(block);
  for (auto [inputPtr, argument] :
       llvm::zip(tensorInputs, block->getArguments())) {
    const onnx::ValueInfoProto &input = *inputPtr;
    // What the subgraph declares for an input must be what it is given
    // (shapes may differ: an iteration may change them).
    if (input.type().has_tensor_type() &&
        input.type().tensor_type().elem_type() != 0) {
      Type declared = convertDataType(input.type().tensor_type().elem_type(),
                                      context, input.name());
      Type given = cast<RankedTensorType>(argument.getType()).getElementType();
      if (declared != given)
        fail("{0}input '{1}' is declared {2}, but {3} gives it {4}", where,
             input.name(), declared, node.op_type(), argument.getType());
    }
    defineValue(input.name(), argument);
  }
  for (const onnx::TensorProto &tensor : subgraph.initializer())
    importInitializer(tensor, where);
  for (int j = 0; j < subgraph.node_size(); ++j) {
    const onnx::NodeProto &inner = subgraph.node(j);
    // Unnamed nodes are named after the op that holds them.
    std::string innerName =
        inner.name().empty()
            ? displayName + "/" + inner.op_type() + "_" + std::to_string(j)
            : inner.name();
    try {
      importNode(inner, innerName);
    } catch (const std::exception &e) {
      fail("{0}node '{1}' ({2}): {3}", where, innerName, inner.op_type(),
           e.what());
    }
  }
  SmallVector<Value> outputs;
  SmallVector<Value> appended(sequenceInputs.size());
  for (auto [o, output] : llvm::enumerate(subgraph.output())) {
    // A loop-carried sequence's output: the input with one element
    // appended.
    auto slot = llvm::find(sequenceInputs, int(o) + 1);
    if (slot != sequenceInputs.end()) {
      unsigned k = slot - sequenceInputs.begin();
      const SequenceValue *sequence = lookupSequence(output.name());
      if (!sequence || sequence->kind != SequenceValue::LoopAppended ||
          sequence->accumulator != accumulators[k])
        fail("{0}the loop-carried sequence '{1}' must come out as itself "
             "with one element appended at its end (SequenceInsert without "
             "a position), once per iteration: not supported yet otherwise",
             where, subgraph.input(int(o) + 1).name());
      appended[k] = sequence->tensor;
      continue;
    }
    try {
      outputs.push_back(lookupValue(output.name()));
    } catch (const ImportError &e) {
      if (lookupSequence(output.name()))
        fail("{0}output '{1}' is a sequence: not supported yet here", where,
             output.name());
      fail("{0}output '{1}' is not produced by any node", where,
           output.name());
    }
  }
  llvm::append_range(outputs, appended);
  YieldOp::create(builder, NameLoc::get(builder.getStringAttr(displayName),
                                        fileLoc),
                  outputs);
}

SmallVector<Type> GraphBuilder::importLoopBody(
    const onnx::NodeProto &node, const std::string &displayName,
    const onnx::GraphProto &body, Region &region, TypeRange fixedTypes,
    SmallVector<Type> carriedTypes, unsigned firstCarriedOutput,
    llvm::ArrayRef<int> sequenceInputs) {
  // A carried value's type is what it has before and after every
  // iteration: start from the initial values', make dynamic each dim an
  // iteration changes, and import the body again until nothing changes
  // (each round makes a dim dynamic: it ends).
  bool loop = node.op_type() == "Loop";
  struct StaleGuard {
    GraphBuilder &self;
    bool active = false;
    ~StaleGuard() {
      if (active)
        --self.staleSubgraphTypes;
    }
  } staleGuard{*this};
  for (int round = 0;; ++round) {
    SmallVector<Type> argumentTypes;
    if (loop) {
      argumentTypes.append(fixedTypes.begin(), fixedTypes.end());
      argumentTypes.append(carriedTypes.begin(), carriedTypes.end());
    } else {
      argumentTypes.append(carriedTypes.begin(), carriedTypes.end());
      argumentTypes.append(fixedTypes.begin(), fixedTypes.end());
    }
    importSubgraph(node, displayName, body, "body", region, argumentTypes,
                   sequenceInputs);
    auto yield = cast<YieldOp>(region.front().back());
    if (yield.getValues().size() < firstCarriedOutput + carriedTypes.size())
      fail("its body has {0} outputs, {1} needs at least {2}",
           yield.getValues().size(), node.op_type(),
           firstCarriedOutput + carriedTypes.size());
    bool changed = false;
    for (auto [j, carried] : llvm::enumerate(carriedTypes)) {
      Type yielded = yield.getValues()[firstCarriedOutput + j].getType();
      FailureOr<RankedTensorType> joined = joinTensorTypes(
          cast<RankedTensorType>(carried), cast<RankedTensorType>(yielded));
      if (failed(joined)) {
        // The j-th carried input that is not a sequence, and its output.
        int input = loop ? 2 : 0;
        for (unsigned seen = 0;; ++input)
          if (!llvm::is_contained(sequenceInputs, input) && seen++ == j)
            break;
        fail("{0} '{1}' is {2} before an iteration and {3} after it (its "
             "body's output '{4}'): Kiln needs the same element type and "
             "rank",
             loop ? "loop-carried value" : "state", body.input(input).name(),
             carried, yielded, body.output(loop ? input - 1 : input).name());
      }
      if (*joined != carried) {
        carried = *joined;
        changed = true;
      }
    }
    if (!changed)
      return carriedTypes;
    for (Block &block : region)
      block.dropAllDefinedValueUses();
    region.getBlocks().clear();
    if (!staleGuard.active) {
      staleGuard.active = true;
      ++staleSubgraphTypes;
    }
  }
}

void GraphBuilder::importControlFlow(const onnx::NodeProto &node,
                                     const std::string &displayName,
                                     Location loc) {
  const std::string &op = node.op_type();
  auto findAttr = [&](llvm::StringRef name) -> const onnx::AttributeProto * {
    for (const onnx::AttributeProto &attr : node.attribute())
      if (attr.name() == name)
        return &attr;
    return nullptr;
  };
  auto graphAttr = [&](llvm::StringRef name) -> const onnx::GraphProto & {
    const onnx::AttributeProto *attr = findAttr(name);
    if (!attr || !attr->has_g())
      fail("the required attribute '{0}' is missing", name);
    return attr->g();
  };
  auto checkAttributes = [&](std::initializer_list<llvm::StringRef> known) {
    for (const onnx::AttributeProto &attr : node.attribute())
      if (!llvm::is_contained(known, attr.name()))
        fail("unsupported attribute '{0}'", attr.name());
  };
  auto optionalInput = [&](int i) {
    return i < node.input_size() && !node.input(i).empty()
               ? lookupValue(node.input(i))
               : getNone();
  };
  SmallVector<std::string> resultNames(node.output().begin(),
                                       node.output().end());
  SmallVector<std::unique_ptr<Region>> regions;
  NamedAttrList attributes;
  auto scalarType = [&](Type element) {
    return RankedTensorType::get({}, element);
  };

  if (op == "If") {
    checkAttributes({"then_branch", "else_branch"});
    if (node.input_size() != 1 || node.input(0).empty())
      fail("If takes one input (the condition), the node has {0}",
           node.input_size());
    Value cond = lookupValue(node.input(0));
    for (llvm::StringRef branch : {"then_branch", "else_branch"}) {
      regions.push_back(std::make_unique<Region>());
      importSubgraph(node, displayName, graphAttr(branch), branch,
                     *regions.back(), {});
    }
    createRegionOp(IfOp::getOperationName(), cond, attributes, regions, loc,
                   resultNames);
    return;
  }

  if (op == "Loop") {
    checkAttributes({"body"});
    SmallVector<Value> operands = {optionalInput(0), optionalInput(1)};
    SmallVector<Type> carried;
    // Loop-carried sequences (a list the body appends to, as exporters
    // write `outs.append(x)`): their elements become scan outputs, after
    // the node's own.
    SmallVector<int> sequenceInputs;
    for (int i = 2; i < node.input_size(); ++i) {
      if (node.input(i).empty())
        fail("input {0} is empty: the loop-carried values cannot be omitted",
             i);
      if (const SequenceValue *sequence = lookupSequence(node.input(i))) {
        if (sequence->kind != SequenceValue::List ||
            !sequence->elements.empty())
          fail("the loop-carried sequence '{0}' must start empty "
               "(SequenceEmpty): not supported yet otherwise",
               node.input(i));
        sequenceInputs.push_back(i);
        continue;
      }
      operands.push_back(lookupValue(node.input(i)));
      carried.push_back(operands.back().getType());
    }
    regions.push_back(std::make_unique<Region>());
    importLoopBody(node, displayName, graphAttr("body"), *regions.back(),
                   {scalarType(builder.getI64Type()),
                    scalarType(builder.getI1Type())},
                   carried, /*firstCarriedOutput=*/1, sequenceInputs);
    // The results: the carried tensors, the scan outputs, the appended
    // elements stacked.
    int numCarried = node.input_size() - 2;
    SmallVector<std::string> names;
    for (int j = 0; j < numCarried; ++j)
      if (!llvm::is_contained(sequenceInputs, j + 2))
        names.push_back(j < node.output_size() ? node.output(j) : "");
    for (int o = numCarried; o < node.output_size(); ++o)
      names.push_back(node.output(o));
    while (!names.empty() && names.back().empty())
      names.pop_back();
    Operation *op = createRegionOp(LoopOp::getOperationName(), operands,
                                   attributes, regions, loc, names);
    unsigned first = op->getNumResults() - sequenceInputs.size();
    for (auto [k, input] : llvm::enumerate(sequenceInputs)) {
      int output = input - 2;
      if (output >= node.output_size() || node.output(output).empty())
        continue;
      SequenceValue stacked;
      stacked.kind = SequenceValue::Slices;
      stacked.tensor = op->getResult(first + k);
      defineSequence(node.output(output), stacked);
    }
    return;
  }

  // Scan.
  checkAttributes({"body", "num_scan_inputs", "scan_input_axes",
                   "scan_input_directions", "scan_output_axes",
                   "scan_output_directions"});
  if (currentOpset < 9)
    fail("not supported: Scan before opset 9 (with a batch dim and "
         "sequence_lens); libonnx could not convert the model to a newer "
         "opset");
  const onnx::AttributeProto *numScanInputs = findAttr("num_scan_inputs");
  if (!numScanInputs)
    fail("the required attribute 'num_scan_inputs' is missing");
  for (const onnx::AttributeProto &attr : node.attribute())
    if (attr.name() != "body")
      attributes.set(attr.name(), convertAttribute(attr, context));
  int64_t numScan = numScanInputs->i();
  if (numScan < 1 || numScan > node.input_size())
    fail("num_scan_inputs = {0}, but the node has {1} inputs", numScan,
         node.input_size());
  SmallVector<Value> operands;
  for (int i = 0; i < node.input_size(); ++i) {
    if (node.input(i).empty())
      fail("input {0} is empty: Scan's inputs cannot be omitted", i);
    operands.push_back(lookupValue(node.input(i)));
  }
  int64_t numStates = node.input_size() - numScan;
  SmallVector<Type> states, slices;
  for (int64_t i = 0; i < numStates; ++i)
    states.push_back(operands[i].getType());
  const onnx::AttributeProto *axes = findAttr("scan_input_axes");
  if (axes && axes->ints_size() != numScan)
    fail("scan_input_axes has {0} entries for {1} scan inputs",
         axes->ints_size(), numScan);
  for (int64_t i = 0; i < numScan; ++i) {
    auto type = cast<RankedTensorType>(operands[numStates + i].getType());
    int64_t axis = axes ? axes->ints(int(i)) : 0;
    if (axis < -type.getRank() || axis >= type.getRank())
      fail("scan_input_axes[{0}] = {1} is out of range for scan input '{2}' "
           "of rank {3}",
           i, axis, node.input(int(numStates + i)), type.getRank());
    SmallVector<int64_t> shape(type.getShape());
    shape.erase(shape.begin() + (axis < 0 ? axis + type.getRank() : axis));
    slices.push_back(RankedTensorType::get(shape, type.getElementType()));
  }
  regions.push_back(std::make_unique<Region>());
  importLoopBody(node, displayName, graphAttr("body"), *regions.back(), slices,
                 states, /*firstCarriedOutput=*/0);
  createRegionOp(ScanOp::getOperationName(), operands, attributes, regions,
                 loc, resultNames);
}

//===----------------------------------------------------------------------===//
// Sequences: resolved into tensor ops at import time
//===----------------------------------------------------------------------===//

const SequenceValue *GraphBuilder::lookupSequence(const std::string &name) {
  for (const llvm::StringMap<SequenceValue> &scope :
       llvm::reverse(sequenceScopes)) {
    auto it = scope.find(name);
    if (it != scope.end())
      return &it->second;
  }
  return nullptr;
}

void GraphBuilder::defineSequence(const std::string &name,
                                  SequenceValue sequence) {
  if (name.empty())
    return;
  if (scopes.back().count(name))
    fail("value '{0}' is defined more than once", name);
  if (!sequenceScopes.back().try_emplace(name, std::move(sequence)).second)
    fail("value '{0}' is defined more than once", name);
}

Value GraphBuilder::createSimpleOp(llvm::StringRef opName, ValueRange operands,
                                   NamedAttrList attributes, Location loc) {
  return createOp(opName, operands, attributes, loc, {})->getResult(0);
}

Value GraphBuilder::sequenceElement(const SequenceValue &sequence,
                                    Value position, Location loc) {
  auto axisAttr = [&](int64_t axis) {
    NamedAttrList attrs;
    attrs.set("axis", builder.getI64IntegerAttr(axis));
    return attrs;
  };
  std::optional<SmallVector<int64_t>> known = getKnownIntValues(position);
  switch (sequence.kind) {
  case SequenceValue::List: {
    int64_t n = sequence.elements.size();
    if (known && known->size() == 1 && !ShapedType::isDynamic((*known)[0])) {
      int64_t i = (*known)[0] < 0 ? (*known)[0] + n : (*known)[0];
      if (i < 0 || i >= n)
        fail("position {0} is out of range for a sequence of {1} elements",
             (*known)[0], n);
      return sequence.elements[i];
    }
    // A run-time position: the elements stacked, then a Gather.
    if (n == 0)
      fail("the sequence is empty");
    SmallVector<Value> rows;
    Value axes = createI64Constant({0}, loc);
    for (Value element : sequence.elements) {
      if (element.getType() != sequence.elements.front().getType())
        fail("a run-time position into a sequence whose elements have "
             "different types ({0} and {1}): not supported yet",
             sequence.elements.front().getType(), element.getType());
      rows.push_back(createSimpleOp(UnsqueezeOp::getOperationName(),
                                    {element, axes}, {}, loc));
    }
    Value stacked =
        rows.size() == 1
            ? rows.front()
            : createSimpleOp(ConcatOp::getOperationName(), rows, axisAttr(0),
                             loc);
    return createSimpleOp(GatherOp::getOperationName(), {stacked, position},
                          axisAttr(0), loc);
  }
  case SequenceValue::Slices: {
    Value element =
        createSimpleOp(GatherOp::getOperationName(),
                       {sequence.tensor, position}, axisAttr(sequence.axis),
                       loc);
    if (!sequence.keepdims)
      return element;
    return createSimpleOp(UnsqueezeOp::getOperationName(),
                          {element, createI64Constant({sequence.axis}, loc)},
                          {}, loc);
  }
  case SequenceValue::LoopInput:
  case SequenceValue::LoopAppended:
    break;
  }
  fail("reading the sequence a Loop builds, inside its body: not supported "
       "yet");
}

void GraphBuilder::importSequenceOp(const onnx::NodeProto &node,
                                    Location loc) {
  const std::string &op = node.op_type();
  auto intAttr = [&](llvm::StringRef name, int64_t fallback) {
    for (const onnx::AttributeProto &attr : node.attribute())
      if (attr.name() == name)
        return int64_t(attr.i());
    return fallback;
  };
  auto hasInput = [&](int i) {
    return i < node.input_size() && !node.input(i).empty();
  };
  auto sequenceInput = [&](int i) -> const SequenceValue & {
    if (!hasInput(i))
      fail("input {0} (the sequence) is missing", i);
    const SequenceValue *sequence = lookupSequence(node.input(i));
    if (!sequence)
      fail("input {0} ('{1}') is not a sequence", i, node.input(i));
    return *sequence;
  };
  auto output = [&]() -> std::string {
    if (node.output_size() != 1)
      fail("{0} has one output, this node {1}", op, node.output_size());
    return node.output(0);
  };
  auto constantPosition = [&](int i) -> std::optional<int64_t> {
    if (!hasInput(i))
      return std::nullopt;
    std::optional<SmallVector<int64_t>> known =
        getKnownIntValues(lookupValue(node.input(i)));
    if (!known || known->size() != 1 || ShapedType::isDynamic((*known)[0]))
      fail("a position known only at run time: not supported yet (Kiln "
           "resolves sequences when it compiles)");
    return (*known)[0];
  };
  auto axisAttr = [&](int64_t axis) {
    NamedAttrList attrs;
    attrs.set("axis", builder.getI64IntegerAttr(axis));
    return attrs;
  };

  if (op == "SequenceEmpty") {
    defineSequence(output(), SequenceValue());
    return;
  }
  if (op == "SequenceConstruct") {
    SequenceValue list;
    for (int i = 0; i < node.input_size(); ++i)
      list.elements.push_back(lookupValue(node.input(i)));
    defineSequence(output(), list);
    return;
  }
  if (op == "SequenceInsert") {
    const SequenceValue &sequence = sequenceInput(0);
    Value tensor = lookupValue(node.input(1));
    if (sequence.kind == SequenceValue::LoopInput && !hasInput(2)) {
      SequenceValue appended;
      appended.kind = SequenceValue::LoopAppended;
      appended.accumulator = sequence.accumulator;
      appended.tensor = tensor;
      defineSequence(output(), appended);
      return;
    }
    if (sequence.kind != SequenceValue::List)
      fail("inserting into this sequence (the slices of a tensor, or one a "
           "Loop builds) at a position: not supported yet");
    SequenceValue list = sequence;
    int64_t n = list.elements.size();
    int64_t at = constantPosition(2).value_or(n);
    if (at < 0)
      at += n;
    if (at < 0 || at > n)
      fail("position {0} is out of range for a sequence of {1} elements",
           at, n);
    list.elements.insert(list.elements.begin() + at, tensor);
    defineSequence(output(), list);
    return;
  }
  if (op == "SequenceErase") {
    const SequenceValue &sequence = sequenceInput(0);
    if (sequence.kind != SequenceValue::List)
      fail("erasing from this sequence: not supported yet");
    SequenceValue list = sequence;
    int64_t n = list.elements.size();
    int64_t at = constantPosition(1).value_or(n - 1);
    if (at < 0)
      at += n;
    if (at < 0 || at >= n)
      fail("position {0} is out of range for a sequence of {1} elements",
           at, n);
    list.elements.erase(list.elements.begin() + at);
    defineSequence(output(), list);
    return;
  }
  if (op == "SequenceAt") {
    const SequenceValue &sequence = sequenceInput(0);
    if (!hasInput(1))
      fail("the position (input 1) is missing");
    defineValue(output(),
                sequenceElement(sequence, lookupValue(node.input(1)), loc));
    return;
  }
  if (op == "SequenceLength") {
    const SequenceValue &sequence = sequenceInput(0);
    std::string name = output();
    if (sequence.kind == SequenceValue::List) {
      NamedAttrList attrs;
      attrs.set("value", DenseElementsAttr::get(
                             RankedTensorType::get({}, builder.getI64Type()),
                             int64_t(sequence.elements.size())));
      createOp(ConstantOp::getOperationName(), {}, attrs, loc, {name});
      return;
    }
    if (sequence.kind != SequenceValue::Slices)
      fail("the length of the sequence a Loop builds, inside its body: not "
           "supported yet");
    NamedAttrList attrs;
    attrs.set("start", builder.getI64IntegerAttr(sequence.axis));
    attrs.set("end", builder.getI64IntegerAttr(sequence.axis + 1));
    Value dim = createSimpleOp(ShapeOp::getOperationName(), sequence.tensor,
                               attrs, loc);
    NamedAttrList none;
    createOp(SqueezeOp::getOperationName(), {dim, createI64Constant({0}, loc)},
             none, loc, {name});
    return;
  }
  if (op == "ConcatFromSequence") {
    const SequenceValue &sequence = sequenceInput(0);
    std::string name = output();
    bool newAxis = intAttr("new_axis", 0) != 0;
    int64_t axis = intAttr("axis", 0);
    if (sequence.kind == SequenceValue::List) {
      if (sequence.elements.empty())
        fail("concatenating an empty sequence");
      SmallVector<Value> parts;
      int64_t rank =
          cast<RankedTensorType>(sequence.elements.front().getType())
              .getRank();
      int64_t at = axis < 0 ? axis + rank + (newAxis ? 1 : 0) : axis;
      for (Value element : sequence.elements)
        parts.push_back(newAxis ? createSimpleOp(UnsqueezeOp::getOperationName(),
                                                 {element,
                                                  createI64Constant({at}, loc)},
                                                 {}, loc)
                                : element);
      NamedAttrList attrs = axisAttr(at);
      createOp(ConcatOp::getOperationName(), parts, attrs, loc, {name});
      return;
    }
    if (sequence.kind != SequenceValue::Slices)
      fail("concatenating the sequence a Loop builds, inside its body: not "
           "supported yet");
    auto type = cast<RankedTensorType>(sequence.tensor.getType());
    int64_t rank = type.getRank(); // the elements': rank - 1 (keepdims: rank)
    int64_t a = sequence.axis;
    if (sequence.keepdims) {
      // Slices that keep their dim, concatenated along it: the tensor.
      int64_t at = axis < 0 ? axis + rank : axis;
      if (newAxis || at != a)
        fail("concatenating slices that keep their dim along another axis: "
             "not supported yet");
      NamedAttrList none;
      createOp(IdentityOp::getOperationName(), sequence.tensor, none, loc,
               {name});
      return;
    }
    int64_t elementRank = rank - 1;
    int64_t b = axis < 0 ? axis + elementRank + (newAxis ? 1 : 0) : axis;
    // The sequence dim `a` moves to position b (stack), or just before the
    // element's dim b, which it then merges with (concat).
    SmallVector<int64_t> perm;
    for (int64_t d = 0; d < rank; ++d)
      if (d != a)
        perm.push_back(d);
    perm.insert(perm.begin() + b, a);
    Value moved = sequence.tensor;
    if (!llvm::equal(perm, llvm::seq<int64_t>(0, rank))) {
      NamedAttrList attrs;
      attrs.set("perm", builder.getDenseI64ArrayAttr(perm));
      moved = createSimpleOp(TransposeOp::getOperationName(), moved, attrs,
                             loc);
    }
    if (newAxis) {
      NamedAttrList none;
      createOp(IdentityOp::getOperationName(), moved, none, loc, {name});
      return;
    }
    auto movedType = cast<RankedTensorType>(moved.getType());
    SmallVector<int64_t> shape;
    for (int64_t d = 0; d < rank; ++d) {
      if (d == b + 1)
        continue;
      if (d == b) {
        shape.push_back(-1);
        continue;
      }
      if (d < b) {
        shape.push_back(0); // the same dim of the input
        continue;
      }
      if (movedType.isDynamicDim(d))
        fail("concatenating a Loop's elements along axis {0}: their dims "
             "after it must be static",
             axis);
      shape.push_back(movedType.getDimSize(d));
    }
    NamedAttrList none;
    createOp(ReshapeOp::getOperationName(),
             {moved, createI64Constant(shape, loc)}, none, loc, {name});
    return;
  }
  if (op == "SplitToSequence") {
    Value x = lookupValue(node.input(0));
    auto type = cast<RankedTensorType>(x.getType());
    int64_t axis = intAttr("axis", 0);
    if (axis < -type.getRank() || axis >= type.getRank())
      fail("axis {0} is out of range for rank {1}", axis, type.getRank());
    if (axis < 0)
      axis += type.getRank();
    bool keepdims = intAttr("keepdims", 1) != 0;
    std::optional<SmallVector<int64_t>> split;
    if (hasInput(1)) {
      Value splitValue = lookupValue(node.input(1));
      split = getKnownIntValues(splitValue);
      if (!split || llvm::any_of(*split, ShapedType::isDynamic))
        fail("split sizes known only at run time: not supported yet");
      // A scalar split of 1: chunks of one, keepdims honoured (as ONNX
      // Runtime does).
      if (cast<RankedTensorType>(splitValue.getType()).getRank() == 0 &&
          (*split)[0] == 1)
        split.reset();
      else if (cast<RankedTensorType>(splitValue.getType()).getRank() == 0) {
        int64_t size = (*split)[0];
        if (type.isDynamicDim(axis) || size <= 0)
          fail("splitting a dynamic dim into chunks of {0}: not supported "
               "yet",
               size);
        SmallVector<int64_t> sizes;
        for (int64_t left = type.getDimSize(axis); left > 0; left -= size)
          sizes.push_back(std::min(left, size));
        split = sizes;
      }
    }
    if (!split) {
      SequenceValue slices;
      slices.kind = SequenceValue::Slices;
      slices.tensor = x;
      slices.axis = axis;
      slices.keepdims = keepdims;
      defineSequence(output(), slices);
      return;
    }
    // Given sizes: the chunks (each keeps the dim).
    SequenceValue list;
    int64_t start = 0;
    for (int64_t size : *split) {
      Value starts = createI64Constant({start}, loc);
      Value ends = createI64Constant({start + size}, loc);
      Value axes = createI64Constant({axis}, loc);
      list.elements.push_back(createSimpleOp(
          SliceOp::getOperationName(), {x, starts, ends, axes, getNone()}, {},
          loc));
      start += size;
    }
    defineSequence(output(), list);
    return;
  }
  fail("not supported yet: {0}", op);
}

namespace {
/// How an elementwise op's operands relate to its result shape.
enum class ElementwiseShape {
  SameAsOperand0, // unary ops, Cast, Clip, CastLike: operand 0's shape
  Broadcast,      // multidirectional broadcasting of every operand
};
} // namespace

static std::optional<ElementwiseShape> getElementwiseShape(Operation &op) {
  static const llvm::StringMap<ElementwiseShape> table = [] {
    llvm::StringMap<ElementwiseShape> t;
#define KILN_ONNX_OP(OnnxName, CppClass, NumOperands)                          \
  t[::kiln::CppClass::getOperationName()] =                                    \
      (NumOperands == 1 || llvm::StringRef(#OnnxName) == "Clip" ||             \
       llvm::StringRef(#OnnxName) == "CastLike")                               \
          ? ElementwiseShape::SameAsOperand0                                   \
          : ElementwiseShape::Broadcast;
#include "kiln/Dialect/KilnElementwiseOps.def"
#undef KILN_ONNX_OP
    return t;
  }();
  auto it = table.find(op.getName().getStringRef());
  if (it == table.end())
    return std::nullopt;
  return it->second;
}

void GraphBuilder::refineRangeLengths() {
  // A Range whose limit is a run-time value has a `?` length, and so has
  // what is computed from it elementwise; when one of those values has a
  // static size (a declared graph output, after a Cast), that is the
  // Range's length. Each such length is a symbol carried through the
  // elementwise ops; a same-shape op whose result is static gives its
  // value. (HammingWindow & co. expanded by their exporter.)
  Block &block = func.getBody().front();
  llvm::DenseMap<Value, SmallVector<int>> symbols;
  int numSymbols = 0;
  for (Operation &op : block) {
    if (op.getNumResults() != 1)
      continue;
    Value result = op.getResult(0);
    auto type = dyn_cast<RankedTensorType>(result.getType());
    if (!type || type.hasStaticShape())
      continue;
    if (isa<RangeOp>(op)) {
      symbols[result] = {numSymbols++};
      continue;
    }
    std::optional<ElementwiseShape> rule = getElementwiseShape(op);
    if (!rule)
      continue;
    unsigned numOperands =
        *rule == ElementwiseShape::SameAsOperand0 ? 1 : op.getNumOperands();
    SmallVector<int> dims(type.getRank(), -1);
    bool any = false;
    for (int64_t d = 0; d < type.getRank(); ++d) {
      if (!type.isDynamicDim(d))
        continue;
      int symbol = -1;
      bool known = true;
      for (unsigned i = 0; i < numOperands && known; ++i) {
        Value operand = op.getOperand(i);
        auto operandType = dyn_cast<RankedTensorType>(operand.getType());
        if (!operandType) {
          known = false;
          break;
        }
        int64_t od = d - (type.getRank() - operandType.getRank());
        if (od < 0)
          continue;
        if (!operandType.isDynamicDim(od)) {
          // A broadcast 1 says nothing; another size would be the result's.
          known = *rule == ElementwiseShape::Broadcast &&
                  operandType.getDimSize(od) == 1;
          continue;
        }
        auto it = symbols.find(operand);
        int s = it == symbols.end() ? -1 : it->second[od];
        if (s < 0 || (symbol >= 0 && s != symbol))
          known = false;
        symbol = s;
      }
      if (known && symbol >= 0) {
        dims[d] = symbol;
        any = true;
      }
    }
    if (any)
      symbols[result] = std::move(dims);
  }
  if (numSymbols == 0)
    return;

  // Values from same-shape ops with a static result dim.
  constexpr int64_t kConflict = -2;
  SmallVector<int64_t> sizes(numSymbols, ShapedType::kDynamic);
  for (Operation &op : block) {
    std::optional<ElementwiseShape> rule = getElementwiseShape(op);
    if (!rule || *rule != ElementwiseShape::SameAsOperand0 ||
        op.getNumResults() != 1 || op.getNumOperands() == 0)
      continue;
    auto it = symbols.find(op.getOperand(0));
    auto type = dyn_cast<RankedTensorType>(op.getResult(0).getType());
    if (it == symbols.end() || !type ||
        type.getRank() != int64_t(it->second.size()))
      continue;
    for (auto [d, symbol] : llvm::enumerate(it->second)) {
      if (symbol < 0 || type.isDynamicDim(d))
        continue;
      int64_t &size = sizes[symbol];
      if (ShapedType::isDynamic(size))
        size = type.getDimSize(d);
      else if (size != type.getDimSize(d))
        size = kConflict;
    }
  }

  SmallVector<std::pair<Value, Type>> changes;
  for (auto &[value, dims] : symbols) {
    auto type = cast<RankedTensorType>(value.getType());
    SmallVector<int64_t> shape(type.getShape());
    bool changed = false;
    for (auto [d, symbol] : llvm::enumerate(dims))
      if (symbol >= 0 && sizes[symbol] >= 0) {
        shape[d] = sizes[symbol];
        changed = true;
      }
    if (!changed)
      continue;
    changes.emplace_back(value, type);
    value.setType(RankedTensorType::get(shape, type.getElementType(),
                                        type.getEncoding()));
  }
  if (changes.empty())
    return;
  // Only a refinement every op accepts is kept.
  FunctionType oldFunctionType = func.getFunctionType();
  func.setType(builder.getFunctionType(
      oldFunctionType.getInputs(),
      block.getTerminator()->getOperandTypes()));
  DiagnosticCapture capture(context);
  if (failed(mlir::verify(func))) {
    for (auto &[value, type] : changes)
      value.setType(type);
    func.setType(oldFunctionType);
  }
}

void GraphBuilder::verifyModule(ModuleOp module) {
  DiagnosticCapture capture(context);
  if (succeeded(mlir::verify(module)))
    return;
  std::string where;
  if (capture.location)
    if (auto nameLoc = dyn_cast<NameLoc>(*capture.location)) {
      std::string name = nameLoc.getName().str();
      auto it = opTypeOfNode.find(name);
      where = it == opTypeOfNode.end()
                  ? "value '" + name + "': "
                  : "node '" + name + "' (" + it->second + "): ";
    }
  fail("{0}{1}", where,
       capture.message.empty() ? "the module does not verify" : capture.message);
}

OwningOpRef<ModuleOp> GraphBuilder::build() {
  OwningOpRef<ModuleOp> module = ModuleOp::create(fileLoc);
  const onnx::ModelProto &model = loaded.model;
  module->getOperation()->setAttr("kiln.source", builder.getStringAttr(path));
  module->getOperation()->setAttr("kiln.ir_version",
                                  builder.getI64IntegerAttr(model.ir_version()));
  module->getOperation()->setAttr("kiln.opset",
                                  builder.getI64IntegerAttr(loaded.opset));
  std::string producer = model.producer_name();
  if (!model.producer_version().empty())
    producer += (producer.empty() ? "" : " ") + model.producer_version();
  module->getOperation()->setAttr("kiln.producer",
                                  builder.getStringAttr(producer));
  setShardingAnnotations(*module, loaded.sharding);

  llvm::StringSet<> initializerNames;
  for (const onnx::TensorProto &tensor : graph.initializer())
    initializerNames.insert(tensor.name());
  SmallVector<Type> argTypes;
  SmallVector<std::string> argNames;
  for (const onnx::ValueInfoProto &input : graph.input()) {
    if (initializerNames.contains(input.name()))
      continue; // IR < 4: initializers are listed as inputs too.
    try {
      argTypes.push_back(convertTypeProto(input.type(), context, input.name(),
                                          /*needRank=*/true));
    } catch (const ImportError &e) {
      fail("graph input '{0}': {1}", input.name(), e.what());
    }
    argNames.push_back(input.name());
  }

  scopes.emplace_back();
  sequenceScopes.emplace_back();
  builder.setInsertionPointToEnd(module->getBody());
  func = func::FuncOp::create(builder, fileLoc, "main",
                              builder.getFunctionType(argTypes, {}));
  Block *entry = func.addEntryBlock();
  builder.setInsertionPointToEnd(entry);
  for (auto [i, name] : llvm::enumerate(argNames)) {
    defineValue(name, entry->getArgument(i));
    entry->getArgument(i).setLoc(
        NameLoc::get(builder.getStringAttr(name), fileLoc));
    func.setArgAttr(i, "kiln.name", builder.getStringAttr(name));
  }
  // The names of the inputs' dynamic dims (ONNX dim_param; "" for a static
  // or unnamed dim): symbolic shape analysis binds one symbol per name, so
  // two inputs naming the same dim must agree in size at run time.
  unsigned argIndex = 0;
  for (const onnx::ValueInfoProto &input : graph.input()) {
    if (initializerNames.contains(input.name()))
      continue;
    auto type = dyn_cast<RankedTensorType>(argTypes[argIndex]);
    if (type && !type.hasStaticShape() && input.type().has_tensor_type() &&
        input.type().tensor_type().has_shape()) {
      const auto &shape = input.type().tensor_type().shape();
      SmallVector<Attribute> names;
      for (int d = 0; d < shape.dim_size() && d < type.getRank(); ++d)
        names.push_back(builder.getStringAttr(
            type.isDynamicDim(d) ? shape.dim(d).dim_param() : ""));
      func.setArgAttr(argIndex, "kiln.dims", builder.getArrayAttr(names));
    }
    ++argIndex;
  }

  importInitializers();
  currentOpset = loaded.opset;
  for (int i = 0; i < graph.node_size(); ++i) {
    const onnx::NodeProto &node = graph.node(i);
    try {
      importNode(node, nodeDisplayName(node, i));
    } catch (const ImportError &e) {
      fail("{0}: {1}", describeNode(node, i), e.what());
    } catch (const std::exception &e) {
      fail("{0}: {1}", describeNode(node, i), e.what());
    }
  }

  SmallVector<Value> results;
  for (const onnx::ValueInfoProto &output : graph.output()) {
    auto it = scopes.front().find(output.name());
    if (it == scopes.front().end() && lookupSequence(output.name()))
      fail("graph output '{0}' is a sequence: not supported yet (an "
           "artifact's outputs are tensors)",
           output.name());
    if (it == scopes.front().end())
      fail("graph output '{0}' is not produced by any node", output.name());
    results.push_back(it->second);
  }
  func::ReturnOp::create(builder, fileLoc, results);
  func.setType(builder.getFunctionType(argTypes, TypeRange(ValueRange(results))));
  for (auto [i, output] : llvm::enumerate(graph.output()))
    func.setResultAttr(i, "kiln.name", builder.getStringAttr(output.name()));

  refineRangeLengths();
  verifyModule(*module);
  return module;
}

OwningOpRef<ModuleOp> buildModule(LoadedModel &model, MLIRContext *context,
                                  llvm::StringRef path,
                                  const ImportOptions &options) {
  return GraphBuilder(model, context, path, options).build();
}

} // namespace kiln::import
