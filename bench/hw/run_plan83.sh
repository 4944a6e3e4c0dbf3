#!/usr/bin/env bash
# Registered plan 83 (bench/predictions/reg83-alone-edge/README.md) on whatever GPU the call gets: the producer alone
# (python -m ctahw.percta) at the H of that GPU in bench/plan83_alone_edge.py's GPUS, row order and pairs, M = 16384.
# On an H200 it then runs plan 73's H200 arm (bench/hw/run_waiting_h200.sh --plan73-only; the other single-H200 calls
# that wait take ~400 s more: a call of their own). From the checkout root, with
# the tree built by bench/hw/device_tree.sh at the registration's commit:
#
#   bash bench/hw/device_tree.sh COMMIT .cache/p83 --libs ctapipe_sm90_bf16,probes \
#     --with bench/plan83_alone_edge.py --with bench/registered_plan.py
#   bash bench/hw/slim_checkout.sh slim      # here, before the call; restore after it
#   (device, kind nvidia-h200, carry .cache/p83 .whl and this file; on an H200 also .cache/p73)
#   bash bench/hw/run_plan83.sh COMMIT
#
# Writes $OUT/p83/run.tar.gz (its folder run/: env.txt, OUT_H<h>/, percta-H<h>.log, smi.csv, log.txt), committed under
# bench/results/hw[-h100]/DATE-registered83-1gpu with its README before its judge runs (RUN_DIR: that run/ folder).
# ~60 s of percta (plan 14's two H took 23 s); plan 73's arm ~60 s more on an H200.
set -uo pipefail
[ $# -eq 1 ] || { echo "usage: run_plan83.sh COMMIT" >&2; exit 2; }
[ -d .cache/p83/.kcache ] || { echo "run_plan83.sh: no device tree .cache/p83 (bench/hw/device_tree.sh)" >&2; exit 2; }
GPU=$(nvidia-smi --query-gpu=name,uuid --format=csv,noheader | head -1); echo "GPU: $GPU"
case "$GPU" in
  *H100*) KEY=H100 ;;
  *H200*) KEY=H200 ;;
  *) echo "run_plan83.sh: no H of plan 83 for '$GPU'" >&2; exit 3 ;;
esac
ROOTDIR=$PWD
# ctahw.build reads the CUTLASS headers' version from the nvidia-cutlass wheel even where the libraries are built
python3 -c 'import cutlass_library' 2>/dev/null || python3 -m pip install -q --no-deps .whl/nvidia_cutlass-*.whl
(
  cd .cache/p83 && export CTAHW_CACHE=$PWD/.kcache CTAHW_COMMIT=$1 OUT=${OUT:-out/hw}/p83 \
    && source bench/hw/device_env.sh
  HS=$(python3 -c 'import sys; sys.path.insert(0, "bench"); import plan83_alone_edge as p
print(*p.GPUS[sys.argv[1]][1])' $KEY)
  [ -n "$HS" ] || { echo "run_plan83.sh: no H list from bench/plan83_alone_edge.py in the tree" >&2; exit 4; }
  run_begin 100
  say "plan 83 on $KEY: H = $HS"
  for h in $HS; do
    timeout 150 python3 -m ctahw.percta "$R/OUT_H$h" --h "$h" --ms 16384 \
      --variants cutlass_ctapipe,cutlass_ctapipe_c21 > "$R/percta-H$h.log" 2>&1
    say "H = $h rc=$?"; tail -3 "$R/percta-H$h.log"
  done
  run_end
)
case "$GPU" in
  *H200*) cd "$ROOTDIR" && bash bench/hw/run_waiting_h200.sh --plan73-only ;;  # the rest (~400 s) in a call of its own
esac
ls -R "${OUT:-out/hw}" | head -30
