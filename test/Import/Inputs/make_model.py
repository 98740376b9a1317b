"""Builds the ONNX models of Kiln's importer tests.

    make_model.py CASE OUTPUT

Models meant for libonnx 1.12's checker use IR 8 / opset 17; the others name
their (newer) versions explicitly. Bad-input cases write broken files on
purpose.
"""

import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F = TensorProto.FLOAT
I64 = TensorProto.INT64


def model(nodes, inputs, outputs, inits=(), opset=17, ir=8, domains=(),
          value_info=()):
    graph = helper.make_graph(nodes, "g", list(inputs), list(outputs),
                              initializer=list(inits),
                              value_info=list(value_info))
    imports = [helper.make_opsetid("", opset)] + [
        helper.make_opsetid(d, v) for d, v in domains]
    m = helper.make_model(graph, opset_imports=imports,
                          producer_name="kiln-tests", producer_version="1")
    m.ir_version = ir
    return m


def vi(name, dtype, shape):
    return helper.make_tensor_value_info(name, dtype, shape)


def init(name, array):
    return numpy_helper.from_array(np.asarray(array), name)


def rand(*shape):
    return np.random.default_rng(0).standard_normal(shape).astype(np.float32)


def mlp():
    nodes = [
        helper.make_node("Gemm", ["x", "w1", "b1"], ["h0"], name="fc1",
                         transB=1),
        helper.make_node("Relu", ["h0"], ["h"], name="relu1"),
        helper.make_node("MatMul", ["h", "w2"], ["y0"], name="fc2"),
        helper.make_node("Add", ["y0", "b2"], ["y"]),
    ]
    return model(nodes, [vi("x", F, ["batch", 4])], [vi("y", F, ["batch", 2])],
                 [init("w1", rand(3, 4)), init("b1", rand(3)),
                  init("w2", rand(3, 2)), init("b2", rand(2))])


def clip_conv_optional():
    # Clip with only `max` (empty `min`), Conv without bias.
    nodes = [
        helper.make_node("Clip", ["x", "", "hi"], ["c"], name="clip_max"),
        helper.make_node("Conv", ["c", "w"], ["y"], name="conv_nobias",
                         kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
    ]
    return model(nodes, [vi("x", F, [1, 2, 5, 5])], [vi("y", F, [1, 4, 5, 5])],
                 [init("hi", np.float32(6.0)), init("w", rand(4, 2, 3, 3))])


def pytorch_reshape():
    # x.reshape(x.shape[0], 3, 2, 2) and y.expand(x.shape[0], 4) as PyTorch
    # exports them: Shape → Gather → Unsqueeze → Concat → Reshape / Expand.
    nodes = [
        helper.make_node("Shape", ["x"], ["s"], name="/Shape"),
        helper.make_node("Gather", ["s", "zero"], ["n"], name="/Gather",
                         axis=0),
        helper.make_node("Unsqueeze", ["n", "axes0"], ["n1"],
                         name="/Unsqueeze"),
        helper.make_node("Concat", ["n1", "rest"], ["shape"], name="/Concat",
                         axis=0),
        helper.make_node("Reshape", ["x", "shape"], ["r"], name="/Reshape"),
        helper.make_node("Concat", ["n1", "four"], ["eshape"],
                         name="/Concat_1", axis=0),
        helper.make_node("Expand", ["y", "eshape"], ["e"], name="/Expand"),
    ]
    return model(nodes, [vi("x", F, ["N", 12]), vi("y", F, [1, 4])],
                 [vi("r", F, ["N", 3, 2, 2]), vi("e", F, ["N", 4])],
                 [init("zero", np.array(0, np.int64)),
                  init("axes0", np.array([0], np.int64)),
                  init("rest", np.array([3, 2, 2], np.int64)),
                  init("four", np.array([4], np.int64))])


def legacy_opset9():
    # Opset-9 forms: Clip-6 min/max, Unsqueeze-1 axes, Slice-1 starts/ends/
    # axes, Pad-2 pads/value, Softmax-1 on the last axis, ReduceMean-1 axes.
    nodes = [
        helper.make_node("Clip", ["x"], ["c"], name="clip", min=0.0, max=6.0),
        helper.make_node("Unsqueeze", ["c"], ["u"], name="unsq", axes=[0]),
        helper.make_node("Slice", ["u"], ["s"], name="slice", starts=[1],
                         ends=[3], axes=[2]),
        helper.make_node("Pad", ["s"], ["p"], name="pad",
                         pads=[0, 0, 0, 1, 0, 0, 0, 1], value=0.5),
        helper.make_node("Softmax", ["p"], ["sm"], name="softmax", axis=3),
        helper.make_node("ReduceMean", ["sm"], ["m"], name="mean", axes=[3],
                         keepdims=1),
    ]
    return model(nodes, [vi("x", F, [2, 4, 5])],
                 [vi("m", F, [1, 2, 2, 1])], opset=9, ir=4)


def legacy_softmax_axis():
    nodes = [helper.make_node("Softmax", ["x"], ["y"], name="softmax")]
    return model(nodes, [vi("x", F, [2, 3, 4])], [vi("y", F, [2, 3, 4])],
                 opset=11, ir=6)


def multi_output():
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"),
             helper.make_node("Add", ["r", "x"], ["s"], name="add")]
    return model(nodes, [vi("x", F, [2, 3])],
                 [vi("r", F, [2, 3]), vi("s", F, [2, 3]), vi("x", F, [2, 3])])


