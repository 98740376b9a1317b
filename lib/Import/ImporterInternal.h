//===- ImporterInternal.h - Shared pieces of the ONNX importer --*- C++ -*-===//
//
// Private to lib/Import. The importer is built with exceptions (libonnx and
// protobuf throw): every error found while importing is an ImportError thrown
// where it is detected, with the node context in its message, and
// importOnnxFile turns it (or any other exception) into one MLIR diagnostic.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_LIB_IMPORT_IMPORTERINTERNAL_H
#define KILN_LIB_IMPORT_IMPORTERINTERNAL_H

#include "kiln/Import/OnnxImporter.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FormatVariadic.h"

#include "onnx/onnx_pb.h"

#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace kiln::import {

/// An import error. The message is complete except for the file name, which
/// the boundary adds.
class ImportError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

template <typename... Ts>
[[noreturn]] void fail(const char *fmt, Ts &&...args) {
  throw ImportError(llvm::formatv(fmt, std::forward<Ts>(args)...).str());
}

/// Highest default-domain opset whose schemas libonnx 1.12 has.
constexpr int64_t kLibOnnxMaxOpset = 17;
/// Highest IR version libonnx 1.12's checker accepts.
constexpr int64_t kLibOnnxMaxIrVersion = 8;

//===--------------------------------------------------------------------===//
// Isolated.cpp
//===--------------------------------------------------------------------===//

/// How a libonnx step run by runIsolated ended.
struct IsolatedOutcome {
  enum Status { Ok, Threw, Crashed } status = Crashed;
  /// The step's result (Ok).
  std::string result;
  /// What it threw (Threw), or how the child ended (Crashed: a signal, a
  /// time-out, no result).
  std::string message;
};

/// Runs `step` in a forked child process (in this process when
/// $KILN_ONNX_IN_PROCESS is set, for debuggers): the bytes it returns, the
/// message it throws, or how the child died. `step` sees the parent's state
/// as it was at the call; what it changes stays in the child.
IsolatedOutcome runIsolated(llvm::function_ref<std::string()> step);

//===--------------------------------------------------------------------===//
// ModelLoader.cpp
//===--------------------------------------------------------------------===//

//===--------------------------------------------------------------------===//
// ShardingAnnotations.cpp
//===--------------------------------------------------------------------===//

/// How one input or output of a node is split over a configuration's
/// devices (ShardingSpecProto).
struct TensorSharding {
  std::string tensor;
  /// Which of the node's inputs (or outputs) the spec names.
  bool isInput = true;
  int index = 0;
  /// The axis split in more than one shard, as written (negative counts
  /// from the back); none: replicated on every device.
  std::optional<int64_t> axis;
  int64_t shards = 1;
  std::vector<int64_t> devices;
};

/// One NodeDeviceConfigurationProto of a node.
struct NodeDeviceConfiguration {
  std::string configuration;
  std::optional<int64_t> pipelineStage;
  std::vector<TensorSharding> tensors;
  /// For a matmul-like node whose weight (B) has a spec: "column" (split
  /// along its output columns), "row" (along the contracted dim) or
  /// "replicated".
  std::string weightRole;
};

/// One DeviceConfigurationProto of the model.
struct DeviceConfiguration {
  std::string name;
  int64_t numDevices = 0;
  std::vector<std::string> devices;
};

/// The model's IR-11 multi-device annotations (empty for most models).
struct ShardingAnnotations {
  std::vector<DeviceConfiguration> configurations;
  /// By node display name (nodeDisplayName).
  std::map<std::string, std::vector<NodeDeviceConfiguration>> nodes;
};

/// Reads ModelProto.configuration and the main graph's
/// NodeProto.device_configurations, which libonnx 1.12 keeps as unknown
/// fields; fails on a spec Kiln cannot follow (device groups, two split
/// axes, an unknown configuration, a tensor the node does not have).
ShardingAnnotations readShardingAnnotations(const onnx::ModelProto &model);
/// Records them on the module: kiln.device_configurations and
/// kiln.sharding_annotations (docs/cluster.md).
void setShardingAnnotations(mlir::ModuleOp module,
                            const ShardingAnnotations &annotations);

/// The parsed model and what the loader learnt about it.
struct LoadedModel {
  onnx::ModelProto model;
  /// Default-domain opset after version conversion.
  int64_t opset = 0;
  /// The default-domain opset the model itself imports.
  int64_t modelOpset = 0;
  /// Why libonnx's version converter failed, when it did (the model is
  /// then imported at its own opset).
  std::string conversionFailure;
  /// True when libonnx knows the IR version and every opset import.
  bool knownToLibOnnx = false;
  /// Value types the model declares (graph outputs and value_info), and the
  /// ones libonnx's shape inference found; each refines Kiln's inference.
  std::map<std::string, onnx::TypeProto> declaredTypes;
  std::map<std::string, onnx::TypeProto> onnxInferredTypes;
  /// Read before any version conversion, which drops unknown fields.
  ShardingAnnotations sharding;
};

