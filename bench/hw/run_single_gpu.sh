#!/usr/bin/env bash
# One call on a single H200: GPU tests, the single-GPU cases of the chain and MLP-block specs, the MLP block's
# op-by-op breakdown, the epilogue/row-wise probe, with the GPU's clocks and power sampled every 100 ms.
#
#   CTAHW_COMMIT=$(git rev-parse HEAD) bash bench/hw/run_single_gpu.sh
# Writes $OUT/run.tar.gz (the device tool returns at most 8 files): env.txt, log.txt, hw-tests.txt,
# fig5/ and mlp-block/ (ctahw run EXPERIMENT folders), breakdown.csv, epilogue_rowwise.txt, smi.csv.
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
run_begin 100 timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_event_reasons.active
say "GPU tests"
timeout 200 python3 -m pytest tests/hw -q -rs -p no:cacheprovider > "$R/hw-tests.txt" 2>&1; tail -3 "$R/hw-tests.txt"
for e in fig5 mlp-block; do
  say "ctahw run $e"
  timeout 150 python3 -m ctahw.cli run "$e" --out "$R/$e" > "$R/$e.log" 2>&1; tail -2 "$R/$e.log"
done
say "MLP block breakdown"
timeout 150 python3 bench/hw/mlp_block_breakdown.py "$R/breakdown.csv" 2>&1 | tee "$R/breakdown.log"
say "epilogue / row-wise probe"
timeout 100 python3 bench/hw/epilogue_rowwise_probe.py > "$R/epilogue_rowwise.txt" 2>&1; tail -5 "$R/epilogue_rowwise.txt"
run_end