def reduce_optional():
    # ReduceSum-13 with its optional axes input missing (empty name and
    # omitted), and a DequantizeLinear without zero point.
    nodes = [
        helper.make_node("ReduceSum", ["x", ""], ["s1"], name="sum_empty",
                         keepdims=1),
        helper.make_node("ReduceSum", ["x"], ["s2"], name="sum_omitted"),
        helper.make_node("DequantizeLinear", ["q", "scale"], ["d"],
                         name="dq"),
    ]
    return model(nodes, [vi("x", F, [2, 3]),
                         vi("q", TensorProto.INT8, [4])],
                 [vi("s1", F, None), vi("s2", F, None), vi("d", F, [4])],
                 [init("scale", np.float32(0.5))], opset=21, ir=10)


def dynamic_batch():
    nodes = [helper.make_node("Relu", ["x"], ["y"], name="relu")]
    x = vi("x", F, ["N", 3, None])
    x.type.tensor_type.shape.dim[2].Clear()
    return model(nodes, [x], [vi("y", F, ["N", 3, None])])


def refine_dynamic():
    # value_info knows the size Kiln's inference leaves dynamic.
    nodes = [helper.make_node("Add", ["x", "x"], ["r"], name="add"),
             helper.make_node("Relu", ["r"], ["y"], name="relu2")]
    return model(nodes, [vi("x", F, ["N", 3])], [vi("y", F, ["N", 3])],
                 value_info=[vi("r", F, [4, 3])])


def refine_same_type():
    # kiln.relu's type is its operand's: the value_info's size is checked,
    # not applied.
    nodes = [helper.make_node("Relu", ["x"], ["y"], name="relu")]
    return model(nodes, [vi("x", F, ["N", 3])], [vi("y", F, [4, 3])])


def opset11():
    # ReduceSum-11 has `axes` as an attribute: libonnx's converter lifts it.
    nodes = [helper.make_node("ReduceSum", ["x"], ["y"], name="sum",
                              axes=[1], keepdims=0),
             helper.make_node("Relu", ["y"], ["z"], name="relu")]
    return model(nodes, [vi("x", F, [2, 3])], [vi("z", F, [2])], opset=11,
                 ir=6)


def opset21():
    # Newer than libonnx 1.12: parsed, neither checked nor converted.
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"),
             helper.make_node("ReduceSum", ["r", "axes"], ["y"], name="sum",
                              keepdims=1)]
    return model(nodes, [vi("x", F, [2, 3])], [vi("y", F, None)],
                 [init("axes", np.array([1], np.int64))], opset=21, ir=10)


def constants():
    nodes = [
        helper.make_node("Constant", [], ["c"], name="cst",
                         value=numpy_helper.from_array(
                             np.array([[1, 2, 3]], np.float32))),
        helper.make_node("Constant", [], ["ci"], name="cints",
                         value_ints=[1, 2]),
        helper.make_node("Constant", [], ["cf"], value_float=2.5),
        helper.make_node("Add", ["x", "c"], ["y"], name="add"),
    ]
    return model(nodes, [vi("x", F, [2, 3])],
                 [vi("y", F, [2, 3]), vi("ci", I64, [2]), vi("cf", F, [])],
                 [init("h16", np.array([1.5, -2], np.float16)),
                  init("bools", np.array([True, False, True])),
                  init("u8", np.array([7, 255], np.uint8)),
                  init("f64", np.array(3.0, np.float64)),
                  helper.make_tensor("typed_i32", TensorProto.INT32, [3],
                                     [1, -2, 3]),
                  helper.make_tensor("typed_bf16", TensorProto.BFLOAT16,
                                     [1], [1.5])])


