#!/usr/bin/env bash
# Registered plan 81 (bench/predictions/reg81-drift-tile-own/README.md) on whatever GPU the call gets, and on an H200
# also the single-H200 rows that wait for it: plan 80's (the drift traced per order, priced into plan 79's launches'
# bytes), plan 78's (the chain kernel's bytes) and plan 73's H200 arm (docs/hardware.md, "Device calls that wait").
# Run from the checkout root with the trees built by bench/hw/device_tree.sh at the registrations' commits:
#
#   .cache/p81  5b2ba001  (the commands in plan 81's run README)     .cache/p80  d02e0a85  (plan 80's run README)
#   .cache/p78  a8d618a   (plan 78's run README)                     .cache/p73  9f18955   (bench/hw/run_waiting_h200.sh)
#
#   bash bench/hw/slim_checkout.sh slim      # here, before the call; restore after it
#   (device, kind nvidia-h200, carry .cache/p81 .cache/p80 .cache/p78 .cache/p73 .whl and this file)
#   bash bench/hw/run_plan81.sh
#
# Writes under $OUT p81.tgz (and on an H200 p80.tgz, p78.tgz and p73/run.tar.gz); each is committed under
# bench/results/hw[-h100]/DATE-registeredNN-1gpu with its README before its judge runs. 74 s on an H100 (2026-12-06).
GPU=$(nvidia-smi --query-gpu=name,uuid --format=csv,noheader | head -1); echo "GPU: $GPU"
ROOTDIR=$PWD
(
  cd .cache/p81 && export CTAHW_CACHE=$PWD/.kcache CTAHW_COMMIT=5b2ba001 && OUT=$OUT/p81 && source bench/hw/device_env.sh
  record_env
  ncu --version >> $OUT/env.txt 2>&1
  for p in 1 2; do
    timeout 150 python3 bench/hw/order_trace_probe.py $OUT/order-traces-$p --reps 1 --rest-ms 250 \
      --shapes 8192x8192,12288x8192,16384x8192 --orders along_n/1,along_m/8,along_n/8,along_m/1 > $OUT/order-traces-$p.log 2>&1
    echo "traces pass $p rc=$?"; tail -2 $OUT/order-traces-$p.log
  done
  time timeout 200 python3 bench/hw/gemm_shape_probe.py $OUT/gemm_shapes.csv --reps 3 \
    --shapes 16384x8192x8192,16384x8192x20480,12288x8192x36864,16384x6144x49152,8192x10240x57344 > $OUT/gemm_shapes.log 2>&1
  echo "shapes rc=$?"; tail -3 $OUT/gemm_shapes.log
  time timeout 200 python3 -m ctahw.counters $OUT bench/predictions/reg81-drift-tile-own/predicted.csv --probe gemm > /dev/null; echo "counters rc=$?"
  tail -3 $OUT/ncu.log
  rm -f $OUT/report.ncu-rep
)
tar czf $OUT/p81.tgz -C $OUT p81 && rm -rf $OUT/p81
case "$GPU" in
  *H200*)
    (cd $ROOTDIR/.cache/p80 && export CTAHW_CACHE=$PWD/.kcache CTAHW_COMMIT=d02e0a85 && OUT=$OUT/p80 && source bench/hw/device_env.sh && record_env \
      && for p in 1 2; do timeout 150 python3 bench/hw/order_trace_probe.py $OUT/order-traces-$p --reps 1 --rest-ms 250 \
        --shapes 8192x8192,16384x8192 --orders along_n/1,along_m/8,along_n/8,along_m/1 > $OUT/order-traces-$p.log 2>&1; done \
      && timeout 120 python3 -m ctahw.counters $OUT bench/predictions/reg79-gemm-bytes/predicted.csv --probe gemm > /dev/null; echo "p80 rc=$?"; rm -f $OUT/report.ncu-rep)
    tar czf $OUT/p80.tgz -C $OUT p80 && rm -rf $OUT/p80
    (cd $ROOTDIR/.cache/p78 && export CTAHW_CACHE=$PWD/.kcache CTAHW_COMMIT=a8d618ac && OUT=$OUT/p78 && source bench/hw/device_env.sh && record_env \
      && timeout 120 python3 -m ctahw.counters $OUT bench/predictions/reg78-hbm-bytes/predicted.csv > /dev/null; echo "p78 rc=$?"; rm -f $OUT/report.ncu-rep)
    tar czf $OUT/p78.tgz -C $OUT p78 && rm -rf $OUT/p78
    cd $ROOTDIR && bash bench/hw/run_waiting_h200.sh --plan73-only ;;
esac
ls -R $OUT | head -30
