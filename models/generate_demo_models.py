#!/usr/bin/env python3
#===- models/generate_demo_models.py - Kiln's demo ONNX models -------------===#
#
# Writes three models with fixed seeds, opset 17 and IR version 8 (what
# Debian's libonnx 1.12 checks), each checked with onnx.checker:
#
#   mlp.onnx                784-512-256-10, Gemm and MatMul+Add, Relu, Softmax
#   transformer_block.onnx  a Llama-style decoder block in the form PyTorch
#                           exports it (RMSNorm written out, rotary embedding,
#                           grouped-query attention, causal mask, SwiGLU MLP,
#                           Shape->Gather->Unsqueeze->Concat shape arithmetic)
#   resnet18.onnx           a ResNet-18-shaped CNN with BatchNormalization
#
# and for each one a backend-test style data set
# DIR/<model>/test_data_set_0/{input,output}_N.pb whose outputs are computed
# by onnxruntime. For the MLP and the transformer block the outputs are also
# checked against the numpy reference in models/reference.py.
#
#   generate_demo_models.py --out DIR [--only mlp,transformer_block,resnet18]
#
#===----------------------------------------------------------------------===#

import argparse
import os
import sys
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference  # noqa: E402

OPSET = 17
IR_VERSION = 8
INT64_MAX = np.iinfo(np.int64).max


class GraphBuilder:
    """Builds a graph node by node; names follow PyTorch's exporter
    (`/scope/OpType_N` nodes, `/scope/OpType_N_output_0` values)."""

    def __init__(self, seed):
        self.nodes = []
        self.initializers = []
        self.rng = np.random.default_rng(seed)
        self.counts = {}
        self.scope = ""

    def _name(self, op_type):
        key = (self.scope, op_type)
        n = self.counts.get(key, 0)
        self.counts[key] = n + 1
        return f"{self.scope}/{op_type}" + (f"_{n}" if n else "")

    def op(self, op_type, inputs, num_outputs=1, **attrs):
        name = self._name(op_type)
        outputs = [f"{name}_output_{i}" for i in range(num_outputs)]
        self.nodes.append(
            helper.make_node(op_type, inputs, outputs, name=name, **attrs))
        return outputs[0] if num_outputs == 1 else outputs

    def const(self, value, dtype=np.int64, name=None):
        """A Constant node, as PyTorch emits for small literals."""
        array = np.asarray(value, dtype=dtype)
        node_name = self._name("Constant")
        out = name or f"{node_name}_output_0"
        self.nodes.append(helper.make_node(
            "Constant", [], [out], name=node_name,
            value=numpy_helper.from_array(array)))
        return out

    def init(self, name, array):
        self.initializers.append(numpy_helper.from_array(array, name))
        return name

    def weight(self, name, shape, scale=None):
        fan_in = shape[0] if len(shape) == 2 else int(np.prod(shape[1:]))
        scale = scale if scale is not None else 1.0 / np.sqrt(fan_in)
        return self.init(
            name, (self.rng.standard_normal(shape) * scale).astype(np.float32))

    def model(self, name, inputs, outputs):
        graph = helper.make_graph(self.nodes, name, inputs, outputs,
                                  self.initializers)
        model = helper.make_model(
            graph, producer_name="kiln-demo",
            opset_imports=[helper.make_opsetid("", OPSET)],
            ir_version=IR_VERSION)
        onnx.checker.check_model(model, full_check=True)
        return model


# --- MLP --------------------------------------------------------------------

def build_mlp():
    b = GraphBuilder(seed=1)
    b.weight("fc1.weight", (512, 784))  # Gemm with transB, as nn.Linear
    b.init("fc1.bias", b.rng.standard_normal(512).astype(np.float32) * 0.1)
    b.weight("fc2.weight", (512, 256))  # MatMul + Add
    b.init("fc2.bias", b.rng.standard_normal(256).astype(np.float32) * 0.1)
    b.weight("fc3.weight", (10, 256))
    b.init("fc3.bias", b.rng.standard_normal(10).astype(np.float32) * 0.1)

    b.scope = "/fc1"
    h = b.op("Gemm", ["input", "fc1.weight", "fc1.bias"],
             alpha=1.0, beta=1.0, transB=1)
    b.scope = "/act1"
    h = b.op("Relu", [h])
    b.scope = "/fc2"
    h = b.op("MatMul", [h, "fc2.weight"])
    h = b.op("Add", [h, "fc2.bias"])
    b.scope = "/act2"
    h = b.op("Relu", [h])
    b.scope = "/fc3"
    h = b.op("Gemm", [h, "fc3.weight", "fc3.bias"],
             alpha=1.0, beta=1.0, transB=1)
    b.scope = ""
    b.nodes.append(helper.make_node("Softmax", [h], ["probs"],
                                    name="/softmax/Softmax", axis=-1))
    model = b.model(
        "mlp",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT,
                                       ["batch", 784])],
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT,
                                       ["batch", 10])])
    inputs = [np.random.default_rng(101).standard_normal(
        (4, 784)).astype(np.float32)]
    return model, inputs, reference.mlp


