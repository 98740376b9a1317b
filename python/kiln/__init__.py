"""Kiln: compile ONNX models and run them, from Python.

    import kiln
    artifact = kiln.compile("model.onnx", opt_level=3, precision="fp16")
    session = kiln.InferenceSession(artifact)
    outputs = session.run(None, {"x": x})
    print(session.benchmark(warmup=10, iterations=100)["time_ms"])

``kiln.compile`` and ``kiln.ir`` take what ``kiln-compile`` takes (keyword
arguments for the common options, ``flags=[...]`` for any other of its
flags) and run the same compiler in-process (libkiln-compiler.so); errors
raise ``kiln.CompileError`` with the diagnostics. ``kiln.InferenceSession``
is shaped like ``onnxruntime.InferenceSession`` and runs artifacts with
Kiln's runtime; ``benchmark`` is kiln-run's measurement, timed in C++.
``kiln.backend`` runs the ONNX backend test suite through Kiln.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Union

import numpy as np

from . import _kiln
from . import distributed  # noqa: F401 (kiln.distributed)

__version__ = _kiln.version()

__all__ = [
    "Artifact", "CompileError", "Diagnostic", "InferenceSession", "NodeArg",
    "STAGES", "compile", "compile_flags", "ir", "__version__",
]

#: What ``kiln.ir`` and ``kiln.compile(..., stage=)`` can produce.
STAGES = ("kiln", "graph", "onnx", "linalg", "llvm-dialect", "llvm", "ptx",
          "fatbin", "asm", "obj", "so", "artifact")
_TEXT_STAGES = ("kiln", "graph", "linalg", "llvm-dialect", "llvm", "ptx", "asm")


@dataclass(frozen=True)
class Diagnostic:
    """One message of a compile: severity ("error", "warning", "remark",
    "note"), the location as MLIR prints it, the ONNX node it names (or ""),
    the message, and the line as kiln-compile prints it."""
    severity: str
    location: str
    node: str
    message: str
    text: str

    def __str__(self) -> str:
        return self.text


class CompileError(RuntimeError):
    """A compile failed; ``diagnostics`` holds every message (the errors
    name the file, the ONNX node and the reason)."""

    def __init__(self, diagnostics: Sequence[Diagnostic]):
        self.diagnostics = list(diagnostics)
        errors = [d for d in self.diagnostics if d.severity == "error"]
        shown = errors or self.diagnostics
        super().__init__("\n".join(str(d) for d in shown) or "compile failed")


ModelLike = Union[str, os.PathLike, bytes, Any]
ProgressCallback = Callable[[str, str, int, int], None]


def _flags(target: str, opt_level: Optional[int], precision: Optional[str],
           kernels: Optional[str], input_shapes: Optional[Mapping[str, Sequence[int]]],
           disable_passes: Iterable[str], cpu: Optional[str],
           flags: Iterable[str],
           shape_hints: Optional[Mapping[str, Sequence[Any]]] = None
           ) -> List[str]:
    out: List[str] = []
    if target != "cpu":
        out.append(f"--target={target}")
    if opt_level is not None:
        out.append(f"-O{int(opt_level)}")
    if precision is not None:
        out.append(f"--precision={precision}")
    if kernels is not None:
        out.append(f"--kernels={kernels}")
    if cpu is not None:
        out.append(f"--cpu={cpu}")
    for name, shape in (input_shapes or {}).items():
        out.append("--input-shapes=" + name + ":" +
                   "x".join(str(int(d)) for d in shape))
    for name, hint in (shape_hints or {}).items():
        if len(hint) != 3:
            raise ValueError(f"shape_hints[{name!r}] must be (min, opt, "
                             f"max), not {hint!r}")
        out.append("--shape-hints=" + name + ":" + "..".join(
            str(int(h)) if isinstance(h, (int, np.integer)) else
            "x".join(str(int(d)) for d in h) for h in hint))
    passes = list(disable_passes)
    if passes:
        out.append("--disable-pass=" + ",".join(passes))
    out.extend(flags)
    return out


def _source(model: ModelLike):
    """(kind, bytes, name, base_dir) for the native compile."""
    if isinstance(model, (str, os.PathLike)):
        path = os.fspath(model)
        return "file", path.encode(), path, ""
    if isinstance(model, (bytes, bytearray, memoryview)):
        return "onnx", bytes(model), "<bytes>", ""
    serialize = getattr(model, "SerializeToString", None)
    if serialize is not None:  # an onnx.ModelProto
        name = getattr(getattr(model, "graph", None), "name", "") or "<ModelProto>"
        return "onnx", serialize(), name, ""
    raise TypeError("model must be a path, the model's bytes or an "
                    f"onnx.ModelProto, not {type(model).__name__}")


def _compile(model: ModelLike, stage: str, flag_list: List[str],
             progress: Optional[ProgressCallback], pass_report: bool = False):
    if stage not in STAGES:
        raise ValueError(f"stage must be one of {', '.join(STAGES)}, not {stage!r}")
    kind, source, name, base_dir = _source(model)
    result = _kiln.compile(kind, source, name, base_dir, flag_list, stage,
                           pass_report, progress)
    diagnostics = [Diagnostic(*d) for d in result.diagnostics]
    if not result.ok:
        raise CompileError(diagnostics)
    return result, diagnostics


class Artifact:
    """A compiled model: the bytes of a ``.kiln`` file.

    ``save(path)`` writes it; ``info`` is its header (target, inputs,
    outputs, options, pipeline: docs/artifact.md); ``bytes(artifact)`` or
    ``.data`` the bytes; ``diagnostics``, ``messages`` (the tables of
    --auto-keep, int8 calibration, --accuracy-report) and ``pipeline``
    come from the compile."""

    def __init__(self, data: bytes, diagnostics: Sequence[Diagnostic] = (),
                 messages: str = "", pipeline: str = ""):
        self.data = bytes(data)
        self.diagnostics = list(diagnostics)
        self.messages = messages
        self.pipeline = pipeline
        self._info: Optional[Dict[str, Any]] = None

    def __bytes__(self) -> bytes:
        return self.data

    def __len__(self) -> int:
        return len(self.data)

    def save(self, path: Union[str, os.PathLike]) -> None:
        """Writes the artifact to ``path`` (through a temporary file renamed
        into place)."""
        path = os.fspath(path)
        directory = os.path.dirname(os.path.abspath(path))
        fd, tmp = tempfile.mkstemp(prefix=".kiln-", dir=directory)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(self.data)
            os.replace(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise

    @property
    def info(self) -> Dict[str, Any]:
        """The artifact's header JSON as a dict."""
        if self._info is None:
            # The prefix: magic (8), then the header's offset and size.
            magic = self.data[:8]
            if magic != b"KILNART\0":
                raise ValueError("not a Kiln artifact")
            with _TempArtifact(self) as path:
                session = _kiln.Session(path, 1)
                self._info = json.loads(session.metadata())
        return self._info

    def __repr__(self) -> str:
        return f"<kiln.Artifact {len(self.data)} bytes>"


