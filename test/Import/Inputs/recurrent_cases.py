"""Writes RNN/GRU/LSTM models and ONNX Runtime's outputs for them as
backend-test folders (<out>/<case>/model.onnx, test_data_set_0/*.pb), for
checking Kiln's unrolling of the recurrent ops.

    recurrent_cases.py OUT_DIR

ONNX Runtime runs neither layout = 1 nor double GRU/LSTM: the expected
outputs come from the layout-0, float32 form of each model (inputs
transposed and cast, outputs transposed back and cast).
"""

import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(1)


def write_case(out, name, op, hidden, input_size, seq, batch, attrs,
               direction="forward", bias=False, init_h=False, init_c=False,
               peepholes=False, seq_lens=None, seq_lens_const=False,
               outputs=("Y", "Y_h"), layout=0, dtype=np.float32):
    gates = {"RNN": 1, "GRU": 3, "LSTM": 4}[op]
    dirs = 2 if direction == "bidirectional" else 1
    feeds, inputs, inits, names = {}, [], [], []

    def add(name, array, const=False):
        if const:
            inits.append(numpy_helper.from_array(array, name))
        else:
            feeds[name] = array
            inputs.append(helper.make_tensor_value_info(
                name, helper.np_dtype_to_tensor_dtype(array.dtype),
                array.shape))
        names.append(name)

    def normal(*shape, scale=1.0):
        return (scale * rng.standard_normal(shape)).astype(dtype)

    state = (batch, dirs, hidden) if layout else (dirs, batch, hidden)
    add("X", normal(*((batch, seq, input_size) if layout
                      else (seq, batch, input_size))))
    add("W", normal(dirs, gates * hidden, input_size, scale=0.5))
    add("R", normal(dirs, gates * hidden, hidden, scale=0.5))
    optional = [("B", bias, lambda: normal(dirs, 2 * gates * hidden)),
                ("sequence_lens", seq_lens is not None,
                 lambda: np.array(seq_lens, np.int32)),
                ("initial_h", init_h, lambda: normal(*state))]
    if op == "LSTM":
        optional += [("initial_c", init_c, lambda: normal(*state)),
                     ("P", peepholes, lambda: normal(dirs, 3 * hidden))]
    for input_name, present, make in optional:
        if present:
            add(input_name, make(), input_name == "sequence_lens" and
                seq_lens_const)
        else:
            names.append("")
    while names[-1] == "":
        names.pop()
    formal = ["Y", "Y_h", "Y_c"][: 3 if op == "LSTM" else 2]
    outs = [o if o in outputs else "" for o in formal]
    while outs[-1] == "":
        outs.pop()

    def build(lay, shapes, elem, graph_inputs):
        extra = {"layout": lay} if lay else {}
        node = helper.make_node(op, names, outs, name="rec",
                                hidden_size=hidden, direction=direction,
                                **attrs, **extra)
        graph = helper.make_graph(
            [node], "g", graph_inputs,
            [helper.make_tensor_value_info(o, elem, s)
             for o, s in zip([o for o in outs if o], shapes)],
            initializer=inits)
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
        m.ir_version = 7
        return m

    ref_feeds = {k: v.astype(np.float32) if v.dtype == np.float64 else v
                 for k, v in feeds.items()}
    if layout:
        for k in ("X", "initial_h", "initial_c"):
            if k in ref_feeds:
                ref_feeds[k] = ref_feeds[k].transpose(1, 0, 2)
    ref_inputs = [helper.make_tensor_value_info(
        k, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
        for k, v in ref_feeds.items()]
    ref_model = build(0, [None] * 3, TensorProto.FLOAT, ref_inputs)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    expected = ort.InferenceSession(
        ref_model.SerializeToString(), options,
        providers=["CPUExecutionProvider"]).run(None, ref_feeds)
    if layout:
        expected = [e.transpose(2, 0, 1, 3) if e.ndim == 4
                    else e.transpose(1, 0, 2) for e in expected]
    expected = [e.astype(dtype) for e in expected]
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    m = build(layout, [e.shape for e in expected], elem, inputs)

    folder = os.path.join(out, name)
    data = os.path.join(folder, "test_data_set_0")
    os.makedirs(data, exist_ok=True)
    onnx.save(m, os.path.join(folder, "model.onnx"))
    for i, (k, v) in enumerate(feeds.items()):
        with open(os.path.join(data, f"input_{i}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(v, k).SerializeToString())
    for i, e in enumerate(expected):
        with open(os.path.join(data, f"output_{i}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(e).SerializeToString())


CASES = [
    ("rnn_bidi", "RNN", 3, 2, 4, 2, {},
     dict(direction="bidirectional", bias=True, init_h=True)),
    ("rnn_reverse_relu", "RNN", 3, 2, 3, 2, {"activations": ["Relu"]},
     dict(direction="reverse", bias=True)),
    ("rnn_layout1", "RNN", 3, 2, 3, 2, {},
     dict(direction="bidirectional", layout=1, init_h=True)),
    ("gru_bidi", "GRU", 4, 3, 3, 2, {},
     dict(direction="bidirectional", bias=True, init_h=True)),
    ("gru_linear_before_reset", "GRU", 4, 3, 3, 2,
     {"linear_before_reset": 1},
     dict(direction="bidirectional", bias=True, init_h=True)),
    ("gru_seq_lens", "GRU", 4, 3, 4, 2, {}, dict(bias=True, seq_lens=[4, 2])),
    ("gru_reverse_seq_lens", "GRU", 4, 3, 4, 3, {},
     dict(direction="reverse", bias=True, init_h=True, seq_lens=[3, 1, 4])),
    ("gru_f64", "GRU", 3, 2, 3, 2, {},
     dict(bias=True, init_h=True, dtype=np.float64)),
    ("lstm_peepholes_full_lens", "LSTM", 3, 2, 3, 2, {},
     dict(direction="bidirectional", bias=True, init_h=True, init_c=True,
          peepholes=True, seq_lens=[3, 3], seq_lens_const=True,
          outputs=("Y", "Y_h", "Y_c"))),
    ("lstm_layout1_reverse_seq_lens", "LSTM", 3, 2, 4, 2, {},
     dict(direction="reverse", layout=1, bias=True, seq_lens=[2, 4],
          outputs=("Y", "Y_h", "Y_c"))),
    ("lstm_layout1_initial", "LSTM", 3, 2, 3, 2, {},
     dict(direction="bidirectional", layout=1, bias=True, init_h=True,
          init_c=True, outputs=("Y", "Y_h", "Y_c"))),
    ("lstm_bidi_seq_lens", "LSTM", 3, 2, 4, 2, {},
     dict(direction="bidirectional", bias=True, seq_lens=[4, 3],
          outputs=("Y", "Y_h", "Y_c"))),
    ("lstm_activations", "LSTM", 3, 2, 3, 2,
     {"activations": ["HardSigmoid", "Tanh", "Softsign",
                      "Sigmoid", "LeakyRelu", "Tanh"],
      "activation_alpha": [0.3, 0.2], "activation_beta": [0.4]},
     dict(direction="bidirectional", bias=True,
          outputs=("Y", "Y_h", "Y_c"))),
    ("rnn_clip", "RNN", 3, 2, 3, 2, {"clip": 0.5}, dict(bias=True)),
    ("gru_clip", "GRU", 3, 2, 3, 2, {"clip": 0.7},
     dict(direction="bidirectional", bias=True, init_h=True)),
    ("lstm_clip_peepholes", "LSTM", 3, 2, 3, 2, {"clip": 0.6},
     dict(bias=True, init_c=True, peepholes=True,
          outputs=("Y", "Y_h", "Y_c"))),
    ("lstm_f64_only_yc", "LSTM", 3, 2, 3, 2, {},
     dict(outputs=("Y_c",), dtype=np.float64)),
]


def main():
    out = sys.argv[1]
    for name, *args, kwargs in CASES:
        write_case(out, name, *args, **kwargs)
        print(name)


if __name__ == "__main__":
    main()
