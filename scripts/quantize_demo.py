#!/usr/bin/env python3
#===- scripts/quantize_demo.py - QDQ versions of the demo models ---------===#
#
# Quantizes a demo model (models/generate_demo_models.py) with ONNX
# Runtime's post-training static quantization, as a user would before
# handing the model to Kiln: QDQ format, int8 activations (per tensor,
# asymmetric), int8 weights per output channel (symmetric). The MLP is
# quantized whole; the transformer block only in its MatMuls (quantizing
# every elementwise op of a transformer costs accuracy and time: each one
# becomes a float op between a DequantizeLinear and a QuantizeLinear), and
# of those only the linear layers (a weight initializer): attention's
# activation x activation MatMuls stay float.
# The small CNN is first run through ONNX Runtime's quant_pre_process,
# which folds each BatchNormalization into its Conv (as a user quantizing a
# CNN would); its Convs then quantize per output channel with an i32 bias.
# Calibration: 16 deterministic random batches (seed 0) of the model's
# input shape, min/max.
#
#   quantize_demo.py MODEL.onnx OUT.onnx [--name mlp|transformer_block|small_cnn]
#
# Used by test/E2E/int8_models.py and scripts/bench_int8.py.
#
#===----------------------------------------------------------------------===#

import argparse
import logging
import os

import numpy as np
import onnx

MATMUL_ONLY = {"transformer_block"}
PREPROCESS = {"small_cnn"}


def input_shapes(model):
    init = {t.name for t in model.graph.initializer}
    shapes = {}
    for i in model.graph.input:
        if i.name in init:
            continue
        dims = [d.dim_value if d.dim_value > 0 else 1
                for d in i.type.tensor_type.shape.dim]
        shapes[i.name] = dims
    return shapes


def inputs_for(model, seed, batch=None):
    """Random float32 inputs (standard normal) for every graph input; dim 0
    replaced by `batch` when given."""
    rng = np.random.default_rng(seed)
    result = {}
    for name, dims in input_shapes(model).items():
        if batch is not None:
            dims = [batch] + dims[1:]
        result[name] = rng.standard_normal(dims).astype(np.float32)
    return result


def quantize(fp32_path, out_path, name):
    from onnxruntime.quantization import (CalibrationDataReader, QuantFormat,
                                          QuantType, quantize_static)
    model = onnx.load(fp32_path)

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.batches = iter([inputs_for(model, seed) for seed in range(16)])

        def get_next(self):
            return next(self.batches, None)

    logging.getLogger().setLevel(logging.ERROR)
    extra = {}
    if name in MATMUL_ONLY:
        # The linear layers only: MatMul/Gemm with a weight initializer.
        # Attention's activation x activation MatMuls stay float (and keep
        # Kiln's fused attention), as with dynamic quantization of Linear
        # layers.
        inits = {t.name for t in model.graph.initializer}
        extra["op_types_to_quantize"] = ["MatMul", "Gemm"]
        extra["nodes_to_exclude"] = [
            n.name for n in model.graph.node
            if n.op_type in ("MatMul", "Gemm") and n.input[1] not in inits]
    source = fp32_path
    if name in PREPROCESS:
        from onnxruntime.quantization.shape_inference import quant_pre_process
        source = out_path + ".pre.onnx"
        quant_pre_process(fp32_path, source, skip_symbolic_shape=True)
    quantize_static(source, out_path, Reader(),
                    quant_format=QuantFormat.QDQ, per_channel=True,
                    activation_type=QuantType.QInt8,
                    weight_type=QuantType.QInt8, **extra)


def output_step(model):
    """The scale of the quantizer in front of the first graph output (its
    DequantizeLinear), or, when the output is computed in float, the
    largest activation scale of the graph."""
    consts = {t.name: onnx.numpy_helper.to_array(t)
              for t in model.graph.initializer}
    producer = {o: n for n in model.graph.node for o in n.output}
    node = producer.get(model.graph.output[0].name)
    if node is not None and node.op_type == "DequantizeLinear":
        return float(np.max(consts[node.input[1]]))
    scales = [float(consts[n.input[1]].max()) for n in model.graph.node
              if n.op_type == "QuantizeLinear" and n.input[1] in consts]
    return max(scales)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("model")
    parser.add_argument("out")
    parser.add_argument("--name", default=None)
    args = parser.parse_args()
    name = args.name or os.path.splitext(os.path.basename(args.model))[0]
    quantize(args.model, args.out, name)


if __name__ == "__main__":
    main()
