#!/usr/bin/env bash
# One call on a single H200: the GPU tests (tests/hw), then registered experiments, each answering its registration
# (bench/predictions/EXPERIMENT), nvidia-smi sampled every 50 ms. (Plan 2 ran this as run_registered2.sh.)
#
#   CTAHW_COMMIT=<commit> bash bench/hw/run_registered.sh [--no-hw-tests] [--gemm-shapes MxNxK,...] EXPERIMENT ...
# Each run: ctahw run EXPERIMENT --registration bench/predictions/EXPERIMENT --tune-rounds 2 (12 tile orders x 3
# rounds per GEMM shape, each behind the 250 ms rest). Writes $OUT/run.tar.gz: env.txt, log.txt, hw-tests.txt,
# EXPERIMENT/ (results.csv, run.json), EXPERIMENT.log, smi.csv. --gemm-shapes first runs
# bench/hw/gemm_shape_probe.py gemm_shapes.csv --reps 3 --shapes MxNxK,... (a GEMM-order registration, e.g. plan 23's
# and 25's, in the same call); --no-hw-tests skips tests/hw (a device_tree.sh tree carries no tests). The GPU must be
# the registrations' (its name holding $CTAHW_GPU, default H200: an nvidia-h200 call may be given an H100), else exit 3
# before anything runs.
set -uo pipefail
usage() { echo "usage: run_registered.sh [--no-hw-tests] [--gemm-shapes MxNxK,...] EXPERIMENT ..." >&2; exit 2; }
HW_TESTS=1; SHAPES=""
while [ $# -gt 0 ]; do
  case "$1" in
    --no-hw-tests) HW_TESTS=0; shift ;;
    --gemm-shapes) SHAPES=${2:-}; [ -n "$SHAPES" ] || usage; shift 2 ;;
    -*) usage ;;
    *) break ;;
  esac
done
[ $# -ge 1 ] || usage
WANT=${CTAHW_GPU:-H200}
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
case "$GPU" in
  *"$WANT"*) ;;
  *) echo "run_registered.sh: the GPU is '${GPU:-none}', the registrations are for an $WANT (CTAHW_GPU=NAME to run" \
       "on another)" >&2; exit 3 ;;
esac
source "$(dirname "$0")/device_env.sh"
run_begin 50
if [ "$HW_TESTS" = 1 ]; then
  say "GPU tests"
  timeout 120 python3 -m pytest tests/hw -q -rs -p no:cacheprovider > "$R/hw-tests.txt" 2>&1; tail -1 "$R/hw-tests.txt"
fi
if [ -n "$SHAPES" ]; then
  say "gemm_shape_probe"
  timeout 200 python3 "$(dirname "$0")/gemm_shape_probe.py" "$R/gemm_shapes.csv" --reps 3 --shapes "$SHAPES" \
    > "$R/gemm_shapes.log" 2>&1; tail -4 "$R/gemm_shapes.log"
fi
EXPS=$*
for e in $EXPS; do
  say "ctahw run $e"
  timeout 280 python3 -m ctahw.cli run "$e" --registration "bench/predictions/$e" --tune-rounds 2 --out "$R/$e" \
    > "$R/$e.log" 2>&1
  tail -8 "$R/$e.log"
done
run_end
