#!/usr/bin/env bash
# The device command of the protocol stress (one GPU): the stress GPU tests, then every seeded-bug build of the chain
# and work-queue kernels (ctahw.stress) with random delays. Run from a tree whose kernel cache holds the builds
# (python bench/hw/protocol_stress.py --build-only with CTAHW_CACHE pointing there).
#   CTAHW_COMMIT=<commit> bash bench/hw/run_protocol_stress.sh [protocol_stress.py options]
# Writes $OUT/run.tar.gz: env.txt, log.txt, hw-tests.txt, stress/ (stress.csv, provenance.json), stress.log, smi.csv.
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
run_begin 100 timestamp,index,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active
say "GPU test: tests/hw/test_stress_gpu.py"
timeout 240 python3 -m pytest tests/hw/test_stress_gpu.py -q -rs -p no:cacheprovider > "$R/hw-tests.txt" 2>&1
tail -3 "$R/hw-tests.txt"
say "protocol_stress.py $*"
timeout "${CTAHW_RUN_LIMIT:-400}" python3 bench/hw/protocol_stress.py --out "$R/stress" "$@" > "$R/stress.log" 2>&1
say "exit $?"; tail -25 "$R/stress.log"
run_end