def large_initializer():
    nodes = [helper.make_node("Add", ["x", "layer.0/weight"], ["y"],
                              name="add")]
    return model(nodes, [vi("x", F, [16, 32])], [vi("y", F, [16, 32])],
                 [init("layer.0/weight", np.full((16, 32), 0.25, np.float32))])


def external_data(path):
    m = large_initializer()
    onnx.save(m, path, save_as_external_data=True, all_tensors_to_one_file=True,
              location=os.path.basename(path) + ".data", size_threshold=0)
    return None


def missing_external_data(path):
    external_data(path)
    os.remove(path + ".data")
    return None


def shape_arith():
    # The PyTorch export pattern around Reshape: x.view(x.size(0), -1).
    nodes = [
        helper.make_node("Shape", ["x"], ["s"], name="shape"),
        helper.make_node("Relu", ["x"], ["y"], name="relu"),
    ]
    return model(nodes, [vi("x", F, ["N", 3, 4])],
                 [vi("s", I64, [3]), vi("y", F, ["N", 3, 4])])


def unnamed_nodes():
    nodes = [helper.make_node("Relu", ["x"], ["r"]),
             helper.make_node("Relu", ["r"], ["y"])]
    return model(nodes, [vi("x", F, [2])], [vi("y", F, [2])])


def old_ir_inputs():
    # IR 3 lists initializers among the graph inputs.
    nodes = [helper.make_node("Add", ["x", "b"], ["y"], name="add")]
    return model(nodes, [vi("x", F, [2]), vi("b", F, [2])], [vi("y", F, [2])],
                 [init("b", np.ones(2, np.float32))], opset=8, ir=3)


def _annotate(m, **kwargs):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(
        __file__)), "..", "..", "..", "models"))
    import annotate_sharding
    return annotate_sharding.annotate(m, **kwargs)


def sharded_mlp():
    # IR 11's multi-device annotations (models/annotate_sharding.py): fc1
    # (Gemm, transB: its [N, K] weight split along axis 0, its columns) and
    # fc2 (MatMul: split along its rows) over two devices, and a second
    # configuration of 4 devices that only names fc1's weight.
    nodes = [
        helper.make_node("Gemm", ["x", "w1", "b1"], ["h0"], name="fc1",
                         transB=1),
        helper.make_node("Relu", ["h0"], ["h"], name="relu1"),
        helper.make_node("MatMul", ["h", "w2"], ["y0"], name="fc2"),
        helper.make_node("Add", ["y0", "b2"], ["y"], name="add2"),
    ]
    m = model(nodes, [vi("x", F, ["batch", 4])], [vi("y", F, ["batch", 2])],
              [init("w1", rand(4, 4)), init("b1", rand(4)),
               init("w2", rand(4, 2)), init("b2", rand(2))], ir=11)
    _annotate(m, devices=2, column=["fc1"], row=["fc2"])
    config = m.configuration.add()
    config.name = "tp4"
    config.num_devices = 4
    config.device.extend(["d0", "d1", "d2", "d3"])
    entry = m.graph.node[0].device_configurations.add()
    entry.configuration_id = "tp4"
    spec = entry.sharding_spec.add()
    spec.tensor_name = "w1"
    dim = spec.sharded_dim.add()
    dim.axis = -2
    dim.simple_sharding.add().num_shards = 4
    return m


def _sharded_mlp_with(change):
    m = sharded_mlp()
    change(m.graph.node[0].device_configurations[0])
    return m


def sharding_unknown_configuration():
    def change(entry):
        entry.configuration_id = "mesh9"
    return _sharded_mlp_with(change)


def sharding_device_groups():
    def change(entry):
        group = entry.sharding_spec[1].index_to_device_group_map.add()
        group.key = 0
        group.value.extend([0, 1])
    return _sharded_mlp_with(change)


def sharding_not_a_node_tensor():
    def change(entry):
        entry.sharding_spec[1].tensor_name = "w2"
    return _sharded_mlp_with(change)


def sharding_two_axes():
    def change(entry):
        dim = entry.sharding_spec[1].sharded_dim.add()
        dim.axis = 1
        dim.simple_sharding.add().num_shards = 2
    return _sharded_mlp_with(change)


def sharding_bad_device():
    def change(entry):
        entry.sharding_spec[0].device.append(5)
    return _sharded_mlp_with(change)


# --- bad inputs ------------------------------------------------------------

def unknown_op():
    nodes = [helper.make_node("FooBar", ["x"], ["y"], name="mystery")]
    return model(nodes, [vi("x", F, [2])], [vi("y", F, [2])])


def unknown_domain():
    nodes = [helper.make_node("FusedGelu", ["x"], ["y"], name="gelu",
                              domain="com.microsoft")]
    return model(nodes, [vi("x", F, [2])], [vi("y", F, [2])],
                 domains=[("com.microsoft", 1)])


