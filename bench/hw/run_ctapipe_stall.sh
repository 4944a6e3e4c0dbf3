#!/usr/bin/env bash
# Historical: the recipe of 2026-11-29 results under bench/results/hw/ (kept as their provenance). It writes
# straight into $OUT, which returns at most 8 files. New measurements of strategies are experiment specs run by
# bash bench/hw/run_experiments.sh EXPERIMENT (h200x2-ctapipe is this family's spec; docs/hardware.md).
# One short device run: only the injected-stall -> timeout GPU test (tests/hw/test_hw_ctapipe.py::
# test_a_producer_that_never_signals_gives_a_timeout_not_a_hang) for the persistent CTA-pipelined variants
# (variant (b): p, pr, pr21, traced and not), each variant in its own pytest process under its own time limit, so
# that a hang in one cannot keep the others from running (the process's exit ends a stuck kernel).
#
# On the 2xH200 machine, from the repo root, with .whl and .cache/ctahw carried along (prebuilt libraries;
# CTAHW_NVCC points nowhere so that nothing is recompiled there):
#   CTAHW_COMMIT=$(git rev-parse HEAD) bash bench/hw/run_ctapipe_stall.sh
# Writes under $OUT: env.txt, log.txt, pytest.txt (every variant's pytest output, one after the other),
# hw_results.jsonl (the stall test's measured dict per variant).
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
export CTAHW_NVCC=${CTAHW_NVCC:-/nonexistent}

record_env python3 -m ctahw.cli info

VARIANTS=${CTAHW_STALL_VARIANTS:-cutlass_ctapipe_p,cutlass_ctapipe_p_trace,cutlass_ctapipe_pr,cutlass_ctapipe_pr_trace,cutlass_ctapipe_pr21,cutlass_ctapipe_pr21_trace}
TEST=tests/hw/test_hw_ctapipe.py::test_a_producer_that_never_signals_gives_a_timeout_not_a_hang
export CTAHW_CTAPIPE_VARIANTS=$VARIANTS CTAHW_HW_RESULTS="$OUT/hw_results.jsonl"
for v in ${VARIANTS//,/ }; do
  say "stall -> timeout: $v (own process, ${CTAHW_STALL_LIMIT:-50} s limit)"
  one=$(mktemp)
  t0=$(date +%s.%N)
  timeout -k 5 "${CTAHW_STALL_LIMIT:-50}" python3 -m pytest "$TEST[$v]" -v -rfEs --durations=0 -p no:cacheprovider \
    > "$one" 2>&1
  rc=$?
  { echo "######## $v"; cat "$one"; echo; echo "######## $v: rc=$rc"; } >> "$OUT/pytest.txt"
  echo "$v: pytest rc=$rc$([ "$rc" = 124 ] && echo ' (killed at the time limit: the test did not return)'), process $(python3 -c "import time; print(f'{time.time() - $t0:.1f}')") s" | tee -a "$LOG"
  grep -E "PASSED|FAILED|ERROR|SKIPPED|passed|failed" "$one" | tail -2 | tee -a "$LOG"  # this variant's lines only
  rm -f "$one"
done
record_env_end
say "done"
