"""Registered plan 60: does row order keep or lose its L2 reuse by the same fixed groups of SMs? (no GPU here)

    python bench/plan60_sm_groups.py --register [--out bench/predictions/reg60-sm-groups]
    python bench/plan60_sm_groups.py --judge RUN_DIR [--registered bench/predictions/reg60-sm-groups]
                                     [--out bench/results/validation-registered60]

Post-hoc, over every committed traced chain-kernel run (``bench/posthoc_sm_groups.py``,
bench/results/posthoc-sm-groups), the SMs of a run do not always run alike: in row order, and only there, a run's SMs'
late mainloop splits into a fast and a slow group whose smaller side is 24 SMs (fast) or 54 (slow; 60 on one machine),
the same SMs on every case of a machine, in whole TPCs, the 24 and the 54 disjoint. Read as the H200's two halves
(two small GPCs of 12 SMs and six of 18) each keeping or losing the weights' reuse on its own, row order's penalty
takes three levels, and the profile (one state per shape) overprices the runs where one half lost it. The reading was
made after those runs were seen. Plan 60 asks it of runs that do not exist yet, at no device cost: registered plan 59's
call traces one run of every chain-kernel case of its two experiments and of plan 58's two, which it repeats (2-layer
chains at H = 5632, 7424, 8448 and 8960; ``specs/experiments/reg59-adopted-*``, ``reg58-gap-law-*``). Plan 58's two
are shapes already traced (plan 58's run is among the runs read post-hoc, the 60-slow split its H = 8448, M = 16384):
their repeat is a new run, most likely on another machine; plan 59's are shapes never traced.

``--register`` writes ``predicted.csv``: per experiment, case and chain-kernel order the profile's
(``h200-x1-calibrated``, as the experiments name it, as it was when registered: a panel's reuse across waves an LRU of
the whole L2, before registered plan 67's adoption on an H200, 2026-12-06, ``ctasim.profiles.before_h200_reuse``) late
mainloop (µs) and makespan (ms) from its simulated traces (``posthoc_order_mainloop.modelled``), from which the judge
takes each order's penalties over groups of 8. A registration is never overwritten.

``--judge`` reads RUN_DIR/EXP/ctapipe_traces.trace.npz of the four experiments and sets, per case and order, the
split of the SMs' late mainloop (``posthoc_sm_groups.bundle_splits``: a clear split is a step of
``posthoc_sm_groups.CLEAR_POINTS`` points or more) and the measured penalties (the traced runs' late mainloop and
makespan, ``posthoc_order_mainloop.traced_figures``) beside the registered ones; writes ``cases.csv`` and
``claims.csv`` (:data:`CLAIMS`; ``judged`` False where a claim found no case to judge, and then not met; registered
or post-hoc by ``ctasim.accuracy.provenance_order`` of predicted.csv against the first bundle). A missing
registration, run or traced case is refused in one line, exit 2, nothing written.

No adoption rule: the profile is not changed by this plan.

Claims amended on 2026-12-05, before any run of plan 59's call, after a review: (b) asks for the state (size and side),
not the size alone; (c) reads row order's splits only, each part judged where it applies; (f) compares mean |error|,
not the mean error.

Left out: which GPC an SM is in (the sets are read from the timings alone), why a half keeps or loses the reuse, and
anything that prices which state a run takes (plan 61 asks the prices given the state).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import pandas as pd  # noqa: E402

import posthoc_order_mainloop as pom  # noqa: E402
import posthoc_sm_groups as psg  # noqa: E402
import registered_plan  # noqa: E402
from ctasim.cases import expand, load_experiment  # noqa: E402
from ctasim.profiles import before_h200_reuse  # noqa: E402

EXPERIMENTS = ("reg59-adopted-h5632", "reg59-adopted-h8960", "reg58-gap-law-h7424", "reg58-gap-law-h8448")
FITS = "reg59-adopted-h5632"
"""The experiment whose weights (5632 x 5632 bf16, 60.5 MiB) are about the L2's size: claim (d)'s."""
ROW = "intragpu-row"
SLOW = ("54 slow", "60 slow")
"""The states of a half that lost the reuse while the other kept it (posthoc_sm_groups)."""
ALL_LOST = "24 fast"
"""The state of a run whose SMs all lost it (the small GPCs less slowed)."""
STATES = (ALL_LOST, *SLOW)
"""The clear splits the post-hoc reading found (``posthoc_sm_groups.SIZES`` with their sides)."""
REGISTERED = ROOT / "bench/predictions/reg60-sm-groups"
SETS = ROOT / "bench/results/posthoc-sm-groups/sets.csv"
"""The committed SM sets per machine and state (``bench/posthoc_sm_groups.py``): claim (c)'s machines already read."""
JudgeError = registered_plan.JudgeError
"""A registration or a run that cannot be judged (one line; ``bench/registered_plan.py``)."""
CLAIMS = {
    "a": "no run of groups of 8, 4 or pairs splits clearly (every case of the four experiments)",
    "b": f"at least one row-order run splits clearly, and every clear split is one of {', '.join(STATES)} (the "
         f"smaller side's size and whether it is the fast or the slow group)",
    "c": "the clear row-order splits of one state name the same SMs, each set whole TPCs (SMs 2i and 2i + 1), a "
         "24-fast set shares no SM with a slow one, and on a machine in bench/results/posthoc-sm-groups/sets.csv each "
         "set is the one committed there (judged where any row-order run splits clearly; each part where it applies)",
    "d": "at H = 5632 no row-order run splits clearly",
    "e": "where a row-order run has one half slow (54 or 60 slow), the profile's makespan penalty over groups of 8 is "
         "above the measured in more than half of those runs",
    "f": "where row-order runs are both half-lost and all-lost (24 fast), the profile's mean |error| of the makespan "
         "penalty (modelled less measured) is lower on the all-lost runs",
}


