"""The command line of a registered plan whose figures are the model's beside traced runs (no GPU): ``--register``
writes the registration, ``--judge RUN_DIR`` judges a measurement against it.

    python bench/planNN_....py --register [--out REGISTRATION]
    python bench/planNN_....py --judge RUN_DIR [--registered REGISTRATION] [--out RESULTS]

``--register`` writes ``predicted.csv`` into the registration folder and refuses one that holds it already (a
registration is never overwritten). ``--judge`` reads the registration's ``predicted.csv`` and the measurement, sets
the plan's cases and claims and writes ``cases.csv`` and ``claims.csv``, the claims labelled registered or post-hoc by
``ctasim.accuracy.provenance_order`` (git shows the registration before the measurement, or not). A missing
registration, run or case is refused in one line (:class:`JudgeError`, from any of the plan's steps), exit 2, nothing
written. A plan may write
further tables beside them (:attr:`Plan.tables`). The chain-kernel plans' measured figures and order penalties are
:func:`order_runs` and :func:`order_cases`. Each plan supplies
what differs (:class:`Plan`); ``bench/plan55_order_tiles.py`` and ``bench/plan56_gradual.py`` are two.
"""

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from ctasim.accuracy import provenance_order  # noqa: E402
from ctasim.cliargs import OneLineParser, parse_outputs  # noqa: E402


class JudgeError(ValueError):
    """A registration or a run that cannot be judged (one line)."""


def traced_runs(run_dir: Path, experiment: str, pairs, why: str) -> dict:
    """The first traced run of every (case, strategy) in ``run_dir/experiment``'s chain-kernel trace bundle
    (``posthoc_order_mainloop.first_runs``), by that key; :class:`JudgeError` where the bundle is missing (``why``
    says what should have written it), cannot be read, or has no run of one of ``pairs``."""
    import posthoc_order_mainloop as pom  # noqa: PLC0415  (the chain-kernel plans' module, not every plan's)
    from ctasim.trace import TraceFileError  # noqa: PLC0415

    bundle = run_dir / experiment / pom.BUNDLE
    if not bundle.is_file():
        raise JudgeError(f"no {bundle} ({why})")
    try:
        traces = dict(pom.first_runs(bundle))
    except (TraceFileError, OSError, KeyError, ValueError) as e:
        raise JudgeError(f"{bundle}: not a trace bundle of this plan ({e})") from None
    missing = [p for p in pairs if p not in traces]
    if missing:
        raise JudgeError(f"{bundle}: no traced run of {missing[0][0]} {missing[0][1]} ({len(missing)} missing)")
    return traces


def order_runs(run_dir: Path, experiments, cases, orders, why: str) -> pd.DataFrame:
    """The measured figures of the chain-kernel plans' cases: per experiment, case and order of ``orders``, the late
    mainloop of its first traced run (``posthoc_order_mainloop.late_median`` of ``t_mainloop_end``, µs;
    :func:`traced_runs`) and its timed median makespan (``results.csv``, ms). :class:`JudgeError` where a bundle,
    ``results.csv`` or a case is missing (``why`` says what should have written them)."""
    import posthoc_order_mainloop as pom  # noqa: PLC0415

    parts = []
    pairs = [(c, o) for c in cases for o in orders]
    for exp in experiments:
        traces = traced_runs(run_dir, exp, pairs, why)
        r = timed_makespans(run_dir, exp, why)
        for case, order in pairs:
            if (case, order) not in r.index:
                raise JudgeError(f"{run_dir / exp / 'results.csv'}: no timed run of {case} {order}")
            parts.append(dict(experiment=exp, case=case, order=order,
                              late_us=pom.late_median(traces[(case, order)].tiles, "t_mainloop_end"),
                              makespan_ms=float(r[(case, order)])))
    return pd.DataFrame(parts)


