#!/usr/bin/env bash
# Historical: the recipe of 2026-11-29 results under bench/results/hw/ (kept as their provenance). It writes
# straight into $OUT, which returns at most 8 files. New measurements of strategies are experiment specs run by
# bash bench/hw/run_experiments.sh EXPERIMENT (h200x2-ctapipe is this family's spec; docs/hardware.md).
# One device run of CTA-pipelining: GPU tests (correctness, 1,000 back-to-back runs, stall -> timeout, trace
# checked), then the ctapipe experiment beside the baselines it is compared with, in one process.
#
# On the 2xH200 machine, from the repo root, with .whl and .cache/ctahw carried along:
#   CTAHW_COMMIT=$(git rev-parse HEAD) bash bench/hw/run_ctapipe.sh
# Writes under $OUT: env.txt, log.txt, baselines.csv (every row, ctapipe included), baselines_config.json,
# ctapipe_traces.npz (raw stamp buffers; ctahw.pipelined.load_traces), pytest.txt.
set -uo pipefail
source "$(dirname "$0")/device_env.sh"

record_env

MS=${CTAHW_MS:-1024,2048,4096,8192,16384}
EXPS=${CTAHW_EXPS:-gemm,microbatch,tp,ctapipe}
say "smoke: each CTA-pipelining variant once (its own process, 90 s limit)"
VARIANTS=$(timeout 90 python3 -m ctahw.pipelined 2>>"$LOG" | tail -1)
[ -n "$VARIANTS" ] || VARIANTS=cutlass_ctapipe,cutlass_ctapipe_trace
echo "variants that passed: $VARIANTS" | tee -a "$LOG"
say "GPU tests of CTA-pipelining"
CTAHW_CTAPIPE_VARIANTS=$VARIANTS timeout ${CTAHW_TEST_TIMEOUT:-200} python3 -m pytest tests/hw/test_hw_ctapipe.py -q -rs \
  -p no:cacheprovider \
  > "$OUT/pytest.txt" 2>&1
echo "pytest rc=$?" | tee -a "$LOG"; tail -5 "$OUT/pytest.txt" | tee -a "$LOG"
say "experiments $EXPS at M=$MS"
timeout ${CTAHW_RUN_TIMEOUT:-300} python3 -m ctahw.cli run "$EXPS" --ms "$MS" --backends cublas \
  --chunks 1,2,4,8,16 --ctapipe-variants "$VARIANTS" ${CTAHW_RUN_ARGS:-} --out "$OUT" 2>&1 | tee -a "$LOG" | grep -v "^\s*$" | tail -40
say "done"
