"""Registered plan 61: given the state each half of the GPU takes, does the threshold law price row order? (no GPU here)

    python bench/plan61_state_prices.py --register [--out bench/predictions/reg61-state-prices]
    python bench/plan61_state_prices.py --judge RUN_DIR [--registered bench/predictions/reg61-state-prices]
                                        [--out bench/results/validation-registered61]

Post-hoc (``bench/posthoc_sm_groups.py``, ``by-state.csv``), row order runs in one of three states, read from the
traces' SM stamps: every SM keeping the weights' reuse, one half of the GPU losing it (54 or 60 SMs slow), or every SM
losing it (24 fast). The profile prices one state per shape and overprices the half-lost runs (+7.24 points of makespan
penalty over groups of 8, mean |error| 9.14); the threshold ticket law in its two consistent states
(``KernelConfig.ticket_state``: ``hold``, ``thrash``) and their mean (``half``) price each state nearer -- all lost:
thrash 3.34 against the profile's 4.09; one half lost: the mean 3.63 against 9.14. Which state a run takes is not
priced by anything here. Plan 61 asks the state prices of runs that do not exist yet: the row-order runs of registered
plan 59's call (``bench/plan60_sm_groups.EXPERIMENTS``, traced one run each), beside plan 60, which asks whether the
states are there at all.

``--register`` writes ``predicted.csv``: per experiment and case, row order's makespan penalty over groups of 8
(percent) under the profile (``h200-x1-calibrated`` as the experiments name it, as it was when registered: a panel's
reuse across waves an LRU of the whole L2, before registered plan 67's adoption on an H200, 2026-12-06,
``ctasim.profiles.before_h200_reuse``; ``profile_pct``) and under it with the threshold law in each state and their
mean (``posthoc_sm_groups.state_prices``). A registration is never overwritten.

``--judge`` reads the traced runs as plan 60's judge does (``plan60_sm_groups.measured``: the split of the SMs and each
run's late mainloop and makespan), sets row order's measured makespan penalty over groups of 8 and its state, prices
each run by its state (24 fast: ``thrash_pct``; 54 or 60 slow: ``half_pct``; uniform: none), and writes ``cases.csv``
and ``claims.csv`` (:data:`CLAIMS`; ``judged`` False where no run is in the state a claim needs). A missing
registration, run or traced case is refused in one line, exit 2, nothing written.

No adoption rule: the profile is not changed by this plan (nothing prices which state a run takes).

Left out: the state itself (read from the run's own timings, so the plan asks what the prices are worth once the state
is known, not whether anything predicts it), the uniform runs (no state price; most keep the reuse, a few lose it
without a clear split), and the halves' sharing of HBM (the half price is the mean of the two states).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

import plan60_sm_groups as p60  # noqa: E402
import posthoc_order_mainloop as pom  # noqa: E402
import posthoc_sm_groups as psg  # noqa: E402
import registered_plan  # noqa: E402
from ctasim.profiles import before_h200_reuse  # noqa: E402

ROW = p60.ROW
PRICE_OF = {p60.ALL_LOST: "thrash_pct", **{s: "half_pct" for s in p60.SLOW}}
"""A run's state -> the registered price of it."""
WITHIN = 6.0
"""Claim (c): points of makespan penalty."""
REGISTERED = ROOT / "bench/predictions/reg61-state-prices"
JudgeError = registered_plan.JudgeError
"""A registration or a run that cannot be judged (one line; ``bench/registered_plan.py``)."""
CLAIMS = {
    "a": "on the row-order runs where every SM lost the reuse (24 fast), the thrash price's mean |error| of the "
         "makespan penalty over groups of 8 is below the profile's",
    "b": "on the row-order runs where one half lost it (54 or 60 slow), the half price's mean |error| is below the "
         "profile's",
    "c": f"every row-order run in one of those states is priced by its state's price within {WITHIN:g} points "
         f"(stricter than the post-hoc record: 34 of 39, worst 13.5 points; the profile 26 of 39)",
}


