"""Test data for kiln-run's lit test (kiln-run.test).

Writes, for test/Runtime/TestModel.c (y = x * w + s + b[0], z = sum(s)):
  OUT/pb/    input_N.pb and output_N.pb (ONNX TensorProto, as the backend
             tests have them; x with raw_data, s with int32_data)
  OUT/npy/   the same as .npy
  OUT/wrong/ output_N.npy with 3 wrong elements of y and a wrong z
  OUT/badshape/ input_0.npy of the wrong shape, input_1.npy
"""
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
rng = np.random.default_rng(7)
x = rng.uniform(-1, 1, size=(4, 8)).astype(np.float32)
s = rng.integers(-5, 5, size=(8,)).astype(np.int32)
w = (0.25 * (np.arange(32) % 8) - 1.0).astype(np.float32).reshape(4, 8)
y = (x * w + s.astype(np.float32)) + np.float32(1.0)
z = np.array([s.astype(np.int64).sum()], dtype=np.int64)

for d in ("pb", "npy", "wrong", "badshape"):
    os.makedirs(os.path.join(out, d), exist_ok=True)


def save_pb(path, array, name, typed=False):
    if typed:  # the typed field instead of raw_data
        t = helper.make_tensor(name, TensorProto.INT32, array.shape,
                               array.flatten().tolist())
    else:
        t = numpy_helper.from_array(array, name)
    with open(path, "wb") as f:
        f.write(t.SerializeToString())


save_pb(os.path.join(out, "pb", "input_0.pb"), x, "x")
save_pb(os.path.join(out, "pb", "input_1.pb"), s, "s", typed=True)
save_pb(os.path.join(out, "pb", "output_0.pb"), y, "y")
save_pb(os.path.join(out, "pb", "output_1.pb"), z, "z")
np.save(os.path.join(out, "npy", "input_0.npy"), x)
np.save(os.path.join(out, "npy", "input_1.npy"), s)
np.save(os.path.join(out, "npy", "output_0.npy"), y)
np.save(os.path.join(out, "npy", "output_1.npy"), z)
bad = y.copy()
bad[0, 0] += 0.5
bad[1, 3] -= 1.0
bad[3, 7] = np.nan
np.save(os.path.join(out, "wrong", "output_0.npy"), bad)
np.save(os.path.join(out, "wrong", "output_1.npy"), z + 1)
np.save(os.path.join(out, "badshape", "input_0.npy"), x[:, :7].copy())
np.save(os.path.join(out, "badshape", "input_1.npy"), s)
