"""Device probe (one GPU): the rates of ctahw's memory-pass kernels, the measurement behind the profile's
``epilogue_pass_gbps`` and ``rowwise_gbps`` (``ctahw.calibrate.pass_probe``, ``pass_rates``; ``ctahw calibrate``
runs the same).

    python bench/hw/pass_rate_probe.py OUT.csv [--reps 9] [--rest-ms 50]

Writes one row per pass (kind, op, rows, n, median_ms, samples, gbps) and prints the two fields. Bad values, an
unwritable OUT.csv and no GPU (or no CuPy) get one line and exit 2; nothing is written unless every pass ran.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # this checkout's ctasim and ctahw, not an installed copy


def main(argv=None) -> int:
    from ctasim.cliargs import OneLineParser, parse_outputs

    ap = OneLineParser(prog="python bench/hw/pass_rate_probe.py", description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--reps", type=int, default=9)
    ap.add_argument("--rest-ms", type=float, default=50.0)
    args = parse_outputs(ap, argv, files=("out",))
    if args.reps < 1 or not 0 <= args.rest_ms < 60_000:
        print(f"pass_rate_probe: --reps must be >= 1 and --rest-ms in [0, 60000) (got {args.reps}, {args.rest_ms})",
              file=sys.stderr)
        return 2
    if args.out.suffix != ".csv" or not args.out.parent.is_dir() or args.out.is_dir():
        print(f"pass_rate_probe: {args.out}: a .csv path in an existing folder expected", file=sys.stderr)
        return 2
    from ctahw.device import no_gpus

    if no_gpus("pass_rate_probe", 1):  # no CuPy, no GPU, not sm_90: one line
        return 2

    import pandas as pd

    from ctahw.calibrate import pass_probe, pass_rates
    from ctasim.results import staged_file

    fields, rows = pass_rates(pass_probe(reps=args.reps, rest_ms=args.rest_ms))
    for r in rows:
        print(f"{r['kind']:>8} {r['op']:>9} {r['rows']:>6}x{r['n']:<6} {r['median_ms']:8.4f} ms {r['gbps']:7.1f} GB/s")
    for name, v in fields.items():
        print(f"{name} = {v:.1f}")
    with staged_file(args.out) as tmp:
        pd.DataFrame(rows).to_csv(tmp, index=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