/// Parses `path`, inlines external data, checks, converts and infers shapes.
LoadedModel loadModel(llvm::StringRef path, const ImportOptions &options);
/// The same for a serialized model in memory; external data is looked up in
/// `baseDir` (an empty one refuses external data).
LoadedModel loadModelBytes(llvm::StringRef bytes, llvm::StringRef baseDir,
                           const ImportOptions &options);

/// The default-domain opset the model imports (0 when it has none).
int64_t getDefaultOpset(const onnx::ModelProto &model);
bool isDefaultDomain(const std::string &domain);

/// Rejects what Kiln cannot import whatever the opset: other domains,
/// sequence/optional ops and types, unknown ops, graph attributes of other
/// ops than If, Loop and Scan (whose subgraphs it checks likewise).
void checkSupportedConstructs(const onnx::ModelProto &model);

/// True for the ops on sequences and optional values (SequenceAt, ...,
/// SplitToSequence, ConcatFromSequence, Optional*).
bool isSequenceOp(llvm::StringRef opType);
/// True for If, Loop and Scan (ops with subgraphs, imported as regions).
bool isControlFlowOp(llvm::StringRef opType);
/// True when a node of `graph` (not of its subgraphs) has a subgraph.
bool hasSubgraphs(const onnx::GraphProto &graph);
/// How deep subgraphs may nest (a Loop in an If in a Loop ...).
constexpr int kMaxSubgraphDepth = 32;

/// The "node 'n' (Op)" prefix of diagnostics about a node.
std::string describeNode(const onnx::NodeProto &node, int index);
/// The name diagnostics and locations use: the node name or <OpType>_<index>.
std::string nodeDisplayName(const onnx::NodeProto &node, int index);

//===--------------------------------------------------------------------===//
// GraphBuilder.cpp
//===--------------------------------------------------------------------===//

/// True when an OnnxOps.def table maps the ONNX op `onnxName` to a kiln op.
bool isKilnOp(llvm::StringRef onnxName);

/// Builds the kiln module of a loaded model.
mlir::OwningOpRef<mlir::ModuleOp> buildModule(LoadedModel &model,
                                              mlir::MLIRContext *context,
                                              llvm::StringRef path,
                                              const ImportOptions &options);

//===--------------------------------------------------------------------===//
// RecurrentOps.cpp
//===--------------------------------------------------------------------===//

/// True for RNN, GRU and LSTM, which the importer unrolls.
bool isRecurrentOp(llvm::StringRef opType);

/// What the unrolling needs to know about a recurrent node's inputs.
struct RecurrentInputs {
  /// The shape of X (empty when unranked; dynamic dims are negative).
  std::vector<int64_t> xShape;
  /// False when X is not f32: constants are then cast like X.
  bool xIsF32 = true;
  /// The values of sequence_lens when it is a constant.
  std::optional<std::vector<int64_t>> constantSequenceLens;
};

/// An RNN/GRU/LSTM node unrolled over its static sequence length into ONNX
/// ops Kiln has, as a function body whose inputs and outputs are the op's
/// formal ones (X, W, R, B, sequence_lens, initial_h[, initial_c, P] and
/// Y, Y_h[, Y_c]). Throws for forms it does not support.
onnx::FunctionProto buildRecurrentBody(const onnx::NodeProto &node,
                                       const RecurrentInputs &inputs);

//===--------------------------------------------------------------------===//
// TensorConversion.cpp
//===--------------------------------------------------------------------===//

/// The MLIR element type of an ONNX dtype; throws "unsupported dtype X for
/// '<what>'".
mlir::Type convertDataType(int32_t dtype, mlir::MLIRContext *context,
                           llvm::StringRef what);
/// The ONNX name of a dtype (FLOAT, INT64, ...).
std::string dataTypeName(int32_t dtype);

/// Tensor type of a graph input/output/value_info; throws for sequence,
/// map, optional and sparse types and for unknown ranks when `needRank`.
/// Returns null when the rank is unknown and !needRank.
mlir::RankedTensorType convertTypeProto(const onnx::TypeProto &type,
                                        mlir::MLIRContext *context,
                                        llvm::StringRef what, bool needRank);

/// A TensorProto (external data already inlined) as an elements attribute;
/// a dense_resource blob when it has at least `resourceThresholdBytes`
/// bytes of data (negative: never).
mlir::ElementsAttr convertTensor(const onnx::TensorProto &tensor,
                                 mlir::MLIRContext *context,
                                 llvm::StringRef what,
                                 int64_t resourceThresholdBytes);

//===--------------------------------------------------------------------===//
// AttributeConversion.cpp
//===--------------------------------------------------------------------===//

/// An ONNX attribute as the MLIR attribute the dialect's conventions name
/// (INT → i64, INTS → array<i64>, dtype attributes → TypeAttr, ...).
mlir::Attribute convertAttribute(const onnx::AttributeProto &attr,
                                 mlir::MLIRContext *context);

} // namespace kiln::import

#endif // KILN_LIB_IMPORT_IMPORTERINTERNAL_H
