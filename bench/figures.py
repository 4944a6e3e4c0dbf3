"""Simulate the paper's figures and the 2xH200 experiments; write tables, plots and provenance.

    python bench/figures.py [--out bench/results/sim]

Writes, per experiment, ``<name>.csv`` (the summary table), ``<name>-*.png`` plots, and one
``provenance.json`` for the whole run.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from provenance import provenance  # noqa: E402

from ctasim.cli import _figures  # noqa: E402
from ctasim.run import run_experiment  # noqa: E402
from ctasim.spec import load_experiment  # noqa: E402

EXPERIMENTS = ("default", "fig4", "fig5", "fig7", "h200x2-sweep", "raster", "mlp-block")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "results" / "sim"))
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    timings = {}
    for name in EXPERIMENTS:
        exp = load_experiment(name)
        t0 = time.perf_counter()
        df, results = run_experiment(exp, progress=False)
        timings[name] = round(time.perf_counter() - t0, 2)
        df.round(4).to_csv(out / f"{name}.csv", index=False)
        _figures(exp, df, results, out)
        print(f"{name}: {len(df)} runs, {int(df['ctas_simulated'].sum()):,} CTAs, {timings[name]} s")
    prov = provenance("python bench/figures.py")
    prov["wall_s"] = timings
    (out / "provenance.json").write_text(json.dumps(prov, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
