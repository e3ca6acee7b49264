#!/usr/bin/env bash
# Installs what tandem needs on a Debian 12 machine, and only what is missing: the Debian
# packages the build uses, and a Python venv with PyTorch, numpy and safetensors for the
# reference comparisons and benchmarks. Safe to run again; says what it did.
set -euo pipefail

venv="${TANDEM_VENV:-$HOME/.cache/tandem/venv}"
packages=(bazel-bootstrap bazel-platforms bazel-skylib catch2 libopenblas-dev nlohmann-json3-dev libcli11-dev
          libfmt-dev libbenchmark-dev zlib1g-dev python3 python3-venv)

say() { echo "setup: $*"; }
fail() { echo "setup: error: $*" >&2; exit 1; }

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# A python3 that is not Debian's (pyenv, say) serves as well, if it can make a venv.
if command -v python3 >/dev/null && python3 -c "import venv, ensurepip" 2>/dev/null; then
  missing=("${missing[@]/python3-venv/}")
  missing=("${missing[@]/python3/}")
fi
missing=($(printf '%s\n' "${missing[@]}" | grep -v '^$' || true))

if ((${#missing[@]})); then
  sudo=""
  if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null || fail "missing packages (${missing[*]}) and not root; install them with apt-get"
    sudo=sudo
  fi
  say "installing Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  if ! $sudo apt-get install -y --no-install-recommends "${missing[@]}" >/tmp/tandem-setup-apt.log 2>&1; then
    $sudo apt-get update >>/tmp/tandem-setup-apt.log 2>&1 || true
    $sudo apt-get install -y --no-install-recommends "${missing[@]}" >>/tmp/tandem-setup-apt.log 2>&1 ||
      fail "apt-get could not install ${missing[*]} (log: /tmp/tandem-setup-apt.log)"
  fi
else
  say "Debian packages present"
fi

if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "import torch, numpy, safetensors" 2>/dev/null; then
  say "Python venv present: $("$venv/bin/python" -c 'import torch; print("PyTorch", torch.__version__)') in $venv"
else
  say "creating a Python venv with PyTorch, numpy and safetensors in $venv (several GB, a few minutes)"
  python3 -m venv "$venv" || fail "python3 -m venv failed"
  "$venv/bin/pip" install --quiet --upgrade pip >/dev/null 2>&1 || true
  "$venv/bin/pip" install --quiet torch numpy safetensors >/tmp/tandem-setup-pip.log 2>&1 ||
    fail "pip could not install torch, numpy and safetensors (log: /tmp/tandem-setup-pip.log)"
  say "installed $("$venv/bin/python" -c 'import torch; print("PyTorch", torch.__version__)')"
fi

if command -v nvcc >/dev/null || [ -x "${CUDA_PATH:-/usr/local/cuda}/bin/nvcc" ]; then
  say "CUDA toolkit found: .cu files will be compiled"
else
  say "no CUDA toolkit: the build is CPU-only"
fi
