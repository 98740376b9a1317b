//===- ModelLoader.cpp - Parse, check, convert and infer an ONNX model ----===//
//
// Everything the importer asks of libonnx: parsing (with a raised protobuf
// size limit), external data, the checker, the version converter and shape
// inference. libonnx 1.12 knows IR ≤ 8 and opset ≤ 17; for newer models it
// only parses, and Kiln's verifiers and inference are the source of truth.
// Its checker, converter and inference run in a child process
// (Isolated.cpp): they can crash on malformed models.
//
//===----------------------------------------------------------------------===//

#include "ImporterInternal.h"

#include "onnx/checker.h"
#include "onnx/defs/schema.h"
#include "onnx/shape_inference/implementation.h"
#include "onnx/version_converter/convert.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <climits>
#include <set>

namespace kiln::import {

bool isDefaultDomain(const std::string &domain) {
  return domain.empty() || domain == "ai.onnx";
}

int64_t getDefaultOpset(const onnx::ModelProto &model) {
  for (const onnx::OperatorSetIdProto &opset : model.opset_import())
    if (isDefaultDomain(opset.domain()))
      return opset.version();
  return 0;
}

std::string nodeDisplayName(const onnx::NodeProto &node, int index) {
  if (!node.name().empty())
    return node.name();
  return node.op_type() + "_" + std::to_string(index);
}

std::string describeNode(const onnx::NodeProto &node, int index) {
  return "node '" + nodeDisplayName(node, index) + "' (" + node.op_type() + ")";
}

/// libonnx's multi-line messages ("...\n\n==> Context: ...") on one line.
static std::string oneLine(std::string message) {
  for (char &c : message)
    if (c == '\n')
      c = ' ';
  std::string out;
  for (char c : message)
    if (!(c == ' ' && !out.empty() && out.back() == ' '))
      out.push_back(c);
  while (!out.empty() && out.back() == ' ')
    out.pop_back();
  return out;
}

/// Parses a serialized model of up to 2 GiB (protobuf's default limit is
/// lower).
static bool parseLarge(llvm::StringRef data, onnx::ModelProto &model) {
  if (data.size() > size_t(INT_MAX))
    return false;
  google::protobuf::io::ArrayInputStream input(data.data(), int(data.size()));
  google::protobuf::io::CodedInputStream coded(&input);
  coded.SetTotalBytesLimit(INT_MAX);
  return model.ParseFromCodedStream(&coded) && coded.ConsumedEntireMessage();
}

static onnx::ModelProto parseModel(llvm::StringRef data) {
  if (data.size() > size_t(INT_MAX))
    fail("the model is {0} bytes; protobuf parses at most 2 GiB (keep the "
         "weights as external data)",
         data.size());
  onnx::ModelProto model;
  if (!parseLarge(data, model))
    fail("not a valid ONNX model: protobuf cannot parse it (not an ONNX file, "
         "or truncated)");
  if (model.ir_version() <= 0 || !model.has_graph())
    fail("not a valid ONNX model: it has no {0}",
         model.ir_version() <= 0 ? "ir_version" : "graph");
  return model;
}

/// Reads the external data of `tensor` (location/offset/length relative to
/// the model's folder) into raw_data.
static void inlineExternalData(onnx::TensorProto &tensor,
                               llvm::StringRef modelDir, llvm::StringRef what) {
  if (tensor.data_location() != onnx::TensorProto::EXTERNAL)
    return;
  std::string location;
  int64_t offset = 0, length = -1;
  for (const onnx::StringStringEntryProto &entry : tensor.external_data()) {
    try {
      if (entry.key() == "location")
        location = entry.value();
      else if (entry.key() == "offset")
        offset = std::stoll(entry.value());
      else if (entry.key() == "length")
        length = std::stoll(entry.value());
    } catch (const std::exception &) {
      fail("initializer '{0}': bad external data {1} '{2}'", what, entry.key(),
           entry.value());
    }
  }
  if (location.empty())
    fail("initializer '{0}': external data without a location", what);
  if (llvm::sys::path::is_absolute(location) ||
      llvm::StringRef(location).contains(".."))
    fail("initializer '{0}': external data location '{1}' must be a relative "
         "path inside the model's folder",
         what, location);
  if (modelDir.empty())
    fail("initializer '{0}': external data '{1}', but the model was given as "
         "bytes without a folder to read it from",
         what, location);
  llvm::SmallString<256> file(modelDir);
  llvm::sys::path::append(file, location);
  auto buffer = llvm::MemoryBuffer::getFile(file, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    fail("initializer '{0}': cannot open external data file '{1}': {2}", what,
         file, buffer.getError().message());
  llvm::StringRef data = (*buffer)->getBuffer();
  if (offset < 0 || uint64_t(offset) > data.size())
    fail("initializer '{0}': external data offset {1} is past the end of '{2}' "
         "({3} bytes)",
         what, offset, file, data.size());
  if (length < 0)
    length = int64_t(data.size()) - offset;
  if (uint64_t(offset + length) > data.size())
    fail("initializer '{0}': external data file '{1}' is too short: {2} bytes "
         "at offset {3} requested, {4} bytes in the file",
         what, file, length, offset, data.size());
  tensor.set_raw_data(data.substr(offset, length).str());
  tensor.clear_external_data();
  tensor.set_data_location(onnx::TensorProto::DEFAULT);
}

static void inlineAllExternalData(onnx::GraphProto &graph,
                                  llvm::StringRef dir) {
  for (onnx::TensorProto &tensor : *graph.mutable_initializer())
    inlineExternalData(tensor, dir, tensor.name());
  for (onnx::NodeProto &node : *graph.mutable_node())
    for (onnx::AttributeProto &attr : *node.mutable_attribute()) {
      if (attr.has_t())
        inlineExternalData(*attr.mutable_t(), dir,
                           node.output_size() ? node.output(0) : attr.name());
      // The subgraphs of If, Loop and Scan.
      if (attr.has_g())
        inlineAllExternalData(*attr.mutable_g(), dir);
      for (onnx::GraphProto &subgraph : *attr.mutable_graphs())
        inlineAllExternalData(subgraph, dir);
    }
}

static void inlineAllExternalData(onnx::ModelProto &model,
                                  llvm::StringRef dir) {
  inlineAllExternalData(*model.mutable_graph(), dir);
}

/// True when libonnx 1.12 has schemas for every opset the model imports and
/// its checker accepts the IR version.
static bool isKnownToLibOnnx(const onnx::ModelProto &model) {
  if (model.ir_version() > kLibOnnxMaxIrVersion)
    return false;
  const auto &ranges = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  for (const onnx::OperatorSetIdProto &opset : model.opset_import()) {
    std::string domain = isDefaultDomain(opset.domain()) ? "" : opset.domain();
    auto it = ranges.find(domain);
    if (it == ranges.end() || opset.version() > it->second.second)
      return false;
  }
  return getDefaultOpset(model) != 0;
}

bool isControlFlowOp(llvm::StringRef op) {
  return op == "If" || op == "Loop" || op == "Scan";
}

bool isSequenceOp(llvm::StringRef op) {
  return op.starts_with("Sequence") || op.starts_with("Optional") ||
         op == "SplitToSequence" || op == "ConcatFromSequence";
}

/// What checkSupportedConstructs says of a value of a sequence or optional
/// type, or "". A subgraph's sequences (a Loop's carried list) are the
/// graph builder's to judge.
static const char *unsupportedValueKind(const onnx::TypeProto &type,
                                        bool subgraph = false) {
  if (type.has_sequence_type() && !subgraph)
    return "sequence types";
  if (type.has_optional_type())
    return "optional types";
  return "";
}

/// The nodes of `graph` (the model's graph, or a subgraph of an If, Loop or
/// Scan; `context` then names where it is: "node 'l' (Loop): in its body: ").
static void checkGraphConstructs(const onnx::GraphProto &graph,
                                 const std::string &context, int64_t opset,
                                 int depth) {
  if (depth > kMaxSubgraphDepth)
    fail("{0}subgraphs nest more than {1} deep", context, kMaxSubgraphDepth);
  for (int i = 0; i < graph.node_size(); ++i) {
    const onnx::NodeProto &node = graph.node(i);
    std::string where = context + describeNode(node, i);
    if (!isDefaultDomain(node.domain()))
      fail("{0}: unsupported domain '{1}' (op '{2}')", where, node.domain(),
           node.op_type());
    // Sequence ops are resolved by the graph builder (SequenceValue);
    // optional values and SequenceMap are not.
    llvm::StringRef opType = node.op_type();
    if (opType.starts_with("Optional"))
      fail("{0}: not supported yet: optional types ({1})", where, opType);
    if (opType == "SequenceMap")
      fail("{0}: not supported yet: SequenceMap (a subgraph run per "
           "sequence element)",
           where);
    bool controlFlow = isControlFlowOp(node.op_type());
    // libonnx's Scan 8 -> 9 adapter drops the batch dim from the graph's
    // inputs: the converted model would take other inputs than the model.
    if (node.op_type() == "Scan" && opset < 9)
      fail("{0}: not supported: Scan before opset 9 (a batch dim and "
           "sequence_lens)",
           where);
    for (const onnx::AttributeProto &attr : node.attribute()) {
      bool isGraph = attr.type() == onnx::AttributeProto::GRAPH ||
                     attr.type() == onnx::AttributeProto::GRAPHS ||
                     attr.has_g() || attr.graphs_size();
      if (!isGraph)
        continue;
      if (!controlFlow || attr.graphs_size() ||
          attr.type() == onnx::AttributeProto::GRAPHS)
        fail("{0}: unsupported: graph attribute '{1}' of {2}", where,
             attr.name(), node.op_type());
      const onnx::GraphProto &subgraph = attr.g();
      std::string inner = where + ": in its " + attr.name() + ": ";
      for (const auto *infos : {&subgraph.input(), &subgraph.output()})
        for (const onnx::ValueInfoProto &info : *infos)
          if (const char *kind =
                  unsupportedValueKind(info.type(), /*subgraph=*/true);
              *kind)
            fail("{0}value '{1}': not supported yet: {2}", inner, info.name(),
                 kind);
      for (const onnx::SparseTensorProto &sparse :
           subgraph.sparse_initializer())
        fail("{0}initializer '{1}': unsupported: sparse initializers", inner,
             sparse.values().name());
      checkGraphConstructs(subgraph, inner, opset, depth + 1);
    }
    // An op neither Kiln nor libonnx knows cannot become one through
    // version conversion: say so before the checker's longer message.
    if (node.op_type() != "Constant" && !controlFlow &&
        !isKilnOp(node.op_type()) &&
        !onnx::OpSchemaRegistry::Schema(node.op_type(), ""))
      fail("{0}: unsupported op type '{1}'", where, node.op_type());
  }
}

void checkSupportedConstructs(const onnx::ModelProto &model) {
  const onnx::GraphProto &graph = model.graph();
  for (const onnx::ValueInfoProto &input : graph.input())
    if (const char *kind = unsupportedValueKind(input.type()); *kind)
      fail("graph input '{0}': not supported yet: {1}", input.name(), kind);
  for (const onnx::SparseTensorProto &sparse : graph.sparse_initializer())
    fail("initializer '{0}': unsupported: sparse initializers",
         sparse.values().name());
  checkGraphConstructs(graph, "", getDefaultOpset(model), 0);
}

bool hasSubgraphs(const onnx::GraphProto &graph) {
  for (const onnx::NodeProto &node : graph.node())
    for (const onnx::AttributeProto &attr : node.attribute())
      if (attr.has_g() || attr.graphs_size())
        return true;
  return false;
}

/// Moves the tensor types of graph outputs and value_info into `types` (so
/// that libonnx's inference cannot fail merging them; Kiln compares them).
static void takeDeclaredTypes(onnx::GraphProto &graph,
                              std::map<std::string, onnx::TypeProto> &types) {
  for (const onnx::ValueInfoProto &info : graph.value_info())
    if (info.type().has_tensor_type())
      types[info.name()] = info.type();
  for (onnx::ValueInfoProto &info : *graph.mutable_output()) {
    if (info.type().has_tensor_type())
      types[info.name()] = info.type();
    info.clear_type();
  }
  graph.clear_value_info();
}

static void collectTypes(const onnx::GraphProto &graph,
                         std::map<std::string, onnx::TypeProto> &types) {
  for (const onnx::ValueInfoProto &info : graph.value_info())
    if (info.type().has_tensor_type())
      types[info.name()] = info.type();
  for (const onnx::ValueInfoProto &info : graph.output())
    if (info.type().has_tensor_type())
      types[info.name()] = info.type();
}

/// libonnx's shape inference (data propagation on, non-strict). False when
/// it throws: it is a refinement only, Kiln's own inference reports what is
/// wrong with the model.
/// Runs in a child process (runIsolated): what it adds to the model comes
/// back as the graph's value_info and output types only.
/// With `withSubgraphs`, the subgraphs of If/Loop/Scan nodes come back
/// too, with what libonnx inferred inside them as their value_info (the
/// graph builder refines a subgraph's values with it).
static bool inferShapes(onnx::ModelProto &model, bool withSubgraphs = false) {
  withSubgraphs = withSubgraphs && hasSubgraphs(model.graph());
  IsolatedOutcome outcome = runIsolated([&] {
    onnx::ShapeInferenceOptions options(/*check_type=*/false,
                                        /*strict_mode=*/0, /*data_prop=*/true);
    onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(),
                                       options);
    onnx::GraphProto types;
    *types.mutable_value_info() = model.graph().value_info();
    *types.mutable_output() = model.graph().output();
    if (withSubgraphs)
      for (const onnx::NodeProto &node : model.graph().node()) {
        onnx::NodeProto *copy = types.add_node();
        for (const onnx::AttributeProto &attr : node.attribute())
          if (attr.has_g())
            *copy->add_attribute() = attr;
      }
    return types.SerializeAsString();
  });
  onnx::GraphProto types;
  if (outcome.status != IsolatedOutcome::Ok ||
      !types.ParseFromString(outcome.result) ||
      types.output_size() != model.graph().output_size())
    return false;
  onnx::GraphProto &graph = *model.mutable_graph();
  *graph.mutable_value_info() = std::move(*types.mutable_value_info());
  for (int i = 0; i < graph.output_size(); ++i)
    *graph.mutable_output(i)->mutable_type() = types.output(i).type();
  if (withSubgraphs && types.node_size() == graph.node_size())
    for (int i = 0; i < graph.node_size(); ++i)
      for (const onnx::AttributeProto &inferred : types.node(i).attribute())
        for (onnx::AttributeProto &attr :
             *graph.mutable_node(i)->mutable_attribute())
          if (attr.name() == inferred.name() && attr.has_g())
            *attr.mutable_g() = inferred.g();
  return true;
}

/// Replaces the declared dims of the inputs named in `shapes`.
static void applyInputShapes(onnx::GraphProto &graph,
                             const std::map<std::string, std::vector<int64_t>> &shapes) {
  std::set<std::string> initializers;
  for (const onnx::TensorProto &init : graph.initializer())
    initializers.insert(init.name());
  std::set<std::string> applied;
  for (onnx::ValueInfoProto &input : *graph.mutable_input()) {
    auto it = shapes.find(input.name());
    if (it == shapes.end() || initializers.count(input.name()))
      continue;
    const std::vector<int64_t> &dims = it->second;
    if (!input.type().has_tensor_type())
      fail("--input-shapes: input '{0}' is not a tensor", input.name());
    onnx::TypeProto_Tensor *tensor = input.mutable_type()->mutable_tensor_type();
    if (tensor->has_shape() && tensor->shape().dim_size() != int(dims.size()))
      fail("--input-shapes: input '{0}' has rank {1}, the given shape rank {2}",
           input.name(), tensor->shape().dim_size(), dims.size());
    for (size_t i = 0; i < dims.size(); ++i) {
      if (dims[i] <= 0)
        fail("--input-shapes: input '{0}': dim {1} must be positive, got {2}",
             input.name(), i, dims[i]);
      if (tensor->has_shape() && tensor->shape().dim(int(i)).has_dim_value() &&
          tensor->shape().dim(int(i)).dim_value() != dims[i])
        fail("--input-shapes: input '{0}': dim {1} is {2} in the model, not {3}",
             input.name(), i, tensor->shape().dim(int(i)).dim_value(), dims[i]);
    }
    onnx::TensorShapeProto *shape = tensor->mutable_shape();
    shape->clear_dim();
    for (int64_t d : dims)
      shape->add_dim()->set_dim_value(d);
    applied.insert(input.name());
  }
  for (const auto &entry : shapes)
    if (!applied.count(entry.first))
      fail("--input-shapes: the model has no graph input named '{0}'",
           entry.first);
}

LoadedModel loadModel(llvm::StringRef path, const ImportOptions &options) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    fail("cannot open the model: {0}", buffer.getError().message());
  llvm::SmallString<256> dir(path);
  llvm::sys::path::remove_filename(dir);
  if (dir.empty())
    dir = ".";
  return loadModelBytes((*buffer)->getBuffer(), dir, options);
}

