# -*- Python -*-
# lit configuration for Kiln's tests.

import os
import shutil
import subprocess

import lit.formats
from lit.llvm import llvm_config

config.name = "KILN"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.excludes = ["Inputs", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.kiln_obj_root, "test")

config.environment["FILECHECK_OPTS"] = (
    "-enable-var-scope --allow-unused-prefixes=false")

llvm_config.use_default_substitutions()
# lit.llvm's default substitutions already map %python to lit's own
# interpreter (without onnx): the project venv's must come first.
config.substitutions.insert(0, ("%python", config.kiln_python))
config.substitutions.append(("%kiln_src", config.kiln_src_root))
config.substitutions.append(("%testdata", "/usr/share/libonnx-testdata/data"))

tool_dirs = [config.kiln_tools_dir, config.llvm_tools_dir]
llvm_config.add_tool_substitutions(
    ["kiln-opt", "kiln-compile", "kiln-run", "kiln-test-artifact",
     "kiln-c-api-example"], tool_dirs)
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.kiln_tools_dir, append_path=True)

if os.path.isdir("/usr/share/libonnx-testdata/data"):
    config.available_features.add("onnx-testdata")
if config.kiln_have_cuda_toolkit:
    config.available_features.add("cuda-toolkit")
# The CUDA target was built (toolkit + MLIR's NVVM target): PTX tests run.
if config.kiln_build_cuda:
    config.available_features.add("cuda-target")
# ptxas assembles the PTX the CUDA tests write (no GPU needed).
_ptxas = os.path.join(config.cuda_bin_dir or "", "ptxas")
if not os.path.exists(_ptxas):
    _ptxas = shutil.which("ptxas") or "/usr/local/cuda/bin/ptxas"
if os.path.exists(_ptxas):
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", _ptxas))


def _gpu_present():
    smi = shutil.which("nvidia-smi")
    if not smi:
        return False
    try:
        out = subprocess.run([smi, "-L"], capture_output=True, text=True,
                             timeout=20)
    except (OSError, subprocess.SubprocessError):
        return False
    return out.returncode == 0 and "GPU" in out.stdout


# Set only when a GPU is really there: tests that need one report UNSUPPORTED
# (lit's SKIPPED) everywhere else.
if _gpu_present():
    config.available_features.add("cuda-gpu")
