#!/usr/bin/env bash
#===- scripts/setup.sh - Install everything Kiln needs to build and test --===#
#
# Idempotent. On a fresh Debian 12 machine (as root, or with sudo) it installs
# the Debian packages for building and testing, then creates the project's
# Python environment (.venv, pinned PyPI packages from
# scripts/requirements.txt). `apt-get update` runs at most once, and only when
# a package is missing.
#
#===----------------------------------------------------------------------===#
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

PACKAGES=(
  cmake ninja-build ccache g++ git pkg-config
  libmlir-22-dev mlir-22-tools llvm-22-dev llvm-22-tools lld-22 libomp-22-dev
  libclang-rt-22-dev clang-22
  libopenblas-dev
  # oneDNN: the float32 convolutions of --kernels=auto (runtime/abi/kiln_abi_dnnl.cpp)
  libdnnl-dev
  # Open MPI: the tools under mpirun (docs/cluster.md); the tests run
  # mpirun -n 1, 2, 4
  openmpi-bin libopenmpi-dev
  libonnx-dev libonnx-testdata libprotobuf-dev protobuf-compiler
  libgtest-dev googletest
  python3 python3-venv python3-pip python3-dev
  # PyTorch exports of real architectures (models/export_torch_dynamic.py,
  # run with /usr/bin/python3 by test/E2E/dynamic_models.py)
  python3-torch python3-torchvision
  zlib1g-dev libzstd-dev libedit-dev libxml2-dev libcurl4-openssl-dev
)

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "setup: Debian packages present"
fi

# The project's Python environment: Debian's interpreter, pinned wheels.
VENV="$ROOT/.venv"
REQ="$ROOT/scripts/requirements.txt"
STAMP="$VENV/.requirements.sha256"
want="$(sha256sum "$REQ" | cut -d' ' -f1)"
if [ ! -x "$VENV/bin/python" ] || [ "$(cat "$STAMP" 2>/dev/null)" != "$want" ]; then
  echo "setup: creating $VENV"
  /usr/bin/python3 -m venv "$VENV"
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check -r "$REQ"
  echo "$want" > "$STAMP"
else
  echo "setup: Python environment up to date ($VENV)"
fi

# The kiln Python package lives in the build tree (build/python/kiln, made
# by scripts/build.sh): a .pth file puts it on the venv's path, so
# `.venv/bin/python -c "import kiln"` works once it is built.
SITE="$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
echo "$ROOT/build/python" > "$SITE/kiln-build.pth"