def timed_makespans(run_dir: Path, experiment: str, why: str) -> pd.Series:
    """The timed median makespans (ms) of ``run_dir/experiment/results.csv``'s runs with status ok, by (case,
    strategy); :class:`JudgeError` where the file is missing or not a run's, a makespan is not a positive number or a
    (case, strategy) is there twice."""
    res = run_dir / experiment / "results.csv"
    if not res.is_file():
        raise JudgeError(f"no {res} ({why})")
    try:
        r = pd.read_csv(res)
        r = r[r["status"] == "ok"].set_index(["case", "strategy"])["makespan_ms"]
    except (OSError, KeyError, ValueError) as e:
        raise JudgeError(f"{res}: not a run of this plan ({type(e).__name__}: {e})") from None
    return positive_times(r, [f"{case} {strategy}" for case, strategy in r.index], res, "the makespan")


def positive_times(raw: pd.Series, labels, where: Path, what: str) -> pd.Series:
    """``raw`` (a measured table's times, one per run) as numbers; :class:`JudgeError` naming the first run (its label
    in ``labels``, one per entry) whose value is not a positive number (``WHERE: WHAT of LABEL is VALUE, not a positive
    number``) or that is there twice (``WHERE: LABEL is there twice``)."""
    ms = pd.to_numeric(raw, errors="coerce")
    labels, values = pd.Series(list(labels)), raw.to_numpy()
    bad = ~(np.isfinite(ms.to_numpy(dtype=float)) & (ms.to_numpy(dtype=float) > 0))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise JudgeError(f"{where}: {what} of {labels[i]} is {values[i]}, not a positive number")
    twice = labels.duplicated().to_numpy()
    if twice.any():
        raise JudgeError(f"{where}: {labels[int(np.flatnonzero(twice)[0])]} is there twice")
    return ms


def claims_table(rows, rules: dict, provenance: str | None = None) -> pd.DataFrame:
    """A plan's ``claims.csv``: one row per ``(claim, value, met)`` or ``(claim, value, judged, met)`` of ``rows``,
    with the claim's rule from ``rules``; a ``judged`` column where the rows carry it, a ``provenance`` column where
    one is given."""
    cols = ("claim", "value", "judged", "met")
    out = pd.DataFrame([dict(zip(cols if len(r) == 4 else ("claim", "value", "met"), r)) for r in rows])
    out.insert(1, "rule", out["claim"].map(rules))
    for c in ("judged", "met"):
        if c in out:
            out[c] = out[c].astype(bool)
    return out if provenance is None else out.assign(provenance=provenance)


def with_adoption(table: pd.DataFrame, claims, rule: str, provenance: str) -> pd.DataFrame:
    """:func:`claims_table`'s ``table`` with an ``adopt`` row (met, value "yes", where every one of ``claims`` is met;
    ``rule`` its text) and the ``provenance`` column: the claims of a plan with an adoption rule."""
    adopt = bool(table.set_index("claim").loc[list(claims), "met"].all())
    row = pd.DataFrame([{"claim": "adopt", "rule": rule, "value": "yes" if adopt else "no", "met": adopt}])
    return pd.concat([table, row], ignore_index=True).assign(provenance=provenance)


def order_penalties(d: pd.DataFrame, reference: str = "intragpu") -> pd.DataFrame:
    """``d`` (experiment, case, order, late_us, makespan_ms) with each row's penalties over the ``reference`` order
    of its experiment and case, in percent: ``mainloop_pct`` (late mainloop) and ``makespan_pct``."""
    ref = d[d["order"] == reference].set_index(["experiment", "case"])
    key = list(zip(d["experiment"], d["case"]))
    return d.assign(mainloop_pct=(d["late_us"].to_numpy() / ref.loc[key, "late_us"].to_numpy() - 1) * 100,
                    makespan_pct=(d["makespan_ms"].to_numpy() / ref.loc[key, "makespan_ms"].to_numpy() - 1) * 100)


