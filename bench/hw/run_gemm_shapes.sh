#!/usr/bin/env bash
# One call on a single H200: bench/hw/gemm_shape_probe.py (the CUTLASS GEMM over shapes and tile orders, rested),
# nvidia-smi sampled every 100 ms.   CTAHW_COMMIT=<commit> bash bench/hw/run_gemm_shapes.sh
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
R="$OUT/run"; mkdir -p "$R"
OUT="$R" record_env
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active \
  --format=csv -lms 100 > "$R/smi.csv" 2>&1 &
SMI=$!
say "GEMM shapes x tile orders"
timeout 520 python3 bench/hw/gemm_shape_probe.py "$R/gemm_shapes.csv" 2>&1 | tee "$R/gemm_shapes.log"
kill $SMI
OUT="$R" record_env_end
cp "$LOG" "$R/log.txt"
tar czf "$OUT/run.tar.gz" -C "$OUT" run && rm -rf "$R"
