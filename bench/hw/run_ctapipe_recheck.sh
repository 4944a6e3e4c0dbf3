#!/usr/bin/env bash
# Historical: the recipe of 2026-11-29 results under bench/results/hw/ (kept as their provenance). It writes
# straight into $OUT, which returns at most 8 files. New measurements of strategies are experiment specs run by
# bash bench/hw/run_experiments.sh EXPERIMENT (h200x2-ctapipe is this family's spec; docs/hardware.md).
# One short device run after a change to the CTA-pipelining kernels: correctness + trace checks of every
# variant at M = 1024 and 2048 (one pytest process), then the injected-stall -> timeout test of every variant,
# each in its own process under a time limit (bench/hw/run_ctapipe_stall.sh).
#
# On the 2xH200 machine, from the repo root, with .whl and .cache/ctahw carried along:
#   CTAHW_COMMIT=$(git rev-parse HEAD) bash bench/hw/run_ctapipe_recheck.sh
# Writes under $OUT: correct.txt (pytest output of the correctness tests), and what run_ctapipe_stall.sh writes.
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
export CTAHW_NVCC=${CTAHW_NVCC:-/nonexistent}
ALL=cutlass_ctapipe,cutlass_ctapipe_trace,cutlass_ctapipe_c12,cutlass_ctapipe_c12_trace,cutlass_ctapipe_c21,cutlass_ctapipe_c21_trace,cutlass_ctapipe_p,cutlass_ctapipe_p_trace,cutlass_ctapipe_pr,cutlass_ctapipe_pr_trace,cutlass_ctapipe_pr21,cutlass_ctapipe_pr21_trace
echo "== correctness + trace checks, every variant, M = 1024, 2048"
CTAHW_CTAPIPE_VARIANTS=${CTAHW_CTAPIPE_VARIANTS:-$ALL} timeout -k 5 "${CTAHW_CORRECT_LIMIT:-150}" \
  python3 -m pytest tests/hw/test_hw_ctapipe.py -k matches_reference -v -rfEs -p no:cacheprovider > "$OUT/correct.txt" 2>&1
echo "correctness pytest rc=$?"
tail -3 "$OUT/correct.txt"
CTAHW_STALL_VARIANTS=${CTAHW_STALL_VARIANTS:-$ALL} CTAHW_STALL_LIMIT=${CTAHW_STALL_LIMIT:-30} bash bench/hw/run_ctapipe_stall.sh
