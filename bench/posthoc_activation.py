"""Post-hoc: registered plan 21 with the fused activations' measured factors (no GPU).

    python bench/posthoc_activation.py [--out bench/results/posthoc-activation]

Plan 21 was predicted with every fused activation at the erf-GeLU's epilogue cost; afterwards the same GEMM was timed
with silu and relu fused (``bench/results/hw/2026-12-02-activation-costs``): relu costs nothing, silu 1.19 times the
GeLU. Each of plan 21's block experiments is predicted again with h200-x1-calibrated as it is now (the factors in) and
as registered (``silu_epilogue_factor`` = ``relu_epilogue_factor`` = 1, which gives the registered figures back),
judged against both committed measurements. Post-hoc: OPT-66B's over-prediction was seen before the factors were
measured. Writes ``cases.csv`` and ``summary.csv`` (MAPE, worst, bias per run and predictor over the 10 blocks) and
prints the summary.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import pandas as pd  # noqa: E402
from plan_judge import blocks  # noqa: E402

from ctasim import results  # noqa: E402
from ctasim.accuracy import judge  # noqa: E402
from ctasim.cases import load_experiment  # noqa: E402
from ctasim.harness import load_harness  # noqa: E402
from ctasim.predict import predict  # noqa: E402
from ctasim.spec import load_hardware  # noqa: E402

HW = ROOT / "bench/results/hw"
RUNS = ("2026-12-02-registered21-1gpu", "2026-12-02-registered21-1gpu-run2")


def judged(run: str, name: str) -> pd.DataFrame:
    reg = ROOT / "bench/predictions" / name
    meas = results.read(HW / run / name / "results.csv")
    harness = load_harness(json.loads((reg / "registration.json").read_text())["harness"]["name"])
    hw = load_hardware("h200-x1-calibrated")
    parts = []
    for label, h in (("interleaved", hw),
                     ("interleaved (registered)", dataclasses.replace(hw, silu_epilogue_factor=1.0,
                                                                      relu_epilogue_factor=1.0))):
        p = predict(dataclasses.replace(load_experiment(name), hardware=h), harness, None)
        p = p[p["source"] == "model"].assign(source=label)
        parts.append(p)
    return judge(pd.concat(parts, ignore_index=True), meas).assign(run=run, registration=name)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "bench/results/posthoc-activation")
    args = ap.parse_args(argv)
    cases = pd.concat([judged(run, name) for run in RUNS for name in blocks(21)], ignore_index=True)
    rows = []
    for (run, src), g in cases.groupby(["run", "source"]):
        w = g.loc[g["error"].abs().idxmax()]
        rows.append({"run": run, "predictor": src, "cases": len(g), "mape_pct": round(100 * g["error"].abs().mean(), 2),
                     "worst_pct": round(100 * w["error"], 2), "bias_pct": round(100 * g["error"].mean(), 2)})
    summary = pd.DataFrame(rows)
    args.out.mkdir(parents=True, exist_ok=True)
    cases.to_csv(args.out / "cases.csv", index=False, float_format="%.6g")
    summary.to_csv(args.out / "summary.csv", index=False)
    pd.set_option("display.width", 200)
    print(summary.to_string(index=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
