#!/usr/bin/env bash
# Historical: the recipe of 2026-11-29 results under bench/results/hw/ (kept as their provenance). It writes
# straight into $OUT, which returns at most 8 files. New measurements of strategies are experiment specs run by
# bash bench/hw/run_experiments.sh EXPERIMENT (h200x2-ctapipe is this family's spec; docs/hardware.md).
# One device run of the CTA-pipelining variants with 2x1 clusters on both GPUs (W multicast on the consumer too),
# beside the earlier best variant (c21: producer 2x1, consumer 1x2) and the cuBLAS baselines:
#   g21 -- work-queue, one scoreboard counter per 256 rows (two producer row-blocks), its tiles pushed column by
#          column so that a consumer cluster pops two tiles of one column (ctasim Strategy.counter_rows = 256);
#   w21 -- no work-queue: the consumer walks row-block pairs and waits on each tile's counter; the producer
#          counts with red.release.sys (no returned value, no push).
# Steps, each under its own time limit: smoke (own process); `ctahw run gemm,microbatch,tp,ctapipe` at every M
# (correctness on fresh inputs with poisoned outputs, one checked trace per traced variant, interleaved timing);
# 1,000 back-to-back runs without counter resets at CTAHW_B2B_MS; injected stall -> timeout (own process per
# variant, bench/hw/run_ctapipe_stall.sh); the GPU correctness + trace tests at M=1024/2048.
#
# On the 2xH200 machine, from the repo root, with .whl and .cache/ctahw carried along (prebuilt libraries):
#   CTAHW_COMMIT=$(git rev-parse HEAD) bash bench/hw/run_ctapipe_clusters.sh
# Writes under $OUT: env.txt, log.txt, correct.txt, b2b.txt, pytest.txt (stall), hw_results.jsonl, baselines.csv,
# baselines_config.json, ctapipe_traces.npz.
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
export CTAHW_NVCC=${CTAHW_NVCC:-/nonexistent}

record_env

NEW=cutlass_ctapipe_g21,cutlass_ctapipe_g21_trace,cutlass_ctapipe_w21,cutlass_ctapipe_w21_trace
WANT=${CTAHW_CTAPIPE_VARIANTS:-$NEW,cutlass_ctapipe_c21,cutlass_ctapipe_c21_trace}
say "smoke: $WANT (own process, 60 s limit)"
VARIANTS=$(timeout -k 5 60 python3 -m ctahw.pipelined "$WANT" 2>>"$LOG" | tail -1)
[ -n "$VARIANTS" ] || { echo "no variant passed the smoke run" | tee -a "$LOG"; VARIANTS=cutlass_ctapipe_c21; }
echo "variants that passed: $VARIANTS" | tee -a "$LOG"
export CTAHW_CTAPIPE_VARIANTS=$VARIANTS CTAHW_HW_RESULTS="$OUT/hw_results.jsonl"
MS=${CTAHW_MS:-1024,2048,4096,8192,16384}
say "experiments gemm,microbatch,tp,ctapipe at M=$MS"
timeout -k 5 ${CTAHW_RUN_TIMEOUT:-240} python3 -m ctahw.cli run gemm,microbatch,tp,ctapipe --ms "$MS" --backends cublas \
  --chunks 1,2,4,8,16 --ctapipe-variants "$VARIANTS" ${CTAHW_RUN_ARGS:-} --out "$OUT" 2>&1 | tee -a "$LOG" \
  | grep -v "^\s*$" | tail -45
echo "run rc=${PIPESTATUS[0]}" | tee -a "$LOG"
say "correctness + trace checks at M = 1024, 2048"
timeout -k 5 "${CTAHW_CORRECT_LIMIT:-120}" python3 -m pytest tests/hw/test_hw_ctapipe.py -k matches_reference -v -rfEs \
  -p no:cacheprovider > "$OUT/correct.txt" 2>&1
echo "correctness pytest rc=$?" | tee -a "$LOG"; tail -3 "$OUT/correct.txt" | tee -a "$LOG"
say "1,000 back-to-back runs at M=${CTAHW_B2B_MS:=2048,16384}"
export CTAHW_B2B_MS
timeout -k 5 "${CTAHW_B2B_LIMIT:-150}" python3 -m pytest tests/hw/test_hw_ctapipe.py -k "thousand_back_to_back and (${CTAHW_NEW_K:-g21 or w21})" \
  -v -rfEs --durations=0 -p no:cacheprovider > "$OUT/b2b.txt" 2>&1
echo "back-to-back pytest rc=$?" | tee -a "$LOG"; grep -E "PASSED|FAILED|ERROR|passed|failed" "$OUT/b2b.txt" | tail -12 | tee -a "$LOG"
STALL=$(echo "$VARIANTS" | tr ',' '\n' | grep -E "${CTAHW_NEW_PATTERN:-g21|w21}" | paste -sd,)
[ -n "$STALL" ] && CTAHW_WHEELS_INSTALLED=1 CTAHW_STALL_VARIANTS=$STALL CTAHW_STALL_LIMIT=${CTAHW_STALL_LIMIT:-30} \
  OUT=$OUT bash bench/hw/run_ctapipe_stall.sh
record_env_end
say "done"
