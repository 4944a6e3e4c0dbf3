#!/usr/bin/env bash
# A registered plan of producers alone on one GPU (python -m ctahw.percta), its cases read from the plan's script:
# per H of the script's HS (or per (H, K) of its HK: the producer's K other than H, folders OUT_H<h>_K<k>), its
# VARIANTS at M = its M, its RUNS traced and untraced rested runs. From the checkout
# root, with the tree built by bench/hw/device_tree.sh at the registration's commit (the plan's script and the
# scripts it imports carried with --with):
#
#   bash bench/hw/device_tree.sh COMMIT .cache/pNN --libs ctapipe_sm90_bf16,ctapipe_sm90_bf16_cluster,probes \
#     --with bench/PLAN.py ...
# (without the cluster library the first H builds it on the device: 121-133 s of plans 88 and 89's calls; 18 s with it)
#   bash bench/hw/slim_checkout.sh slim      # here, before the call; restore after it
#   (device, carry .cache/pNN .whl)
#   bash bench/hw/run_percta_plan.sh PLAN .cache/pNN COMMIT GPU[,GPU...]
#
# PLAN: the script's module name (bench/PLAN.py in the tree); GPU: the GPU names the plan is registered for (H100,
# H200), refused otherwise before anything runs. Writes $OUT/NAME/run.tar.gz, NAME the tree's folder name (its folder
# run/: env.txt, OUT_H<h>/, percta-H<h>.log, smi.csv, log.txt), committed under bench/results/hw[-h100]/ with its
# README before the plan's judge runs (RUN_DIR: that run/ folder). Exit status: 2-4 refused before anything ran, 5
# where the probe failed at some H (the run is packed all the same), else 0. Each H may run PERCTA_TIMEOUT_S seconds
# (default 170; the first H of a call spent ~130 s on 2026-12-07, most of it before its first kernel). A plan
# whose script sets BEFORE (a command; {run} stands for the run folder) has it run first, up to 180 s, its output in
# before.log (plan 91: the L2-to-SM rate probe). Plans 83-85
# ran their own copies of this (bench/hw/run_plan83.sh, 84, 85: as registered).
set -uo pipefail
[ $# -eq 4 ] || { echo "usage: run_percta_plan.sh PLAN TREE COMMIT GPU[,GPU...]" >&2; exit 2; }
PLAN=$1; TREE=$2; COMMIT=$3; GPUS=$4; NAME=$(basename "$TREE")
[ -d "$TREE/.kcache" ] || { echo "run_percta_plan.sh: no device tree $TREE (bench/hw/device_tree.sh)" >&2; exit 2; }
[ -f "$TREE/bench/$PLAN.py" ] || { echo "run_percta_plan.sh: no bench/$PLAN.py in $TREE" >&2; exit 2; }
GPU=$(nvidia-smi --query-gpu=name,uuid --format=csv,noheader | head -1); echo "GPU: $GPU"
ok=""
for g in ${GPUS//,/ }; do case "$GPU" in *"$g"*) ok=1 ;; esac; done
[ -n "$ok" ] || { echo "run_percta_plan.sh: $PLAN is registered for $GPUS, not '$GPU'" >&2; exit 3; }
# ctahw.build reads the CUTLASS headers' version from the nvidia-cutlass wheel even where the libraries are built
python3 -c 'import cutlass_library' 2>/dev/null || python3 -m pip install -q --no-deps .whl/nvidia_cutlass-*.whl
(
  cd "$TREE" && export CTAHW_CACHE=$PWD/.kcache CTAHW_COMMIT=$COMMIT OUT=${OUT:-out/hw}/$NAME \
    && source bench/hw/device_env.sh
  read -r M HS RUNS VARIANTS < <(PLAN=$PLAN python3 -c 'import os, sys; sys.path.insert(0, "bench")
p = __import__(os.environ["PLAN"])
print(p.M, ",".join(f"{h}:{k}" for h, k in getattr(p, "HK", ())) or ",".join(map(str, p.HS)), p.RUNS,
      ",".join(p.VARIANTS))')
  [ -n "${VARIANTS:-}" ] || { echo "run_percta_plan.sh: no M, HS, RUNS, VARIANTS from bench/$PLAN.py" >&2; exit 4; }
  BEFORE=$(PLAN=$PLAN python3 -c 'import os, sys; sys.path.insert(0, "bench")
print(getattr(__import__(os.environ["PLAN"]), "BEFORE", ""))')
  run_begin 100
  say "$PLAN: M = $M, H = $HS, $VARIANTS, $RUNS runs each"
  failed=0
  if [ -n "$BEFORE" ]; then  # the plan's own probe first, in the same call ({run}: the run folder)
    timeout 180 ${BEFORE//\{run\}/$R} > "$R/before.log" 2>&1
    rc=$?; say "before (${BEFORE}) rc=$rc"; tail -12 "$R/before.log"
    [ $rc -eq 0 ] || failed=$((failed + 1))
  fi
  for c in ${HS//,/ }; do  # H, or H:K where the plan sets HK (the producer's K other than H)
    h=${c%%:*}; kargs=(); tag=$h
    if [ "$c" != "$h" ]; then kargs=(--k "${c#*:}"); tag=${h}_K${c#*:}; fi
    timeout "${PERCTA_TIMEOUT_S:-170}" python3 -m ctahw.percta "$R/OUT_H$tag" --h "$h" ${kargs[@]+"${kargs[@]}"} --ms "$M" \
      --variants "$VARIANTS" --reps "$RUNS" > "$R/percta-H$tag.log" 2>&1
    rc=$?; say "H = $c rc=$rc"; tail -4 "$R/percta-H$tag.log"
    [ $rc -eq 0 ] || failed=$((failed + 1))
  done
  run_end
  [ $failed -eq 0 ] || { echo "run_percta_plan.sh: $failed of the H failed (their logs are in the run)" >&2; exit 5; }
)
rc=$?
ls -R "${OUT:-out/hw}" | head -30
exit $rc
