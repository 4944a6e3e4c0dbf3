#!/usr/bin/env bash
# Make room in a device call: the call carries the whole working tree (tracked files that exist, untracked files git
# does not ignore, carried paths) up to 64 MiB, and the committed results and registrations are most of the checkout.
# A device tree (bench/hw/device_tree.sh) holds everything a call runs, so the call needs none of them:
#
#   bash bench/hw/slim_checkout.sh slim      # delete, from the working tree only, the tracked files of SLIM_PATHS
#   ... the device call, carrying .cache/NAME ...
#   bash bench/hw/slim_checkout.sh restore   # check out again every tracked file that is missing
#
# `slim` refuses if any tracked file under those paths has uncommitted changes, staged or not (they would be lost),
# and touches nothing untracked; `restore` checks out again the deleted tracked files under those paths (git ls-files
# --deleted), nothing else. Nothing is committed either way: a session that stops in between leaves main as it was.
# While slim, `git status` shows every removed file as deleted: commit only named paths (never `git add -A` or
# `git commit -a`) until `restore`.
set -euo pipefail
SLIM_PATHS=(bench/results bench/predictions docs)
cd "$(git rev-parse --show-toplevel)"
case "${1:-}" in
  slim)
    if ! git diff --quiet HEAD -- "${SLIM_PATHS[@]}" || ! git diff --cached --quiet -- "${SLIM_PATHS[@]}"; then
      echo "slim_checkout.sh: uncommitted changes under ${SLIM_PATHS[*]}; commit them first:" >&2
      { git diff --name-only HEAD -- "${SLIM_PATHS[@]}"; git diff --cached --name-only -- "${SLIM_PATHS[@]}"; } \
        | sort -u | head -5 >&2
      exit 1
    fi
    n=$(git ls-files -z -- "${SLIM_PATHS[@]}" | tr -cd '\0' | wc -c)
    git ls-files -z -- "${SLIM_PATHS[@]}" | xargs -0 rm -f
    left=$(git ls-files -z | tar --null -T - --ignore-failed-read -cf - 2>/dev/null | wc -c || true)
    echo "slim_checkout.sh: removed $n tracked files from the working tree; the checkout now counts $left bytes"
    echo "slim_checkout.sh: run 'bash bench/hw/slim_checkout.sh restore' after the device call"
    ;;
  restore)
    n=$(git ls-files -z --deleted -- "${SLIM_PATHS[@]}" | tr -cd '\0' | wc -c)
    [ "$n" -eq 0 ] || git ls-files -z --deleted -- "${SLIM_PATHS[@]}" | xargs -0 git checkout HEAD --
    echo "slim_checkout.sh: restored $n tracked files"
    ;;
  *) echo "usage: slim_checkout.sh slim|restore" >&2; exit 2 ;;
esac