class _TempArtifact:
    """The artifact as a file, for as long as the runtime reads it."""

    def __init__(self, artifact: Artifact):
        self.artifact = artifact
        self.path = ""

    def __enter__(self) -> str:
        fd, self.path = tempfile.mkstemp(prefix="kiln-", suffix=".kiln")
        with os.fdopen(fd, "wb") as f:
            f.write(self.artifact.data)
        return self.path

    def __exit__(self, *exc) -> None:
        if self.path and os.path.exists(self.path):
            os.unlink(self.path)


def compile(model: ModelLike, *, target: str = "cpu", opt_level: Optional[int] = 2,
            precision: Optional[str] = None, kernels: Optional[str] = None,
            input_shapes: Optional[Mapping[str, Sequence[int]]] = None,
            disable_passes: Iterable[str] = (), cpu: Optional[str] = None,
            flags: Iterable[str] = (),
            progress: Optional[ProgressCallback] = None,
            shape_hints: Optional[Mapping[str, Sequence[Any]]] = None
            ) -> Artifact:
    """Compiles ``model`` (a path, the model's bytes or an ``onnx.ModelProto``)
    to an artifact, as ``kiln-compile model.onnx -o model.kiln`` does.

    ``target`` is "cpu" or "cuda:sm_80|sm_89|sm_90"; ``opt_level`` the graph
    pipeline's -O level (0-3); ``precision`` "fp32", "fp16", "bf16" or "int8"
    (int8 needs ``flags=["--calibration=DIR"]``); ``kernels`` "codegen" or
    "library"; ``input_shapes`` static shapes by input name; ``shape_hints``
    the sizes dynamic dims take, ``{"batch": (1, 1, 8)}`` by symbol or
    ``{"img": ([1, 3, 8, 8], [4, 3, 8, 8], [8, 3, 8, 8])}`` by input, as
    (min, opt, max): runs outside min..max are rejected, the CPU kernels are
    tiled for opt (``--shape-hints``); ``disable_passes``
    graph passes left out; ``cpu`` "native", "generic" or an LLVM CPU name;
    ``flags`` any other kiln-compile flag. ``progress(stage, detail, step,
    steps)`` is called as the compile goes. Raises CompileError."""
    result, diagnostics = _compile(
        model, "artifact",
        _flags(target, opt_level, precision, kernels, input_shapes,
               disable_passes, cpu, flags, shape_hints), progress)
    pipeline = result.graph_pipeline + " ; " + result.backend_pipeline
    return Artifact(result.output, diagnostics, result.messages, pipeline)


