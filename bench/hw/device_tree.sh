#!/usr/bin/env bash
# A small tree for one device call, when the checkout and the kernel libraries together pass the 64 MiB a call may
# carry: the code of COMMIT (ctahw, ctasim without its protocol model, specs, pyproject.toml, bench/hw/device_env.sh, run_experiments.sh and ctapipe_onegpu.py (tests/hw loads it),
# and any further paths named with --with), the kernel libraries named with --libs built from that code into
# DEST/.kcache (a library already in .cache/ctahw under the same key is copied, not rebuilt) and stripped of their
# static symbols, and the simpy and nvidia-ml-py wheels from .whl/. Nothing uncommitted travels.
#
#   bash bench/hw/device_tree.sh COMMIT DEST --libs ctapipe_sm90_bf16,probes [--with bench/predictions/reg13-percta]
#
# Then carry [DEST] (DEST under .cache/, which git ignores) and run from it, e.g. the device command
#   cd DEST && CTAHW_CACHE=$PWD/.kcache CTAHW_COMMIT=COMMIT bash -c 'source bench/hw/device_env.sh; run_begin 100; ...; run_end'
# Used for the 2026-12-02 runs (registered plans 12, 13, 14 and the ticket traces; each README shows its command).
set -euo pipefail
usage() { echo "usage: device_tree.sh COMMIT DEST --libs LIB[,LIB...] [--with PATH ...]" >&2; exit 2; }
[ $# -ge 4 ] || usage
COMMIT=$1; DEST=$2; shift 2
LIBS=""; WITH=()
while [ $# -gt 0 ]; do
  case "$1" in
    --libs) LIBS=${2:-}; shift 2 || usage ;;
    --with) WITH+=("${2:-}"); shift 2 || usage ;;
    *) usage ;;
  esac
done
[ -n "$LIBS" ] || usage
git rev-parse --verify -q "$COMMIT^{commit}" > /dev/null || { echo "device_tree.sh: no commit $COMMIT" >&2; exit 2; }
case "$DEST" in .cache/*) ;; *) echo "device_tree.sh: DEST must be under .cache/ (ignored by git), got $DEST" >&2; exit 2 ;; esac
rm -rf "$DEST"; mkdir -p "$DEST/.kcache" "$DEST/.whl"
git archive "$COMMIT" ctahw ctasim specs pyproject.toml bench/hw/device_env.sh bench/hw/run_experiments.sh bench/hw/ctapipe_onegpu.py "${WITH[@]}" | tar -x -C "$DEST"
rm -rf "$DEST/ctasim/protocol"
cp .whl/simpy-*.whl "$DEST/.whl/" 2>/dev/null || echo "device_tree.sh: no simpy wheel in .whl/ (run ../shared/device/wheels.sh)" >&2
cp .whl/nvidia_ml_py-*.whl "$DEST/.whl/" 2>/dev/null || echo "device_tree.sh: no nvidia-ml-py wheel in .whl/ (run ../shared/device/wheels.sh nvidia-ml-py==13.615.71; ctahw.power needs it)" >&2
for lib in ${LIBS//,/ }; do
  for d in .cache/ctahw/"$lib"-*; do [ -d "$d" ] && cp -r "$d" "$DEST/.kcache/"; done
done
(cd "$DEST" && CTAHW_CACHE=$PWD/.kcache python -m ctahw.cli build --only "$LIBS" | sed 's/^/built: /')
# keep only the libraries of this code (the build prints their paths) and strip them
keep=$(cd "$DEST" && CTAHW_CACHE=$PWD/.kcache python -m ctahw.cli build --only "$LIBS" | sed -E 's/^[^:]+: //' | xargs -n1 dirname | xargs -n1 basename)
for d in "$DEST"/.kcache/*; do echo "$keep" | grep -qx "$(basename "$d")" || rm -rf "$d"; done
find "$DEST/.kcache" -name '*.so' -exec strip --strip-unneeded {} +
find "$DEST" -name __pycache__ -prune -exec rm -rf {} +
# Sizes as a tar archive counts them (512-byte headers, files padded to 512 bytes): the device call's limit
# measures the working tree about so. The plain byte sum under-counts by ~1.3 MB for this checkout's ~1,600 files: a
# tree of 66.2 MB by that sum was refused on 2026-12-02, one of 64.8 MB by this count went.
tracked=$(git ls-files -z | tar --null -T - --ignore-failed-read -cf - 2>/dev/null | wc -c)  # a deleted file: not counted
size=$(tar -cf - "$DEST" | wc -c)
total=$((size + tracked))
echo "device_tree.sh: $DEST holds $size bytes; with the checkout's $tracked the call carries $total of 67108864"
if [ "$total" -gt 67108864 ]; then
  echo "device_tree.sh: over the limit by $((total - 67108864)) bytes: make room with 'bash bench/hw/slim_checkout.sh slim' (the committed results and registrations leave the working tree until 'restore'), or carry fewer libraries" >&2
  exit 1
fi