def orders(experiment: str) -> tuple[list[str], list[str]]:
    """The cases and chain-kernel strategies (names starting ``intragpu``) of ``experiment``."""
    exp = load_experiment(experiment)
    return ([c.label for c in expand(exp)],
            [s.name for s in exp.strategies if (s.name or "").startswith(pom.REFERENCE)])


def register() -> pd.DataFrame:
    """The profile's late mainloop and makespan of every (experiment, case, chain-kernel order), the profile as
    registered (the LRU reuse law)."""
    parts = []
    for exp in EXPERIMENTS:
        cases, strategies = orders(exp)
        pairs = [(c, o) for c in cases for o in strategies]
        # a registration made before registered plan 67's adoption on an H200 (2026-12-06): the profile before it
        parts.append(pom.modelled(exp, pairs, None, profile=before_h200_reuse).assign(experiment=exp))
    return pd.concat(parts, ignore_index=True)[["experiment", "case", "order", "late_us", "makespan_ms"]]


def measured(run_dir: Path) -> pd.DataFrame:
    """Per experiment, case and order: the split of the traced run's SMs and its late mainloop and makespan."""
    parts = []
    for exp in EXPERIMENTS:
        cases, strategies = orders(exp)
        pairs = [(c, o) for c in cases for o in strategies]
        traces = registered_plan.traced_runs(run_dir, exp, pairs, "plan 59's call traces one run of each "
                                             "chain-kernel case")
        fig = pom.traced_figures(traces.items())
        s = psg.bundle_splits(run_dir / exp / pom.BUNDLE, traces).drop(columns=["run", "experiment"])
        parts.append(fig.merge(s, on=["case", "order"], how="left").assign(experiment=exp))
    return pd.concat(parts, ignore_index=True)


def cases(pred: pd.DataFrame, meas: pd.DataFrame) -> pd.DataFrame:
    """Per experiment, case and order (groups of 8 too): the measured split, and each order's mainloop and makespan
    penalties over groups of 8, measured and modelled (``registered_plan.order_penalties``), and the makespan penalty's
    error (modelled less measured, points)."""
    key = ["experiment", "case", "order"]
    m = registered_plan.order_penalties(meas)
    p = registered_plan.order_penalties(pred)
    j = m.merge(p[key + ["late_us", "makespan_ms", "mainloop_pct", "makespan_pct"]], on=key,
                suffixes=("_meas", "_model"), how="inner")
    j["makespan_err"] = j["makespan_pct_model"] - j["makespan_pct_meas"]
    return j[key + ["machine", "state", "clear", "n_fast", "n_slow", "step", "fast_pct", "slow_pct", "mean_pct",
                    "fast_sms", "late_us_meas", "late_us_model", "mainloop_pct_meas", "mainloop_pct_model",
                    "makespan_pct_meas", "makespan_pct_model", "makespan_err"]]


