#!/usr/bin/env bash
# The checks that need a GPU, in one run: what CI (a machine without one) cannot do.
#
#   bash tools/gpu_check.sh [OUT_DIR]        # default OUT_DIR: gpu-check/ (git-ignored)
#
# Run it from the repository's root, on a machine with a CUDA GPU, CuPy and the package's test dependencies
# (README's install with the cuda12 or cuda13 extra; PYTHON=... picks the interpreter, python3 by default).
# Each stage writes OUT_DIR/<stage>.log and prints its exit status, its time and the log's last lines; a stage
# that fails does not stop the next one, and the script's own exit status is the number of stages that failed.
#
#   env       the GPU, the driver and the libraries' versions; gpu_available() must be True
#   tour      python -m attention_from_scratch tour --backend cupy (every concept's checked computation on CuPy)
#   tests     pytest -m gpu: every test of the xp fixture on CuPy float64 and float32 (the NumPy and
#             array-api-strict cases run in CI)
#   backend   tests/test_backend.py and tests/test_main.py whole: what they expect depends on whether a GPU is usable
#   notebook  notebook 25 (the same code on a GPU), English and Chinese, under nbval: its stored outputs must
#             match on any machine, but for the cells marked NBVAL_IGNORE_OUTPUT (the device, the timings)
#   bench     benchmarks/bench_backends.py: NumPy against CuPy, with its figure in OUT_DIR
set -u
OUT=${1:-gpu-check}
PY=${PYTHON:-python3}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 MPLBACKEND=Agg
# the package from this checkout, also where it is not installed (a bare GPU machine)
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
WORKERS=${WORKERS:-8}
failed=0

stage() {  # stage NAME SECONDS COMMAND...
    local name=$1 limit=$2 start rc
    shift 2
    start=$(date +%s)
    timeout "$limit" "$@" >"$OUT/$name.log" 2>&1
    rc=$?
    echo "=== $name: exit $rc in $(($(date +%s) - start)) s (limit $limit s)"
    tail -n "${TAIL:-15}" "$OUT/$name.log"
    [ "$rc" -eq 0 ] || failed=$((failed + 1))
}

env_report() {
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || return 1
    "$PY" - <<'EOF'
import sys

import array_api_compat
import cupy
import numpy

from attention_from_scratch.infra.backend import gpu_available

props = cupy.cuda.runtime.getDeviceProperties(0)
print(f"Python {sys.version.split()[0]}, NumPy {numpy.__version__}, CuPy {cupy.__version__}, "
      f"array-api-compat {array_api_compat.__version__}, CUDA runtime {cupy.cuda.runtime.runtimeGetVersion()}, "
      f"GPU {props['name'].decode()}")
assert gpu_available(), "gpu_available() is False on a machine with a GPU"
print("gpu_available(): True")
EOF
}

PYTEST=("$PY" -m pytest -o addopts= -p no:cacheprovider -p no:nbval -q -rfE)
export -f env_report
export PY
stage env 60 bash -c env_report
stage tour 90 "$PY" -m attention_from_scratch tour --backend cupy
stage backend 90 "${PYTEST[@]}" tests/test_backend.py tests/test_main.py
stage notebook 120 "${PYTEST[@]}" notebooks/25_gpu.ipynb notebooks/zh/25_gpu.ipynb
stage bench 150 "$PY" benchmarks/bench_backends.py --out "$OUT"
stage tests 360 "${PYTEST[@]}" -n "$WORKERS" --dist loadfile --durations=10 -m gpu tests
echo "=== $failed stage(s) failed; logs in $OUT/"
exit "$failed"
