#!/usr/bin/env bash
# Registered plan 106 (bench/predictions/reg106-harness-or-unit/README.md) on an H100, or on an H200 the single-H200
# rows that wait for one instead (bench/hw/run_h200_rows_90_91.sh: plans 91's and 90's H200 rows and the L2-to-SM
# probe). Run from the checkout root with the trees built by bench/hw/device_tree.sh at the registrations' commits:
#
#   .cache/p106  4affcf83  --libs gemm_sm90_bf16,gemm_sm90_bf16_epi --with bench/hw/mlp_block_breakdown.py
#                          --with bench/hw/gemm_shape_probe.py
#   .cache/p91   7316959d  .cache/p90  0a1e41e8  .cache/pl5  3d0fd0f9  (docs/hardware.md)
#
#   bash bench/hw/slim_checkout.sh slim      # here, before the call; restore after it
#   (device, kind nvidia-h200, carry .cache/p106 .cache/p91 .cache/p90 .cache/pl5 .whl)
#   bash bench/hw/run_plan106.sh
#
# Writes under $OUT p106/run.tar.gz on an H100 (committed under bench/results/hw-h100/DATE-registered106-1gpu with its
# README before the judge runs), the three H200 calls' folders on an H200; exits 3 on any other GPU.
G=$(nvidia-smi --query-gpu=name,uuid --format=csv,noheader | head -1); echo "GPU: $G"
case "$G" in
*H200*) bash bench/hw/run_h200_rows_90_91.sh ;;
*H100*)
  (cd .cache/p106 && export CTAHW_CACHE=$PWD/.kcache CTAHW_COMMIT=4affcf83 OUT=$OUT/p106 \
    && source bench/hw/device_env.sh && run_begin 50 \
    && for b in llama3.1-8b gpt-neox-20b; do python3 bench/hw/mlp_block_breakdown.py $R/breakdown-$b.csv --model $b \
         --ms 32768 --reps 7 --rest-ms 100 --no-repeats > $R/breakdown-$b.log 2>&1; echo "$b rc $?"; done \
    && python3 bench/hw/gemm_shape_probe.py $R/gemm_shapes.csv --reps 3 --shapes 32768x28672x4096,32768x4096x14336,32768x24576x6144,32768x6144x24576,32768x5120x14336,32768x7168x20480,16384x8192x8192 \
         > $R/gemm_shapes.log 2>&1; echo "probe rc $?"; run_end)
  ;;
*) exit 3 ;;
esac
