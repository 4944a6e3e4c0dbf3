#!/usr/bin/env bash
# Registered plan 47 on one lent H200, one call: `ctahw calibrate` writes this machine's own profile; the committed
# bench/block_gemm_orders.py predicts registered plan 46's eight GEMMs with it (and with the committed profiles, the
# naive line and a naive line through this calibration's own tile-order timings) BEFORE anything of them is timed;
# then they are timed (bench/hw/gemm_shape_probe.py) and plan 46's traces run again (a third machine for plan 46).
#
#   CTAHW_COMMIT=<commit> bash bench/hw/run_own_profile.sh
# from a tree of bench/hw/device_tree.sh with --with bench/hw/run_own_profile.sh bench/hw/gemm_shape_probe.py
# bench/hw/order_trace_probe.py bench/block_gemm_orders.py bench/plan_judge.py bench/predictions/reg46-long-k-forms
# bench/results/hw/2026-11-29-run2/baselines.csv. Writes $OUT/run.tar.gz: env.txt, log.txt, smi.csv, calibrate.log,
# h200-x1-own.toml, calibration.json, calibration-probes/, predicted-own/ (predicted.csv, predict.log),
# gemm_shapes.csv (.log), probe/ (.log).
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
run_begin 100
SHAPES=$(python3 -c "import pandas as pd; d = pd.read_csv('bench/predictions/reg46-long-k-forms/predicted.csv'); \
print(','.join(f'{m}x{n}x{k}' for m, n, k in d[['m', 'n', 'k']].drop_duplicates().itertuples(index=False)))")
say "ctahw calibrate (this machine's own profile)"
timeout 420 python3 -m ctahw.cli calibrate --reps 5 --name h200-x1-own --out "$R/h200-x1-own.toml" \
  --json "$R/calibration.json" --probe-out "$R/calibration-probes" --no-percta --no-fold > "$R/calibrate.log" 2>&1
say "calibrate exit $?"
say "predict (before any of the eight GEMMs is timed): $SHAPES"
mkdir -p "$R/predicted-own"
python3 bench/block_gemm_orders.py --predict "$SHAPES" --profile own="$R/h200-x1-own.toml" \
  --naive-probe "$R/calibration-probes/tile_orders.csv" --out "$R/predicted-own" > "$R/predicted-own/predict.log" 2>&1
say "predict exit $?"
say "gemm_shape_probe"
python3 bench/hw/gemm_shape_probe.py "$R/gemm_shapes.csv" --reps 3 --shapes "$SHAPES" > "$R/gemm_shapes.log" 2>&1
say "gemm_shape_probe exit $?"
say "order_trace_probe (plan 46's traces)"
python3 bench/hw/order_trace_probe.py "$R/probe" --shapes 16384x16384,8192x36864,4096x53248 \
  --orders along_m/8,along_m/1 > "$R/probe.log" 2>&1
say "order_trace_probe exit $?"
run_end
