"""Post-hoc: the memory hierarchy's registered block plans (7, 8, 20) under each drift form (no GPU).

    python bench/posthoc_drift_form.py [--out bench/results/posthoc-drift-form]

Plans 7 and 8 were predicted with h200-x1-calibrated when it charged the drift in the form ``"wave"`` (plan 7 before
the drift existed, in lockstep), plan 20 when it charged it ``"carried"``. Each of their experiments is predicted again
with the profile as it is now (form ``"interleaved"``, its refit L2 constants, the memory passes at their measured
rates), with ``h200-x1-calibrated-carried`` and ``h200-x1-calibrated-wave`` (those forms and constants, the same pass
rates), and with the last two as registered (the passes at ``hbm_gbps``: ``"... (registered)"``, which give the
plans' registered figures back), and judged against the committed measurements (plan 7's run, plan 8's and plan
20's two runs each). Every figure here is post-hoc: the measurements existed before the carried and interleaved
forms and the pass rates were chosen. Writes ``cases.csv`` (every judged case and predictor) and ``summary.csv``
(MAPE and worst per run and predictor over the model blocks, reference GEMMs left out) and prints the summary.
The profiles are taken with the clock's one step (``ctasim.predict.one_step``), as the plans judged here were
registered; ``bench/posthoc_clock_curve.py`` judges the clock curve. The table dates from 2026-12-02: the profiles are
taken with the reuse law they had then, a panel's reuse across waves an LRU of the whole L2, as before registered plan
67's adoption on an H200 (``ctasim.profiles.before_h200_reuse``).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import pandas as pd  # noqa: E402

from ctasim import results  # noqa: E402
from ctasim.accuracy import judge  # noqa: E402
from ctasim.cases import load_experiment  # noqa: E402
from ctasim.cliargs import OneLineParser, parse_outputs  # noqa: E402
from ctasim.harness import load_harness  # noqa: E402
from ctasim.predict import one_step, predict  # noqa: E402
from ctasim.profiles import before_h200_reuse  # noqa: E402
from ctasim.spec import load_hardware  # noqa: E402

HW = ROOT / "bench/results/hw"
RUNS = {"2026-12-02-registered7-1gpu": ("reg7-qwen2.5-32b-1gpu", "reg7-mistral-large-2-1gpu", "reg7-gpt3-175b-1gpu"),
        "2026-12-02-registered8-1gpu": ("reg8-llama2-13b-1gpu", "reg8-yi-34b-1gpu", "reg8-command-r-plus-1gpu",
                                        "reg8-falcon-40b-1gpu"),
        "2026-12-02-registered8-1gpu-run2": ("reg8-llama2-13b-1gpu", "reg8-yi-34b-1gpu", "reg8-command-r-plus-1gpu",
                                             "reg8-falcon-40b-1gpu"),
        "2026-12-02-registered20-1gpu": ("reg20-llama2-13b-1gpu", "reg20-yi-34b-1gpu", "reg20-falcon-40b-1gpu",
                                         "reg20-qwen2.5-32b-1gpu"),
        "2026-12-02-registered20-1gpu-run2": ("reg20-llama2-13b-1gpu", "reg20-yi-34b-1gpu", "reg20-falcon-40b-1gpu",
                                              "reg20-qwen2.5-32b-1gpu")}
PROFILES = {"interleaved": ("h200-x1-calibrated", False), "carried": ("h200-x1-calibrated-carried", False),
            "wave": ("h200-x1-calibrated-wave", False), "carried (registered)": ("h200-x1-calibrated-carried", True),
            "wave (registered)": ("h200-x1-calibrated-wave", True)}
"""Predictor -> (profile, as registered: the memory passes at hbm_gbps and every activation at the GeLU's cost, as
before the pass rates and the activation factors were measured)."""


def predictors() -> dict[str, tuple]:
    """:data:`PROFILES` as :func:`judged` takes them: predictor -> (hardware, the sources of its prediction kept)."""
    import dataclasses

    out = {}
    for form, (profile, registered) in PROFILES.items():
        hw = before_h200_reuse(load_hardware(profile))  # a table made before plan 67's adoption on an H200, 2026-12-06
        hw = one_step(hw)  # the clock's one step, as these plans were registered
        if registered:
            hw = dataclasses.replace(hw, epilogue_pass_gbps=0.0, rowwise_gbps=0.0, silu_epilogue_factor=1.0,
                                     relu_epilogue_factor=1.0)
        out[form] = (hw, ("model",) if registered else ("model", "lockstep"))
    return out


_PREDICTED: dict[tuple, pd.DataFrame] = {}
"""(experiment, hardware, harness) -> its prediction, for :func:`judged` (a prediction is deterministic)."""


def judged(run: str, name: str, preds: dict[str, tuple]) -> pd.DataFrame:
    """One experiment of one run: each predictor's model (and lockstep where kept; ``preds``: predictor ->
    (hardware, sources)) judged against the committed measurement's sequential cases."""
    import dataclasses
    import json

    reg = ROOT / "bench/predictions" / name
    meas = results.read(HW / run / name / "results.csv")
    meas = meas[meas["kind"] == "sequential"]
    harness = load_harness(json.loads((reg / "registration.json").read_text())["harness"]["name"])
    parts = []
    for form, (hw, sources) in preds.items():
        key = (name, hw, harness)  # several runs measured the same experiment: predicted once
        if key not in _PREDICTED:
            _PREDICTED[key] = predict(dataclasses.replace(load_experiment(name), hardware=hw), harness, None)
        p = _PREDICTED[key]
        p = p[p["source"].isin(sources)].copy()
        p["source"] = p["source"].map({"model": form, "lockstep": f"lockstep ({form}'s constants)"})
        parts.append(p)
    return judge(pd.concat(parts, ignore_index=True), meas).assign(run=run, registration=name)


def write(cases: pd.DataFrame, out: Path) -> None:
    """``cases.csv`` and ``summary.csv`` (MAPE, worst and bias per run and predictor) into ``out``; prints the
    summary."""
    rows = []
    for (run, src), g in cases.groupby(["run", "source"]):
        w = g.loc[g["error"].abs().idxmax()]
        rows.append({"run": run, "predictor": src, "cases": len(g), "mape_pct": round(100 * g["error"].abs().mean(), 2),
                     "worst_pct": round(100 * w["error"], 2), "bias_pct": round(100 * g["error"].mean(), 2)})
    summary = pd.DataFrame(rows)
    out.mkdir(parents=True, exist_ok=True)
    cases.to_csv(out / "cases.csv", index=False, float_format="%.6g")
    summary.to_csv(out / "summary.csv", index=False)
    pd.set_option("display.width", 200)
    print(summary.to_string(index=False))


def main(argv=None) -> int:
    ap = OneLineParser(prog="python bench/posthoc_drift_form.py", description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "bench/results/posthoc-drift-form")
    args = parse_outputs(ap, argv, folders=("--out",))
    preds = predictors()
    write(pd.concat([judged(run, name, preds) for run, names in RUNS.items() for name in names], ignore_index=True),
          args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
