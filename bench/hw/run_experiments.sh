#!/usr/bin/env bash
# The one command for measuring experiment specs on a device (any kind: one H200 or several): the GPU tests, then
# `ctahw run EXPERIMENT` for each experiment named, answering its registration where bench/predictions/EXPERIMENT
# holds one (the results then name it; `ctasim compare` judges them as registered or post-hoc from git history).
# A strategy the machine cannot run (too few GPUs, an op with no kernel) is a skipped row with its reason.
#
#   CTAHW_COMMIT=<commit> bash bench/hw/run_experiments.sh EXPERIMENT[:STRATEGY,...] ...
# (EXPERIMENT:STRATEGY,... measures only those strategies of the spec: `ctahw run --strategies`.)
# Environment: CTAHW_TESTS (pytest paths, default tests/hw; empty: none), CTAHW_RUN_ARGS (more `ctahw run`
# flags, e.g. --tune-rounds 2), CTAHW_RUN_LIMIT (seconds per experiment, default 500).
# Writes $OUT/run.tar.gz: env.txt, log.txt, hw-tests.txt, EXPERIMENT/ (results.csv, run.json, traces), EXPERIMENT.log,
# smi.csv (the device returns at most 8 files: everything travels in the one archive).
set -uo pipefail
[ $# -ge 1 ] || { echo "usage: run_experiments.sh EXPERIMENT ..." >&2; exit 2; }
source "$(dirname "$0")/device_env.sh"
run_begin 100 timestamp,index,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active
TESTS=${CTAHW_TESTS-tests/hw}
if [ -n "$TESTS" ]; then
  say "GPU tests: $TESTS"
  timeout 300 python3 -m pytest $TESTS -q -rs -p no:cacheprovider > "$R/hw-tests.txt" 2>&1; tail -3 "$R/hw-tests.txt"
fi
for arg in "$@"; do
  e=${arg%%:*}  # EXPERIMENT or EXPERIMENT:STRATEGY,STRATEGY (ctahw run --strategies: a part of the experiment)
  sel=()
  [ "$arg" != "$e" ] && sel=(--strategies "${arg#*:}")
  reg=()
  [ -f "bench/predictions/$e/registration.json" ] && reg=(--registration "bench/predictions/$e")
  say "ctahw run $e ${sel[*]} ${reg[*]}"
  timeout "${CTAHW_RUN_LIMIT:-500}" python3 -m ctahw.cli run "$e" "${sel[@]}" "${reg[@]}" ${CTAHW_RUN_ARGS:-} \
    --out "$R/$e" > "$R/$e.log" 2>&1
  echo "ctahw run $e ${sel[*]}: rc=$?" | tee -a "$LOG"; tail -5 "$R/$e.log"
done
run_end