# --- Llama-style decoder block ----------------------------------------------

D_MODEL = 256
N_HEADS = 8
N_KV_HEADS = 2
HEAD_DIM = 32
FFN = 512
MAX_POS = 128
EPS = 1e-6
ROPE_THETA = 10000.0


def rope_tables():
    inv_freq = 1.0 / (ROPE_THETA ** (
        np.arange(0, HEAD_DIM, 2, dtype=np.float64) / HEAD_DIM))
    freqs = np.outer(np.arange(MAX_POS, dtype=np.float64), inv_freq)
    emb = np.concatenate([freqs, freqs], axis=-1)
    return np.cos(emb).astype(np.float32), np.sin(emb).astype(np.float32)


def build_transformer_block():
    b = GraphBuilder(seed=2)
    b.init("input_layernorm.weight",
           (1.0 + 0.1 * b.rng.standard_normal(D_MODEL)).astype(np.float32))
    b.weight("self_attn.q_proj.weight", (D_MODEL, N_HEADS * HEAD_DIM))
    b.weight("self_attn.k_proj.weight", (D_MODEL, N_KV_HEADS * HEAD_DIM))
    b.weight("self_attn.v_proj.weight", (D_MODEL, N_KV_HEADS * HEAD_DIM))
    b.weight("self_attn.o_proj.weight", (N_HEADS * HEAD_DIM, D_MODEL))
    b.init("post_attention_layernorm.weight",
           (1.0 + 0.1 * b.rng.standard_normal(D_MODEL)).astype(np.float32))
    b.weight("mlp.gate_proj.weight", (D_MODEL, FFN))
    b.weight("mlp.up_proj.weight", (D_MODEL, FFN))
    b.weight("mlp.down_proj.weight", (FFN, D_MODEL))
    cos, sin = rope_tables()
    b.init("rotary_emb.cos_cached", cos)
    b.init("rotary_emb.sin_cached", sin)

    x = "hidden_states"

    # Shape arithmetic PyTorch emits for x.shape[0], x.shape[1].
    b.scope = ""
    shape = b.op("Shape", [x])
    batch = b.op("Gather", [shape, b.const(0)], axis=0)
    shape1 = b.op("Shape", [x])
    seq = b.op("Gather", [shape1, b.const(1)], axis=0)
    axes0 = b.const([0])
    batch_u = b.op("Unsqueeze", [batch, axes0])
    seq_u = b.op("Unsqueeze", [seq, axes0])

    def rms_norm(scope, h, weight):
        b.scope = scope
        p = b.op("Pow", [h, b.const(2.0, np.float32)])
        m = b.op("ReduceMean", [p], axes=[-1], keepdims=1)
        a = b.op("Add", [m, b.const(EPS, np.float32)])
        s = b.op("Sqrt", [a])
        d = b.op("Div", [h, s])
        return b.op("Mul", [weight, d])

    h = rms_norm("/input_layernorm", x, "input_layernorm.weight")

    b.scope = "/self_attn"
    q = b.op("MatMul", [h, "self_attn.q_proj.weight"])
    k = b.op("MatMul", [h, "self_attn.k_proj.weight"])
    v = b.op("MatMul", [h, "self_attn.v_proj.weight"])

    def split_heads(t, heads):
        target = b.op("Concat", [batch_u, seq_u, b.const([heads]),
                                 b.const([HEAD_DIM])], axis=0)
        t = b.op("Reshape", [t, target])
        return b.op("Transpose", [t], perm=[0, 2, 1, 3])

    q = split_heads(q, N_HEADS)
    k = split_heads(k, N_KV_HEADS)
    v = split_heads(v, N_KV_HEADS)

    # Rotary embedding: cos/sin sliced to the sequence length.
    b.scope = "/self_attn/rotary_emb"
    cos_s = b.op("Slice", ["rotary_emb.cos_cached", b.const([0]), seq_u,
                           b.const([0])])
    sin_s = b.op("Slice", ["rotary_emb.sin_cached", b.const([0]), seq_u,
                           b.const([0])])
    b.scope = "/self_attn"

    def rotate_half(t):
        half = HEAD_DIM // 2
        x1 = b.op("Slice", [t, b.const([0]), b.const([half]), b.const([3]),
                            b.const([1])])
        x2 = b.op("Slice", [t, b.const([half]), b.const([INT64_MAX]),
                            b.const([3]), b.const([1])])
        return b.op("Concat", [b.op("Neg", [x2]), x1], axis=-1)

    def apply_rope(t):
        return b.op("Add", [b.op("Mul", [t, cos_s]),
                            b.op("Mul", [rotate_half(t), sin_s])])

    q = apply_rope(q)
    k = apply_rope(k)

    # repeat_kv: [B, KV, S, hd] -> [B, KV, rep, S, hd] -> [B, H, S, hd].
    n_rep = N_HEADS // N_KV_HEADS

    def repeat_kv(t):
        t = b.op("Unsqueeze", [t, b.const([2])])
        target = b.op("Concat", [batch_u, b.const([N_KV_HEADS]),
                                 b.const([n_rep]), seq_u, b.const([HEAD_DIM])],
                      axis=0)
        t = b.op("Expand", [t, target])
        target = b.op("Concat", [batch_u, b.const([N_HEADS]), seq_u,
                                 b.const([HEAD_DIM])], axis=0)
        return b.op("Reshape", [t, target])

    k = repeat_kv(k)
    v = repeat_kv(v)

    kt = b.op("Transpose", [k], perm=[0, 1, 3, 2])
    scores = b.op("MatMul", [q, kt])
    scores = b.op("Div", [scores, b.const(np.sqrt(HEAD_DIM), np.float32)])

    # Causal mask: lower triangle of ones(seq, seq), as torch.tril emits.
    mask_shape = b.op("Concat", [seq_u, seq_u], axis=0)
    ones = b.op("ConstantOfShape", [mask_shape],
                value=numpy_helper.from_array(np.ones(1, np.float32)))
    tril = b.op("Trilu", [ones], upper=0)
    keep = b.op("Cast", [tril], to=TensorProto.BOOL)
    scores = b.op("Where", [keep, scores,
                            b.const(np.finfo(np.float32).min, np.float32)])
    probs = b.op("Softmax", [scores], axis=-1)
    attn = b.op("MatMul", [probs, v])
    attn = b.op("Transpose", [attn], perm=[0, 2, 1, 3])
    target = b.op("Concat", [batch_u, seq_u, b.const([D_MODEL])], axis=0)
    attn = b.op("Reshape", [attn, target])
    attn = b.op("MatMul", [attn, "self_attn.o_proj.weight"])

    b.scope = ""
    h1 = b.op("Add", [x, attn])
    n2 = rms_norm("/post_attention_layernorm", h1,
                  "post_attention_layernorm.weight")

    b.scope = "/mlp"
    gate = b.op("MatMul", [n2, "mlp.gate_proj.weight"])
    silu = b.op("Mul", [gate, b.op("Sigmoid", [gate])])
    up = b.op("MatMul", [n2, "mlp.up_proj.weight"])
    down = b.op("MatMul", [b.op("Mul", [silu, up]), "mlp.down_proj.weight"])

    b.scope = ""
    b.nodes.append(helper.make_node("Add", [h1, down], ["output"],
                                    name="/Add_residual"))
    model = b.model(
        "transformer_block",
        [helper.make_tensor_value_info(x, TensorProto.FLOAT,
                                       ["batch", "seq", D_MODEL])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT,
                                       ["batch", "seq", D_MODEL])])
    inputs = [np.random.default_rng(102).standard_normal(
        (2, 16, D_MODEL)).astype(np.float32)]
    return model, inputs, reference.transformer_block