def ir(model: ModelLike, stage: str = "graph", *, target: str = "cpu",
       opt_level: Optional[int] = 2, precision: Optional[str] = None,
       kernels: Optional[str] = None,
       input_shapes: Optional[Mapping[str, Sequence[int]]] = None,
       disable_passes: Iterable[str] = (), cpu: Optional[str] = None,
       flags: Iterable[str] = (),
       progress: Optional[ProgressCallback] = None,
       shape_hints: Optional[Mapping[str, Sequence[Any]]] = None
       ) -> Union[str, bytes]:
    """The model at a stage of the compiler, as ``kiln-compile --emit=STAGE``
    writes it: text for kiln, graph, linalg, llvm-dialect, llvm, ptx and asm;
    bytes for onnx, fatbin, obj, so and artifact. Same options as compile."""
    result, _ = _compile(
        model, stage,
        _flags(target, opt_level, precision, kernels, input_shapes,
               disable_passes, cpu, flags, shape_hints), progress)
    if stage in _TEXT_STAGES and "--emit-bytecode" not in flags:
        return result.output.decode()
    return result.output


def pass_report(model: ModelLike, *, opt_level: Optional[int] = 2,
                disable_passes: Iterable[str] = (),
                flags: Iterable[str] = ()) -> Dict[str, Any]:
    """The graph pipeline's per-pass report (``kiln-compile --report``'s
    JSON, docs/passes.md) with the pipeline itself under "pipeline"."""
    result, _ = _compile(model, "graph",
                         _flags("cpu", opt_level, None, None, None,
                                disable_passes, None, flags),
                         None, pass_report=True)
    return json.loads(result.pass_report)


def compile_flags() -> List[Dict[str, str]]:
    """Every kiln-compile flag this package accepts in ``flags=``."""
    return [{"name": n, "kind": k, "help": h} for n, k, h in _kiln.compile_flags()]


# --------------------------------------------------------------------------
# Running
# --------------------------------------------------------------------------

_DTYPE_NAMES = {1: "float32", 2: "uint8", 3: "int8", 4: "uint16", 5: "int16",
                6: "int32", 7: "int64", 9: "bool", 10: "float16",
                11: "float64", 12: "uint32", 13: "uint64", 16: "bfloat16"}
_ORT_TYPES = {name: f"tensor({'float' if name == 'float32' else 'double' if name == 'float64' else 'float16' if name == 'float16' else name})"
              for name in _DTYPE_NAMES.values()}


def _bfloat16():
    import ml_dtypes  # pinned in the project's requirements
    return np.dtype(ml_dtypes.bfloat16)


def _numpy_dtype(code: int) -> np.dtype:
    name = _DTYPE_NAMES.get(code)
    if name is None:
        raise ValueError(f"dtype code {code} has no numpy type")
    return _bfloat16() if name == "bfloat16" else np.dtype(name)


def _code_of(dtype: np.dtype) -> int:
    name = "bfloat16" if dtype.name == "bfloat16" else dtype.name
    for code, n in _DTYPE_NAMES.items():
        if n == name:
            return code
    return 0


@dataclass(frozen=True)
class NodeArg:
    """An input or output, as onnxruntime's NodeArg: name, shape, type
    ("tensor(float)", ...) and the numpy dtype. ``shape`` has an int per
    static dim and, as onnxruntime shows dim_params, a string per symbolic
    one: the symbol for an input ("batch"), the expression computing it for
    an output ("batch * seq")."""
    name: str
    shape: List[Union[int, str]]
    type: str
    dtype: np.dtype