def unsupported_attribute():
    # An attribute kiln.relu does not declare (opset 21: libonnx does not
    # check the model, Kiln does).
    nodes = [helper.make_node("Relu", ["x"], ["y"], name="relu", alpha=0.1)]
    return model(nodes, [vi("x", F, [2])], [vi("y", F, [2])], opset=21, ir=10)


def unsupported_attribute_value():
    # DequantizeLinear-21's block_size: declared, but blocked quantization is
    # rejected by the verifier.
    nodes = [helper.make_node("DequantizeLinear", ["q", "scale"], ["d"],
                              name="dq", block_size=2)]
    return model(nodes, [vi("q", TensorProto.INT8, [4])], [vi("d", F, [4])],
                 [init("scale", np.float32(0.5))], opset=21, ir=10)


def unsupported_dtype():
    nodes = [helper.make_node("Relu", ["x"], ["y"], name="relu")]
    return model(nodes, [vi("x", TensorProto.COMPLEX64, [2])],
                 [vi("y", TensorProto.COMPLEX64, [2])], opset=21, ir=10)


def unsupported_dtype_init():
    nodes = [helper.make_node("Add", ["x", "w"], ["y"], name="add")]
    return model(nodes, [vi("x", F, [2])], [vi("y", F, [2])],
                 [helper.make_tensor("w", TensorProto.FLOAT8E4M3FN, [2],
                                     [1.0, 2.0])], opset=21, ir=10)


def inconsistent_shapes():
    nodes = [helper.make_node("Relu", ["x"], ["y"], name="relu")]
    return model(nodes, [vi("x", F, [2, 3])], [vi("y", F, [4, 3])])


def value_info_conflict():
    # An intermediate value's value_info contradicts what it is.
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"),
             helper.make_node("Relu", ["r"], ["y"], name="relu2")]
    return model(nodes, [vi("x", F, [2, 3])], [vi("y", F, [2, 3])],
                 value_info=[vi("r", F, [5, 3])])


def broadcast_error():
    nodes = [helper.make_node("Add", ["a", "b"], ["y"], name="bad_add")]
    return model(nodes, [vi("a", F, [2, 3]), vi("b", F, [4, 5])],
                 [vi("y", F, None)], opset=21, ir=10)


def sequence_input():
    seq = helper.make_tensor_sequence_value_info("xs", F, [2])
    nodes = [helper.make_node("SequenceAt", ["xs", "i"], ["y"], name="at")]
    return model(nodes, [seq, vi("i", I64, [])], [vi("y", F, [2])])


def undefined_input():
    nodes = [helper.make_node("Relu", ["nowhere"], ["y"], name="relu")]
    return model(nodes, [vi("x", F, [2])], [vi("y", F, [2])], opset=21, ir=10)


def missing_output():
    nodes = [helper.make_node("Relu", ["x"], ["y"], name="relu")]
    return model(nodes, [vi("x", F, [2])], [vi("z", F, [2])], opset=21, ir=10)


def too_many_inputs():
    nodes = [helper.make_node("Relu", ["x", "x"], ["y"], name="relu")]
    return model(nodes, [vi("x", F, [2])], [vi("y", F, [2])], opset=21, ir=10)


def function_nllloss():
    # NegativeLogLikelihoodLoss-13 has a context-dependent function body
    # (it gathers weights only when there are weights).
    nodes = [helper.make_node("NegativeLogLikelihoodLoss", ["x", "t", "w"],
                              ["loss"], name="nll", reduction="sum")]
    return model(nodes, [vi("x", F, [3, 5]), vi("t", I64, [3]),
                         vi("w", F, [5])], [vi("loss", F, [])])


def function_sce():
    # SoftmaxCrossEntropyLoss's body is LogSoftmax plus a
    # NegativeLogLikelihoodLoss, itself a function: expanded recursively.
    # The optional log_prob output is omitted.
    nodes = [helper.make_node("SoftmaxCrossEntropyLoss", ["x", "t"],
                              ["loss"], name="sce", reduction="mean")]
    return model(nodes, [vi("x", F, [2, 4]), vi("t", I64, [2])],
                 [vi("loss", F, [])])


def function_window():
    # HannWindow-17 is a plain function: its attribute references (periodic,
    # output_datatype) take the node's values, or the schema's defaults.
    nodes = [helper.make_node("HannWindow", ["n"], ["win"], name="hann",
                             periodic=0)]
    return model(nodes, [vi("n", TensorProto.INT32, [])],
                 [vi("win", F, [None])])


