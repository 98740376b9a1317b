#===- test/E2E/kiln_e2e.py - Shared helpers of the end-to-end tests -------===#
#
# What the test/E2E scripts share: an ONNX test data set read into numpy
# arrays, and a model compiled and run in-process through the kiln package
# (PYTHONPATH=<build>/python), as kiln-compile and kiln-run would.
# A run that needs a setting the runtime reads once per process (e.g.
# KILN_QGEMM_PORTABLE=1) goes to a separate process that has it.
#
#===----------------------------------------------------------------------===#

import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from typing import List, Mapping, Optional, Sequence, Union

import numpy as np
import onnx
from onnx import numpy_helper

import kiln


class E2EError(Exception):
    """A compile or a run failed; the message says which and why."""


def load_tensors(folder: str, prefix: str = "input") -> List[np.ndarray]:
    """The arrays of folder/<prefix>_0.pb, <prefix>_1.pb, ... (TensorProto
    files of an ONNX test data set), up to the first missing index."""
    arrays, i = [], 0
    while os.path.exists(os.path.join(folder, f"{prefix}_{i}.pb")):
        tensor = onnx.TensorProto()
        with open(os.path.join(folder, f"{prefix}_{i}.pb"), "rb") as f:
            tensor.ParseFromString(f.read())
        arrays.append(numpy_helper.to_array(tensor))
        i += 1
    return arrays


def compile_and_run(model, inputs: Union[Sequence[np.ndarray],
                                         Mapping[str, np.ndarray]],
                    *, threads: Optional[int] = None,
                    **options) -> List[np.ndarray]:
    """Compiles `model` (a path, bytes or ModelProto) with
    kiln.compile(model, **options), runs the artifact once on `inputs`
    (arrays in the model's input order, or name -> array) with `threads`
    threads (None: all cores) and returns the outputs in the model's order.
    Raises E2EError ("compile: ..." or "run: ...")."""
    return run_artifact(compile_artifact(model, **options), inputs,
                        threads=threads)


def compile_artifact(model, **options) -> kiln.Artifact:
    """kiln.compile(model, **options); raises E2EError("compile: ...")."""
    try:
        return kiln.compile(model, **options)
    except kiln.CompileError as e:
        raise E2EError(f"compile: {e}") from e


def run_artifact(artifact: Union[kiln.Artifact, str],
                 inputs: Union[Sequence[np.ndarray], Mapping[str, np.ndarray]],
                 *, threads: Optional[int] = None,
                 env: Optional[Mapping[str, str]] = None) -> List[np.ndarray]:
    """Runs `artifact` (a kiln.Artifact or a .kiln path) once on `inputs`
    (arrays in the model's input order, or name -> array) with `threads`
    threads (None: all cores) and returns the outputs in the model's order.
    With `env` (name -> value) it runs in a separate process that has those
    environment variables set before it loads any model: for the runtime's
    settings that are read once per process (KILN_QGEMM_PORTABLE, KILN_ISA).
    Raises E2EError ("run: ...")."""
    if env:
        return _env_process(env).submit(run_artifact, artifact, inputs,
                                        threads=threads).result()
    try:
        session = kiln.InferenceSession(artifact, threads=threads)
        if not isinstance(inputs, Mapping):
            args = session.get_inputs()
            if len(inputs) != len(args):
                raise ValueError(f"{len(inputs)} inputs given, the model has "
                                 f"{len(args)}")
            inputs = {arg.name: value for arg, value in zip(args, inputs)}
        return session.run(None, inputs)
    except (RuntimeError, ValueError) as e:
        raise E2EError(f"run: {e}") from e


_ENV_PROCESSES = {}


def _env_process(env: Mapping[str, str]) -> ProcessPoolExecutor:
    """One worker process per environment, started (spawn, not fork: no
    runtime state inherited) with `env` added to this one's, and reused."""
    key = tuple(sorted(env.items()))
    if key not in _ENV_PROCESSES:
        _ENV_PROCESSES[key] = ProcessPoolExecutor(
            1, mp_context=multiprocessing.get_context("spawn"),
            initializer=_set_environ, initargs=(dict(env),))
    return _ENV_PROCESSES[key]


def _set_environ(env: Mapping[str, str]) -> None:
    os.environ.update(env)
