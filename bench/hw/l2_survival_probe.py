"""Run the L2 survival probe (``ctahw.l2probe``) on GPU 0 and write what it measured.

    python bench/hw/l2_survival_probe.py OUTDIR [--reps 5] [--target-mib 2] [--touches 1,2] [--hot-mib 0]
                                         [--hot-rounds 8]

--hot-mib H reads an H MiB hot set before the touch and again after each of the stream's --hot-rounds chunks
(``ctahw.l2probe``'s docstring; registered plan 57).

Writes OUTDIR/l2-survival.csv (one row per trial), OUTDIR/l2-survival-curve.csv (median survival per streamed
bytes / L2 scaled between hot and cold, touches 1 and 2; ``ctahw.l2probe.survival_curve``), OUTDIR/l2-survival-latency.csv.gz (every trial's
latency counts, cycle by cycle: ``ctahw.l2probe.latency_table``) and
OUTDIR/l2-survival.json (the curves, the hit threshold and provenance), then prints the curves. Exit 2 with one line
without a GPU (or CuPy), on a bad option or an OUTDIR that cannot be written, 1 if the probe's hot and cold latencies
cannot be told apart (nothing written then).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # this checkout's ctasim and ctahw, not an installed copy
sys.path.insert(0, str(Path(__file__).resolve().parent))  # probe_common, when loaded from elsewhere

from probe_common import no_gpus  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    from ctasim.cliargs import OneLineParser, parse_outputs

    ap = OneLineParser(prog="python bench/hw/l2_survival_probe.py", description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--target-mib", type=float, default=2.0)
    ap.add_argument("--touches", default="1,2", help="comma-separated touch counts before the stream (default 1,2)")
    ap.add_argument("--hot-mib", type=float, default=0.0, help="a hot set re-read through the stream (default 0: none)")
    ap.add_argument("--hot-rounds", type=int, default=8, help="the stream's chunks, each followed by the hot set")
    a = parse_outputs(ap, argv, folders=("out",))
    try:
        touches = tuple(int(x) for x in a.touches.split(","))
    except ValueError:
        touches = ()
    if not touches or min(touches) < 1 or max(touches) > 32:
        print(f"l2_survival_probe: --touches must be integers in 1..32, comma-separated, got {a.touches!r}",
              file=sys.stderr)
        return 2
    if a.reps < 1:
        print("l2_survival_probe: --reps must be >= 1", file=sys.stderr)
        return 2
    if not 0.0 < a.target_mib <= 64.0:
        print(f"l2_survival_probe: --target-mib must be in (0, 64], got {a.target_mib:g}", file=sys.stderr)
        return 2
    if not 0.0 <= a.hot_mib <= 64.0 or not 1 <= a.hot_rounds <= 64:
        print(f"l2_survival_probe: --hot-mib must be in [0, 64] and --hot-rounds in 1..64, got {a.hot_mib:g} and "
              f"{a.hot_rounds}", file=sys.stderr)
        return 2
    rc = no_gpus("l2_survival_probe")
    if rc is not None:
        return rc
    import pandas as pd

    from ctahw import l2probe
    from ctahw.provenance import collect

    try:
        rows, raw = l2probe.measure(target_bytes=int(a.target_mib * (1 << 20)) // l2probe.LINE_BYTES
                                    * l2probe.LINE_BYTES, reps=a.reps, touches=touches,
                                    hot_bytes=int(a.hot_mib * (1 << 20)) // 16 * 16, hot_rounds=a.hot_rounds,
                                    log=lambda s: print(s, file=sys.stderr, flush=True))
    except ValueError as e:
        print(f"l2_survival_probe: {e}", file=sys.stderr)
        return 1
    try:
        curves = {t: l2probe.survival_curve(rows, touches=t) for t in sorted({int(r["touches"]) for r in rows
                                                                               if r["kind"] == "trial"})}
    except ValueError as e:
        print(f"l2_survival_probe: {e}", file=sys.stderr)
        return 1
    a.out.mkdir(parents=True, exist_ok=True)
    df = pd.DataFrame(rows)
    df.to_csv(a.out / "l2-survival.csv", index=False)
    l2probe.latency_table(raw).to_csv(a.out / "l2-survival-latency.csv.gz", index=False)
    pd.DataFrame([{"touches": t, "b_l2": b, "survival": s} for t, c in curves.items() for b, s in c]).to_csv(
        a.out / "l2-survival-curve.csv", index=False)
    with open(a.out / "l2-survival.json", "w") as f:
        json.dump({"curves": {str(t): c for t, c in curves.items()}, "threshold_cycles": rows[0]["threshold_cycles"],
                   "l2_bytes": rows[0]["l2_bytes"], "sm_count": rows[0]["sm_count"],
                   "hot_bytes": rows[0]["hot_bytes"], "hot_rounds": rows[0]["hot_rounds"],
                   "cold_survival": [r["survival"] for r in rows if r["kind"] == "cold"],
                   "provenance": collect()}, f, indent=1, default=str)
    print(f"hit threshold {rows[0]['threshold_cycles']:.0f} cycles; cold survival "
          f"{max(r['survival'] for r in rows if r['kind'] == 'cold'):.3f} at most")
    print("b_l2  " + "  ".join(f"touches={t}" for t in curves))
    for i, (b, _) in enumerate(next(iter(curves.values()))):
        print(f"{b:5.3f} " + "  ".join(f"{curves[t][i][1]:10.3f}" for t in curves))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
