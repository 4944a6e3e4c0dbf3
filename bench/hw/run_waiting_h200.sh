#!/usr/bin/env bash
# The single-H200 calls that wait (docs/hardware.md, "Device calls that wait") in one device call, from the checkout
# root with the trees built by bench/hw/device_tree.sh at their registrations' commits and carried:
#
#   .cache/p73   9f18955  registered plan 73's H200 arm (the drift's K law; ~60 s)
#   .cache/pgap  394bc61  the ticket and gap traces (plans 60-62's second machine)
#   .cache/p59   5833e95  plan 59's repeat and plan 58's fourth machine (with the reference GEMM: plan 63)
#
#   bash bench/hw/slim_checkout.sh slim      # here, before the call; restore after it
#   (device, kind nvidia-h200, carry .cache/p73 .cache/pgap .cache/p59 .whl and this file)
#   bash bench/hw/run_waiting_h200.sh [--plan73-only]
#
# An nvidia-h200 call may be given an H100: the GPU is read first and anything but an H200 exits 3 at once, so a call
# costs only its start. --plan73-only runs plan 73's arm alone (when the device time left is short). Writes, under $OUT:
# p73/run.tar.gz, gaps/ (bench/hw/run_ticket_traces.sh's), p59/run.tar.gz and p58/run.tar.gz; each is committed under
# bench/results/hw/DATE-... with its README before its judge runs (the judges: docs/validation.md, plans 62 and 73).
set -uo pipefail
ONLY=0
case "${1:-}" in
  --plan73-only) ONLY=1 ;;
  "") ;;
  *) echo "usage: run_waiting_h200.sh [--plan73-only]" >&2; exit 2 ;;
esac
GPU=$(nvidia-smi --query-gpu=name,uuid --format=csv,noheader 2>/dev/null | head -1)
echo "GPU: ${GPU:-none}"
case "$GPU" in
  *H200*) ;;
  *) echo "run_waiting_h200.sh: the GPU is '${GPU:-none}', not an H200: nothing run" >&2; exit 3 ;;
esac
for t in .cache/p73 .cache/pgap .cache/p59; do
  [ -d "$t/.kcache" ] || { echo "run_waiting_h200.sh: no device tree $t (bench/hw/device_tree.sh)" >&2; exit 2; }
done
TOP=$PWD
OUT=${OUT:-out/hw}
(cd .cache/p73 && export CTAHW_CACHE=$PWD/.kcache CTAHW_COMMIT=9f18955 OUT=$OUT/p73 && source bench/hw/device_env.sh \
  && run_begin 50 \
  && python3 bench/hw/gemm_shape_probe.py "$R/gemm_shapes.csv" --reps 3 --shapes 16384x8192x8192,8192x5120x27648,8192x8192x29568,16384x4096x14336,16384x3584x18944,8192x12288x65536,16384x10240x40960,4096x8192x40960,8192x55296x5120,16384x28672x4096 > "$R/gemm_shapes.log" 2>&1; run_end)
[ "$ONLY" = 1 ] && exit 0
(cd "$TOP/.cache/pgap" && OUT=$OUT/gaps CTAHW_CACHE=$PWD/.kcache CTAHW_COMMIT=394bc61 bash bench/hw/run_ticket_traces.sh)
(cd "$TOP/.cache/p59" && export CTAHW_CACHE=$PWD/.kcache CTAHW_COMMIT=5833e95
 OUT=$OUT/p59 bash bench/hw/run_registered.sh --no-hw-tests reg59-adopted-h5632 reg59-adopted-h8960
 OUT=$OUT/p58 bash bench/hw/run_registered.sh --no-hw-tests reg58-gap-law-h7424 reg58-gap-law-h8448 reg49-reference)
