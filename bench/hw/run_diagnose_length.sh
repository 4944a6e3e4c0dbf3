#!/usr/bin/env bash
# One call on a single H200 (post-hoc diagnosis of registered plan 2): per-layer times inside long chain runs under
# the trajectory probe's and the executor's conditions, and the MLP block op by op at M = 8192 rested.
#   CTAHW_COMMIT=<commit> bash bench/hw/run_diagnose_length.sh
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
run_begin 20
say "run-length probe"
timeout 200 python3 bench/hw/run_length_probe.py "$R/run_length.csv" 2>&1 | tee "$R/run_length.log"
say "MLP block breakdown M=8192, rested"
timeout 200 python3 bench/hw/mlp_block_breakdown.py "$R/breakdown-8192.csv" --ms 8192 --reps 5 --rest-ms 300 2>&1 \
  | tee "$R/breakdown-8192.log"
run_end
