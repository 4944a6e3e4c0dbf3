#!/usr/bin/env bash
# Registered plan 85 (bench/predictions/reg85-grouped-kept/README.md) on one H100 or H200: the producers of row order,
# row-block pairs and the two grouped designs alone (python -m ctahw.percta) at each H of bench/plan85_grouped_kept.py's
# HS, M = 16384, five traced and five untraced runs per case. From the checkout root, with the tree built by
# bench/hw/device_tree.sh at the registration's commit:
#
#   bash bench/hw/device_tree.sh COMMIT .cache/p85 --libs ctapipe_sm90_bf16,probes \
#     --with bench/plan85_grouped_kept.py --with bench/plan83_alone_edge.py --with bench/registered_plan.py
#   bash bench/hw/slim_checkout.sh slim      # here, before the call; restore after it
#   (device, kind nvidia-h100-x1 or nvidia-h200, carry .cache/p85 .whl and this file)
#   bash bench/hw/run_plan85.sh COMMIT
#
# Writes $OUT/p85/run.tar.gz (its folder run/: env.txt, OUT_H<h>/, percta-H<h>.log, smi.csv, log.txt), committed under
# bench/results/hw[-h100]/DATE-registered85-1gpu with its README before its judge runs (RUN_DIR: that run/ folder).
set -uo pipefail
[ $# -eq 1 ] || { echo "usage: run_plan85.sh COMMIT" >&2; exit 2; }
[ -d .cache/p85/.kcache ] || { echo "run_plan85.sh: no device tree .cache/p85 (bench/hw/device_tree.sh)" >&2; exit 2; }
GPU=$(nvidia-smi --query-gpu=name,uuid --format=csv,noheader | head -1); echo "GPU: $GPU"
case "$GPU" in
  *H100*|*H200*) ;;
  *) echo "run_plan85.sh: plan 85 is an H100's or an H200's, not '$GPU'" >&2; exit 3 ;;
esac
# ctahw.build reads the CUTLASS headers' version from the nvidia-cutlass wheel even where the libraries are built
python3 -c 'import cutlass_library' 2>/dev/null || python3 -m pip install -q --no-deps .whl/nvidia_cutlass-*.whl
(
  cd .cache/p85 && export CTAHW_CACHE=$PWD/.kcache CTAHW_COMMIT=$1 OUT=${OUT:-out/hw}/p85 \
    && source bench/hw/device_env.sh
  read -r HS RUNS VARIANTS < <(python3 -c 'import sys; sys.path.insert(0, "bench"); import plan85_grouped_kept as p
print(",".join(map(str, p.HS)), p.RUNS, ",".join(p.VARIANTS))')
  [ -n "${HS:-}" ] || { echo "run_plan85.sh: no H list from bench/plan85_grouped_kept.py in the tree" >&2; exit 4; }
  run_begin 100
  say "plan 85: H = $HS, $VARIANTS, $RUNS runs each"
  for h in ${HS//,/ }; do
    timeout 170 python3 -m ctahw.percta "$R/OUT_H$h" --h "$h" --ms 16384 --variants "$VARIANTS" --reps "$RUNS" \
      > "$R/percta-H$h.log" 2>&1
    say "H = $h rc=$?"; tail -4 "$R/percta-H$h.log"
  done
  run_end
)
ls -R "${OUT:-out/hw}" | head -30
