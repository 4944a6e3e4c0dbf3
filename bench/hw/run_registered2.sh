#!/usr/bin/env bash
# One call on a single H200: the registered plan 2 (bench/predictions/reg2-*), each experiment answering its
# registration, nvidia-smi sampled every 50 ms.
#
#   CTAHW_COMMIT=<commit> bash bench/hw/run_registered2.sh [EXPERIMENT ...]   (default: all three)
# Each run: ctahw run EXPERIMENT --registration bench/predictions/EXPERIMENT --tune-rounds 2 (12 tile orders x 3
# rounds per GEMM shape, each behind the 250 ms rest). Writes $OUT/run.tar.gz: env.txt, log.txt, hw-tests.txt, reg2-*/ (results.csv, run.json), reg2-*.log, smi.csv.
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
R="$OUT/run"; mkdir -p "$R"
OUT="$R" record_env
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active \
  --format=csv -lms 50 > "$R/smi.csv" 2>&1 &
SMI=$!
say "GPU tests"
timeout 120 python3 -m pytest tests/hw -q -rs -p no:cacheprovider > "$R/hw-tests.txt" 2>&1; tail -1 "$R/hw-tests.txt"
EXPS=${*:-reg2-mlp reg2-mlp-h4096 reg2-chain}
for e in $EXPS; do
  say "ctahw run $e"
  timeout 280 python3 -m ctahw.cli run "$e" --registration "bench/predictions/$e" --tune-rounds 2 --out "$R/$e" \
    > "$R/$e.log" 2>&1
  tail -8 "$R/$e.log"
done
kill $SMI
OUT="$R" record_env_end
cp "$LOG" "$R/log.txt"
tar czf "$OUT/run.tar.gz" -C "$OUT" run && rm -rf "$R"
