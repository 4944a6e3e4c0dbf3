#!/usr/bin/env bash
# One call on a single H200: the GPU tests (tests/hw), then registered experiments, each answering its registration
# (bench/predictions/EXPERIMENT), nvidia-smi sampled every 50 ms. (Plan 2 ran this as run_registered2.sh.)
#
#   CTAHW_COMMIT=<commit> bash bench/hw/run_registered.sh EXPERIMENT ...
# Each run: ctahw run EXPERIMENT --registration bench/predictions/EXPERIMENT --tune-rounds 2 (12 tile orders x 3
# rounds per GEMM shape, each behind the 250 ms rest). Writes $OUT/run.tar.gz: env.txt, log.txt, hw-tests.txt,
# EXPERIMENT/ (results.csv, run.json), EXPERIMENT.log, smi.csv.
set -uo pipefail
[ $# -ge 1 ] || { echo "usage: run_registered.sh EXPERIMENT ..." >&2; exit 2; }
source "$(dirname "$0")/device_env.sh"
run_begin 50
say "GPU tests"
timeout 120 python3 -m pytest tests/hw -q -rs -p no:cacheprovider > "$R/hw-tests.txt" 2>&1; tail -1 "$R/hw-tests.txt"
EXPS=$*
for e in $EXPS; do
  say "ctahw run $e"
  timeout 280 python3 -m ctahw.cli run "$e" --registration "bench/predictions/$e" --tune-rounds 2 --out "$R/$e" \
    > "$R/$e.log" 2>&1
  tail -8 "$R/$e.log"
done
run_end