class InferenceSession:
    """Runs a Kiln artifact, shaped like ``onnxruntime.InferenceSession``.

    ``path_or_artifact`` is a ``.kiln`` path or a ``kiln.Artifact``;
    ``threads`` the OpenMP threads (None: all cores); ``device`` None (the
    artifact's target), "cpu", "cuda" or "cuda:N"."""

    def __init__(self, path_or_artifact: Union[str, os.PathLike, Artifact],
                 threads: Optional[int] = None, device: Optional[str] = None,
                 cuda_graphs: bool = True):
        self._temp: Optional[str] = None
        if isinstance(path_or_artifact, Artifact):
            fd, self._temp = tempfile.mkstemp(prefix="kiln-", suffix=".kiln")
            with os.fdopen(fd, "wb") as f:
                f.write(path_or_artifact.data)
            path = self._temp
        else:
            path = os.fspath(path_or_artifact)
        # Under mpirun/srun the process joins the launcher's world (a
        # tensor-parallel shard needs it; docs/cluster.md); alone, nothing.
        _kiln.distributed.init()
        try:
            self._session = _kiln.Session(path, int(threads or 0), device or "",
                                          bool(cuda_graphs))
        except BaseException:
            self._cleanup()
            raise
        self._inputs = [self._arg(*t) for t in self._session.inputs()]
        self._outputs = [self._arg(*t) for t in self._session.outputs()]

    @staticmethod
    def _arg(name: str, code: int, dims: List[int], names: List[str]) -> NodeArg:
        dtype = _numpy_dtype(code)
        shape = [n if n else int(d) for d, n in zip(dims, names)]
        return NodeArg(name, shape, _ORT_TYPES[_DTYPE_NAMES[code]], dtype)

    def _cleanup(self) -> None:
        if self._temp and os.path.exists(self._temp):
            os.unlink(self._temp)
        self._temp = None

    def __del__(self):
        self._cleanup()

    def get_inputs(self) -> List[NodeArg]:
        return list(self._inputs)

    def get_outputs(self) -> List[NodeArg]:
        return list(self._outputs)

    @property
    def device(self) -> str:
        return self._session.device()

    @property
    def num_threads(self) -> int:
        return self._session.num_threads()

    def get_modelmeta(self) -> Dict[str, Any]:
        """The artifact's header (docs/artifact.md)."""
        return json.loads(self._session.metadata())

    @property
    def symbols(self) -> List[str]:
        """The symbols of the model's symbolic dims, in the artifact's
        order (empty for a model of static shapes)."""
        return list(self.get_modelmeta().get("symbols", []))

    def _symbol_values(self, dims: Optional[Mapping[str, int]]) -> Dict[str, int]:
        symbols = self.symbols
        values = {name: 1 for name in symbols}
        for name, value in (dims or {}).items():
            if name not in values:
                have = (f"its symbols are {', '.join(symbols)}" if symbols
                        else "its shapes are static")
                raise ValueError(f"dims: the model has no symbol {name!r} ({have})")
            if int(value) < 1:
                raise ValueError(f"dims: {name} must be at least 1, not {value}")
            values[name] = int(value)
        return values

    def _feeds(self, feeds: Mapping[str, Any]):
        names = [i.name for i in self._inputs]
        unknown = [k for k in feeds if k not in names]
        if unknown:
            raise ValueError(f"unknown input {unknown[0]!r}; the model's inputs "
                             f"are {', '.join(names)}")
        out = []
        for arg in self._inputs:
            if arg.name not in feeds:
                raise ValueError(f"missing input {arg.name!r}")
            array = np.asarray(feeds[arg.name])
            # Zero-copy for C-contiguous, aligned arrays; a copy otherwise.
            if not array.flags.c_contiguous or not array.flags.aligned:
                array = np.ascontiguousarray(array)
            code = _code_of(array.dtype)
            if code == 0:
                raise ValueError(f"input {arg.name!r}: numpy dtype {array.dtype} "
                                 "has no Kiln tensor type (the model expects "
                                 f"{arg.dtype})")
            view = array.view(np.uint16) if array.dtype.name == "bfloat16" else array
            out.append((view, code))
        return out

    def run(self, output_names: Optional[Sequence[str]],
            input_feed: Mapping[str, Any]) -> List[np.ndarray]:
        """Runs the model once on ``input_feed`` (name -> array) and returns
        the outputs named in ``output_names`` (None: all), in that order.
        A model with symbolic dims runs at any shape consistent with them
        (each symbol is the same wherever it appears) and returns outputs of
        the shapes that follow. A wrong dtype or shape (a static dim, a rank,
        two sizes for one symbol) raises ValueError with the runtime's
        message. The GIL is released while the model runs."""
        results = self._session.run(self._feeds(input_feed))
        arrays = []
        for array, code in results:
            if _DTYPE_NAMES.get(code) == "bfloat16":
                array = array.view(_bfloat16())
            arrays.append(array)
        if output_names is None:
            return arrays
        names = [o.name for o in self._outputs]
        picked = []
        for name in output_names:
            if name not in names:
                raise ValueError(f"unknown output {name!r}; the model's outputs "
                                 f"are {', '.join(names)}")
            picked.append(arrays[names.index(name)])
        return picked

    def generate(self, prompts: Sequence[Sequence[int]], *,
                 max_new_tokens: int = 64, stop_ids: Sequence[int] = (),
                 temperature: float = 0.0, top_k: int = 0, top_p: float = 1.0,
                 seed: int = 0, pad_id: int = 0,
                 max_length: int = 0) -> Dict[str, Any]:
        """Generates with a decoder that carries a KV cache or a recurrent
        state (docs/generation.md): one prefill over the left-padded
        ``prompts`` (sequences of token ids), then one decode step per token,
        all in the runtime (C++; the GIL is released). Greedy unless
        ``temperature`` > 0 (then seeded sampling with ``top_k``/``top_p``).

        Returns a dict: ``tokens`` (the new ids per prompt, ending at a stop
        id), ``step_ms`` (when each step's tokens were chosen, from the
        start: ``step_ms[0]`` is the time to first token), ``state_bytes``
        and ``peak_state_bytes`` (the KV cache or state),
        ``step_copied_bytes`` (per step, the state bytes carried into a new
        buffer: a Concat-grown cache's size, 0 for a static cache written in
        place), ``prompt_length`` (after padding) and ``vocab``. A model
        that is not such a decoder, an empty prompt or an id outside the
        vocab raises ValueError."""
        return self._session.generate(
            [[int(t) for t in p] for p in prompts], int(max_new_tokens),
            [int(t) for t in stop_ids], float(temperature), int(top_k),
            float(top_p), int(seed), int(pad_id), int(max_length))

    def benchmark(self, input_feed: Optional[Mapping[str, Any]] = None, *,
                  warmup: int = 10, iterations: int = 100,
                  duration: float = 0.0, profile: bool = False,
                  seed: int = 0,
                  dims: Optional[Mapping[str, int]] = None) -> Dict[str, Any]:
        """kiln-run's measurement: one cold run, ``warmup`` runs, then
        ``iterations`` timed runs (and/or ``duration`` seconds of them),
        timed in C++ without Python in the loop. Returns the run times and
        their summary ("time_ms": min, median, mean, p90, p99, max,
        stddev), memory peaks, energy where RAPL is readable, and with
        ``profile=True`` each kernel's time ("kernels"). Without
        ``input_feed`` the inputs are seeded random numbers; for a model
        with symbolic dims their shapes take ``dims`` (symbol -> size, e.g.
        ``dims={"batch": 4}``; a symbol not given is 1), with
        ``input_feed`` the arrays' shapes decide. The symbols' values are
        returned under "symbols" (models with symbolic dims)."""
        if input_feed is not None and dims:
            raise ValueError("dims= picks the shapes of random inputs; with "
                             "input_feed the arrays' shapes decide")
        values = self._symbol_values(dims)
        if input_feed is None:
            rng = np.random.default_rng(seed)
            input_feed = {}
            for arg in self._inputs:
                shape = [values[d] if isinstance(d, str) else d for d in arg.shape]
                if arg.dtype.kind == "f" or arg.dtype.name == "bfloat16":
                    value = rng.standard_normal(shape).astype(arg.dtype)
                elif arg.dtype.kind == "b":
                    value = rng.integers(0, 2, shape).astype(bool)
                else:
                    value = rng.integers(0, 8, shape).astype(arg.dtype)
                input_feed[arg.name] = value
        else:  # from the first input dim naming each, as the runtime binds
            bound = set()
            for arg in self._inputs:
                shape = np.shape(input_feed[arg.name]) if arg.name in input_feed else ()
                for axis, d in enumerate(arg.shape):
                    if isinstance(d, str) and d not in bound and axis < len(shape):
                        values[d] = int(shape[axis])
                        bound.add(d)
        feeds = self._feeds(input_feed)
        result = self._session.benchmark(feeds, int(warmup), int(iterations),
                                         float(duration), bool(profile))
        if values:
            result["symbols"] = values
        return result
