"""Run the L2-to-SM read-rate probe (``ctahw.l2rate``) on GPU 0 and write what it measured.

    python bench/hw/l2_rate_probe.py OUTDIR [--reps 7] [--iters 2000] [--rows] [--tiles] [--tiles-more] [--tiles-phase]
                                     [--tiles-cold] [--cold-ns N,N,...]

--rows runs the 1x1 row-order first waves by tiles a row after the plain cases (``ctahw.l2rate.ROW_CASES``) and writes
their rates by tiles a row into the JSON (``row_l2_gbps``); --tiles the same first waves by TMA tensor copies (the
GEMM's 2-D boxes: ``ctahw.l2rate.measure_tiles``), ``tile_l2_gbps`` by tiles a row; --tiles-more the cases of
``ctahw.l2rate.TILE_MORE_CASES`` (W or A alone shared; the GEMM's own K), ``tile_more_l2_gbps`` by case;
--tiles-phase ``ctahw.l2rate.TILE_PHASE_CASES`` (the CTAs in step or a k-step apart), ``tile_phase_l2_gbps``;
--tiles-cold ``ctahw.l2rate.TILE_COLD_CASES`` (one pass over the GEMM's K after an L2 flush), ``tile_cold_us`` (the
median window, us, by tiles a row); --cold-ns the cold case at each of those tiles a row too.

Writes OUTDIR/l2-rate.csv (one row per timed launch: ``ctahw.l2rate.measure``), OUTDIR/l2-rate-summary.csv (each
case's median rates: ``ctahw.l2rate.summary``) and OUTDIR/l2-rate.json (the summary, the 1x1 stage's L2 rate as a
profile's ``l2_sm_read_gbps``, which side the multicast cases put the limit on, and provenance), then prints the
summary. Exit 2 with one line without a GPU (or CuPy), on a bad option or an OUTDIR that cannot be written; 1 if a
launch fails, a wait times out or a stage does not hold the buffer's bytes (nothing written then).
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # this checkout's ctasim and ctahw, not an installed copy
sys.path.insert(0, str(Path(__file__).resolve().parent))  # probe_common, when loaded from elsewhere

from probe_common import no_gpus  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    from ctasim.cliargs import OneLineParser, parse_outputs, positive_ints

    ap = OneLineParser(prog="python bench/hw/l2_rate_probe.py", description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--reps", type=int, default=7, help="timed launches of each case (default 7)")
    ap.add_argument("--rows", action="store_true", help="also the row-order first waves (ctahw.l2rate.ROW_CASES)")
    ap.add_argument("--tiles", action="store_true", help="also the row-order first waves by tensor copies "
                                                          "(ctahw.l2rate.measure_tiles)")
    ap.add_argument("--tiles-more", action="store_true", help="also ctahw.l2rate.TILE_MORE_CASES")
    ap.add_argument("--tiles-phase", action="store_true", help="also ctahw.l2rate.TILE_PHASE_CASES")
    ap.add_argument("--tiles-cold", action="store_true", help="also ctahw.l2rate.TILE_COLD_CASES")
    ap.add_argument("--cold-ns", type=positive_ints, default=(), metavar="N,N,...",
                    help="also the cold case at each of these tiles a row (ctahw.l2rate.cold_case)")
    ap.add_argument("--iters", type=int, default=None, help="stages each CTA fills per launch (default "
                                                            "ctahw.l2rate.ITERS)")
    a = parse_outputs(ap, argv, folders=("out",))
    if not 1 <= a.reps <= 100:
        print(f"l2_rate_probe: --reps must be in 1..100, got {a.reps}", file=sys.stderr)
        return 2
    if a.iters is not None and not 1 <= a.iters <= 1_000_000:
        print(f"l2_rate_probe: --iters must be in 1..1000000, got {a.iters}", file=sys.stderr)
        return 2
    rc = no_gpus("l2_rate_probe")
    if rc is not None:
        return rc
    import pandas as pd

    from ctahw import l2rate
    from ctahw.probes import ProbeError
    from ctahw.provenance import collect

    try:
        cases = l2rate.CASES + (l2rate.ROW_CASES if a.rows else ())
        rows = l2rate.measure(cases=cases, reps=a.reps, iters=a.iters or l2rate.ITERS,
                              log=lambda s: print(s, file=sys.stderr, flush=True))
        tiles = ((l2rate.TILE_CASES if a.tiles else ()) + (l2rate.TILE_MORE_CASES if a.tiles_more else ())
                 + (l2rate.TILE_PHASE_CASES if a.tiles_phase else ())
                 + (l2rate.TILE_COLD_CASES if a.tiles_cold else ())
                 + tuple(l2rate.cold_case(n) for n in a.cold_ns))
        if tiles:
            rows += l2rate.measure_tiles(cases=tiles, reps=a.reps, iters=a.iters or l2rate.ITERS,
                                         log=lambda s: print(s, file=sys.stderr, flush=True))
        table = l2rate.summary(rows)
    except (ProbeError, ValueError) as e:
        print(f"l2_rate_probe: {e}", file=sys.stderr)
        return 1
    a.out.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_csv(a.out / "l2-rate.csv", index=False)
    pd.DataFrame(table).to_csv(a.out / "l2-rate-summary.csv", index=False)
    with open(a.out / "l2-rate.json", "w") as f:
        json.dump({"summary": table, "l2_sm_read_gbps": l2rate.read_rate(table), "bound": l2rate.where_bound(table),
                   "row_l2_gbps": {str(c.groups): r["l2_gbps"] for c in cases if c.groups
                                   for r in table if r["case"] == c.name},
                   "tile_l2_gbps": {str(c.w_mod): r["l2_gbps"] for c in l2rate.TILE_CASES for r in table
                                    if r["case"] == c.name},
                   "tile_more_l2_gbps": {c.name: r["l2_gbps"] for c in l2rate.TILE_MORE_CASES for r in table
                                         if r["case"] == c.name},
                   "tile_phase_l2_gbps": {c.name: r["l2_gbps"] for c in l2rate.TILE_PHASE_CASES for r in table
                                          if r["case"] == c.name},
                   "tile_cold_us": {str(c.w_mod): statistics.median(r["window_ns"] for r in rows
                                                                      if r["case"] == c.name) / 1e3
                                    for c in tiles if c.cold},
                   "cases": {c.name: c.what for c in cases}, "provenance": collect()}, f, indent=1,
                  default=str)
    print(f"{'case':>11} {'delivered GB/s':>15} {'L2 GB/s':>9} {'L2 min..max':>15} {'start spread ns':>16}")
    for r in table:
        print(f"{r['case']:>11} {r['delivered_gbps']:15.0f} {r['l2_gbps']:9.0f} "
              f"{r['l2_gbps_min']:7.0f}..{r['l2_gbps_max']:<7.0f} {r['start_spread_ns']:16.0f}")
    print(f"l2_sm_read_gbps (the 1x1 stage's L2 rate): {l2rate.read_rate(table):.0f}; the multicast cases put the "
          f"limit at: {l2rate.where_bound(table)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