LoadedModel loadModelBytes(llvm::StringRef bytes, llvm::StringRef baseDir,
                           const ImportOptions &options) {
  LoadedModel loaded;
  onnx::ModelProto &model = loaded.model;
  model = parseModel(bytes);
  int64_t opset = getDefaultOpset(model);
  if (opset == 0)
    fail("the model imports no default-domain (ai.onnx) opset");
  loaded.modelOpset = opset;
  loaded.sharding = readShardingAnnotations(model);
  inlineAllExternalData(model, baseDir);
  checkSupportedConstructs(model);
  if (!options.inputShapes.empty())
    applyInputShapes(*model.mutable_graph(), options.inputShapes);

  loaded.knownToLibOnnx = isKnownToLibOnnx(model);
  if (loaded.knownToLibOnnx && options.runChecker) {
    IsolatedOutcome checked = runIsolated([&] {
      onnx::checker::check_model(model);
      return std::string();
    });
    if (checked.status == IsolatedOutcome::Threw)
      fail("libonnx's checker rejects the model: {0}",
           oneLine(checked.message));
    if (checked.status == IsolatedOutcome::Crashed)
      fail("libonnx's checker {0} on this model: it is malformed in a way "
           "Kiln does not diagnose itself",
           checked.message);
  }

  takeDeclaredTypes(*model.mutable_graph(), loaded.declaredTypes);
  if (loaded.knownToLibOnnx && opset < kLibOnnxMaxOpset &&
      (options.convertVersion || opset < 7)) {
    // Some adapters (Softmax 12 → 13, ...) need the shapes of intermediate
    // values.
    inferShapes(model);
    IsolatedOutcome converted = runIsolated([&] {
      return onnx::version_conversion::ConvertVersion(model,
                                                      int(kLibOnnxMaxOpset))
          .SerializeAsString();
    });
    std::string why = oneLine(converted.message);
    if (converted.status == IsolatedOutcome::Crashed)
      why = "libonnx's version converter " + why;
    if (converted.status == IsolatedOutcome::Ok) {
      onnx::ModelProto result;
      if (parseLarge(converted.result, result)) {
        model = std::move(result);
        opset = kLibOnnxMaxOpset;
      } else {
        converted.status = IsolatedOutcome::Crashed;
        why = "libonnx's version converter wrote a model protobuf cannot "
              "parse";
      }
    }
    if (converted.status != IsolatedOutcome::Ok) {
      if (opset < 7)
        fail("opset {0} is not supported: Kiln imports opset 7 and newer, and "
             "libonnx cannot convert this model to opset {1}: {2}",
             opset, kLibOnnxMaxOpset, why);
      // Import at the original opset: the graph builder normalizes the older
      // forms it knows.
      loaded.conversionFailure = why;
    }
    // What the first inference added is not the model's declaration.
    model.mutable_graph()->clear_value_info();
    for (onnx::ValueInfoProto &output : *model.mutable_graph()->mutable_output())
      output.clear_type();
  } else if (opset < 7) {
    fail("opset {0} is not supported: Kiln imports opset 7 and newer", opset);
  }
  loaded.opset = opset;

  if (loaded.knownToLibOnnx && inferShapes(model, /*withSubgraphs=*/true))
    collectTypes(model.graph(), loaded.onnxInferredTypes);
  return loaded;
}

} // namespace kiln::import
