"""The model's registered track record: every registered prediction measured so far, pooled (no GPU).

    python bench/registered_record.py [--out bench/results/registered-record]
    python bench/registered_record.py --machine h100 [--out bench/results/registered-record-h100]

Each registered plan (docs/validation.md) is judged by ``ctasim compare`` into
``bench/results/validation-registered*/``: per registration and measurement a report whose ``accuracy.csv`` holds every
case's error for the model and the predictors beside it, and whose ``per-cta.csv`` holds the per-CTA start errors of
the traced runs. A plan's own section reads its claims; this pools every report, so that a user asking "can I trust the
answer?" sees the whole record against issue 13's targets (makespan MAPE <= 3%, worst <= 6%, at most half the naive
predictor's MAPE, median per-CTA start error <= 2% of the makespan), not one plan's.

What is counted:

* **The project's model as it stood at each registration**: a report of the predictions named after their experiment
  (``bench/predictions/<experiment>``; :func:`primary`). The twins registered beside it (a suffix: ``-partition``,
  ``-wave``, ``-gaps``, ...; a competing profile, judged by its plan's claims) are left out: each measured case counts
  once, under the profile the project had then.
* Rows labelled registered only (the predictions committed before the measurement; ``ctasim.accuracy``), each (report,
  measurement) once.
* Per case the model's error and, where the registration has them, the naive FLOPs line's and the waves predictor's
  (``ctasim.predict``); the comparisons of the model with either are over the cases both have.

Writes ``cases.csv`` (one row per plan, registration, measurement, case, strategy and predictor: kind, date, error),
``record.csv`` (per kind and over all, per predictor: cases, MAPE, worst, the share within 3% and 6%, and the model's
MAPE over the same cases), ``by-plan.csv`` (per plan: cases, the model's MAPE and worst, the naive line's and the
waves predictor's MAPE over the same cases), ``by-day.csv`` (the same per day the predictions were registered),
``by-strategy.csv`` (per kind and strategy: the model's figures and the naive line's MAPE), ``normalised.csv``
(:func:`normalised`: the runs that timed the reference GEMM, each case's error with the run's reference ratio taken
out, as one GEMM timed on the machine would correct it), ``decisions.csv`` (:func:`decisions`: per case measured under
two or more strategies and per predictor, its pick, its predicted margin, the measured fastest and what following the
pick costs), ``choices.csv`` and ``choices-by-plan.csv`` (:func:`choices`: those pooled by the strategies decided
among, and by plan) and
``starts.csv`` (per kind, the kept traced runs' median per-CTA start
error as a share of the makespan: runs, median, the share of runs within 2%). Every figure is as registered: nothing
here is refitted or re-predicted. ~2 s.

``--machine h100`` pools the H100 calls instead (``bench/results/hw-h100/``, every one a lent H100 of its own
unit), the record a user with an H100 asks for: there the project's own registration is the one priced by the H100
profile of the day, :data:`H100_PROFILE` (registered plans 64-77 name theirs ``regNN-h100-CASE`` after no experiment,
beside twins on a competing profile; plans 96 and 99 name theirs after their experiments), each from
its ``registration.json``. The H200 record (the default) leaves every H100 call out, and the H100 record every H200 one.

Left out: the plans judged only by their own scripts (probes, GEMM-alone factors, per-tile readings; no ``ctasim
compare`` report), the twins, post-hoc rows, and what a report does not hold (claims on orders, rankings or factors:
each plan's ``claims.csv``). A plan here is the plan whose folder judged the report: a reference GEMM riding along
in later plans' calls (``reg49-reference``) counts under each of them.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from ctasim.cliargs import OneLineParser, parse_outputs  # noqa: E402
from ctasim.predict import REFERENCE_CASE  # noqa: E402

RESULTS = ROOT / "bench/results"
PREDICTIONS = ROOT / "bench/predictions"
SOURCES = ("model", "naive", "waves")
"""The predictors the record keeps: the model as registered, the naive FLOPs line and the waves predictor."""
TARGETS = {"mape_pct": 3.0, "worst_pct": 6.0, "naive_ratio": 0.5, "start_frac": 0.02}
"""Issue 13's targets: makespan MAPE, worst case, the model's MAPE over the naive line's, median per-CTA start error."""
_TITLE = re.compile(r"# Accuracy: (\S+) against (\S+)")
COLUMNS = ("experiment", "case", "strategy", "kind", "source", "measured_ms", "predicted_ms", "error", "registered")
"""The columns of ``accuracy.csv`` the record reads."""