# --- ResNet-18-like CNN -----------------------------------------------------

def conv_bn(b, name, x, cin, cout, kernel, stride, relu):
    """Conv (He-initialized, 'same' padding) + BatchNormalization (+ Relu),
    as torchvision's conv-bn blocks export."""
    b.scope = f"/{name}"
    fan_in = cin * kernel * kernel
    b.init(f"{name}.conv.weight", (b.rng.standard_normal(
        (cout, cin, kernel, kernel)) * np.sqrt(2.0 / fan_in)).astype(
            np.float32))
    b.init(f"{name}.bn.weight",
           (1.0 + 0.1 * b.rng.standard_normal(cout)).astype(np.float32))
    b.init(f"{name}.bn.bias",
           (0.1 * b.rng.standard_normal(cout)).astype(np.float32))
    b.init(f"{name}.bn.running_mean",
           (0.1 * b.rng.standard_normal(cout)).astype(np.float32))
    b.init(f"{name}.bn.running_var",
           b.rng.uniform(0.5, 1.5, cout).astype(np.float32))
    pad = kernel // 2
    y = b.op("Conv", [x, f"{name}.conv.weight"], dilations=[1, 1],
             group=1, kernel_shape=[kernel, kernel],
             pads=[pad, pad, pad, pad], strides=[stride, stride])
    y = b.op("BatchNormalization",
             [y, f"{name}.bn.weight", f"{name}.bn.bias",
              f"{name}.bn.running_mean", f"{name}.bn.running_var"],
             epsilon=1e-5, momentum=0.9)
    return b.op("Relu", [y]) if relu else y


