"""The onnx wheel's backend test suite through kiln.backend.

Every node, simple and pytorch-converted test of onnx.backend.test is
compiled for this CPU with kiln.compile and run with kiln.InferenceSession;
the outputs are checked by onnx's own runner (its tolerances). The "real"
model tests need downloads and are skipped offline; CUDA device variants
are skipped (kiln.backend runs on the CPU).

    .venv/bin/python -m pytest test/Python/test_onnx_backend.py -q
    .venv/bin/python test/Python/backend_report.py     # counts by reason

$KILN_BACKEND_TESTS (a regular expression) keeps only matching tests: the
bounded ctest run uses it.
"""

import os

import onnx.backend.test

import kiln.backend

backend_test = onnx.backend.test.BackendTest(kiln.backend, __name__)
pattern = os.environ.get("KILN_BACKEND_TESTS")
if pattern:
    backend_test.include(pattern)
# Model-zoo models: downloaded on demand, not available offline.
backend_test.exclude(r"^test_(bvlc_alexnet|densenet121|inception_v1|"
                     r"inception_v2|resnet50|shufflenet|squeezenet|vgg19|"
                     r"zfnet512)_")

globals().update(backend_test.enable_report().test_cases)
