"""Post-hoc: the tickets mainloop factor measured under the ticket law it is used with, and what that does to every chain run.

    python bench/posthoc_law_factor.py [--out bench/results/posthoc-law-factor]

Registered plan 51 defined the tickets design's mainloop factor (``KernelConfig.ticket_mainloop_factor``) from a
one-layer microbenchmark: the median over its cases of (measured groups of 8 / measured sequential) over (predicted
groups of 8 / predicted sequential), the predictions those of the profile's registration -- the ``"partition"``
ticket law. Its mechanism twin then used the factor (1.008) with a different law, ``"survival"``. Even with one layer
the two laws price the chain kernel differently (a group of 8 row-blocks' weight panels, re-read by the next group,
lose a share under ``"partition"`` from the first byte taken in between, none under ``"survival"`` or
``"threshold"`` while those bytes are under ~0.4 of the L2), so the factor measured under one law and used under
another counts that difference twice: the twin's one-layer ratio was 0.5-3.2 points under the partition profile's.

This applies plan 51's rule with each law's own predictions (:func:`law_factor`, on both machines that ran the
microbenchmark) and judges every committed chain-kernel order run (registered plans 9, 10, 48-52) under the profile
(partition law, factor 1), plan 51's twin (survival, 1.008) and each law at its own factor (:data:`PREDICTORS`).

Every figure is post-hoc: the chains of plans 51 and 52 were seen before the factor was recomputed. What it leads to
is tested by registered plan 53 (bench/predictions/reg53-chain-law-factor-h8704/README.md).

Writes ``factors.csv`` (per machine, law and microbenchmark case: measured, predicted and the case's factor; the
factor per machine and law) and ``record.csv`` (per predictor and plan group: chain-kernel MAPE, mean |error| of
groups of 8 over sequential in points, the faster of the two right), and ``chain-vs-sequential.csv`` (per run,
experiment, M and predictor: the ratio measured and predicted) and ``order-gaps.csv`` (per predictor and M, and over
every M: the mean error of groups of 8 less that of groups of 4, and of groups of 4 less pairs, in points); prints the
tables. ~60 s.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import pandas as pd  # noqa: E402

import plan49_judge as P49  # noqa: E402
import posthoc_l2_survival as pls  # noqa: E402
from ctasim import ticket_rate  # noqa: E402
from ctasim.cliargs import OneLineParser, parse_outputs  # noqa: E402

HW = ROOT / "bench/results/hw"
RATE_RUNS = (("GPU-cc9b1fb6", "2026-12-04-registered51-1gpu"),
             ("GPU-4d76155d", "2026-12-04-registered51-1gpu/call2-rate"))
"""(machine, run folder) of each committed run of the microbenchmark: plan 51's call 1 (its rule's) and call 2."""
LAWS = ("partition", "survival", "threshold")
BASE, SEQ = ticket_rate.TICKETS, ticket_rate.PLAIN
RUNS = {**pls.FACTOR_RUNS, "reg52-chain-faster-h7680": ("2026-12-04-registered52-1gpu",),
        "reg52-chain-faster-h10752": ("2026-12-04-registered52-1gpu",)}
"""Experiment -> the committed runs that measured it: every chain-kernel order run of registered plans 9, 10, 48-52."""


def rate_cases(run: str, law: str, hardware=None) -> pd.DataFrame:
    """Plan 51's rule (:func:`ctasim.ticket_rate.rate_cases`) on one run of the microbenchmark with ``law``'s
    predictions (factor 1): per case, groups of 8 over sequential measured and predicted, and their ratio. The
    profile is ``hardware`` under ``law``, by default the profile as plan 53 adopted it (this record's)."""
    measured = pd.concat([P49.measured(HW / run, exp, 51) for exp in ticket_rate.RATE_EXPERIMENTS], ignore_index=True)
    hw = (pls.profile() if hardware is None else hardware).with_ticket_law(law)
    return ticket_rate.rate_cases(hw, measured).assign(law=law)


def law_factor(rc: pd.DataFrame) -> float:
    """Plan 51's rule: the median of the cases' factors, rounded to 3 places."""
    return ticket_rate.mainloop_factor(rc)


def factors() -> tuple[pd.DataFrame, dict[str, float]]:
    """Every microbenchmark case under every law on both machines, and each law's factor from plan 51's call 1 (the
    run its rule named)."""
    parts = [rate_cases(run, law).assign(machine=machine, run=run) for machine, run in RATE_RUNS for law in LAWS]
    fc = pd.concat(parts, ignore_index=True)
    rule_run = RATE_RUNS[0][1]
    own = {law: law_factor(fc[(fc["law"] == law) & (fc["run"] == rule_run)]) for law in LAWS}
    return fc, own


def predictors(own: dict[str, float]) -> dict[str, tuple[str, float]]:
    """Label -> (ticket law, factor): the profile, plan 51's twin and each law at its own factor."""
    out = {"profile (partition, 1)": ("partition", 1.0), "plan 51 twin (survival, 1.008)": ("survival", 1.008)}
    out.update({f"{law} at its own factor {own[law]:.3f}": (law, own[law]) for law in LAWS})
    return out


def plan_group(experiment: pd.Series) -> pd.Series:
    plan = experiment.str.extract(r"^reg(\d+)-")[0].astype(int)
    return plan.map(lambda p: "plans 51-52" if p >= 51 else "plans 9-50")


def record(c: pd.DataFrame) -> pd.DataFrame:
    """Per plan group (and over all): :func:`posthoc_l2_survival.factor_table`."""
    parts = [pls.factor_table(g).assign(runs=grp) for grp, g in c.groupby(plan_group(c["experiment"]))]
    parts.append(pls.factor_table(c).assign(runs="all"))
    return pd.concat(parts, ignore_index=True)


def chain_vs_sequential(c: pd.DataFrame) -> pd.DataFrame:
    t = c.pivot_table(index=["run", "experiment", "m", "source"], columns="strategy",
                      values=["measured_ms", "predicted_ms"])
    out = pd.DataFrame({"measured": t[("measured_ms", BASE)] / t[("measured_ms", SEQ)],
                        "predicted": t[("predicted_ms", BASE)] / t[("predicted_ms", SEQ)]}).dropna()
    out["error_points"] = 100 * (out["predicted"] - out["measured"])
    return out.round(4).reset_index()


def order_gaps(c: pd.DataFrame) -> pd.DataFrame:
    """Per predictor and M: the mean over runs and H of the error of groups of 8 less that of groups of 4, and of groups
    of 4 less pairs (points; what no machine's speed moves), over the (run, experiment, M) that ran all three."""
    t = c.pivot_table(index=["source", "run", "experiment", "m"], columns="strategy", values="error")
    t = t.dropna(subset=[BASE, "intragpu-g4", "intragpu-g2"])
    gaps = pd.DataFrame({"g8_less_g4_points": 100 * (t[BASE] - t["intragpu-g4"]),
                         "g4_less_g2_points": 100 * (t["intragpu-g4"] - t["intragpu-g2"])})
    by_m = gaps.groupby(level=["source", "m"]).agg(["mean", "size"])
    out = pd.DataFrame({"cases": by_m[("g8_less_g4_points", "size")],
                        "g8_less_g4_points": by_m[("g8_less_g4_points", "mean")],
                        "g4_less_g2_points": by_m[("g4_less_g2_points", "mean")]}).reset_index()
    every = gaps.groupby(level="source").agg(["mean", "size"])
    out = pd.concat([out, pd.DataFrame({"source": every.index, "m": "all",
                                        "cases": every[("g8_less_g4_points", "size")].to_numpy(),
                                        "g8_less_g4_points": every[("g8_less_g4_points", "mean")].to_numpy(),
                                        "g4_less_g2_points": every[("g4_less_g2_points", "mean")].to_numpy()})])
    return out.round(2).rename(columns={"source": "predictor"}).reset_index(drop=True)


def main(argv: list[str] | None = None) -> int:
    ap = OneLineParser(prog="python bench/posthoc_law_factor.py", description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "bench/results/posthoc-law-factor")
    args = parse_outputs(ap, argv, folders=("--out",))
    fc, own = factors()
    c = pls.cases(tuple(RUNS), runs=RUNS, predictors=predictors(own))
    rec, cvs, gaps = record(c), chain_vs_sequential(c), order_gaps(c)
    args.out.mkdir(parents=True, exist_ok=True)
    fc.to_csv(args.out / "factors.csv", index=False)
    rec.to_csv(args.out / "record.csv", index=False)
    cvs.to_csv(args.out / "chain-vs-sequential.csv", index=False)
    gaps.to_csv(args.out / "order-gaps.csv", index=False)
    pd.set_option("display.width", 200)
    print(fc.pivot_table(index=["machine", "experiment", "case"], columns="law", values="factor").to_string())
    print("factor by plan 51's rule (call 1), per law:", ", ".join(f"{k} {v:.3f}" for k, v in own.items()))
    print()
    print(rec.to_string(index=False))
    print()
    print(gaps[gaps["m"].astype(str) == "all"].to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
