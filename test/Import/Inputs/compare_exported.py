"""compare_exported.py ORIGINAL EXPORTED: runs both ONNX files with ONNX
Runtime on the same inputs (float: seeded normal values, int64: 3, bool:
true and false) and prints PASS or FAIL per output."""

import sys

import numpy as np
import onnx
import onnxruntime as ort


def feeds(model, flip):
    rng = np.random.default_rng(0)
    result = {}
    for value in model.graph.input:
        t = value.type.tensor_type
        shape = [d.dim_value or 2 for d in t.shape.dim]
        if t.elem_type == onnx.TensorProto.FLOAT:
            result[value.name] = rng.standard_normal(shape).astype(np.float32)
        elif t.elem_type == onnx.TensorProto.INT64:
            result[value.name] = np.full(shape, 3, np.int64)
        elif t.elem_type == onnx.TensorProto.BOOL:
            result[value.name] = np.full(shape, not flip)
    return result


def main():
    original, exported = sys.argv[1], sys.argv[2]
    onnx.checker.check_model(onnx.load(exported))
    a = ort.InferenceSession(original, providers=["CPUExecutionProvider"])
    b = ort.InferenceSession(exported, providers=["CPUExecutionProvider"])
    ok = True
    for flip in (False, True):
        f = feeds(onnx.load(original), flip)
        for x, y in zip(a.run(None, f), b.run(None, f)):
            ok &= x.shape == y.shape and np.allclose(x, y, rtol=1e-4,
                                                      atol=1e-5)
    print("PASS" if ok else "FAIL")


if __name__ == "__main__":
    main()
