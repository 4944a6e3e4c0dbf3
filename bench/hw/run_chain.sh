#!/usr/bin/env bash
# The chain kernel (intra-GPU CTA-pipelining) on one H200: its GPU tests, the probe (protocol overhead; against
# cuBLAS), and the registered plan 3 (bench/predictions/reg3-*), each experiment answering its registration.
#
#   CTAHW_COMMIT=<commit> bash bench/hw/run_chain.sh tests|probe|registered [EXPERIMENT ...]
# tests: tests/hw/test_hw_chain.py. probe: bench/hw/chain_probe.py. registered: ctahw run EXPERIMENT --registration
# bench/predictions/EXPERIMENT --tune-rounds 2 (default: the three reg3 experiments), nvidia-smi sampled every 50 ms.
# Writes $OUT/run.tar.gz: env.txt, log.txt and the part's outputs.
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
PART=${1:-tests}; shift || true
run_begin 50
case "$PART" in
  tests)
    say "chain GPU tests"
    timeout 300 python3 -m pytest tests/hw/test_hw_chain.py -q -rs -p no:cacheprovider > "$R/hw-tests.txt" 2>&1
    tail -15 "$R/hw-tests.txt" ;;
  probe)
    say "chain probe"
    timeout 400 python3 bench/hw/chain_probe.py "$R/probe" ${CHAIN_PROBE_ARGS:-} 2>&1 | tee "$R/probe.log" | tail -20 ;;
  registered)
    for e in ${*:-reg3-intragpu reg3-intragpu-deep reg3-intragpu-h4096}; do
      say "ctahw run $e"
      timeout 280 python3 -m ctahw.cli run "$e" --registration "bench/predictions/$e" --tune-rounds 2 --out "$R/$e" \
        > "$R/$e.log" 2>&1
      tail -6 "$R/$e.log"
    done ;;
  *) echo "unknown part $PART (tests|probe|registered)"; kill $SMI; exit 2 ;;
esac
run_end
