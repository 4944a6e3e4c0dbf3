"""Post-hoc: the memory-hierarchy profile (h200-x1-calibrated) against every committed single-GPU registered run.

    python bench/posthoc_memory.py [--out bench/results/posthoc-memory]

For each registration whose single-GPU part was measured (``PAIRS``: registration folder, measurement folder), the
experiment is predicted again with ``--hardware h200-x1-calibrated`` (the memory hierarchy of ``ctasim.costs.tuned_gemm``
on; ``source = flat`` the same profile with it off) and judged against the committed measurement, beside the model
that was registered (``h200-x2-calibrated``) and the registered naive predictors. Sequential cases only (the chain
kernel's tiles do not use the memory hierarchy).

**Post-hoc**: every measurement here existed before the memory hierarchy joined the engine; these figures say how it
would have done, not that it predicts. Writes ``cases.csv`` (every judged case and predictor) and ``summary.csv``
(MAPE and worst per registration and predictor, and over all), and prints the summary.
The profiles are taken with the clock's one step (``ctasim.predict.one_step``), as the plans judged here were
registered; ``bench/posthoc_clock_curve.py`` judges the clock curve. The table dates from 2026-12-02: the profile is
taken with the reuse law it had then, a panel's reuse across waves an LRU of the whole L2, as before registered plan
67's adoption on an H200 (``ctasim.profiles.before_h200_reuse``).
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout's ctasim

import pandas as pd  # noqa: E402

from ctasim import results  # noqa: E402
from ctasim.accuracy import judge  # noqa: E402
from ctasim.cases import load_experiment  # noqa: E402
from ctasim.cliargs import OneLineParser, parse_outputs  # noqa: E402
from ctasim.harness import load_harness  # noqa: E402
from ctasim.predict import one_step, predict  # noqa: E402
from ctasim.profiles import before_h200_reuse  # noqa: E402
from ctasim.spec import load_hardware  # noqa: E402

PROFILE = "h200-x1-calibrated"
HW = ROOT / "bench/results/hw"
PAIRS = [(name, HW / "2026-12-01-registered-1gpu" / name)
         for name in ("reg-gemm-h4096", "reg-gemm-h12288", "reg-h4096", "reg-h12288", "reg-mlp")]
PAIRS += [(name, HW / "2026-12-01-registered2-1gpu" / name) for name in ("reg2-mlp", "reg2-mlp-h4096", "reg2-chain")]
PAIRS += [(name, HW / "2026-12-01-chain-1gpu/registered" / name)
          for name in ("reg3-intragpu", "reg3-intragpu-deep", "reg3-intragpu-h4096")]
PAIRS += [("reg4-intragpu-static", HW / "2026-12-01-chain-1gpu/registered4/reg4-intragpu-static")]
PAIRS += [(name, HW / "2026-12-01-registered5-1gpu" / name) for name in ("reg5-llama8b-1gpu", "reg5-llama70b-1gpu")]
PAIRS += [(name, HW / "2026-12-01-registered6-1gpu" / name)
          for name in ("reg6-qwen2.5-72b-1gpu", "reg6-mixtral-8x22b-expert-1gpu", "reg6-deepseek-v3-dense-1gpu",
                       "reg6-llama3.1-405b-1gpu")]


def judged(name: str, meas_dir: Path) -> pd.DataFrame:
    reg = ROOT / "bench/predictions" / name
    meas = results.read(meas_dir / "results.csv")
    meas = meas[meas["kind"] == "sequential"]
    registered = results.read(reg / "predictions.csv")
    registered = registered[registered["kind"] == "sequential"]
    registered["source"] = registered["source"].map({"model": "registered model"}).fillna(registered["source"])
    exp = load_experiment(name)
    # a table made before plan 67's adoption on an H200 (2026-12-06): the reuse law it had then
    hw = before_h200_reuse(load_hardware(PROFILE))
    exp = dataclasses.replace(exp, hardware=one_step(hw),
                              strategies=tuple(s for s in exp.strategies if s.kind == "sequential"))
    import json

    harness = load_harness(json.loads((reg / "registration.json").read_text())["harness"]["name"])
    new = predict(exp, harness, None)
    new["source"] = new["source"].map({"model": "memory", "flat": "flat (x1, no memory)"}).fillna(new["source"])
    new = new[new["source"] != "waves"]
    j = judge(pd.concat([registered, new], ignore_index=True), meas)
    return j.assign(registration=name)


def main(argv=None) -> int:
    ap = OneLineParser(prog="python bench/posthoc_memory.py", description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "bench/results/posthoc-memory")
    args = parse_outputs(ap, argv, folders=("--out",))
    cases = pd.concat([judged(n, d) for n, d in PAIRS if (d / "results.csv").exists()], ignore_index=True)
    rows = []
    for (reg, src), g in list(cases.groupby(["registration", "source"])) + [
            (("all", s), g) for s, g in cases.groupby("source")]:
        w = g.loc[g["error"].abs().idxmax()]
        rows.append({"registration": reg, "predictor": src, "cases": len(g),
                     "mape_pct": round(100 * g["error"].abs().mean(), 2), "worst_pct": round(100 * w["error"], 2),
                     "bias_pct": round(100 * g["error"].mean(), 2)})
    summary = pd.DataFrame(rows)
    args.out.mkdir(parents=True, exist_ok=True)
    cases.to_csv(args.out / "cases.csv", index=False, float_format="%.6g")
    summary.to_csv(args.out / "summary.csv", index=False)
    wide = summary.pivot_table(index="registration", columns="predictor", values="mape_pct")
    print(wide.to_string(float_format=lambda v: f"{v:.2f}"))
    print(summary[summary.registration == "all"].to_string(index=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
