#!/usr/bin/env bash
# The single-H200 rows that wait for an H200 (docs/hardware.md, "Device calls that wait"): plans 91's and 90's H200 rows
# and the L2-to-SM probe. Run from the checkout root with the trees built by bench/hw/device_tree.sh at the
# registrations' commits (.cache/p91 7316959d, .cache/p90 0a1e41e8, .cache/pl5 3d0fd0f9; docs/hardware.md), carried
# with .whl. bench/hw/run_plan106.sh and run_plan107.sh call it when the GPU they read is an H200; exits 3 on any other.
G=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
case "$G" in *H200*) ;; *) echo "run_h200_rows_90_91.sh: $G is not an H200" >&2; exit 3 ;; esac
PERCTA_TIMEOUT_S=300 bash bench/hw/run_percta_plan.sh plan91_l2_rate_wave0 .cache/p91 7316959d H200
PERCTA_TIMEOUT_S=200 bash bench/hw/run_percta_plan.sh plan90_cluster_wave0 .cache/p90 0a1e41e8 H200
(cd .cache/pl5 && export CTAHW_CACHE=$PWD/.kcache CTAHW_COMMIT=3d0fd0f9 OUT=$OUT/pl5 \
  && source bench/hw/device_env.sh && run_begin 100 \
  && python3 bench/hw/l2_rate_probe.py $R/l2rate --tiles --tiles-more --tiles-phase; run_end)
