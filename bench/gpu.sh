#!/bin/sh
# bench/gpu.sh: run bench/gpu.py on a machine with an NVIDIA GPU (CUDA 13 driver).
# Installs pir with its cuda extra (cupy-cuda13x with the CUDA libraries from PyPI) and the
# gpu-bench extra (torch) into .venv, then runs the benchmark within 8 minutes.
# Extra arguments go to gpu.py (e.g. --no-torch, --ops rms,softmax, --dry-run).
set -eu
cd "$(dirname "$0")/.."
PY=.venv/bin/python
test -x "$PY" || python3 -m venv .venv
"$PY" -m pip install -q -e '.[cuda,gpu-bench]'
exec timeout 480 "$PY" bench/gpu.py "$@"
