#!/usr/bin/env bash
# One call on a single H200: the one-CTA-per-tile producer kernel of CTA-pipelining variant (a) run alone on GPU 0,
# its output D, scoreboard counters and queue in local memory, no consumer (ctahw.percta): clusters 1x1, 1x2, 2x1
# (queue pushes) and 2x1 over groups of 4 (counting only) at M = 4096 and 16384 x 8192 x 8192, each checked against
# fp32, then 5 untraced and 5 traced runs behind a 250 ms rest (burst regime); the per-tile steps of every traced run
# (ctasim.calibration.percta_steps) and their medians. nvidia-smi sampled every 100 ms.
#
#   CTAHW_COMMIT=<commit> bash bench/hw/run_percta_probe.sh [more python -m ctahw.percta flags, e.g. --reps 1]
# Writes $OUT/run.tar.gz (the device tool returns at most 8 files): env.txt, log.txt, smi.csv, percta.log,
# percta.csv (medians per case), percta-runs.csv (one row per traced run), percta-tiles-<M>-<variant>.csv.gz.
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
run_begin 100
say "one-CTA-per-tile producer, local D, traced (ctahw.percta)"
timeout 300 python3 -m ctahw.percta "$R" "$@" > "$R/percta.log" 2>&1
echo "percta exit $?" | tee -a "$LOG"
tail -n 25 "$R/percta.log" | tee -a "$LOG"
run_end
