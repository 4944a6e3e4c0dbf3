#!/usr/bin/env bash
# One call on a single H200: the clock regime's calibration (bench/hw/clock_trajectory.py) and the MLP block's
# op-by-op breakdown on a rested GPU (300 ms host sleep before every timed run), nvidia-smi sampled every 50 ms.
#
#   CTAHW_COMMIT=<commit> bash bench/hw/run_clock_regime.sh
# Writes $OUT/run.tar.gz: env.txt, log.txt, trajectory.csv, breakdown-rested.csv, *.log, smi.csv.
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
run_begin 50
say "clock trajectory"
timeout 200 python3 bench/hw/clock_trajectory.py "$R/trajectory.csv" 2>&1 | tee "$R/trajectory.log"
say "MLP block breakdown, rested"
timeout 250 python3 bench/hw/mlp_block_breakdown.py "$R/breakdown-rested.csv" --reps 5 --rest-ms 300 2>&1 \
  | tee "$R/breakdown-rested.log"
run_end