def _sets_agree(row: pd.DataFrame, committed: pd.DataFrame) -> tuple[str, bool, bool]:
    """Claim (c) on the row-order cases ``row``: (value, judged, met). Each part is judged where it applies (one set per
    state: two splits of a state; disjoint: a 24-fast and a slow set; the committed sets: a machine in ``committed``)
    and reported as "n/a" where it does not."""
    clear = row[row["clear"]].assign(machine=lambda d: d["machine"].fillna("?"), run="judged")
    if clear.empty:
        return "no clear row-order split", False, False
    t = psg.sets(clear)
    seen = committed.merge(t[["machine", "state"]].drop_duplicates(), on=["machine", "state"], how="inner")
    parts = {"whole TPCs": bool(t["tpc_pairs"].all())}
    if (t["cases"] > 1).any() or (t["sets_of_machine_state"] > 1).any():
        parts["one set per state"] = bool((t["sets_of_machine_state"] == 1).all())
    d = psg.disjoint(t)
    if len(d):
        parts["disjoint"] = bool(d["shared"].eq(0).all())
    if len(seen):
        parts["the committed sets"] = set(zip(seen["machine"], seen["state"], seen["set"])) <= set(
            zip(t["machine"], t["state"], t["set"]))
    value = f"{len(clear)} clear splits, {len(t)} sets: " + ", ".join(f"{k} {v}" for k, v in parts.items())
    return value, True, all(parts.values())


def claims(c: pd.DataFrame, provenance: str, committed_sets: Path = SETS) -> pd.DataFrame:
    """The plan's claims (:data:`CLAIMS`) on :func:`cases`' table, each with its value, whether it was judged (False:
    no case of the kind it needs, and then not met) and whether it was met; ``committed_sets``: claim (c)'s machines
    already read."""
    row = c[c["order"] == ROW]
    other = c[(c["order"] != ROW)]
    clear = row[row["clear"]]
    fits = row[row["experiment"] == FITS]
    slow = row[row["state"].isin(SLOW)]
    lost = row[row["state"] == ALL_LOST]
    over = int((slow["makespan_err"] > 0).sum())
    rows = [
        ("a", f"{int(other['clear'].sum())} of {len(other)}", True, not other["clear"].any()),
        ("b", f"{len(clear)} of {len(row)} split: {', '.join(sorted(clear['state'])) or 'none'}", True,
         len(clear) > 0 and clear["state"].isin(STATES).all()),
        ("c", *_sets_agree(row, pd.read_csv(committed_sets))),
        ("d", f"{int(fits['clear'].sum())} of {len(fits)}", len(fits) > 0, len(fits) > 0 and not fits["clear"].any()),
        ("e", f"{over} of {len(slow)}", len(slow) > 0, len(slow) > 0 and over > len(slow) / 2),
        ("f", (f"{lost['makespan_err'].abs().mean():.2f} (all lost, {len(lost)}) against "
               f"{slow['makespan_err'].abs().mean():.2f} (half, {len(slow)})") if len(lost) and len(slow)
         else f"all lost {len(lost)}, half {len(slow)}", bool(len(lost) and len(slow)),
         bool(len(lost) and len(slow)) and lost["makespan_err"].abs().mean() < slow["makespan_err"].abs().mean()),
    ]
    return registered_plan.claims_table(rows, CLAIMS, provenance)


PLAN = registered_plan.Plan(
    name="plan60_sm_groups", description=__doc__.splitlines()[0], registered=REGISTERED,
    results=ROOT / "bench/results/validation-registered60", register=register, measured=measured, cases=cases,
    claims=claims, first_file=lambda run_dir: run_dir / EXPERIMENTS[0] / pom.BUNDLE)


def main(argv: list[str] | None = None) -> int:
    return registered_plan.main(PLAN, argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
