"""Remote-store cost of the CTA-pipelined producer (issue 5): its kernel storing D into the consumer GPU, as it
runs, against the same kernel storing D on its own GPU (``ctahw.pipelined.remote_store_cost``).

    python bench/hw/ctapipe_checks.py OUT.json [--ms 4096,16384] [--variants cutlass_ctapipe,...] [--reps 20]

Needs 2 sm_90 GPUs with peer access (a device session, ``ctahw.baselines.Session``); prints one line per point and
writes them all to OUT.json. Bad values, an OUT.json that cannot be written and no GPUs (or no CuPy) are one line and
exit 2 before anything runs.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # this checkout's ctasim and ctahw, not an installed copy


def main(argv=None) -> int:
    from ctasim.cliargs import OneLineParser, parse_outputs, positive_ints
    from ctasim.variants import VARIANTS

    ap = OneLineParser(prog="python bench/hw/ctapipe_checks.py", description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--ms", type=positive_ints, default="4096,16384")
    ap.add_argument("--variants", default="cutlass_ctapipe,cutlass_ctapipe_c12,cutlass_ctapipe_c21")
    ap.add_argument("--reps", type=int, default=20)
    a = parse_outputs(ap, argv, files=("out",))
    unknown = [v for v in a.variants.split(",") if v not in VARIANTS]
    if unknown:
        ap.error(f"--variants: unknown {', '.join(map(repr, unknown))} (known: {', '.join(VARIANTS)})")
    if a.reps < 1:
        ap.error(f"--reps must be >= 1, got {a.reps}")
    from ctahw.device import no_gpus

    if no_gpus("ctapipe_checks", 2):  # no CuPy, no GPU, not sm_90: one line
        return 2

    from ctahw.baselines import Session, SweepConfig
    from ctahw.pipelined import remote_store_cost

    seed = int.from_bytes(os.urandom(4), "little")
    sweep = Session(SweepConfig(h=8192, gpus=2, backends=("cublas",), reps=1, warmup=0, seed=seed), log=lambda s: None)
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    rows = []
    for m in a.ms:
        for v in a.variants.split(","):
            try:
                r = remote_store_cost(sweep, m, v, a.reps)
            except Exception as e:  # noqa: BLE001 - reported, the next point still runs
                r = dict(m=m, variant=v, error=f"{type(e).__name__}: {e}")
            rows.append(r)
            print(json.dumps(r), flush=True)
            with open(a.out, "w") as f:
                json.dump(dict(seed=seed, reps=a.reps, points=rows), f, indent=1)
    print(f"{'M':>6} {'variant':>22} {'remote ms':>10} {'local ms':>9} {'cost':>7}")
    for r in rows:
        if "error" in r:
            print(f"{r['m']:>6} {r['variant']:>22} {r['error']}")
        else:
            print(f"{r['m']:>6} {r['variant']:>22} {r['producer_remote_ms']:10.3f} {r['producer_local_ms']:9.3f} "
                  f"{100 * r['remote_over_local']:+6.2f}%")
    return 0 if all("error" not in r for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