def function_window_static():
    # The same with the output length declared: the body's Range has it.
    nodes = [helper.make_node("BlackmanWindow", ["n"], ["win"],
                              name="blackman")]
    return model(nodes, [vi("n", I64, [])], [vi("win", F, [8])])


def range_declared_length():
    # Range with a run-time limit, used elementwise, then cast to a declared
    # static output: the Range and everything between get the length.
    nodes = [
        helper.make_node("Cast", ["n"], ["nf"], to=F),
        helper.make_node("Range", ["zero", "nf", "one"], ["r"], name="range"),
        helper.make_node("Mul", ["r", "two"], ["r2"]),
        helper.make_node("Cos", ["r2"], ["c"]),
        helper.make_node("Add", ["c", "r2"], ["s"]),
        helper.make_node("Cast", ["s"], ["y"], to=TensorProto.DOUBLE),
    ]
    return model(nodes, [vi("n", I64, [])],
                 [vi("y", TensorProto.DOUBLE, [6])],
                 [init("zero", np.float32(0)), init("one", np.float32(1)),
                  init("two", np.float32(2))])


def function_unsupported_body():
    # Bernoulli-15's body draws with RandomUniformLike, which Kiln lacks.
    nodes = [helper.make_node("Bernoulli", ["p"], ["b"], name="coin")]
    return model(nodes, [vi("p", F, [4])], [vi("b", F, [4])])


def rnn_unrolled():
    # A forward RNN over 2 steps with a bias, returning Y and Y_h.
    nodes = [helper.make_node("RNN", ["x", "w", "r", "b"], ["y", "y_h"],
                              name="rnn", hidden_size=3)]
    return model(nodes, [vi("x", F, [2, 4, 5])],
                 [vi("y", F, [2, 1, 4, 3]), vi("y_h", F, [1, 4, 3])],
                 [init("w", rand(1, 3, 5)), init("r", rand(1, 3, 3)),
                  init("b", rand(1, 6))], opset=14)


def rnn_dynamic_sequence():
    nodes = [helper.make_node("GRU", ["x", "w", "r"], ["", "y_h"],
                              name="gru", hidden_size=3)]
    return model(nodes, [vi("x", F, ["T", 4, 5])], [vi("y_h", F, [1, 4, 3])],
                 [init("w", rand(1, 9, 5)), init("r", rand(1, 9, 3))],
                 opset=14)


def lstm_input_forget():
    nodes = [helper.make_node("LSTM", ["x", "w", "r"], ["", "y_h"],
                              name="lstm", hidden_size=3, input_forget=1)]
    return model(nodes, [vi("x", F, [2, 4, 5])], [vi("y_h", F, [1, 4, 3])],
                 [init("w", rand(1, 12, 5)), init("r", rand(1, 12, 3))],
                 opset=14)


def runtime_axes_squeeze():
    # Squeeze/Unsqueeze whose axes are graph inputs; the outputs' declared
    # static shapes say what they do.
    nodes = [helper.make_node("Unsqueeze", ["x", "ua"], ["u"], name="unsq"),
             helper.make_node("Squeeze", ["u", "sa"], ["s"], name="sq")]
    return model(nodes, [vi("x", F, [3, 4]), vi("ua", I64, [2]),
                         vi("sa", I64, [1])],
                 [vi("u", F, [1, 3, 1, 4]), vi("s", F, [3, 1, 4])])


def runtime_axes_undeclared():
    nodes = [helper.make_node("Unsqueeze", ["x", "ua"], ["u"], name="unsq")]
    return model(nodes, [vi("x", F, [3, 4]), vi("ua", I64, [1])],
                 [vi("u", F, ["a", "b", "c"])])


def legacy_prelu_channels():
    # PRelu-6 takes one slope per channel (dim 1).
    nodes = [helper.make_node("PRelu", ["x", "slope"], ["y"], name="prelu")]
    return model(nodes, [vi("x", F, [2, 3, 4, 5]), vi("slope", F, [3])],
                 [vi("y", F, [2, 3, 4, 5])],
                 [init("slope", np.array([0.1, 0.2, 0.3], np.float32))],
                 opset=6, ir=3)


def not_onnx(path):
    with open(path, "w") as f:
        f.write("this is not an ONNX model\n" * 10)


def truncated(path):
    data = mlp().SerializeToString()
    with open(path, "wb") as f:
        f.write(data[: len(data) * 2 // 3])


def main():
    case, out = sys.argv[1], sys.argv[2]
    fn = globals()[case]
    if fn.__code__.co_argcount == 1:
        fn(out)
        return
    m = fn()
    onnx.save(m, out)


if __name__ == "__main__":
    main()