_KEY = ["plan", "registration", "measurement", "case", "strategy"]
"""What identifies a judged case in the record (with the predictor, ``source``)."""


def plan_of(folder: Path) -> str:
    """The plan a ``validation-registered*`` folder judges: ``validation-registered`` is plan 1's, ``-registeredNN``
    and ``-registeredNN-runK`` (another machine) plan NN's, ``-registered38-1gpu`` plan 38's."""
    m = re.fullmatch(r"validation-registered(?:(\d+)(-[\w.-]+)?)?", folder.name)
    if m is None:
        raise ValueError(f"{folder}: not a validation-registered folder (validation-registered[NN[-suffix]])")
    return m.group(1) or "1"


def primary(registration: str, experiment: str) -> bool:
    """Whether a report's registration is the project's own (its predictions named after their experiment), not a
    twin beside it."""
    return registration == experiment


def reports(root: Path = RESULTS):
    """``(plan, folder, report, registration, measurement, accuracy table)`` of every ``ctasim compare`` report under
    ``root/validation-registered*/`` (a folder with ``accuracy.csv`` and ``report.md``; :func:`read_report`), sorted,
    each (registration, measurement) once: the first folder that judged it."""
    seen = set()
    for folder in sorted(root.glob("validation-registered*")):
        if not folder.is_dir():
            continue
        plan = plan_of(folder)
        for acc in sorted(folder.rglob("accuracy.csv")):
            if not (acc.parent / "report.md").is_file():
                continue
            registration, measurement, table = read_report(acc.parent)
            if (registration, measurement) not in seen:
                seen.add((registration, measurement))
                yield plan, folder, acc.parent, registration, measurement, table


def read_report(report: Path) -> tuple[str, str, pd.DataFrame]:
    """(registration, measurement path, ``accuracy.csv``) of one report; ValueError (one line) where its title does
    not name them."""
    title = (report / "report.md").read_text().splitlines()[0] if (report / "report.md").stat().st_size else ""
    m = _TITLE.match(title)
    if m is None:
        raise ValueError(f"{report / 'report.md'}: its first line does not name the registration and measurement")
    acc = pd.read_csv(report / "accuracy.csv", dtype={"variant": str})
    missing = [c for c in COLUMNS if c not in acc.columns]
    if missing:
        raise ValueError(f"{report / 'accuracy.csv'}: no column {', '.join(missing)} (not ctasim compare's table)")
    return m.group(1), m.group(2), acc


def registered_on(registration: str, predictions: Path = PREDICTIONS) -> str:
    """The date a registration was made (its ``registration.json``'s ``created_utc``, the day), '' where unknown."""
    path = predictions / registration / "registration.json"
    if not path.is_file():
        return ""
    return str(json.loads(path.read_text()).get("created_utc", ""))[:10]


def measured_on(measurement: str) -> str:
    """The date in a measurement's run folder name (``bench/results/hw/<YYYY-MM-DD>-...``), '' where it has none."""
    m = re.search(r"/(\d{4}-\d{2}-\d{2})-", measurement)
    return m.group(1) if m else ""


H100_CALLS = "bench/results/hw-h100/"
"""Where the H100 calls' measurements lie: the H200 record leaves them out, the H100 record (``--machine h100``) keeps
only them."""

MACHINES = ("h200", "h100")
"""The records this script writes: the lent H200s' (the default) and the lent H100s' calls."""

H100_PROFILE = "h100-x1-datasheet"
"""The H100 profile the project advises (``ctasim advise``): an H100 registration priced by it is the project's own."""


