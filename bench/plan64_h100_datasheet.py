"""Registered plan 64: an H100 from its datasheet, before any H100 ran these shapes (no GPU here)

    python bench/plan64_h100_datasheet.py --register [--out bench/predictions/reg64-h100-datasheet]
    python bench/plan64_h100_datasheet.py --judge RUN_DIR [--registered bench/predictions/reg64-h100-datasheet]
                                          [--out bench/results/validation-registered64]

Every profile so far was measured on the GPU it predicts. A user's machine is often one nobody calibrated: plan 64
asks the model for a GPU it has never seen, from its datasheet alone. H100 and H200 SXM are one GH100 die (132 SMs,
1980 MHz, the same tile rates) with other memory: a 50 MB L2 against the H200's 60 MiB, and HBM3 at 3.35 TB/s
against HBM3e at 4.8. ``h100-x1-datasheet`` (``ctasim.profiles``) is ``h200-x1-calibrated`` with those two changed
and nothing fitted; its ``ctasim predict`` registrations (:data:`EXPERIMENTS`: ``bench/predictions/reg64-h100-*``)
price four experiments the H200s ran, the reference GEMM and three 2-layer chains with every order (H = 5632, 7424,
8448: one layer's weights 1.2, 2.1 and 2.7 times the H100's L2), on one H100.

Beside the model, three lines a user could draw without it: the naive FLOPs line (``source = naive``, fitted on H200
GEMMs), the H200 profile's own registered predictions (``h200-profile``: the memory as the H200's), and the H200s'
measured times (``h200-measured``: the median over every committed H200 run of the case, :func:`h200_measured`; an
H100 taken as an H200).

``--register`` writes ``predicted.csv``: per experiment, case, strategy and source (:data:`SOURCES`) the predicted
makespan (ms), and for ``h200-measured`` how many H200 runs its median is of. ``--judge RUN_DIR`` reads
``RUN_DIR/env.txt`` (the call's GPU: it must be an H100), ``RUN_DIR/EXP/results.csv`` (timed medians) and
``RUN_DIR/EXP/ctapipe_traces.trace.npz`` (traced runs) of every experiment, and writes ``cases.csv`` (per case,
strategy and source: measured, predicted, error), ``penalties.csv`` (row order's makespan penalty over groups of 8 per
source), ``starts.csv`` (per traced run, the per-CTA start error against the H100 registration's schedules,
``ctasim.accuracy.per_cta``) and ``claims.csv`` (:data:`CLAIMS`). A missing registration, run or case, or a call
on another GPU, is refused in one line, exit 2, nothing written.

No adoption rule: the derived profile is what a user without an H100 calibration would have; the claims say what it
is worth. Left out: the sustained regime (the call runs burst), an H100's own calibration (``ctahw calibrate`` on it
would measure what the datasheet is asked for here), and H100s of other forms (PCIe, NVL).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import pandas as pd  # noqa: E402

import registered_plan  # noqa: E402
from ctasim.predict import REFERENCE_EXPERIMENT  # noqa: E402

EXPERIMENTS = {"reg49-reference": "reg64-h100-reference", "reg59-adopted-h5632": "reg64-h100-h5632",
               "reg58-gap-law-h7424": "reg64-h100-h7424", "reg58-gap-law-h8448": "reg64-h100-h8448"}
"""Experiment -> its ``ctasim predict`` registration under ``h100-x1-datasheet`` (bench/predictions/)."""
H200_REGISTRATION = {"reg49-reference": "reg49-reference", "reg59-adopted-h5632": "reg59-adopted-h5632",
                     "reg58-gap-law-h7424": "reg58-gap-law-h7424-gaps",
                     "reg58-gap-law-h8448": "reg58-gap-law-h8448-gaps"}
"""Experiment -> its registration under the H200 profile as it is now (plan 58's by its twin, as plan 63 has it)."""
PROFILE = "h100-x1-datasheet"
SOURCES = ("model", "naive", "h200-profile", "h200-measured")
PREDICTIONS = ROOT / "bench/predictions"
H200_RUNS = ROOT / "bench/results/hw"
"""The committed H200 calls (``H200_RUNS/CALL/EXP/results.csv``); H100 calls are kept apart
(``bench/results/hw-h100``)."""
REGISTERED = ROOT / "bench/predictions/reg64-h100-datasheet"
JudgeError = registered_plan.JudgeError
MAPE, WORST, START, TIE = 3.0, 6.0, 0.02, 0.5
REFERENCE, ROW = "intragpu", "intragpu-row"
WHY = "plan 64's call times and traces every experiment on one H100"
CLAIMS = {
    "a": f"model (h100-x1-datasheet): makespan MAPE <= {MAPE:g}% and worst |error| <= {WORST:g}% over every case "
         "and strategy of the four experiments (37)",
    "b": "model: makespan MAPE at most half the naive FLOPs line's over the same cases",
    "c": "model: makespan MAPE below the H200 profile's registered predictions' (the datasheet's memory earns its "
         "place)",
    "d": "model: makespan MAPE below the H200s' measured medians' (an H100 is not priced as an H200)",
    "e": f"model: the fastest strategy right at every chain (H, M) (7; where the model's two fastest are within "
         f"{TIE:g}% of each other, either)",
    "f": "model: mean |error| of row order's makespan penalty over groups of 8 (7 cases, points) below both the H200 "
         "profile's and the H200s' measured penalties'",
    "g": f"model: the median over the traced chain-kernel runs of the median per-CTA start error <= {START:.0%} of the "
         "makespan",
}


def as_registered(name: str):
    """Profile ``name`` as plans 64-68 registered with it: a GEMM panel's reuse across waves an LRU of the whole L2
    (``l2_reuse_law = "lru"``); ``h100-x1-datasheet`` (and its twins) took the survival law after registered plan 67's
    call, on 2026-12-05. Every other field is the profile's today (the adoption changed only that one). The H100
    post-hoc scripts' dated tables and plan 67's ``model`` source are made with it. The drift too is as they were
    registered: ``cta_drift`` tile times a round at every K (``ctasim.profiles.before_h100_drift``; registered plan 73
    gave ``h100-x1-datasheet`` the absolute law on 2026-12-06), and for ``h100-x1-datasheet`` the exposed HBM share at
    ``hbm_gbps`` (``before_h100_adoptions``; registered plan 76's adoption, 2026-12-06; its twins keep their own
    rate)."""
    import dataclasses  # noqa: PLC0415

    from ctasim.profiles import before_h100_adoptions  # noqa: PLC0415

    return dataclasses.replace(before_h100_adoptions(name), l2_reuse_law="lru")


def h200_measured(runs: Path = H200_RUNS, experiments=EXPERIMENTS) -> pd.DataFrame:
    """Per experiment of ``experiments``, case and strategy the median of the timed medians over every committed H200
    call that ran it (``runs/CALL/EXP/results.csv``, status ok), and how many calls (``n_runs``)."""
    parts = []
    for exp in experiments:
        for res in sorted(runs.glob(f"*/{exp}/results.csv")):
            r = pd.read_csv(res).query("status == 'ok'")[["case", "strategy", "makespan_ms"]]
            parts.append(r.assign(experiment=exp, call=res.parent.parent.name))
    if not parts:
        raise JudgeError(f"no committed H200 run of {', '.join(experiments)} under {runs}")
    m = pd.concat(parts, ignore_index=True)
    return (m.groupby(["experiment", "case", "strategy"], sort=False)
            .agg(predicted_ms=("makespan_ms", "median"), n_runs=("call", "nunique")).reset_index())


def _rows(reg: str, sources: dict, predictions: Path) -> pd.DataFrame:
    """The ok rows of registration ``reg`` whose source is a key of ``sources``, renamed to its value."""
    p = pd.read_csv(predictions / reg / "predictions.csv")
    p = p[(p["status"] == "ok") & p["source"].isin(sources)]
    return p.assign(source=p["source"].map(sources))[["experiment", "case", "strategy", "source", "makespan_ms"]]


def register_twin(experiments: dict, twin: str, predictions: Path = PREDICTIONS,
                  runs: Path = H200_RUNS) -> pd.DataFrame:
    """A twin plan's registration (plans 65 and 66): per experiment of ``experiments`` (experiment -> (the datasheet
    profile's registration, the twin's)), the model's and naive rows of the first, the twin's model rows as source
    ``twin``, and the H200s' measured medians."""
    parts = []
    for model, other in experiments.values():
        parts.append(_rows(model, {"model": "model", "naive": "naive"}, predictions))
        parts.append(_rows(other, {"model": twin}, predictions))
    pred = pd.concat(parts, ignore_index=True).rename(columns={"makespan_ms": "predicted_ms"})
    meas = h200_measured(runs, tuple(experiments)).assign(source="h200-measured")
    out = pd.concat([pred, meas], ignore_index=True)
    return out[["experiment", "case", "strategy", "source", "predicted_ms", "n_runs"]]


def h100_timed(run_dir: Path, experiments, why: str, plan: str) -> pd.DataFrame:
    """Every experiment's timed medians (experiment, case, strategy, measured_ms), from an H100's call
    (:class:`JudgeError` on another GPU's; ``why``, ``plan``: the judging plan's words)."""
    call_gpu(run_dir, why, plan)
    parts = [registered_plan.timed_makespans(run_dir, exp, why).rename("measured_ms").reset_index().assign(
        experiment=exp) for exp in experiments]
    return pd.concat(parts, ignore_index=True)


def register(predictions: Path = PREDICTIONS, runs: Path = H200_RUNS) -> pd.DataFrame:
    """Every source's makespan (ms) per experiment, case and strategy (:data:`SOURCES`)."""
    parts = []
    for exp, reg in EXPERIMENTS.items():
        parts.append(_rows(reg, {"model": "model", "naive": "naive"}, predictions))
        parts.append(_rows(H200_REGISTRATION[exp], {"model": "h200-profile"}, predictions))
    pred = pd.concat(parts, ignore_index=True).rename(columns={"makespan_ms": "predicted_ms"})
    meas = h200_measured(runs).assign(source="h200-measured")
    out = pd.concat([pred, meas], ignore_index=True)
    return out[["experiment", "case", "strategy", "source", "predicted_ms", "n_runs"]]


GPU_LINE = re.compile(r"^\d+, (?P<name>NVIDIA [^,]+), (?P<uuid>GPU-[0-9a-f-]+),", re.M)


def gpu_name(run_dir: Path, why: str = WHY) -> str:
    """The call's GPU name from ``run_dir/env.txt`` (``bench/hw/run_registered.sh``'s nvidia-smi table);
    :class:`JudgeError` where the file or the line is missing (``why``: what should have written it)."""
    env = run_dir / "env.txt"
    if not env.is_file():
        raise JudgeError(f"no {env} ({why}: it names the GPU)")
    m = GPU_LINE.search(env.read_text(errors="replace"))
    if m is None:
        raise JudgeError(f"{env}: no nvidia-smi line naming the GPU")
    return m["name"].strip()


def call_gpu(run_dir: Path, why: str = WHY, plan: str = "plan 64") -> str:
    """:func:`gpu_name`, and :class:`JudgeError` where it is not an H100 (``why``, ``plan``: the judging plan's words
    for it)."""
    name = gpu_name(run_dir, why)
    if "H100" not in name:
        raise JudgeError(f"{run_dir / 'env.txt'}: the call ran on an {name}, not an H100 ({plan} predicts an H100)")
    return name


def traced_starts(registration: Path, run_exp: Path, why: str = WHY) -> pd.DataFrame:
    """Each traced run of ``run_exp`` (a call's experiment folder) against the schedules of ``registration``: its
    per-CTA start and end errors (``ctasim.accuracy.per_cta``). :class:`JudgeError` (one line) where the bundle cannot
    be read against the registration or holds no run with a registered schedule (``why``: what should have traced)."""
    from ctasim.accuracy import per_cta  # noqa: PLC0415
    from ctasim.trace import TraceFileError  # noqa: PLC0415

    try:
        s = per_cta(registration, run_exp)[0]
    except (TraceFileError, OSError, KeyError, ValueError) as e:
        raise JudgeError(f"{run_exp}: its trace bundle cannot be read against the registration ({e})") from None
    if s.empty:
        raise JudgeError(f"{run_exp}: no traced run with a registered schedule ({why})")
    return s


def measured(run_dir: Path) -> pd.DataFrame:
    """One frame, told apart by ``kind``: 'timed', every experiment's timed medians (experiment, case, strategy,
    measured_ms); 'start', each traced run's per-CTA start error against the H100 registration's schedules."""
    call_gpu(run_dir)
    parts = []
    for exp, reg in EXPERIMENTS.items():
        r = registered_plan.timed_makespans(run_dir, exp, WHY)
        parts.append(r.rename("measured_ms").reset_index().assign(experiment=exp, kind="timed"))
        if exp == REFERENCE_EXPERIMENT:
            continue
        parts.append(traced_starts(PREDICTIONS / reg, run_dir / exp).assign(experiment=exp, kind="start"))
    return pd.concat(parts, ignore_index=True)


def timed_cases(pred: pd.DataFrame, timed: pd.DataFrame) -> pd.DataFrame:
    """``pred``'s rows (experiment, case, strategy, source, predicted_ms, n_runs) with the call's timed median
    (``timed``: experiment, case, strategy, measured_ms) and the error (%). :class:`JudgeError` where a registered
    model case has no timed run. Plans 64 and 65 judge this way."""
    j = pred.merge(timed, on=["experiment", "case", "strategy"], how="left")
    missing = j[j["measured_ms"].isna() & (j["source"] == "model")]
    if len(missing):
        r = missing.iloc[0]
        raise JudgeError(f"{r['experiment']}: no timed run of {r['case']} {r['strategy']} ({len(missing)} missing)")
    j["error_pct"] = (j["predicted_ms"] / j["measured_ms"] - 1) * 100
    return j[["experiment", "case", "strategy", "source", "measured_ms", "predicted_ms", "n_runs", "error_pct"]]


def mape(d: pd.DataFrame) -> float:
    """The mean |error| (%) of ``d``'s rows (``error_pct``); nan where it has none."""
    return float(d["error_pct"].abs().mean()) if len(d) else float("nan")


def by_source(c: pd.DataFrame, sources, reference: str = "model") -> tuple[dict, dict, bool, float]:
    """Per source of ``sources``: its judged rows and MAPE (%); whether every source has as many rows as
    ``reference`` (one of them; and it some); ``reference``'s worst |error| (%)."""
    by = {s: c[(c["source"] == s) & c["error_pct"].notna()] for s in sources}
    mapes = {s: mape(d) for s, d in by.items()}
    n = len(by[reference])
    complete = n > 0 and all(len(by[s]) == n for s in sources)
    worst = float(by[reference]["error_pct"].abs().max()) if n else float("nan")
    return by, mapes, complete, worst


def signed_worst(d: pd.DataFrame) -> float:
    """The error (%) of ``d``'s row with the largest |error|, sign kept (nan where ``d`` has no rows)."""
    return float(d.loc[d["error_pct"].abs().idxmax(), "error_pct"]) if len(d) else float("nan")


def fastest_right(model: pd.DataFrame) -> list[bool]:
    """Per chain (experiment, case) of the model's rows (the reference GEMM left out): whether the measured fastest
    strategy is the model's fastest, or either of its two fastest where they are within :data:`TIE` % of each
    other."""
    right = []
    for (exp, case), d in model.groupby(["experiment", "case"]):
        if exp == REFERENCE_EXPERIMENT:
            continue
        d = d.set_index("strategy")
        p = d["predicted_ms"].sort_values()
        near = p.index[:2] if len(p) > 1 and p.iloc[1] / p.iloc[0] - 1 <= TIE / 100 else p.index[:1]
        right.append(d["measured_ms"].idxmin() in near)
    return right


def cases(pred: pd.DataFrame, meas: pd.DataFrame) -> pd.DataFrame:
    """Per experiment, case, strategy and source: measured and predicted makespans and the error (%); the traced
    runs' start errors attached as ``attrs['starts']`` and row order's penalties as ``attrs['penalties']``.
    :class:`JudgeError` where a registered case has no timed run."""
    c = timed_cases(pred, meas[meas["kind"] == "timed"][["experiment", "case", "strategy", "measured_ms"]])
    c.attrs["starts"] = meas[meas["kind"] == "start"].dropna(axis=1, how="all").drop(columns="kind", errors="ignore")
    c.attrs["penalties"] = penalties(c)
    return c


def penalties(c: pd.DataFrame) -> pd.DataFrame:
    """Row order's makespan penalty over groups of 8 (percent), per experiment, case and source: measured, predicted
    and the error (points)."""
    rows = []
    for (exp, case, src), d in c.groupby(["experiment", "case", "source"], sort=False):
        d = d.set_index("strategy")
        if ROW not in d.index or REFERENCE not in d.index:
            continue
        meas = (d.at[ROW, "measured_ms"] / d.at[REFERENCE, "measured_ms"] - 1) * 100
        pen = (d.at[ROW, "predicted_ms"] / d.at[REFERENCE, "predicted_ms"] - 1) * 100
        rows.append(dict(experiment=exp, case=case, source=src, penalty_meas_pct=meas, penalty_pred_pct=pen,
                         error_points=pen - meas))
    return pd.DataFrame(rows)


def claims(c: pd.DataFrame, provenance: str) -> pd.DataFrame:
    pen, starts = c.attrs["penalties"], c.attrs["starts"]
    by, mape, complete, worst = by_source(c, SOURCES)
    n_cases = len(by["model"])
    fastest = fastest_right(by["model"])
    pe = {s: float(pen[pen["source"] == s]["error_points"].abs().mean()) if len(pen) else float("nan")
          for s in SOURCES}
    n_pen = int((pen["source"] == "model").sum()) if len(pen) else 0
    traced = starts.dropna(subset=["start_median_frac"]) if "start_median_frac" in starts.columns else starts
    start = float(traced["start_median_frac"].median()) if len(traced) else float("nan")
    rows = [
        ("a", f"MAPE {mape['model']:.2f}%, worst {worst:.2f}% over {n_cases} cases",
         complete and mape["model"] <= MAPE and worst <= WORST),
        ("b", f"{mape['model']:.2f} against the naive line's {mape['naive']:.2f}%",
         complete and mape["model"] <= mape["naive"] / 2),
        ("c", f"{mape['model']:.2f} against the H200 profile's {mape['h200-profile']:.2f}%",
         complete and mape["model"] < mape["h200-profile"]),
        ("d", f"{mape['model']:.2f} against the H200s' measured {mape['h200-measured']:.2f}%",
         complete and mape["model"] < mape["h200-measured"]),
        ("e", f"{sum(fastest)} of {len(fastest)}", len(fastest) > 0 and all(fastest)),
        ("f", f"{pe['model']:.2f} against the H200 profile's {pe['h200-profile']:.2f} and the H200s' measured "
              f"{pe['h200-measured']:.2f} points over {n_pen} cases",
         n_pen > 0 and pe["model"] < pe["h200-profile"] and pe["model"] < pe["h200-measured"]),
        ("g", f"{100 * start:.2f}% over {len(traced)} traced runs", len(traced) > 0 and start <= START),
    ]
    return registered_plan.claims_table(rows, CLAIMS, provenance)


PLAN = registered_plan.Plan(
    name="plan64_h100_datasheet", description=__doc__.splitlines()[0], registered=REGISTERED,
    results=ROOT / "bench/results/validation-registered64", register=register, measured=measured, cases=cases,
    claims=claims, first_file=lambda run_dir: run_dir / "reg49-reference" / "results.csv",
    tables=lambda c: {"penalties": c.attrs["penalties"], "starts": c.attrs["starts"]})


def main(argv: list[str] | None = None) -> int:
    return registered_plan.main(PLAN, argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
