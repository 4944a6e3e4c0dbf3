#!/usr/bin/env bash
# Historical: the recipe of 2026-11-29 results under bench/results/hw/ (kept as their provenance). It writes
# straight into $OUT, which returns at most 8 files. New measurements of strategies are experiment specs run by
# bash bench/hw/run_experiments.sh EXPERIMENT (h200x2-ctapipe is this family's spec; docs/hardware.md).
# One device run of the CTA-pipelining GPU checks, no experiment sweep: smoke of every variant, then
# tests/hw/test_hw_ctapipe.py (correctness + trace at M=1024/2048, 1,000 back-to-back runs without counter
# resets for every variant at every M of CTAHW_B2B_MS, the injected stall -> timeout for every variant), then
# the remote-store cost of the pipelined producer (bench/hw/ctapipe_checks.py).
#
# On the 2xH200 machine, from the repo root, with .whl and .cache/ctahw carried along:
#   CTAHW_COMMIT=$(git rev-parse HEAD) bash bench/hw/run_ctapipe_checks.sh
# Writes under $OUT: env.txt, log.txt, pytest.txt, hw_results.jsonl (one line per test measurement),
# remote_store.json.
set -uo pipefail
source "$(dirname "$0")/device_env.sh"

record_env nvcc --version

say "smoke: each CTA-pipelining variant once (its own process, 90 s limit)"
VARIANTS=$(timeout 90 python3 -m ctahw.pipelined 2>>"$LOG" | tail -1)
[ -n "$VARIANTS" ] || VARIANTS=cutlass_ctapipe
echo "variants that passed: $VARIANTS" | tee -a "$LOG"
say "GPU tests of CTA-pipelining (back-to-back at M=${CTAHW_B2B_MS:=1024,2048,4096,8192,16384})"
export CTAHW_B2B_MS
CTAHW_HW_RESULTS="$OUT/hw_results.jsonl" CTAHW_CTAPIPE_VARIANTS=$VARIANTS \
  timeout ${CTAHW_TEST_TIMEOUT:-300} python3 -m pytest tests/hw/test_hw_ctapipe.py -v -rfEs --durations=0 \
  -p no:cacheprovider > "$OUT/pytest.txt" 2>&1
echo "pytest rc=$?" | tee -a "$LOG"; grep -E "PASSED|FAILED|ERROR|SKIPPED|passed|failed" "$OUT/pytest.txt" | tail -40 | tee -a "$LOG"
say "remote-store cost of the pipelined producer"
timeout ${CTAHW_RS_TIMEOUT:-100} python3 bench/hw/ctapipe_checks.py "$OUT/remote_store.json" \
  --ms ${CTAHW_RS_MS:-4096,16384} 2>&1 | tee -a "$LOG" | tail -12
echo "remote-store rc=${PIPESTATUS[0]}" | tee -a "$LOG"
record_env_end
say "done"
