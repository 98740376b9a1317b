#!/usr/bin/env python3
"""Adds ONNX's multi-device annotations (IR version 11) to a model.

    annotate_sharding.py IN.onnx OUT.onnx --devices N \\
        [--column NODE,...] [--row NODE,...] [--replicate NODE,...] \\
        [--configuration NAME] [--pipeline-stage NODE=S,...]

Writes a `ModelProto.configuration` of N devices and, on each named
matmul-like node (MatMul, Gemm, MatMulInteger, QLinearMatMul), a
`NodeProto.device_configurations` entry whose sharding specs say
Megatron-style tensor parallelism:

  --column   the weight split along its output columns (N of [K, N]; K of
             Gemm's transB [N, K]), the activation input replicated, the
             output split along its last axis;
  --row      the weight split along its contracted rows, the activation
             input split along its last axis, the output replicated (the
             partial sums added);
  --replicate  every input and the output replicated.

This is what a framework's sharding export writes (the ONNX sharding
formalism, docs/proposals/ShardingFormalism.md); Kiln's
`kiln-compile --tensor-parallel=N` follows it (docs/cluster.md). Needs the
`onnx` package of the project's venv (1.18 or newer).
"""

import argparse
import sys

import onnx
from onnx import helper

MATMULS = {"MatMul": 1, "Gemm": 1, "MatMulInteger": 1, "QLinearMatMul": 3}


def _spec(tensor, devices, axis=None):
    spec = onnx.ShardingSpecProto()
    spec.tensor_name = tensor
    spec.device.extend(range(devices))
    if axis is not None:
        dim = spec.sharded_dim.add()
        dim.axis = axis
        simple = dim.simple_sharding.add()
        simple.num_shards = devices
    return spec


def _initializer_rank(model, name):
    for t in model.graph.initializer:
        if t.name == name:
            return len(t.dims)
    return 2


def annotate(model, devices, column=(), row=(), replicate=(),
             configuration=None, stages=None):
    """Annotates `model` in place; returns it."""
    configuration = configuration or f"tp{devices}"
    config = model.configuration.add()
    config.name = configuration
    config.num_devices = devices
    roles = {}
    for role, names in (("column", column), ("row", row),
                        ("replicate", replicate)):
        for name in names:
            roles[name] = role
    stages = stages or {}
    found = set()
    for node in model.graph.node:
        if node.name not in roles and node.name not in stages:
            continue
        entry = node.device_configurations.add()
        entry.configuration_id = configuration
        if node.name in stages:
            entry.pipeline_stage = stages[node.name]
        role = roles.get(node.name)
        if role is None:
            found.add(node.name)
            continue
        if node.op_type not in MATMULS:
            sys.exit(f"annotate_sharding: node '{node.name}' is a "
                     f"{node.op_type}, not a matmul")
        w = node.input[MATMULS[node.op_type]]
        a = node.input[0]
        trans_b = node.op_type == "Gemm" and any(
            at.name == "transB" and at.i for at in node.attribute)
        rank = _initializer_rank(model, w)
        cols, rows = (rank - 2, rank - 1) if trans_b else (rank - 1, rank - 2)
        if role == "column":
            entry.sharding_spec.extend([
                _spec(a, devices), _spec(w, devices, cols),
                _spec(node.output[0], devices, -1)])
        elif role == "row":
            entry.sharding_spec.extend([
                _spec(a, devices, -1), _spec(w, devices, rows),
                _spec(node.output[0], devices)])
        else:
            entry.sharding_spec.extend(
                [_spec(a, devices), _spec(w, devices),
                 _spec(node.output[0], devices)])
        found.add(node.name)
    missing = (set(roles) | set(stages)) - found
    if missing:
        sys.exit("annotate_sharding: no node named " +
                 ", ".join(sorted(missing)))
    model.ir_version = max(model.ir_version, 11)
    return model


def _names(text):
    return [n for n in (text or "").split(",") if n]


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("input")
    parser.add_argument("output")
    parser.add_argument("--devices", type=int, required=True)
    parser.add_argument("--column", default="")
    parser.add_argument("--row", default="")
    parser.add_argument("--replicate", default="")
    parser.add_argument("--configuration")
    parser.add_argument("--pipeline-stage", default="",
                        help="NODE=STAGE,...")
    args = parser.parse_args()
    stages = {}
    for item in _names(args.pipeline_stage):
        node, _, stage = item.partition("=")
        stages[node] = int(stage)
    model = onnx.load(args.input)
    annotate(model, args.devices, _names(args.column), _names(args.row),
             _names(args.replicate), args.configuration, stages)
    onnx.save(model, args.output)


if __name__ == "__main__":
    main()
