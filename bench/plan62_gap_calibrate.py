"""Registered plan 62: does ``ctahw calibrate``'s gap probe read the sharers' gap spread the machine's own runs show?

    python bench/plan62_gap_calibrate.py --register [--out bench/predictions/reg62-gap-calibrate]
    python bench/plan62_gap_calibrate.py --judge RUN_DIR [--registered bench/predictions/reg62-gap-calibrate]
                                         [--out bench/results/validation-registered62]

``ticket_gap_cv`` (the survival ticket law's spread of a later sharer's time about the reach the law prices it at) is
one value in ``h200-x1-calibrated``, 0.74, pooled over the traced pairs' and row order's cases of many lent H200s. The
traces say it is the machine's (``bench/posthoc_gap_machine.py``: the runs' medians 0.63-0.95, an analysis of variance
by run 12 times the within-run mean square for the pairs), and ``ctahw calibrate`` now measures it on the machine it
calibrates: two traces of the chain kernel's tickets design in pairs of row-blocks, 2-layer 8192 chains at M = 8192
and 16384 (``ctahw.tile_orders.GAP_SHAPES``; ``ctasim.calibration.gap_cv``; ``bench/hw/run_ticket_traces.sh`` runs them
alone). Post-hoc, on the one H200 where both were measured (GPU-ee4f01a5, 2026-12-05, one call), the probe gave 0.626
and the call's traced pairs 0.608-0.642 (median 0.62); on an H100 the probe gave 1.23 and the traced pairs of one
experiment 1.57. Plan 62 asks it of a machine not yet read: the probe first, as a user would calibrate, then the
traced runs of registered plans 58's and 59's experiments (:data:`EXPERIMENTS`; plan 59's count where the call ran
them, :data:`WHERE_RUN`), in one call.

``--register`` writes ``predicted.csv``: per experiment and pairs case (:data:`PAIRS`), the pooled value the profile
carries (``pooled_cv``, 0.74), the naive predictor the probe is set beside. The probe's value is the call's own
measurement, made before the traced runs.

``--judge RUN_DIR`` reads ``RUN_DIR/gaps/probes/ticket-gaps.csv`` (the probe, as ``run_ticket_traces.sh`` writes it:
one ``gap_cv`` per trace, the probe's value their median, as ``ctahw calibrate`` writes it) and the pairs' traced runs
of ``RUN_DIR/<experiment>/ctapipe_traces.trace.npz`` (each case's coefficient of variation of its sharers' gaps,
``posthoc_order_mainloop.gaps`` at the profile's ``ticket_spread``, as every post-hoc reading of the spread). Writes
``cases.csv`` and ``claims.csv`` (:data:`CLAIMS`). A missing registration, probe, run or traced case is refused in
one line, exit 2, nothing written.

No adoption rule: where the claims hold, ``ctahw calibrate``'s value stands for the machine's, and a calibrated
profile's ``ticket_gap_cv`` is that machine's; the committed profile keeps 0.74 (a machine's own value priced its
orders no better than the pooled one, post-hoc).

Left out: whether the machine's own value prices its orders better (asked post-hoc, ``posthoc_gap_machine.py``), row
order's cases (its gaps mix the three states of the SMs' groups), and the probe on a machine other than an H200.
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
import registered_plan  # noqa: E402

REQUIRED = ("reg58-gap-law-h7424", "reg58-gap-law-h8448")
"""The traced runs the probe is compared with, which the call must hold: registered plan 58's experiments."""
WHERE_RUN = ("reg59-adopted-h5632", "reg59-adopted-h8960")
"""Registered plan 59's experiments, the call's last part: their pairs cases count where the call ran them (amended
before any run: a call short of device time may stop before them)."""
EXPERIMENTS = REQUIRED + WHERE_RUN
"""Every experiment the plan registers (four orders each; the pairs' cases of each are registered)."""
PAIRS_ORDER = "intragpu-g2"
"""The order whose gaps the probe's traces (the tickets design in pairs of row-blocks) are set beside."""
PROBE = Path("gaps/probes/ticket-gaps.csv")
"""The probe's table in the call's folder (``bench/hw/run_ticket_traces.sh``'s ``probes/``, under ``gaps/``)."""
POOLED_CV = 0.74
"""``h200-x1-calibrated``'s ``ticket_gap_cv`` (the naive predictor: one value for every machine)."""
NEAR = 0.10
"""Claim (a): the probe within this of the run's pairs median (the H200 runs' medians span 0.63-0.95)."""
REPEAT = 0.15
"""Claim (c): the probe's two traces within this of each other (GPU-ee4f01a5's: 0.670 and 0.581)."""
REGISTERED = ROOT / "bench/predictions/reg62-gap-calibrate"
JudgeError = registered_plan.JudgeError
"""A registration or a run that cannot be judged (one line; ``bench/registered_plan.py``)."""
CLAIMS = {
    "a": f"the probe's ticket_gap_cv (the median of its two traces') is within {NEAR:g} of the median coefficient of "
         f"variation of the sharers' gaps over the call's traced pairs cases (plan 58's experiments, and plan 59's "
         f"where the call ran them)",
    "b": f"the probe's value is nearer that median than the pooled {POOLED_CV:g} the profile carries",
    "c": f"the probe's two traces (M = 8192 and 16384) give values within {REPEAT:g} of each other",
}


