#!/usr/bin/env bash
# Registered plan 48 on one lent H200, one call: `ctahw calibrate` writes this machine's own profile; `ctasim predict`
# predicts plan 48's experiments with it (bench/own_profile_blocks.py's EXPERIMENTS) BEFORE any of them runs; then
# `ctahw run` measures them, each answering the committed-profile registration bench/predictions/reg48-committed/EXP.
#
#   CTAHW_COMMIT=<commit> bash bench/hw/run_own_blocks.sh
# from a tree of bench/hw/device_tree.sh with --with bench/hw/run_own_blocks.sh bench/own_profile_blocks.py
# bench/predictions/reg48-committed bench/results/hw/2026-11-29-run2/baselines.csv. Writes $OUT/run.tar.gz: env.txt,
# log.txt, smi.csv, calibrate.log, h200-x1-own.toml, calibration.json, calibration-probes/, reg48-own/EXP/ (the own
# profile's registrations), EXP/ (results.csv, run.json, traces), EXP.log.
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
run_begin 100
EXPS=$(python3 -c "import sys; sys.path.insert(0, 'bench'); from own_profile_blocks import EXPERIMENTS; print(' '.join(EXPERIMENTS))")
say "ctahw calibrate (this machine's own profile)"
timeout 300 python3 -m ctahw.cli calibrate --reps 5 --name h200-x1-own --out "$R/h200-x1-own.toml" \
  --json "$R/calibration.json" --probe-out "$R/calibration-probes" --no-percta --no-fold > "$R/calibrate.log" 2>&1
say "calibrate exit $?"
for e in $EXPS; do
  say "predict $e with the own profile (before any experiment runs)"
  timeout 60 python3 -m ctasim.cli predict "$e" --hardware "$R/h200-x1-own.toml" --out "$R/reg48-own/$e" \
    --naive-from bench/results/hw/2026-11-29-run2/baselines.csv > "$R/reg48-own-$e.log" 2>&1
  say "predict exit $?"
done
for e in $EXPS; do
  say "run $e"
  timeout 200 python3 -m ctahw.cli run "$e" --registration "bench/predictions/reg48-committed/$e" --tune-rounds 2 \
    --out "$R/$e" > "$R/$e.log" 2>&1
  say "run exit $?"
done
run_end
