"""Test data for kiln-run-dynamic.test, for test/Runtime/TestDynamicModel.c
(symbols n, m; x [n, m], b [1, m]; y = concat(x + b, x + b + 2.5) over the
last axis [n, m * 2], even = x[0::2] [(n + 1) / 2, m], count = [n * m]).

Writes OUT/set_N_M/ (ONNX TensorProto input_K.pb / output_K.pb, as a test
data set has them) for (n, m) = (5, 3) and (2, 7), and OUT/conflict/ whose
b has another m than x.
"""
import os
import sys

import numpy as np
from onnx import numpy_helper

out = sys.argv[1]


def save(folder, name, array):
    with open(os.path.join(folder, name), "wb") as f:
        f.write(numpy_helper.from_array(array).SerializeToString())


def data_set(n, m, seed, folder=None):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, size=(n, m)).astype(np.float32)
    b = rng.uniform(-1, 1, size=(1, m)).astype(np.float32)
    folder = folder or os.path.join(out, f"set_{n}_{m}")
    os.makedirs(folder, exist_ok=True)
    s = x + b
    save(folder, "input_0.pb", x)
    save(folder, "input_1.pb", b)
    save(folder, "output_0.pb",
         np.concatenate([s, s + np.float32(2.5)], axis=1))
    save(folder, "output_1.pb", x[0::2])
    save(folder, "output_2.pb", np.array([n * m], dtype=np.int64))
    return folder


data_set(5, 3, 1)
data_set(2, 7, 2)
conflict = data_set(3, 4, 3, os.path.join(out, "conflict"))
save(conflict, "input_1.pb", np.zeros((1, 6), dtype=np.float32))
