#!/usr/bin/env bash
# Registered plan 69 on one lent H100, one call: `ctahw calibrate --base h100-x1-datasheet` writes this machine's own
# profile; with it, before anything of them is timed, `ctasim predict` predicts plan 68's two chain experiments and
# bench/block_gemm_orders.py plan 67's twelve GEMMs (beside the committed h100-x1-datasheet, the naive line and a naive
# line through this calibration's own tile-order timings); then the GEMMs are timed (bench/hw/gemm_shape_probe.py) and
# the experiments run (`ctahw run`, answering the committed profile's registrations).
#
#   CTAHW_COMMIT=<commit> bash bench/hw/run_own_h100.sh
# from a tree of bench/hw/device_tree.sh with --with bench/hw/run_own_h100.sh bench/hw/gemm_shape_probe.py
# bench/block_gemm_orders.py bench/plan_judge.py bench/plan69_h100_own.py bench/plan64_h100_datasheet.py
# bench/registered_plan.py bench/predictions/reg67-l2-reuse bench/predictions/reg68-h100-h4096-reuse
# bench/predictions/reg68-h100-h4608-reuse bench/results/hw/2026-11-29-run2/baselines.csv
# (bench/predictions/reg69-h100-own/README.md has the line). The GPU must be an H100 SXM ("NVIDIA H100 80GB HBM3",
# the judge's) else exit 3 before anything runs. Every step's timeout ends by DEADLINE seconds into the script
# (default 560: a device call gets 600), and a step with under 10 s left is skipped, so that run_end always packs
# what ran. Writes $OUT/run.tar.gz: env.txt, log.txt, smi.csv, calibrate.log, h100-x1-own.toml, calibration.json,
# calibration-probes/, reg69-own/EXP/ (the own profile's registrations), predicted-own/ (predicted.csv,
# predict.log), gemm_shapes.csv (.log), EXP/ (results.csv, run.json), EXP.log.
set -uo pipefail
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
if [ "$GPU" != "NVIDIA H100 80GB HBM3" ]; then
  echo "run_own_h100.sh: the GPU is '${GPU:-none}', plan 69 is for an H100 SXM (NVIDIA H100 80GB HBM3)" >&2
  exit 3
fi
DEADLINE=${DEADLINE:-560}
source "$(dirname "$0")/device_env.sh"
run_begin 50
# step CAP NAME CMD...: CMD under timeout min(CAP, what is left before DEADLINE), logged with its exit status
step() {
  local cap=$1 name=$2 left=$((DEADLINE - SECONDS)); shift 2
  if [ "$left" -lt 10 ]; then say "$name skipped: ${left} s left of ${DEADLINE}"; return 1; fi
  [ "$cap" -lt "$left" ] || cap=$left
  say "$name (timeout ${cap} s)"
  timeout "$cap" "$@"
  local rc=$?
  say "$name exit $rc"
  return $rc
}
read -r SHAPES EXPS < <(python3 -c "import sys; sys.path.insert(0, 'bench'); import plan69_h100_own as p; \
print(','.join(f'{m}x{n}x{k}' for m, n, k in p.shapes()), ' '.join(p.EXPERIMENTS))")
if [ -z "${SHAPES:-}" ] || [ -z "${EXPS:-}" ]; then
  say "plan 69's shapes and experiments could not be read (bench/plan69_h100_own.py); nothing run"
  run_end
  exit 1
fi
step 330 "ctahw calibrate --base h100-x1-datasheet (this machine's own profile)" \
  python3 -m ctahw.cli calibrate --base h100-x1-datasheet --reps 5 --name h100-x1-own --out "$R/h100-x1-own.toml" \
  --json "$R/calibration.json" --probe-out "$R/calibration-probes" --no-percta --no-fold > "$R/calibrate.log" 2>&1
for e in $EXPS; do
  step 60 "predict $e with the own profile (before any experiment runs)" \
    python3 -m ctasim.cli predict "$e" --hardware "$R/h100-x1-own.toml" --out "$R/reg69-own/$e" \
    --naive-from bench/results/hw/2026-11-29-run2/baselines.csv > "$R/reg69-own-$e.log" 2>&1
done
mkdir -p "$R/predicted-own"
step 60 "predict the GEMMs (before any of them is timed): $SHAPES" \
  python3 bench/block_gemm_orders.py --predict "$SHAPES" --profile own="$R/h100-x1-own.toml" \
  --profile datasheet=specs/hardware/h100-x1-datasheet.toml --naive-probe "$R/calibration-probes/tile_orders.csv" \
  --out "$R/predicted-own" > "$R/predicted-own/predict.log" 2>&1
step 150 "gemm_shape_probe" \
  python3 "$(dirname "$0")/gemm_shape_probe.py" "$R/gemm_shapes.csv" --reps 3 --shapes "$SHAPES" \
  > "$R/gemm_shapes.log" 2>&1
for e in $EXPS; do
  step 200 "ctahw run $e" \
    python3 -m ctahw.cli run "$e" --registration "bench/predictions/${e/chain-reuse/h100}-reuse" --tune-rounds 2 \
    --out "$R/$e" > "$R/$e.log" 2>&1
done
run_end
