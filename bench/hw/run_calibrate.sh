#!/usr/bin/env bash
# One call on a single H200: `ctahw calibrate` with the memory hierarchy's probes (the tile-order probe at the
# calibration split, 9 per-tile order traces and 4 ticket traces of the chain kernel), the complete h200-x1-calibrated profile in one command, and the
# committed derivations re-run on the probes' raw files; nvidia-smi sampled every 100 ms.
#
#   CTAHW_COMMIT=<commit> bash bench/hw/run_calibrate.sh [more ctahw calibrate flags, e.g. --quick]
# Writes $OUT/run.tar.gz (the device tool returns at most 8 files): env.txt, log.txt, smi.csv, calibrate.log,
# h200-x1-calibrated.toml, calibration.json, probes/ (tile_orders.csv, timing.csv, tiles-*.csv.gz, tickets.csv, drift.csv).
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
run_begin 100
say "ctahw calibrate (memory hierarchy included)"
timeout 540 python3 -m ctahw.cli calibrate --reps 5 --name h200-x1-calibrated --out "$R/h200-x1-calibrated.toml" \
  --json "$R/calibration.json" --probe-out "$R/probes" "$@" > "$R/calibrate.log" 2>&1
echo "calibrate exit $?" | tee -a "$LOG"; grep -E "^(l2_|cta_drift|ticket_spread|cluster_m|local_signal_ns|norm_|# Memory)" "$R/h200-x1-calibrated.toml" | tee -a "$LOG"
say "drift per trace (bench/order_drift.py)"
[ -d "$R/probes" ] && python3 bench/order_drift.py "$R/probes" 2>&1 | tail -10 | tee -a "$LOG"
run_end