def hardware_of(registration: str, predictions: Path = PREDICTIONS) -> str:
    """The hardware profile a registration was priced with (its ``registration.json``'s ``hardware``), '' where
    unknown."""
    path = predictions / registration / "registration.json"
    return str(json.loads(path.read_text()).get("hardware", "")) if path.is_file() else ""


def on_machine(machine: str, measurement: str) -> bool:
    """Whether a measurement belongs to ``machine``'s record (:data:`MACHINES`): an H100 call's to the H100 record
    only."""
    if machine not in MACHINES:
        raise ValueError(f"no record for machine {machine!r} (one of {', '.join(MACHINES)})")
    return (H100_CALLS in measurement) == (machine == "h100")


def primary_rows(machine: str, registration: str, experiments, predictions: Path = PREDICTIONS) -> list[bool]:
    """Per row of a report of ``registration`` (its ``experiments``), whether it is the project's own on ``machine``:
    named after its experiment on the H200s (:func:`primary`), priced by :data:`H100_PROFILE` on the H100s (read once
    per report)."""
    if machine == "h100":
        own = hardware_of(registration, predictions) == H100_PROFILE
        return [own for _ in experiments]
    return [primary(registration, e) for e in experiments]


def cases(root: Path = RESULTS, predictions: Path = PREDICTIONS, machine: str = "h200") -> pd.DataFrame:
    """One row per (plan, registration, measurement, case, strategy, predictor of :data:`SOURCES`) of the primary
    reports' registered rows on ``machine`` (:func:`on_machine`, :func:`primary_rows`), each (registration, measurement)
    once: kind, the two dates, measured and predicted ms, the error (predicted over measured less 1, per cent)."""
    rows = []
    for plan, folder, _report, registration, measurement, acc in reports(root):
        if not on_machine(machine, measurement):
            continue
        acc = acc[acc["registered"].astype(bool) & acc["source"].isin(SOURCES)]
        acc = acc[primary_rows(machine, registration, acc["experiment"], predictions)]
        if acc.empty:
            continue
        rows.append(pd.DataFrame({
            "plan": int(plan), "judged_in": folder.name, "registration": registration, "measurement": measurement,
            "registered_on": registered_on(registration, predictions), "measured_on": measured_on(measurement),
            "kind": acc["kind"].to_numpy(), "case": acc["case"].to_numpy(), "strategy": acc["strategy"].to_numpy(),
            "source": acc["source"].to_numpy(), "measured_ms": acc["measured_ms"].to_numpy(),
            "predicted_ms": acc["predicted_ms"].to_numpy(), "error_pct": acc["error"].to_numpy() * 100}))
    if not rows:
        raise ValueError(f"no registered report {'of an H100 call ' if machine == 'h100' else ''}under "
                         f"{root}/validation-registered*/")
    c = pd.concat(rows, ignore_index=True).sort_values(
        ["plan", "judged_in", "registration", "case", "strategy", "source"], kind="stable").reset_index(drop=True)
    twice = c[c.duplicated(_KEY + ["source"], keep=False)]
    if len(twice):
        r = twice.iloc[0]
        raise ValueError(f"{r['registration']} against {r['measurement']}: {r['case']} {r['strategy']} ({r['source']}) "
                         "judged more than once (variants?); the record keys a case by case and strategy")
    return c



def _stats(err: pd.Series) -> dict:
    a = err.abs()
    worst = err.iloc[int(np.argmax(a.to_numpy()))] if len(err) else float("nan")
    return dict(cases=len(err), mape_pct=a.mean(), median_abs_pct=a.median(), worst_pct=worst,
                within_3_pct=(a <= 3.0).mean() * 100, within_6_pct=(a <= 6.0).mean() * 100)


SHARED = "ctapipe-shared"
"""The kind of a ring's chain kernels sharing one GPU (``ctasim.accuracy``), where the naive line prices each kernel
as if alone: ``record.csv``'s ``all but shared`` leaves it out."""


