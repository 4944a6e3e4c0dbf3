#!/usr/bin/env bash
# One call on a single H200: the clock regime's calibration (bench/hw/clock_trajectory.py) and the MLP block's
# op-by-op breakdown on a rested GPU (300 ms host sleep before every timed run), nvidia-smi sampled every 50 ms.
#
#   CTAHW_COMMIT=<commit> bash bench/hw/run_clock_regime.sh
# Writes $OUT/run.tar.gz: env.txt, log.txt, trajectory.csv, breakdown-rested.csv, *.log, smi.csv.
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
R="$OUT/run"; mkdir -p "$R"
OUT="$R" record_env
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active \
  --format=csv -lms 50 > "$R/smi.csv" 2>&1 &
SMI=$!
say "clock trajectory"
timeout 200 python3 bench/hw/clock_trajectory.py "$R/trajectory.csv" 2>&1 | tee "$R/trajectory.log"
say "MLP block breakdown, rested"
timeout 250 python3 bench/hw/mlp_block_breakdown.py "$R/breakdown-rested.csv" --reps 5 --rest-ms 300 2>&1 \
  | tee "$R/breakdown-rested.log"
kill $SMI
OUT="$R" record_env_end
cp "$LOG" "$R/log.txt"
tar czf "$OUT/run.tar.gz" -C "$OUT" run && rm -rf "$R"
