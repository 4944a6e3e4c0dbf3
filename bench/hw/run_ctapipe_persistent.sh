#!/usr/bin/env bash
# Historical: the recipe of 2026-11-29 results under bench/results/hw/ (kept as their provenance). It writes
# straight into $OUT, which returns at most 8 files. New measurements of strategies are experiment specs run by
# bash bench/hw/run_experiments.sh EXPERIMENT (h200x2-ctapipe is this family's spec; docs/hardware.md).
# One device run of CTA-pipelining variant (b), the persistent kernel (kernels/ctapipe_sm90_bf16_persistent.cu),
# beside the best variant (a) and the cuBLAS baselines, in one run: a watched run of each persistent design
# (bench/hw/ctapipe_persistent_diag.py; only those that finish correctly go on), smoke, the GPU tests
# (correctness + trace checked at M=1024/2048, 1,000 back-to-back runs without counter resets at every M of
# CTAHW_B2B_MS, stall -> timeout), then `ctahw run gemm,microbatch,tp,ctapipe` at every M (correctness on fresh
# inputs with poisoned outputs, one trace per traced variant checked by ctasim's invariant checker, interleaved
# timing).
#
# On the 2xH200 machine, from the repo root, with .whl and .cache/ctahw carried along:
#   CTAHW_COMMIT=$(git rev-parse HEAD) bash bench/hw/run_ctapipe_persistent.sh
# Writes under $OUT: env.txt, log.txt, diag.jsonl, pytest.txt, hw_results.jsonl, baselines.csv, baselines_config.json,
# ctapipe_traces.npz.
set -uo pipefail
source "$(dirname "$0")/device_env.sh"

record_env

say "watched single runs of each persistent design (own process each; a stuck kernel is reported, then ended)"
WANT=cutlass_ctapipe_c21,cutlass_ctapipe_c21_trace
for v in ${CTAHW_DIAG_VARIANTS:-cutlass_ctapipe_p_trace cutlass_ctapipe_pr_trace cutlass_ctapipe_pr21_trace}; do
  timeout -k 5 40 python3 bench/hw/ctapipe_persistent_diag.py "$v" --m 1024 --wait-s 8 2>>"$LOG" | tee -a "$OUT/diag.jsonl"
  rc=${PIPESTATUS[0]}; echo "diag $v rc=$rc" | tee -a "$LOG"
  [ "$rc" = 0 ] && WANT="${v%_trace},$v,$WANT"
done
WANT=${CTAHW_CTAPIPE_VARIANTS:-$WANT}
say "smoke: $WANT (own process, 60 s limit)"
VARIANTS=$(timeout 60 python3 -m ctahw.pipelined "$WANT" 2>>"$LOG" | tail -1)
[ -n "$VARIANTS" ] || { echo "no variant passed the smoke run" | tee -a "$LOG"; VARIANTS=cutlass_ctapipe_c21; }
echo "variants that passed: $VARIANTS" | tee -a "$LOG"
say "GPU tests (back-to-back at M=${CTAHW_B2B_MS:=1024,2048,4096,8192,16384})"
export CTAHW_B2B_MS
CTAHW_HW_RESULTS="$OUT/hw_results.jsonl" CTAHW_CTAPIPE_VARIANTS=$VARIANTS \
  timeout ${CTAHW_TEST_TIMEOUT:-170} python3 -m pytest tests/hw/test_hw_ctapipe.py -v -rfEs --durations=0 \
  -p no:cacheprovider > "$OUT/pytest.txt" 2>&1
echo "pytest rc=$?" | tee -a "$LOG"; grep -E "PASSED|FAILED|ERROR|passed|failed" "$OUT/pytest.txt" | tail -60 | tee -a "$LOG"
MS=${CTAHW_MS:-1024,2048,4096,8192,16384}
say "experiments gemm,microbatch,tp,ctapipe at M=$MS"
timeout ${CTAHW_RUN_TIMEOUT:-200} python3 -m ctahw.cli run gemm,microbatch,tp,ctapipe --ms "$MS" --backends cublas \
  --chunks 1,2,4,8,16 --ctapipe-variants "$VARIANTS" ${CTAHW_RUN_ARGS:-} --out "$OUT" 2>&1 | tee -a "$LOG" \
  | grep -v "^\s*$" | tail -45
echo "run rc=${PIPESTATUS[0]}" | tee -a "$LOG"
record_env_end
say "done"