def build_resnet18():
    b = GraphBuilder(seed=3)
    x = conv_bn(b, "stem", "input", 3, 64, 7, 2, relu=True)
    x = b.op("MaxPool", [x], kernel_shape=[3, 3], pads=[1, 1, 1, 1],
             strides=[2, 2], ceil_mode=0, dilations=[1, 1])
    cin = 64
    for stage, cout in enumerate([64, 128, 256, 512], start=1):
        for block in range(2):
            stride = 2 if stage > 1 and block == 0 else 1
            name = f"layer{stage}.{block}"
            y = conv_bn(b, f"{name}.conv1", x, cin, cout, 3, stride,
                        relu=True)
            y = conv_bn(b, f"{name}.conv2", y, cout, cout, 3, 1, relu=False)
            if stride != 1 or cin != cout:
                x = conv_bn(b, f"{name}.downsample", x, cin, cout, 1, stride,
                            relu=False)
            b.scope = f"/{name}"
            x = b.op("Relu", [b.op("Add", [y, x])])
            cin = cout
    b.scope = ""
    x = b.op("GlobalAveragePool", [x])
    x = b.op("Flatten", [x], axis=1)
    b.weight("fc.weight", (1000, 512))
    b.init("fc.bias", (0.01 * b.rng.standard_normal(1000)).astype(np.float32))
    b.nodes.append(helper.make_node("Gemm", [x, "fc.weight", "fc.bias"],
                                    ["logits"], name="/fc/Gemm", alpha=1.0,
                                    beta=1.0, transB=1))
    model = b.model(
        "resnet18",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT,
                                       ["batch", 3, 224, 224])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT,
                                       ["batch", 1000])])
    inputs = [np.random.default_rng(103).standard_normal(
        (1, 3, 224, 224)).astype(np.float32)]
    return model, inputs, None


# --- Small CNN ---------------------------------------------------------------