def cases_of(experiment: str) -> list[str]:
    """The cases of ``experiment``'s spec (``specs/experiments``), in the spec's order (``plan60_sm_groups.orders``)."""
    return p60.orders(experiment)[0]


def register() -> pd.DataFrame:
    """Per experiment and case: the pooled gap spread the profile carries (``pooled_cv``)."""
    from ctasim.spec import load_hardware  # noqa: PLC0415

    pooled = load_hardware("h200-x1-calibrated").config(128, 256).ticket_gap_cv
    if pooled != POOLED_CV:
        raise ValueError(f"h200-x1-calibrated's ticket_gap_cv is {pooled}, not the {POOLED_CV} this plan names")
    return pd.DataFrame([dict(experiment=e, case=c, order=PAIRS_ORDER, pooled_cv=pooled)
                         for e in EXPERIMENTS for c in cases_of(e)])


def probe(run_dir: Path) -> pd.DataFrame:
    """The probe's table (``m``, ``gap_cv``, one row per trace); :class:`JudgeError` where it is missing or not the
    probe's."""
    path = run_dir / PROBE
    if not path.is_file():
        raise JudgeError(f"no {path} (the call runs bench/hw/run_ticket_traces.sh first, OUT=$OUT/gaps)")
    try:
        t = pd.read_csv(path)[["m", "gap_cv"]]
    except (OSError, KeyError, ValueError) as e:
        raise JudgeError(f"{path}: not the gap probe's table ({e})") from None
    if t["gap_cv"].notna().sum() < 1:
        raise JudgeError(f"{path}: no trace gave a gap spread")
    if t["m"].isna().any() or t["m"].duplicated().any():
        raise JudgeError(f"{path}: a trace without its M, or two at one M")
    return t


def measured(run_dir: Path) -> pd.DataFrame:
    """Per experiment and pairs case of the call: its traced run's gap spread (``cv``), with the probe's value
    (``probe_cv``, the median of its traces') and its traces' (``probe_cv_m<M>``) on every row."""
    t = probe(run_dir)
    rows = []
    for exp in REQUIRED + tuple(e for e in WHERE_RUN if (run_dir / e / pom.BUNDLE).is_file()):
        pairs = [(c, PAIRS_ORDER) for c in cases_of(exp)]
        registered_plan.traced_runs(run_dir, exp, pairs, "the call traces one run of every chain-kernel case")
        g = pom.gaps([run_dir / exp / pom.BUNDLE])
        g = g[(g["order"] == PAIRS_ORDER) & (g["sharers"] >= 2)].set_index("case") if len(g) else \
            pd.DataFrame(columns=["cv"])
        for case, _ in pairs:
            if case not in g.index:
                raise JudgeError(f"{run_dir / exp / pom.BUNDLE}: {case} {PAIRS_ORDER} has fewer than two later sharers")
            rows.append(dict(experiment=exp, case=case, order=PAIRS_ORDER, cv=float(g.loc[case, "cv"])))
    m = pd.DataFrame(rows).assign(probe_cv=float(np.median(t["gap_cv"].dropna())))
    for mm, v in zip(t["m"], t["gap_cv"]):
        m[f"probe_cv_m{int(mm)}"] = v
    return m


def cases(pred: pd.DataFrame, meas: pd.DataFrame) -> pd.DataFrame:
    """The registered rows joined with the measured ones (inner: a registered case the run lacks is refused earlier),
    each with the probe's and the pooled value's distance from the case's own spread."""
    c = pred.merge(meas, on=["experiment", "case", "order"], how="inner")
    return c.assign(probe_err=c["probe_cv"] - c["cv"], pooled_err=c["pooled_cv"] - c["cv"])


def claims(c: pd.DataFrame, provenance: str) -> pd.DataFrame:
    """The plan's claims (:data:`CLAIMS`) on :func:`cases`' table, each with its value and whether it was met."""
    run = float(c["cv"].median())
    pr, pooled = float(c["probe_cv"].iloc[0]), float(c["pooled_cv"].iloc[0])
    traces = [float(c[k].iloc[0]) for k in c.columns if k.startswith("probe_cv_m") and pd.notna(c[k].iloc[0])]
    spread = max(traces) - min(traces) if len(traces) >= 2 else float("nan")
    rows = [
        ("a", f"probe {pr:.3f}, the run's pairs {run:.3f} over {len(c)} cases ({c['cv'].min():.3f}-"
              f"{c['cv'].max():.3f})", abs(pr - run) <= NEAR),
        ("b", f"|probe - run| {abs(pr - run):.3f} against |pooled - run| {abs(pooled - run):.3f}",
         abs(pr - run) < abs(pooled - run)),
        ("c", f"{len(traces)} traces: " + ", ".join(f"{v:.3f}" for v in traces) +
              (f" (apart {spread:.3f})" if len(traces) >= 2 else ""), len(traces) >= 2 and spread <= REPEAT),
    ]
    return registered_plan.claims_table(rows, CLAIMS, provenance)


PLAN = registered_plan.Plan(
    name="plan62_gap_calibrate", description=__doc__.splitlines()[0], registered=REGISTERED,
    results=ROOT / "bench/results/validation-registered62", register=register, measured=measured, cases=cases,
    claims=claims, first_file=lambda run_dir: run_dir / EXPERIMENTS[0] / pom.BUNDLE)


def main(argv: list[str] | None = None) -> int:
    return registered_plan.main(PLAN, argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
