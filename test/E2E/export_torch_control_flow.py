#!/usr/bin/env python3
#===- test/E2E/export_torch_control_flow.py - TorchScript control flow ----===#
#
# Exports small torch.jit.script'ed models with data-dependent control flow
# to ONNX (opset 17, static input shapes): an `if` on the data (ONNX If), a
# `for` loop over a dim (ONNX Loop with a trip count) and a `while` loop on
# a condition computed from the data (ONNX Loop with a condition). Run with
# the interpreter that has PyTorch (Debian's python3-torch 1.13 under
# /usr/bin/python3; the project's venv has none); test/E2E/control_flow.py
# runs it and checks Kiln against ONNX Runtime on the files.
#
#   export_torch_control_flow.py OUT_DIR   -> OUT_DIR/<name>.onnx, names on
#                                             stdout, one per line
#
# Exit 77 when PyTorch is not importable (the test reports a skip).
#
#===----------------------------------------------------------------------===#

import os
import sys
import warnings

try:
    import torch
    import torch.nn as nn
except ImportError as e:
    print(f"export_torch_control_flow: PyTorch not importable ({e})",
          file=sys.stderr)
    sys.exit(77)


class IfNet(nn.Module):
    """A branch on the sign of the input's sum."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        y = self.fc(x)
        if bool(x.sum() > 0):
            out = torch.relu(y) * 2.0
        else:
            out = torch.sigmoid(y) - 1.0
        return out


class ForNet(nn.Module):
    """An Elman RNN: a for loop over the sequence (dim 1)."""

    def __init__(self):
        super().__init__()
        self.ih = nn.Linear(8, 12)
        self.hh = nn.Linear(12, 12)

    def forward(self, x):
        h = torch.zeros(x.size(0), 12)
        for t in range(x.size(1)):
            h = torch.tanh(self.ih(x[:, t]) + self.hh(h))
        return h


class WhileNet(nn.Module):
    """Doubles x until its norm reaches a threshold (a loop whose number of
    iterations depends on the data), counting the steps."""

    def forward(self, x, limit):
        steps = torch.zeros(1)
        while bool(x.abs().sum() < limit):
            x = x * 2.0
            steps = steps + 1.0
        return x, steps


class StackNet(nn.Module):
    """A list appended in a loop, then stacked (SequenceEmpty,
    SequenceInsert in the Loop, ConcatFromSequence with new_axis)."""

    def forward(self, x):
        outs = []
        h = torch.zeros(x.size(0), 8)
        for t in range(x.size(1)):
            h = torch.tanh(x[:, t] + h)
            outs.append(h)
        return torch.stack(outs, 1)


class CatNet(nn.Module):
    """A list appended in a loop, then concatenated (ConcatFromSequence)."""

    def forward(self, x):
        outs = []
        for t in range(x.size(1)):
            outs.append(x[:, t] * 2.0)
        return torch.cat(outs, 0)


class UnbindNet(nn.Module):
    """A loop over x.unbind(0) (SplitToSequence, SequenceLength as the trip
    count, SequenceAt in the body)."""

    def forward(self, x):
        acc = torch.zeros(x.size(1))
        for row in x.unbind(0):
            acc = acc * 0.5 + row
        return acc


MODELS = {
    "torch_if": (IfNet, [("x", (3, 8))], ["y"]),
    "torch_for": (ForNet, [("x", (2, 5, 8))], ["h"]),
    "torch_while": (WhileNet, [("x", (4,)), ("limit", ())], ["y", "steps"]),
    "torch_list_stack": (StackNet, [("x", (2, 5, 8))], ["y"]),
    "torch_list_cat": (CatNet, [("x", (2, 5, 8))], ["y"]),
    "torch_unbind": (UnbindNet, [("x", (6, 8))], ["y"]),
}


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    for name, (make, inputs, outputs) in MODELS.items():
        module = torch.jit.script(make().eval())
        args = tuple(torch.randn(*shape) if shape else torch.tensor(1.0)
                     for _, shape in inputs)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(module, args, os.path.join(out, name + ".onnx"),
                              opset_version=17,
                              input_names=[n for n, _ in inputs],
                              output_names=outputs)
        print(name)


if __name__ == "__main__":
    main()