ROW_ORDER = "intragpu-row"
"""The chain kernel's row order: its penalty takes one of three states from run to run, a half of the GPU at a time
keeping or losing the weights' L2 reuse (post-hoc, ``bench/posthoc_sm_groups.py``), and it is never the fastest order;
``record.csv``'s ``ctapipe-1gpu but row order`` leaves it out."""


def record(c: pd.DataFrame) -> pd.DataFrame:
    """Per kind (and ``all``; ``all but shared``: every kind but :data:`SHARED`; ``ctapipe-1gpu but row order``: the
    chain kernel on one GPU in every order but :data:`ROW_ORDER`) and predictor: :func:`_stats` of its errors, and
    ``model_mape_pct``, the model's MAPE over the same cases (the model's own row: its MAPE)."""
    wide = c.pivot_table(index=_KEY + ["kind"], columns="source", values="error_pct", aggfunc="first")
    alone = wide[wide.index.get_level_values("kind") != SHARED]
    kind, strategy = wide.index.get_level_values("kind"), wide.index.get_level_values("strategy")
    chosen = wide[(kind == "ctapipe-1gpu") & (strategy != ROW_ORDER)]
    rows = []
    for kind, w in [("all", wide), ("all but shared", alone), *wide.groupby(level="kind", sort=True),
                    ("ctapipe-1gpu but row order", chosen)]:
        for source in SOURCES:
            if source not in w.columns:
                continue
            both = w[list(dict.fromkeys([source, "model"]))].dropna()
            if both.empty:
                continue
            rows.append(dict(kind=kind, source=source, **_stats(both[source]),
                             model_mape_pct=both["model"].abs().mean()))
    return pd.DataFrame(rows).round(3)


def by_plan(c: pd.DataFrame, by: str = "plan") -> pd.DataFrame:
    """Per plan (or per value of another column of ``c``, ``by``: ``registered_on`` gives the record by the day the
    predictions were made): the registrations and measurements judged, the cases, the model's MAPE and worst, and the
    naive line's and waves predictor's MAPE over the cases each has beside the model (NaN where it has none)."""
    wide = c.pivot_table(index=list(dict.fromkeys(_KEY + [by])), columns="source", values="error_pct", aggfunc="first")
    rows = []
    for plan, w in wide.groupby(level=by, sort=True):
        m = _stats(w["model"].dropna())
        row = {by: plan, "registrations": w.index.get_level_values("registration").nunique(),
               "measurements": w.index.get_level_values("measurement").nunique(), "cases": m["cases"],
               "model_mape_pct": m["mape_pct"], "model_worst_pct": m["worst_pct"],
               "model_within_6_pct": m["within_6_pct"]}
        for source in ("naive", "waves"):
            both = w[[source, "model"]].dropna() if source in w.columns else pd.DataFrame()
            row[f"{source}_mape_pct"] = both[source].abs().mean() if len(both) else float("nan")
            row[f"model_mape_beside_{source}_pct"] = both["model"].abs().mean() if len(both) else float("nan")
        rows.append(row)
    return pd.DataFrame(rows).round(3)


def by_strategy(c: pd.DataFrame) -> pd.DataFrame:
    """Per kind and strategy (the chain kernel's orders apart: ``intragpu`` is its default, groups of 8): the model's
    :func:`_stats` and the naive line's MAPE over the same cases."""
    wide = c.pivot_table(index=_KEY + ["kind"], columns="source", values="error_pct", aggfunc="first")
    rows = []
    for (kind, strategy), w in wide.groupby(level=["kind", "strategy"], sort=True):
        both = w[["model", "naive"]].dropna() if "naive" in w.columns else pd.DataFrame()
        rows.append(dict(kind=kind, strategy=strategy, **_stats(w["model"].dropna()),
                         naive_mape_pct=both["naive"].abs().mean() if len(both) else float("nan")))
    return pd.DataFrame(rows).round(3)


TIE_PCT = 0.5
"""A decision counts as right where the strategy a predictor picks is measured within this of the fastest (per cent)."""


DEFAULT_PICK = "intragpu"
"""The chain kernel's default order (groups of 8): the pick of the ``default`` rule in :func:`choices`."""


