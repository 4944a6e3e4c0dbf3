"""Parallel sweep speed: one experiment serial, in 2 local processes, and on a 2-worker Dask LocalCluster.

    python bench/parallel_speed.py [--experiment fig4] [--reps 3] [--out bench/results/parallel_speed.csv]

All three in one process, interleaved (serial, local, dask, serial, ...), wall time of ``run_experiment`` (the
cluster is started once, before timing; the local pool is started inside each timed call, as ``ctasim run --jobs``
does), median of ``--reps``; the speed-ups are ratios of medians of the same run. Every parallel table is checked
equal to the serial one. Writes the CSV and ``<out>.provenance.json``.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's ctasim, not an installed one

from ctasim.cliargs import OneLineParser, parse_outputs  # noqa: E402


def main(argv=None) -> int:
    ap = OneLineParser(prog="python bench/parallel_speed.py", description=__doc__.splitlines()[0])
    ap.add_argument("--experiment", default="fig4")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--out", type=Path, default=Path("bench/results/parallel_speed.csv"))
    args = parse_outputs(ap, argv, files=("--out",))

    import pandas as pd
    from distributed import LocalCluster

    from ctasim.cases import estimate_ctas, load_experiment
    from ctasim.run import run_experiment
    from provenance import provenance

    exp = load_experiment(args.experiment)
    times = {"serial": [], "local-2": [], "dask-2": []}
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        addr = cluster.scheduler_address
        ref = None
        for _ in range(args.reps):
            for name, kw in (("serial", {}), ("local-2", {"jobs": 2}), ("dask-2", {"scheduler": addr})):
                t0 = time.perf_counter()
                df, _ = run_experiment(exp, **kw)
                times[name].append(time.perf_counter() - t0)
                if ref is None:
                    ref = df
                pd.testing.assert_frame_equal(df, ref)
    med = {k: statistics.median(v) for k, v in times.items()}
    rows = [dict(experiment=exp.name, ctas=estimate_ctas(exp), runs=len(ref), mode=k, reps=args.reps,
                 wall_s_median=med[k], wall_s=";".join(f"{x:.3f}" for x in v), speedup_vs_serial=med["serial"] / med[k])
            for k, v in times.items()]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_csv(args.out, index=False)
    args.out.with_suffix(".provenance.json").write_text(json.dumps(
        provenance("python bench/parallel_speed.py " + " ".join(argv or sys.argv[1:])), indent=1) + "\n")
    print(pd.DataFrame(rows)[["mode", "wall_s_median", "speedup_vs_serial"]].to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
