#!/usr/bin/env bash
# Historical: the recipe of 2026-11-29 results under bench/results/hw/ (kept as their provenance). It writes
# straight into $OUT, which returns at most 8 files. New measurements of strategies are experiment specs run by
# bash bench/hw/run_experiments.sh EXPERIMENT (h200x2-ctapipe is this family's spec; docs/hardware.md).
# One device run: install the carried wheels, check correctness, calibrate, run the baseline sweep.
#
# On the 2xH200 machine, from the repo root, with .whl and .cache/ctahw carried along:
#   CTAHW_COMMIT=$(git rev-parse HEAD) bash bench/hw/run_device.sh
# Writes under $OUT (default out/hw): env.txt, log.txt, calibration.json, h200-x2-calibrated.toml,
# baselines.csv, baselines.parquet, baselines_config.json (7 files: the device tool returns at most 8).
# CTAHW_QUICK=1 runs a small version of everything (a smoke test of this script).
set -uo pipefail
source "$(dirname "$0")/device_env.sh"


{
  date -u; echo "commit: ${CTAHW_COMMIT:-unknown}"
  nvidia-smi; nvidia-smi topo -m
  nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv
  nvcc --version; python3 -c "import cupy, numpy; print('cupy', cupy.__version__, 'numpy', numpy.__version__)"
  # Which cuBLAS kernel torch runs for the largest GEMM of the sweep (its tile shape is in the name)
  timeout 60 python3 -c "
import torch
a = torch.randn(16384, 8192, device='cuda', dtype=torch.bfloat16); w = torch.randn(8192, 8192, device='cuda', dtype=torch.bfloat16)
a @ w.t(); torch.cuda.synchronize()
with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as p:
    a @ w.t(); torch.cuda.synchronize()
print('cuBLAS kernel (torch, 16384x8192x8192 bf16 TN):', [e.name for e in p.events() if e.device_type == torch.autograd.DeviceType.CUDA][:3])
"
} > "$OUT/env.txt" 2>&1

QUICK=${CTAHW_QUICK:-0}
if [ "$QUICK" = 1 ]; then
  CAL_ARGS="--quick --reps 3"; RUN_ARGS="--ms 1024,4096 --chunks 1,2,4 --reps 3 --warmup 1"
else
  CAL_ARGS="--reps 10"; RUN_ARGS=""
fi

say "ctahw info"
python3 -m ctahw.cli info 2>&1 | tee -a "$LOG"
say "GPU tests (correctness: fresh random inputs, poisoned outputs, fp32 reference)"
timeout 120 python3 -m pytest tests/hw -q -rs -p no:cacheprovider 2>&1 | tee -a "$LOG"
say "calibrate"
timeout 150 python3 -m ctahw.cli calibrate $CAL_ARGS --json "$OUT/calibration.json" \
  --out "$OUT/h200-x2-calibrated.toml" 2>&1 | tee -a "$LOG"
say "baselines"
timeout 280 python3 -m ctahw.cli run all $RUN_ARGS --out "$OUT" 2>&1 | tee -a "$LOG"
say "done"
