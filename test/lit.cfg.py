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

# No progress lines from kiln-compile: checks read its stderr.
config.environment["KILN_QUIET"] = "1"
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
     "kiln-c-api-example", "kiln-cuda-bench"], tool_dirs)
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


# mlir-runner and its runtime libraries (tests that run lowered IR on the
# host).
_mlir_lib = os.path.join(config.llvm_tools_dir, "..", "lib")
_runner_libs = [os.path.join(_mlir_lib, n) for n in
                ("libmlir_runner_utils.so", "libmlir_c_runner_utils.so")]
if (os.path.exists(os.path.join(config.llvm_tools_dir, "mlir-runner")) and
        all(os.path.exists(p) for p in _runner_libs)):
    config.available_features.add("mlir-runner")
    config.substitutions.append(("%mlir_runner_libs", ",".join(_runner_libs)))


# The runtime runs "cuda" artifacts (-DKILN_ENABLE_CUDA_RUNTIME, default ON).
if config.kiln_cuda_runtime:
    config.available_features.add("cuda-runtime")
# The CUDA runtime's stand-ins (test/Runtime): the fake libcuda that runs
# on the host, and TestCudaModel.c's kernels as a real fatbin (when nvcc was
# found).
config.substitutions.append(
    ("%fake_libcuda",
     os.path.join(config.kiln_obj_root, "lib", "libkiln_fake_cuda.so")))
config.substitutions.append(
    ("%fake_libcublaslt",
     os.path.join(config.kiln_obj_root, "lib", "libkiln_fake_cublaslt.so")))
config.substitutions.append(
    ("%fake_libcudnn",
     os.path.join(config.kiln_obj_root, "lib", "libkiln_fake_cudnn.so")))
if config.kiln_test_cuda_fatbin:
    config.available_features.add("cuda-test-fatbin")
    config.substitutions.append(("%cuda_test_fatbin",
                                 config.kiln_test_cuda_fatbin))


def _compiles_cuda_artifacts():
    # kiln-compile writes CUDA artifacts once it can emit their fatbin.
    compile_ = os.path.join(config.kiln_tools_dir, "kiln-compile")
    if not config.kiln_build_cuda or not os.path.exists(compile_):
        return False
    try:
        out = subprocess.run([compile_, "--help"], capture_output=True,
                             text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return False
    return "=fatbin" in out.stdout


if _compiles_cuda_artifacts():
    config.available_features.add("cuda-artifacts")


def _gpu_present():
    # What Kiln's own runtime sees (libcuda loaded, cuInit, a device), with
    # the real driver: `kiln-run --list-devices` lists cuda:0. nvidia-smi
    # where kiln-run is not built yet.
    env = {k: v for k, v in os.environ.items() if k != "KILN_LIBCUDA"}
    run = os.path.join(config.kiln_tools_dir, "kiln-run")
    if os.path.exists(run):
        cmd = [run, "--list-devices"]
        want = "\ncuda:0 "
    else:
        smi = shutil.which("nvidia-smi")
        if not smi:
            return False
        cmd = [smi, "-L"]
        want = "GPU"
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=60,
                             env=env)
    except (OSError, subprocess.SubprocessError):
        return False
    return out.returncode == 0 and want in out.stdout


# Set only when a GPU is really there: tests that need one report UNSUPPORTED
# (lit's SKIPPED) everywhere else.
if _gpu_present():
    config.available_features.add("cuda-gpu")
