"""Type stubs of kiln._kiln, the native half of the kiln package
(python/KilnModule.cpp)."""

from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np

def version() -> str: ...
def compile_flags() -> List[Tuple[str, str, str]]: ...

class CompileResult:
    ok: bool
    output: bytes
    diagnostics: List[Tuple[str, str, str, str, str]]
    messages: str
    pass_report: str
    graph_pipeline: str
    backend_pipeline: str

def compile(kind: str, source: bytes, name: str, base_dir: str,
            flags: List[str], stage: str, pass_report: bool = False,
            progress: Optional[Callable[[str, str, int, int], None]] = None
            ) -> CompileResult: ...

class Session:
    def __init__(self, path: str, threads: int = 0, device: str = "",
                 cuda_graphs: bool = True) -> None: ...
    # (name, dtype code, dims with -1 for a symbolic dim, per dim its
    # symbol / expression or "" for a static dim)
    def inputs(self) -> List[Tuple[str, int, List[int], List[str]]]: ...
    def outputs(self) -> List[Tuple[str, int, List[int], List[str]]]: ...
    def metadata(self) -> str: ...
    def device(self) -> str: ...
    def num_threads(self) -> int: ...
    def run(self, feeds: List[Tuple[np.ndarray, int]]) -> List[Tuple[np.ndarray, int]]: ...
    def generate(self, prompts: List[List[int]], max_new_tokens: int,
                 stop_ids: List[int], temperature: float, top_k: int,
                 top_p: float, seed: int, pad_id: int, max_length: int
                 ) -> Dict[str, Any]: ...
    def benchmark(self, feeds: List[Tuple[np.ndarray, int]], warmup: int,
                  iterations: int, duration: float, profile: bool
                  ) -> Dict[str, Any]: ...
