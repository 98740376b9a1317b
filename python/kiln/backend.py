"""kiln.backend: Kiln as an ``onnx.backend.base.Backend``.

``onnx.backend.test.BackendTest(kiln.backend, __name__)`` runs the onnx
wheel's backend test suite through Kiln: each test model is compiled for
this CPU (``kiln.compile``) and run with ``kiln.InferenceSession``. A model
Kiln cannot compile fails with the compiler's diagnostics (the ONNX node and
what is missing), as ONNX Runtime's backend does.

    python -m pytest test/Python/test_onnx_backend.py -k 'test_relu'
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Sequence, Tuple

import numpy as np
import onnx
from onnx.backend.base import Backend, BackendRep

from . import InferenceSession, compile as kiln_compile


class KilnBackendRep(BackendRep):
    """A compiled model ready to run."""

    def __init__(self, session: InferenceSession):
        self.session = session

    def run(self, inputs: Any, **kwargs: Any) -> Tuple[np.ndarray, ...]:
        names = [i.name for i in self.session.get_inputs()]
        if isinstance(inputs, dict):
            feeds = dict(inputs)
        else:
            if not isinstance(inputs, (list, tuple)):
                inputs = [inputs]
            if len(inputs) != len(names):
                raise ValueError(f"the model takes {len(names)} inputs "
                                 f"({', '.join(names)}), {len(inputs)} given")
            feeds = dict(zip(names, inputs))
        return tuple(self.session.run(None, feeds))


class KilnBackend(Backend):
    """Compiles with ``kiln.compile`` (options from ``prepare``'s keyword
    arguments: opt_level, precision, kernels, flags, ...) and runs on the
    CPU."""

    @classmethod
    def is_compatible(cls, model: onnx.ModelProto, device: str = "CPU",
                      **kwargs: Any) -> bool:
        return cls.supports_device(device)

    @classmethod
    def prepare(cls, model: onnx.ModelProto, device: str = "CPU",
                **kwargs: Any) -> KilnBackendRep:
        super().prepare(model, device, **kwargs)
        if not cls.supports_device(device):
            raise RuntimeError(f"kiln.backend runs on the CPU, not {device}")
        options: Dict[str, Any] = {k: v for k, v in kwargs.items()
                                   if k in ("opt_level", "precision", "kernels",
                                            "input_shapes", "disable_passes",
                                            "cpu", "flags")}
        artifact = kiln_compile(model, **options)
        return KilnBackendRep(InferenceSession(artifact, threads=kwargs.get("threads")))

    @classmethod
    def run_model(cls, model: onnx.ModelProto, inputs: Any, device: str = "CPU",
                  **kwargs: Any) -> Tuple[np.ndarray, ...]:
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def run_node(cls, node: onnx.NodeProto, inputs: Any, device: str = "CPU",
                 outputs_info: Optional[Sequence[Tuple[Any, Any]]] = None,
                 **kwargs: Any) -> Tuple[np.ndarray, ...]:
        """One node as a model of its own (opset from ``kwargs["opset_version"]``
        or the newest the onnx wheel knows)."""
        inputs = list(inputs)
        graph_inputs = [
            onnx.helper.make_tensor_value_info(
                name, onnx.helper.np_dtype_to_tensor_dtype(np.asarray(x).dtype),
                np.asarray(x).shape)
            for name, x in zip(node.input, inputs)]
        graph_outputs = [onnx.helper.make_empty_tensor_value_info(name)
                         for name in node.output]
        graph = onnx.helper.make_graph([node], "run_node", graph_inputs,
                                       graph_outputs)
        opset = kwargs.pop("opset_version", onnx.defs.onnx_opset_version())
        model = onnx.helper.make_model(
            graph, opset_imports=[onnx.helper.make_opsetid("", opset)])
        return cls.run_model(model, inputs, device, **kwargs)

    @classmethod
    def supports_device(cls, device: str) -> bool:
        return str(device).upper().startswith("CPU")


prepare = KilnBackend.prepare
run_model = KilnBackend.run_model
run_node = KilnBackend.run_node
supports_device = KilnBackend.supports_device
is_compatible = KilnBackend.is_compatible
