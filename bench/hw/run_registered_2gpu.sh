#!/usr/bin/env bash
# On two H200s (kind nvidia-h200-x2): the 2-GPU check of the spec path, then the registered plan's experiments, each
# answering its registration (bench/predictions/reg-h4096, reg-h12288, reg-mlp).
#
#   CTAHW_COMMIT=<commit> bash bench/hw/run_registered_2gpu.sh [EXPERIMENT ...]
# Writes $OUT/run.tar.gz: env.txt, log.txt, hw-tests.txt, <experiment>/ (results.csv, run.json, traces), logs, smi.csv.
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
run_begin 100 timestamp,index,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active
say "GPU tests"
timeout 200 python3 -m pytest tests/hw -q -rs -p no:cacheprovider > "$R/hw-tests.txt" 2>&1; tail -3 "$R/hw-tests.txt"
for e in ${*:-reg-h4096 reg-h12288 reg-mlp}; do
  say "ctahw run $e"
  timeout 500 python3 -m ctahw.cli run "$e" --registration "bench/predictions/$e" --out "$R/$e" > "$R/$e.log" 2>&1
  tail -5 "$R/$e.log"
done
run_end