def register() -> pd.DataFrame:
    """Row order's makespan penalty over groups of 8 per experiment and case: the profile's and the state prices, the
    profile as registered (the LRU reuse law)."""
    rows = []
    for exp in p60.EXPERIMENTS:
        cases, _ = p60.orders(exp)
        # a registration made before registered plan 67's adoption on an H200 (2026-12-06): the profile before it
        hw = psg.dated_profile(exp)
        for case in cases:
            tr = pom.simulated(exp, [(case, pom.REFERENCE), (case, ROW)], profile=before_h200_reuse)
            profile = (tr[(case, ROW)].makespan_ns / tr[(case, pom.REFERENCE)].makespan_ns - 1) * 100
            rows.append(dict(experiment=exp, case=case, profile_pct=profile, **psg.state_prices(exp, case, hw)))
    return pd.DataFrame(rows)


def measured(run_dir: Path) -> pd.DataFrame:
    """Plan 60's measured table (the split of every traced run's SMs, its late mainloop and makespan)."""
    return p60.measured(run_dir)


def cases(pred: pd.DataFrame, meas: pd.DataFrame) -> pd.DataFrame:
    """Per experiment and case: row order's measured makespan penalty over groups of 8 and state, the registered
    prices, the price of the run's state (NaN where it is uniform) and each one's error (priced less measured)."""
    m = registered_plan.order_penalties(meas)
    m = m[m["order"] == ROW][["experiment", "case", "machine", "state", "makespan_pct"]]
    j = m.rename(columns={"makespan_pct": "makespan_pct_meas"}).merge(pred, on=["experiment", "case"], how="inner")
    price = j["state"].map(PRICE_OF)
    j["state_price_pct"] = np.nan
    for col in set(PRICE_OF.values()):
        j.loc[price == col, "state_price_pct"] = j.loc[price == col, col]
    for col in ("profile_pct", "state_price_pct"):
        j[col.replace("_pct", "_err")] = j[col] - j["makespan_pct_meas"]
    return j


def claims(c: pd.DataFrame, provenance: str) -> pd.DataFrame:
    """The plan's claims (:data:`CLAIMS`) on :func:`cases`' table: value, judged (False: no run in the state a claim
    needs, and then not met) and met."""
    lost = c[c["state"] == p60.ALL_LOST]
    half = c[c["state"].isin(p60.SLOW)]
    priced = c[c["state"].isin(PRICE_OF)]

    def mae(d, col):
        return float(d[col].abs().mean())

    rows = [
        ("a", f"{mae(lost, 'state_price_err'):.2f} against {mae(lost, 'profile_err'):.2f} points over {len(lost)} runs"
         if len(lost) else "no all-lost run", len(lost) > 0,
         len(lost) > 0 and mae(lost, "state_price_err") < mae(lost, "profile_err")),
        ("b", f"{mae(half, 'state_price_err'):.2f} against {mae(half, 'profile_err'):.2f} points over {len(half)} runs"
         if len(half) else "no half-lost run", len(half) > 0,
         len(half) > 0 and mae(half, "state_price_err") < mae(half, "profile_err")),
        ("c", f"{int((priced['state_price_err'].abs() <= WITHIN).sum())} of {len(priced)}", len(priced) > 0,
         len(priced) > 0 and bool((priced["state_price_err"].abs() <= WITHIN).all())),
    ]
    return registered_plan.claims_table(rows, CLAIMS, provenance)


PLAN = registered_plan.Plan(
    name="plan61_state_prices", description=__doc__.splitlines()[0], registered=REGISTERED,
    results=ROOT / "bench/results/validation-registered61", register=register, measured=measured, cases=cases,
    claims=claims, first_file=lambda run_dir: run_dir / p60.EXPERIMENTS[0] / pom.BUNDLE)


def main(argv: list[str] | None = None) -> int:
    return registered_plan.main(PLAN, argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
