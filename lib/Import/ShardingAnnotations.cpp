//===- ShardingAnnotations.cpp - ONNX IR 11's multi-device annotations ----===//
//
// IR version 11 (ONNX 1.18) added ModelProto.configuration (field 26: the
// model's multi-device configurations) and NodeProto.device_configurations
// (field 10: per node and configuration, how each input and output is
// sharded over the devices). libonnx 1.12's generated classes predate them;
// protobuf keeps them as unknown fields, which are decoded here from their
// wire format with onnx.proto's field numbers.
//
// What Kiln does with them (kiln-shard-tensor-parallel, docs/cluster.md):
// the sharding of a matmul's weight input says whether that matmul is
// column-parallel, row-parallel or left whole on every rank. The module
// attributes made here keep every spec as the model wrote it, plus that
// reading for the matmul-like nodes.
//
//===----------------------------------------------------------------------===//

#include "ImporterInternal.h"

#include <google/protobuf/unknown_field_set.h>

#include <memory>

namespace kiln::import {
namespace {

using google::protobuf::UnknownField;
using google::protobuf::UnknownFieldSet;

// onnx.proto (IR version 11).
constexpr int kModelConfiguration = 26;      // ModelProto
constexpr int kNodeDeviceConfigurations = 10; // NodeProto
namespace device_configuration {             // DeviceConfigurationProto
constexpr int kName = 1, kNumDevices = 2, kDevice = 3;
}
namespace node_configuration { // NodeDeviceConfigurationProto
constexpr int kConfigurationId = 1, kShardingSpec = 2, kPipelineStage = 3;
}
namespace sharding_spec { // ShardingSpecProto
constexpr int kTensorName = 1, kDevice = 2, kDeviceGroupMap = 3,
              kShardedDim = 4;
}
namespace sharded_dim { // ShardedDimProto
constexpr int kAxis = 1, kSimpleSharding = 2;
}
namespace simple_sharded_dim { // SimpleShardedDimProto
// (dim_value = 1 and dim_param = 2 name the dim's size: Kiln reads it from
// the tensor itself.)
constexpr int kNumShards = 3;
}

/// An embedded message's fields, parsed from its bytes without a schema
/// (UnknownFieldSet cannot be copied).
struct Message {
  std::unique_ptr<UnknownFieldSet> fields = std::make_unique<UnknownFieldSet>();
  operator const UnknownFieldSet &() const { return *fields; }
};

Message parseFields(const std::string &bytes, const std::string &what) {
  Message m;
  if (!m.fields->ParseFromString(bytes))
    fail("{0}: malformed protobuf", what);
  return m;
}

/// Calls `fn` on each field numbered `number`, in order.
template <typename Fn>
void forEachField(const UnknownFieldSet &fields, int number, Fn fn) {
  for (int i = 0; i < fields.field_count(); ++i)
    if (fields.field(i).number() == number)
      fn(fields.field(i));
}

/// The bytes of length-delimited field `f` (a string or a message).
const std::string &bytesOf(const UnknownField &f, const char *kind,
                           const std::string &what) {
  if (f.type() != UnknownField::TYPE_LENGTH_DELIMITED)
    fail("{0}: field {1} is not {2}", what, f.number(), kind);
  return f.length_delimited();
}

/// The embedded messages numbered `number`.
std::vector<Message> messages(const UnknownFieldSet &fields, int number,
                              const std::string &what) {
  std::vector<Message> out;
  forEachField(fields, number, [&](const UnknownField &f) {
    out.push_back(parseFields(bytesOf(f, "a message", what), what));
  });
  return out;
}

/// Every string numbered `number`.
std::vector<std::string> stringFields(const UnknownFieldSet &fields,
                                      int number, const std::string &what) {
  std::vector<std::string> out;
  forEachField(fields, number, [&](const UnknownField &f) {
    out.push_back(bytesOf(f, "a string", what));
  });
  return out;
}

/// The last string numbered `number` ("" when absent).
std::string stringField(const UnknownFieldSet &fields, int number,
                        const std::string &what) {
  std::vector<std::string> all = stringFields(fields, number, what);
  return all.empty() ? std::string() : all.back();
}

/// Every integer of the (repeated, packed or not) integer field `number`.
std::vector<int64_t> intFields(const UnknownFieldSet &fields, int number,
                               const std::string &what) {
  std::vector<int64_t> values;
  forEachField(fields, number, [&](const UnknownField &f) {
    if (f.type() == UnknownField::TYPE_VARINT) {
      values.push_back(int64_t(f.varint()));
      return;
    }
    // Packed: varints back to back.
    const std::string &bytes = bytesOf(f, "an integer", what);
    uint64_t value = 0;
    int shift = 0;
    for (size_t k = 0; k < bytes.size(); ++k) {
      auto byte = uint8_t(bytes[k]);
      if (shift > 63)
        fail("{0}: field {1}: malformed varint", what, number);
      value |= uint64_t(byte & 0x7f) << shift;
      shift += 7;
      if (!(byte & 0x80)) {
        values.push_back(int64_t(value));
        value = 0;
        shift = 0;
      } else if (k + 1 == bytes.size()) {
        fail("{0}: field {1}: truncated varint", what, number);
      }
    }
  });
  return values;
}

std::optional<int64_t> intField(const UnknownFieldSet &fields, int number,
                                const std::string &what) {
  std::vector<int64_t> values = intFields(fields, number, what);
  if (values.empty())
    return std::nullopt;
  return values.back();
}

/// The weight input of a matmul-like ONNX op ([K, N], or [N, K] for Gemm
/// with transB), -1 for other ops.
int weightInput(const onnx::NodeProto &node) {
  const std::string &op = node.op_type();
  if (op == "MatMul" || op == "Gemm" || op == "MatMulInteger")
    return 1;
  if (op == "QLinearMatMul")
    return 3;
  return -1;
}

bool gemmTransB(const onnx::NodeProto &node) {
  for (const onnx::AttributeProto &attr : node.attribute())
    if (attr.name() == "transB")
      return attr.i() != 0;
  return false;
}

} // namespace

ShardingAnnotations readShardingAnnotations(const onnx::ModelProto &model) {
  ShardingAnnotations out;
  const std::string modelWhat = "the model's multi-device configuration";
  for (const UnknownFieldSet &config :
       messages(model.unknown_fields(), kModelConfiguration, modelWhat)) {
    DeviceConfiguration c;
    c.name = stringField(config, device_configuration::kName, modelWhat);
    c.numDevices =
        intField(config, device_configuration::kNumDevices, modelWhat)
            .value_or(0);
    c.devices = stringFields(config, device_configuration::kDevice, modelWhat);
    if (c.name.empty())
      fail("{0}: a configuration without a name", modelWhat);
    if (c.numDevices < 1)
      fail("{0} '{1}': num_devices is {2}; it must be at least 1", modelWhat,
           c.name, c.numDevices);
    if (!c.devices.empty() && int64_t(c.devices.size()) != c.numDevices)
      fail("{0} '{1}': {2} device names for num_devices = {3}", modelWhat,
           c.name, c.devices.size(), c.numDevices);
    for (const DeviceConfiguration &earlier : out.configurations)
      if (earlier.name == c.name)
        fail("{0}: two configurations named '{1}'", modelWhat, c.name);
    out.configurations.push_back(std::move(c));
  }

  const onnx::GraphProto &graph = model.graph();
  // The ranks of the initializers, for a weight's negative axes.
  std::map<std::string, int64_t> initializerRank;
  for (const onnx::TensorProto &t : graph.initializer())
    initializerRank[t.name()] = t.dims_size();
  for (int n = 0; n < graph.node_size(); ++n) {
    const onnx::NodeProto &node = graph.node(n);
    std::vector<Message> configs;
    std::string what = describeNode(node, n) + ": device_configurations";
    configs = messages(node.unknown_fields(), kNodeDeviceConfigurations, what);
    if (configs.empty())
      continue;
    std::vector<NodeDeviceConfiguration> nodeConfigs;
    for (const UnknownFieldSet &config : configs) {
      NodeDeviceConfiguration nc;
      nc.configuration =
          stringField(config, node_configuration::kConfigurationId, what);
      const DeviceConfiguration *device = nullptr;
      for (const DeviceConfiguration &c : out.configurations)
        if (c.name == nc.configuration)
          device = &c;
      if (!device)
        fail("{0}: configuration_id '{1}' names no configuration of the "
             "model (ModelProto.configuration)",
             what, nc.configuration);
      if (std::optional<int64_t> stage =
              intField(config, node_configuration::kPipelineStage, what))
        nc.pipelineStage = *stage;
      for (const UnknownFieldSet &spec :
           messages(config, node_configuration::kShardingSpec, what)) {
        TensorSharding ts;
        ts.tensor = stringField(spec, sharding_spec::kTensorName, what);
        std::string specWhat = what + ": sharding_spec of '" + ts.tensor + "'";
        // The input (else the output) of that name.
        auto indexIn = [&](const auto &names) {
          for (int i = 0; i < names.size(); ++i)
            if (!ts.tensor.empty() && names.Get(i) == ts.tensor)
              return i;
          return -1;
        };
        ts.index = indexIn(node.input());
        if (ts.index < 0) {
          ts.isInput = false;
          ts.index = indexIn(node.output());
        }
        if (ts.index < 0)
          fail("{0}: '{1}' is neither an input nor an output of the node",
               what, ts.tensor);
        ts.devices = intFields(spec, sharding_spec::kDevice, specWhat);
        for (int64_t d : ts.devices)
          if (d < 0 || d >= device->numDevices)
            fail("{0}: device {1} is outside configuration '{2}' ({3} "
                 "devices)",
                 specWhat, d, device->name, device->numDevices);
        if (!messages(spec, sharding_spec::kDeviceGroupMap, specWhat).empty())
          fail("{0}: device groups (index_to_device_group_map) are not "
               "supported: Kiln shards over one group of ranks",
               specWhat);
        for (const UnknownFieldSet &dim :
             messages(spec, sharding_spec::kShardedDim, specWhat)) {
          std::optional<int64_t> axis =
              intField(dim, sharded_dim::kAxis, specWhat);
          if (!axis)
            fail("{0}: a sharded_dim without an axis", specWhat);
          std::vector<Message> simple =
              messages(dim, sharded_dim::kSimpleSharding, specWhat);
          if (simple.size() != 1)
            fail("{0}: axis {1} has {2} simple_sharding entries; Kiln reads "
                 "exactly one (axes fused by a reshape are not supported)",
                 specWhat, *axis, simple.size());
          int64_t shards =
              intField(simple[0], simple_sharded_dim::kNumShards, specWhat)
                  .value_or(0);
          if (shards < 1)
            fail("{0}: axis {1}: num_shards is {2}; it must be at least 1",
                 specWhat, *axis, shards);
          if (shards == 1)
            continue; // one shard: not split along this axis
          if (ts.axis)
            fail("{0}: sharded along axes {1} and {2}; Kiln splits a tensor "
                 "along one axis",
                 specWhat, *ts.axis, *axis);
          ts.axis = *axis;
          ts.shards = shards;
        }
        nc.tensors.push_back(std::move(ts));
      }
      // A matmul's weight: column-parallel, row-parallel or whole.
      int w = weightInput(node);
      for (const TensorSharding &ts : nc.tensors) {
        if (w < 0 || !ts.isInput || ts.index != w)
          continue;
        if (!ts.axis) {
          nc.weightRole = "replicated";
          continue;
        }
        auto it = initializerRank.find(ts.tensor);
        int64_t rank = it != initializerRank.end() ? it->second : 2;
        int64_t axis = *ts.axis < 0 ? *ts.axis + rank : *ts.axis;
        bool transB = node.op_type() == "Gemm" && gemmTransB(node);
        int64_t columns = transB ? rank - 2 : rank - 1;
        int64_t rows = transB ? rank - 1 : rank - 2;
        if (axis == columns)
          nc.weightRole = "column";
        else if (axis == rows)
          nc.weightRole = "row";
        else
          fail("{0}: sharding_spec of '{1}': axis {2} of the weight is "
               "neither its rows nor its columns; Kiln's tensor parallelism "
               "splits one of those",
               what, ts.tensor, *ts.axis);
      }
      nodeConfigs.push_back(std::move(nc));
    }
    std::vector<NodeDeviceConfiguration> &list =
        out.nodes[nodeDisplayName(node, n)];
    for (NodeDeviceConfiguration &nc : nodeConfigs)
      list.push_back(std::move(nc));
  }
  if (out.configurations.empty() && !out.nodes.empty())
    fail("node '{0}' has device_configurations but the model has no "
         "configuration (ModelProto.configuration)",
         out.nodes.begin()->first);
  return out;
}

void setShardingAnnotations(mlir::ModuleOp module,
                            const ShardingAnnotations &annotations) {
  if (annotations.configurations.empty())
    return;
  mlir::Builder b(module.getContext());
  llvm::SmallVector<mlir::Attribute> configs;
  for (const DeviceConfiguration &c : annotations.configurations) {
    llvm::SmallVector<mlir::NamedAttribute> fields{
        b.getNamedAttr("name", b.getStringAttr(c.name)),
        b.getNamedAttr("num_devices", b.getI64IntegerAttr(c.numDevices))};
    if (!c.devices.empty()) {
      llvm::SmallVector<mlir::Attribute> names;
      for (const std::string &d : c.devices)
        names.push_back(b.getStringAttr(d));
      fields.push_back(b.getNamedAttr("devices", b.getArrayAttr(names)));
    }
    configs.push_back(b.getDictionaryAttr(fields));
  }
  module->setAttr("kiln.device_configurations", b.getArrayAttr(configs));

  llvm::SmallVector<mlir::NamedAttribute> nodes;
  for (const auto &[name, nodeConfigs] : annotations.nodes) {
    llvm::SmallVector<mlir::Attribute> entries;
    for (const NodeDeviceConfiguration &nc : nodeConfigs) {
      llvm::SmallVector<mlir::NamedAttribute> fields{
          b.getNamedAttr("configuration", b.getStringAttr(nc.configuration))};
      if (nc.pipelineStage)
        fields.push_back(b.getNamedAttr(
            "pipeline_stage", b.getI64IntegerAttr(*nc.pipelineStage)));
      if (!nc.weightRole.empty())
        fields.push_back(
            b.getNamedAttr("weight", b.getStringAttr(nc.weightRole)));
      llvm::SmallVector<mlir::Attribute> tensors;
      for (const TensorSharding &ts : nc.tensors) {
        llvm::SmallVector<mlir::NamedAttribute> t{
            b.getNamedAttr("tensor", b.getStringAttr(ts.tensor)),
            b.getNamedAttr(ts.isInput ? "input" : "output",
                           b.getI64IntegerAttr(ts.index))};
        if (ts.axis) {
          t.push_back(b.getNamedAttr("axis", b.getI64IntegerAttr(*ts.axis)));
          t.push_back(
              b.getNamedAttr("shards", b.getI64IntegerAttr(ts.shards)));
        }
        if (!ts.devices.empty())
          t.push_back(
              b.getNamedAttr("devices", b.getDenseI64ArrayAttr(ts.devices)));
        tensors.push_back(b.getDictionaryAttr(t));
      }
      fields.push_back(b.getNamedAttr("tensors", b.getArrayAttr(tensors)));
      entries.push_back(b.getDictionaryAttr(fields));
    }
    nodes.push_back(b.getNamedAttr(name, b.getArrayAttr(entries)));
  }
  if (!nodes.empty())
    module->setAttr("kiln.sharding_annotations", b.getDictionaryAttr(nodes));
}

} // namespace kiln::import