def decisions(c: pd.DataFrame) -> pd.DataFrame:
    """One row per case measured under two or more strategies in one registration and measurement (the chain kernel's
    orders against sequential, a ring's groups) and per predictor, and the rule ``default`` (the chain kernel's default
    order, :data:`DEFAULT_PICK`, wherever it was measured): the strategies (``among``), the predictor's pick (several,
    ``|``-joined, where it prices them alike: a random pick among them), its predicted margin over the runner-up
    (per cent; 0 for a tie), the measured fastest, whether the pick is it (the expectation over a tie) and the regret
    (the pick's measured time over the fastest's, less 1, per cent; the expectation over a tie) and its worst."""
    rows = []
    for (source, *key), g in c.groupby(["source"] + _KEY[:-1], sort=True):
        if g["strategy"].nunique() < 2:
            continue
        fastest = g.loc[g["measured_ms"].idxmin()]
        among = " / ".join(sorted(g["strategy"].unique()))
        low = g["predicted_ms"].min()
        tied = g[g["predicted_ms"] <= low * (1 + 1e-9)]
        others = g.loc[~g.index.isin(tied.index), "predicted_ms"]
        margin = (others.min() / low - 1) * 100 if len(tied) == 1 and len(others) else 0.0
        picks = [(source, tied, margin)]
        if source == "model" and DEFAULT_PICK in set(g["strategy"]):
            picks.append(("default", g[g["strategy"] == DEFAULT_PICK], float("nan")))
        for label, p, mg in picks:
            regret = (p["measured_ms"] / fastest["measured_ms"] - 1) * 100
            rows.append(dict(zip(_KEY[:-1], key), source=label, among=among,
                             pick="|".join(sorted(p["strategy"])), margin_pct=mg, fastest=fastest["strategy"],
                             right=float((regret <= 0).mean()), right_or_tie=float((regret <= TIE_PCT).mean()),
                             regret_pct=regret.mean(), worst_pct=regret.max()))
    return pd.DataFrame(rows)


def choices(d: pd.DataFrame, by: str = "among") -> pd.DataFrame:
    """The record of :func:`decisions` (``d``): per predictor (and per value of ``by``: the decision's strategies,
    ``among``, or ``plan``): decisions, picks right (expected), right or within :data:`TIE_PCT` of the fastest, and the
    regret (what following the predictor costs), its mean and worst."""
    out = []
    for among, g in [("all", d), *d.groupby(by, sort=True)]:
        for source, h in g.groupby("source", sort=True):
            out.append({by: among, "source": source, "decisions": len(h), "right": h["right"].sum(),
                        "right_or_tie": h["right_or_tie"].sum(), "mean_regret_pct": h["regret_pct"].mean(),
                        "worst_regret_pct": h["worst_pct"].max()})
    return pd.DataFrame(out).round(3)


def normalised(c: pd.DataFrame) -> pd.DataFrame:
    """Per kind (and ``all``) and predictor, over the runs that timed the reference GEMM in the same call (a primary
    registration named ``*reference*``, case ``ctasim.predict.REFERENCE_CASE``, the calibration shape 16384 x 8192 x
    8192): each other case's error with the run's reference ratio taken out (``(1 + error) / (1 + the reference's
    error) - 1``, the reference's error by the same predictor), as one reference GEMM timed on a machine would correct
    it. Cases, the MAPE as registered and normalised, the
    normalised worst and share within 6%."""
    c = c.assign(run=c["measurement"].str.extract(r"^(.*)/[^/]+$")[0])
    is_ref = c["registration"].str.contains("reference")
    ref = c[is_ref & (c["case"] == REFERENCE_CASE)].groupby(["run", "source"])["error_pct"].median()
    d = c[~is_ref].join(ref.rename("ref_pct"), on=["run", "source"]).dropna(subset=["ref_pct"])
    d = d.assign(norm_pct=((1 + d["error_pct"] / 100) / (1 + d["ref_pct"] / 100) - 1) * 100)
    rows = []
    for kind, g in [("all", d), *d.groupby("kind", sort=True)]:
        for source in SOURCES:
            s = g[g["source"] == source]
            if s.empty:
                continue
            n = _stats(s["norm_pct"])
            rows.append(dict(kind=kind, source=source, runs=s["run"].nunique(), cases=len(s),
                             mape_pct=s["error_pct"].abs().mean(), normalised_mape_pct=n["mape_pct"],
                             normalised_worst_pct=n["worst_pct"], normalised_within_6_pct=n["within_6_pct"]))
    return pd.DataFrame(rows).round(3)


