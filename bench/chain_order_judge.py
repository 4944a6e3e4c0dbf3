"""Registered plans 9 and 10, rules 2 and 3 (bench/predictions/README.md): the chain kernel's tile-order effect and
its ranking against sequential, model and the other predictors against the measurement.

    python bench/chain_order_judge.py [9 | 10]      (default 9)

Reads the plan's registrations (bench/predictions/<reg>/predictions.csv) and measurement
(bench/results/hw/2026-12-02-registered<plan>-1gpu/<reg>/results.csv); writes
bench/results/validation-registered<plan>/order-effect.csv (rule 2: per case and order, the makespan ratio to groups
of 8, measured and per predictor) and chain-vs-sequential.csv (rule 3), and prints both with the counts the rules
ask for.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

from ctasim.predict import PREDICTORS

ROOT = Path(__file__).resolve().parent.parent
PLANS = {  # plan: (registrations, orders other than groups of 8)
    9: (("reg9-chain-order", "reg9-chain-order-h12288"), ("intragpu-g16", "intragpu-g2", "intragpu-row")),
    10: (("reg10-chain-order-h10240", "reg10-chain-order-h6144", "reg10-chain-order-deep"),
         ("intragpu-g4", "intragpu-g2", "intragpu-row")),
}
PLAN = 9
REGS, ORDERS = PLANS[PLAN]
MEASURED = ROOT / "bench/results/hw/2026-12-02-registered9-1gpu"
OUT = ROOT / "bench/results/validation-registered9"
BASE = "intragpu"  # groups of 8
TIE = 0.005  # rule 3: a predicted difference within 0.2% is a tie; a measured one within +-0.5% then agrees


def load() -> pd.DataFrame:
    rows = []
    for reg in REGS:
        p = pd.read_csv(ROOT / "bench/predictions" / reg / "predictions.csv")
        m = pd.read_csv(MEASURED / reg / "results.csv")
        m = m[m["status"] == "ok"].assign(source="measured")
        for d in (p, m):
            rows.append(d[["experiment", "case", "strategy", "source", "makespan_ms"]])
    return pd.concat(rows, ignore_index=True)


def order_effect(d: pd.DataFrame) -> pd.DataFrame:
    t = d.pivot_table(index=["experiment", "case", "source"], columns="strategy", values="makespan_ms")
    out = []
    for order in ORDERS:
        r = (t[order] / t[BASE]).rename("ratio").reset_index()
        r["order"] = order
        out.append(r)
    r = pd.concat(out).pivot_table(index=["experiment", "case", "order"], columns="source", values="ratio")
    return r.reset_index()


def chain_vs_sequential(d: pd.DataFrame) -> pd.DataFrame:
    t = d.pivot_table(index=["experiment", "case", "source"], columns="strategy", values="makespan_ms")
    r = (t[BASE] / t["sequential"]).rename("chain_over_sequential").reset_index()
    return r.pivot_table(index=["experiment", "case"], columns="source", values="chain_over_sequential").reset_index()


def use_plan(plan: int) -> None:
    """Point the module at plan ``plan``'s registrations, measurement and output folder."""
    global PLAN, REGS, ORDERS, MEASURED, OUT
    PLAN = plan
    REGS, ORDERS = PLANS[plan]
    MEASURED = ROOT / f"bench/results/hw/2026-12-02-registered{plan}-1gpu"
    OUT = ROOT / f"bench/results/validation-registered{plan}"


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv:
        if len(argv) != 1 or not argv[0].isdigit() or int(argv[0]) not in PLANS:
            print(f"usage: chain_order_judge.py [{' | '.join(map(str, PLANS))}]", file=sys.stderr)
            return 2
        if int(argv[0]) != PLAN:
            use_plan(int(argv[0]))
    d = load()
    oe = order_effect(d)
    preds = [c for c in PREDICTORS if c in oe]
    OUT.mkdir(parents=True, exist_ok=True)
    oe.to_csv(OUT / "order-effect.csv", index=False, float_format="%.4f")
    pd.set_option("display.width", 200)
    print("Rule 2: makespan / groups-of-8 makespan, per case and order\n")
    print(oe.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    print()
    for p in preds:
        sign = np.sign(oe[p] - 1.0) == np.sign(oe["measured"] - 1.0)
        mae = (oe[p] - oe["measured"]).abs().mean()
        per = {o: int(sign[oe["order"] == o].sum()) for o in ORDERS}
        print(f"{p:9s} sign agrees {int(sign.sum())}/{len(oe)} {per}; mean |ratio error| {100 * mae:.1f} points")
    cs = chain_vs_sequential(d)
    cs.to_csv(OUT / "chain-vs-sequential.csv", index=False, float_format="%.4f")
    print("\nRule 3: chain kernel (groups of 8) / sequential\n")
    print(cs.to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    for p in ("model", "flat", "naive", "waves"):
        if p not in cs:
            continue
        pred, meas = cs[p] - 1.0, cs["measured"] - 1.0
        tie = pred.abs() <= 0.002
        agree = np.where(tie, meas.abs() <= TIE, np.sign(pred) == np.sign(meas))
        print(f"{p:9s} agrees {int(agree.sum())}/{len(cs)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
