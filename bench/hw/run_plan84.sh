#!/usr/bin/env bash
# Registered plan 84 (bench/predictions/reg84-edge-runs/README.md) on one H100: the producer alone (python -m
# ctahw.percta) fifteen times at each H of bench/plan84_edge_runs.py's HS, row order, M = 16384. From the checkout root,
# with the tree built by bench/hw/device_tree.sh at the registration's commit:
#
#   bash bench/hw/device_tree.sh COMMIT .cache/p84 --libs ctapipe_sm90_bf16,probes \
#     --with bench/plan84_edge_runs.py --with bench/plan83_alone_edge.py --with bench/registered_plan.py
#   bash bench/hw/slim_checkout.sh slim      # here, before the call; restore after it
#   (device, kind nvidia-h100-x1, carry .cache/p84 .whl and this file)
#   bash bench/hw/run_plan84.sh COMMIT
#
# Writes $OUT/p84/run.tar.gz (its folder run/: env.txt, OUT_H<h>/, percta-H<h>.log, smi.csv, log.txt), committed under
# bench/results/hw-h100/DATE-registered84-1gpu with its README before its judge runs (RUN_DIR: that run/ folder).
set -uo pipefail
[ $# -eq 1 ] || { echo "usage: run_plan84.sh COMMIT" >&2; exit 2; }
[ -d .cache/p84/.kcache ] || { echo "run_plan84.sh: no device tree .cache/p84 (bench/hw/device_tree.sh)" >&2; exit 2; }
GPU=$(nvidia-smi --query-gpu=name,uuid --format=csv,noheader | head -1); echo "GPU: $GPU"
case "$GPU" in *H100*) ;; *) echo "run_plan84.sh: plan 84 is an H100's, not '$GPU'" >&2; exit 3 ;; esac
# ctahw.build reads the CUTLASS headers' version from the nvidia-cutlass wheel even where the libraries are built
python3 -c 'import cutlass_library' 2>/dev/null || python3 -m pip install -q --no-deps .whl/nvidia_cutlass-*.whl
(
  cd .cache/p84 && export CTAHW_CACHE=$PWD/.kcache CTAHW_COMMIT=$1 OUT=${OUT:-out/hw}/p84 \
    && source bench/hw/device_env.sh
  read -r HS RUNS VARIANT < <(python3 -c 'import sys; sys.path.insert(0, "bench"); import plan84_edge_runs as p
print(",".join(map(str, p.HS)), p.RUNS, p.VARIANT)')
  [ -n "${HS:-}" ] || { echo "run_plan84.sh: no H list from bench/plan84_edge_runs.py in the tree" >&2; exit 4; }
  run_begin 100
  say "plan 84: H = $HS, $RUNS runs each"
  for h in ${HS//,/ }; do
    timeout 150 python3 -m ctahw.percta "$R/OUT_H$h" --h "$h" --ms 16384 --variants "$VARIANT" --reps "$RUNS" \
      > "$R/percta-H$h.log" 2>&1
    say "H = $h rc=$?"; tail -1 "$R/percta-H$h.log"
  done
  run_end
)
ls -R "${OUT:-out/hw}" | head -30