def build_small_cnn():
    """Conv, BatchNormalization, Relu, MaxPool, two residual blocks, global
    pooling and a classifier on 32x32 images: the CNN of the e2e tests and
    the CPU benchmark (ResNet-18 is the compile-time model)."""
    b = GraphBuilder(seed=5)

    def conv3(name, x, cin, cout, relu):
        return conv_bn(b, name, x, cin, cout, 3, 1, relu)

    def block(name, x, c):
        y = conv3(f"{name}.conv1", x, c, c, relu=True)
        y = conv3(f"{name}.conv2", y, c, c, relu=False)
        b.scope = f"/{name}"
        return b.op("Relu", [b.op("Add", [y, x])])

    x = conv3("stem", "input", 3, 32, relu=True)
    x = block("layer1", x, 32)
    b.scope = ""
    x = b.op("MaxPool", [x], kernel_shape=[2, 2], strides=[2, 2],
             pads=[0, 0, 0, 0])
    x = conv3("widen", x, 32, 64, relu=True)
    x = block("layer2", x, 64)
    b.scope = ""
    x = b.op("GlobalAveragePool", [x])
    x = b.op("Flatten", [x], axis=1)
    b.weight("fc.weight", (10, 64))
    b.init("fc.bias", (0.01 * b.rng.standard_normal(10)).astype(np.float32))
    b.nodes.append(helper.make_node("Gemm", [x, "fc.weight", "fc.bias"],
                                    ["logits"], name="/fc/Gemm", alpha=1.0,
                                    beta=1.0, transB=1))
    model = b.model(
        "small_cnn",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT,
                                       ["batch", 3, 32, 32])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT,
                                       ["batch", 10])])
    inputs = [np.random.default_rng(105).standard_normal(
        (2, 3, 32, 32)).astype(np.float32)]
    return model, inputs, reference.small_cnn


# --- Driver -----------------------------------------------------------------

BUILDERS = {
    "mlp": build_mlp,
    "transformer_block": build_transformer_block,
    "resnet18": build_resnet18,
    "small_cnn": build_small_cnn,
}


def run_onnxruntime(model, inputs):
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.intra_op_num_threads = 2
    session = ort.InferenceSession(model.SerializeToString(), options,
                                   providers=["CPUExecutionProvider"])
    feeds = {i.name: a for i, a in zip(session.get_inputs(), inputs)}
    return session.run(None, feeds)


def write_data_set(folder, model, inputs, outputs):
    os.makedirs(folder, exist_ok=True)
    for kind, infos, arrays in (("input", model.graph.input, inputs),
                                ("output", model.graph.output, outputs)):
        for n, (info, array) in enumerate(zip(infos, arrays)):
            tensor = numpy_helper.from_array(array, info.name)
            with open(os.path.join(folder, f"{kind}_{n}.pb"), "wb") as f:
                f.write(tensor.SerializeToString())


def fix_symbolic_dims(model, inputs, outputs):
    """Replaces every dim_param of the graph's inputs and outputs by the size
    it has in the test data, so that the whole graph is statically shaped."""
    for values, arrays in ((model.graph.input, inputs),
                           (model.graph.output, outputs)):
        for value, array in zip(values, arrays):
            for dim, size in zip(value.type.tensor_type.shape.dim,
                                 array.shape):
                if dim.HasField("dim_param"):
                    dim.dim_value = int(size)


def main():
    parser = argparse.ArgumentParser(
        description="Writes Kiln's demo ONNX models and their test data sets.")
    parser.add_argument("--out", required=True, help="output folder")
    parser.add_argument("--only", default=",".join(BUILDERS),
                        help="comma-separated subset of " + ",".join(BUILDERS))
    parser.add_argument("--static-shapes", action="store_true",
                        help="fix the graph inputs' and outputs' symbolic "
                        "dims (batch, seq) to the test data's sizes")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for name in args.only.split(","):
        if name not in BUILDERS:
            parser.error(f"unknown model '{name}'")
        start = time.time()
        model, inputs, numpy_reference = BUILDERS[name]()
        path = os.path.join(args.out, f"{name}.onnx")
        onnx.save(model, path)
        outputs = run_onnxruntime(model, inputs)
        if args.static_shapes:
            fix_symbolic_dims(model, inputs, outputs)
            onnx.checker.check_model(model, full_check=True)
            onnx.save(model, path)
        checked = "onnxruntime"
        if numpy_reference is not None:
            weights = {t.name: numpy_helper.to_array(t)
                       for t in model.graph.initializer}
            expected = numpy_reference(weights, *inputs)
            for got, want in zip(outputs, expected):
                np.testing.assert_allclose(
                    got, want, rtol=1e-4, atol=1e-5,
                    err_msg=f"{name}: onnxruntime and models/reference.py "
                    "disagree")
            checked += " == numpy reference"
        write_data_set(os.path.join(args.out, name, "test_data_set_0"), model,
                       inputs, outputs)
        print(f"{name}: {len(model.graph.node)} nodes, "
              f"{sum(int(np.prod(t.dims)) for t in model.graph.initializer)} "
              f"parameters, outputs from {checked} -> {path} "
              f"({time.time() - start:.1f} s)")


if __name__ == "__main__":
    main()
