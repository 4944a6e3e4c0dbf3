#!/usr/bin/env bash
# One call on a single H200: bench/hw/gemm_shape_probe.py (the CUTLASS GEMM over shapes and tile orders, rested),
# nvidia-smi sampled every 100 ms.   CTAHW_COMMIT=<commit> bash bench/hw/run_gemm_shapes.sh
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
run_begin 100
say "GEMM shapes x tile orders"
timeout 520 python3 bench/hw/gemm_shape_probe.py "$R/gemm_shapes.csv" 2>&1 | tee "$R/gemm_shapes.log"
run_end
