"""Inputs and expected outputs of TestCudaModel.c (test/Runtime): x.npy and
exp/output_0.npy = relu(x + w) with the weight the test artifact packs."""
import os
import sys

import numpy as np

out = sys.argv[1]
x = (np.arange(8, dtype=np.float32).reshape(2, 4) - 3.5) * np.float32(0.75)
w = np.array([0.5, -1.0, 2.0, -3.0], dtype=np.float32)
os.makedirs(os.path.join(out, "exp"), exist_ok=True)
np.save(os.path.join(out, "x.npy"), x)
np.save(os.path.join(out, "exp", "output_0.npy"), np.maximum(x + w, 0))