def order_cases(pred: pd.DataFrame, meas: pd.DataFrame) -> pd.DataFrame:
    """Per experiment, case, order and predictor (``pred``'s ``predictor`` column): measured and modelled penalties
    (:func:`order_penalties`, each source over its own groups of 8) and makespans, and their errors: ``mainloop_err``
    and ``makespan_pct_err`` (points), ``makespan_err_pct`` (the makespan's, percent)."""
    m = order_penalties(meas).set_index(["experiment", "case", "order"])
    out = []
    for label, p in pred.groupby("predictor", sort=False):
        p = order_penalties(p).set_index(["experiment", "case", "order"])
        j = m.merge(p, left_index=True, right_index=True, how="inner", suffixes=("_meas", "_model")).reset_index()
        out.append(j.assign(predictor=label))
    c = pd.concat(out, ignore_index=True)
    c["mainloop_err"] = c["mainloop_pct_model"] - c["mainloop_pct_meas"]
    c["makespan_pct_err"] = c["makespan_pct_model"] - c["makespan_pct_meas"]
    c["makespan_err_pct"] = (c["makespan_ms_model"] / c["makespan_ms_meas"] - 1) * 100
    return c[["experiment", "case", "order", "predictor", "late_us_meas", "late_us_model", "mainloop_pct_meas",
              "mainloop_pct_model", "mainloop_err", "makespan_ms_meas", "makespan_ms_model", "makespan_pct_meas",
              "makespan_pct_model", "makespan_pct_err", "makespan_err_pct"]]


@dataclass(frozen=True)
class Plan:
    """What a registered plan's script supplies: its name (the messages' prefix and ``prog``), the first line of its
    docstring, the default registration and results folders, and its four steps -- the model's figures
    (``register() -> DataFrame``), the measured ones (``measured(run_dir) -> DataFrame``, raising :class:`JudgeError`),
    the cases (``cases(predicted, measured)``) and the claims (``claims(cases, provenance)``) -- and the measured file
    whose commit the registration's is compared with (``first_file(run_dir)``)."""

    name: str
    description: str
    registered: Path
    results: Path
    register: Callable[[], pd.DataFrame]
    measured: Callable[[Path], pd.DataFrame]
    cases: Callable[[pd.DataFrame, pd.DataFrame], pd.DataFrame]
    claims: Callable[[pd.DataFrame, str], pd.DataFrame]
    first_file: Callable[[Path], Path]
    tables: Callable[[pd.DataFrame], dict] | None = None
    """Further tables the judge writes beside ``cases.csv`` (name -> DataFrame, from the cases), where given."""


def main(plan: Plan, argv: list[str] | None = None) -> int:
    ap = OneLineParser(prog=f"python bench/{plan.name}.py", description=plan.description)
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--register", action="store_true", help="write the registration (predicted.csv) into --out")
    mode.add_argument("--judge", type=Path, metavar="RUN_DIR", help="the plan's measurement (its call's folder)")
    ap.add_argument("--registered", type=Path, default=plan.registered)
    ap.add_argument("--out", type=Path)
    args = parse_outputs(ap, argv, folders=("--out",))
    if args.register:
        out = args.out or plan.registered
        if (out / "predicted.csv").exists():
            print(f"{plan.name}: {out / 'predicted.csv'} exists (a registration is never overwritten)", file=sys.stderr)
            return 2
        pred = plan.register()
        out.mkdir(parents=True, exist_ok=True)
        pred.to_csv(out / "predicted.csv", index=False, float_format="%.4f")
        print(pred.to_string(index=False))
        return 0
    out = args.out or plan.results
    reg = args.registered / "predicted.csv"
    try:
        if not reg.is_file():
            raise JudgeError(f"no {reg}")
        pred = pd.read_csv(reg)
        meas = plan.measured(args.judge)
        c = plan.cases(pred, meas)
        prov = provenance_order(reg, plan.first_file(args.judge))
        cl = plan.claims(c, ("registered: " if prov.registered else "post-hoc: ") + prov.why)
    except JudgeError as e:
        print(f"{plan.name}: {e}", file=sys.stderr)
        return 2
    out.mkdir(parents=True, exist_ok=True)
    c.to_csv(out / "cases.csv", index=False, float_format="%.4f")
    for name, t in (plan.tables(c) if plan.tables else {}).items():
        t.to_csv(out / f"{name}.csv", index=False, float_format="%.4f")
    cl.to_csv(out / "claims.csv", index=False)
    with pd.option_context("display.width", 250, "display.max_colwidth", 120):
        print(c.round(2).to_string(index=False))
        print()
        print(cl.to_string(index=False))
    return 0