def starts(root: Path = RESULTS, predictions: Path = PREDICTIONS, machine: str = "h200") -> pd.DataFrame:
    """Per kind (and ``all``): the kept traced runs of the primary reports on ``machine`` (``per-cta.csv``, registered
    rows), their median per-CTA start error over the makespan (``start_median_frac``): runs, median, 90th percentile,
    and the share within :data:`TARGETS`' 2%."""
    parts = []
    for _plan, _folder, report, registration, measurement, acc in reports(root):
        per = report / "per-cta.csv"
        if not per.is_file() or not on_machine(machine, measurement) \
                or not primary_rows(machine, registration, [str(acc["experiment"].iloc[0])], predictions)[0]:
            continue
        p = pd.read_csv(per)
        p = p[p["kept"].astype(bool) & p["registered"].astype(bool)]
        kinds = acc.drop_duplicates(["case", "strategy"]).set_index(["case", "strategy"])["kind"]
        p = p.assign(kind=[kinds.get((a, b), "?") for a, b in zip(p["case"], p["strategy"])])
        parts.append(p[["kind", "start_median_frac"]])
    if not parts:
        return pd.DataFrame(columns=["kind", "runs", "median_frac", "p90_frac", "within_2_pct"])
    p = pd.concat(parts, ignore_index=True)
    rows = []
    for kind, g in [("all", p), *p.groupby("kind", sort=True)]:
        f = g["start_median_frac"]
        rows.append(dict(kind=kind, runs=len(f), median_frac=f.median(), p90_frac=f.quantile(0.9),
                         within_2_pct=(f <= TARGETS["start_frac"]).mean() * 100))
    return pd.DataFrame(rows).round(4)


def main(argv: list[str] | None = None) -> int:
    ap = OneLineParser(prog="python bench/registered_record.py", description=__doc__.splitlines()[0])
    ap.add_argument("--machine", choices=MACHINES, default="h200",
                    help="whose calls: the lent H200s' (default) or the lent H100s'")
    ap.add_argument("--out", type=Path, default=None,
                    help="default bench/results/registered-record (h200) or registered-record-h100")
    args = parse_outputs(ap, argv, folders=("--out",))
    if args.out is None:
        args.out = RESULTS / ("registered-record" + ("-h100" if args.machine == "h100" else ""))
    try:
        c = cases(machine=args.machine)
    except ValueError as e:
        print(f"registered_record: {e}", file=sys.stderr)
        return 2
    rec, plans, st = record(c), by_plan(c), starts(machine=args.machine)
    args.out.mkdir(parents=True, exist_ok=True)
    c.to_csv(args.out / "cases.csv", index=False, float_format="%.6g")
    rec.to_csv(args.out / "record.csv", index=False)
    plans.to_csv(args.out / "by-plan.csv", index=False)
    by_plan(c, "registered_on").to_csv(args.out / "by-day.csv", index=False)
    by_strategy(c).to_csv(args.out / "by-strategy.csv", index=False)
    normalised(c).to_csv(args.out / "normalised.csv", index=False)
    dec = decisions(c)
    dec.round(4).to_csv(args.out / "decisions.csv", index=False)
    choices(dec).to_csv(args.out / "choices.csv", index=False)
    choices(dec, "plan").to_csv(args.out / "choices-by-plan.csv", index=False)
    st.to_csv(args.out / "starts.csv", index=False)
    with pd.option_context("display.width", 200, "display.max_rows", 200):
        print(rec.to_string(index=False))
        print()
        print(st.to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
