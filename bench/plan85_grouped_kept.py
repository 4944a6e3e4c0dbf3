"""Registered plan 85: do the producers the advice picks keep their L2 reuse where row order loses it?

    python bench/plan85_grouped_kept.py --register [--out bench/predictions/reg85-grouped-kept]
    python bench/plan85_grouped_kept.py --judge RUN_DIR [--registered bench/predictions/reg85-grouped-kept]
                                        [--out bench/results/validation-registered85]
    # the measurement (one H100 or H200, one call): per H of :data:`HS`,
    # python -m ctahw.percta RUN_DIR/OUT_H<h> --h <h> --ms 16384 --variants <VARIANTS>

Registered plans 83 and 84 found the one-CTA-per-tile producer alone in row order (``cutlass_ctapipe``) losing its
weights' L2 reuse on an H100 from H = 8704-10240 (by the GPU) and anywhere between the no-miss and the full-miss levels
near that edge. ``ctasim advise`` prices ``ctapipe`` at both ends on the mechanism profiles
(``ctasim.advise.kept_reuse``) and finds the answer the same either way. The designs it picks order the producer's
tiles in groups of row-blocks (``cutlass_ctapipe_w21g4``, ``_w21g8``, ...) or in pairs, and the model prices the
grouped producers as keeping their reuse whatever the spread (the profile's level is the lockstep one, 0.0%; what moves
between the ends is mostly the consumers' grids). No committed run has these producers on an H100, nor at these H on
an H200. Plan 85 asks whether they keep it where row order lost it: the producer alone
(``ctahw.percta``, M = 16384) of row order, the row-block pairs (``_w21``: 2x1, a counter-waiting consumer's) and the
two grouped designs at H = 9216-12288 (:data:`HS`), five traced and five untraced rested runs per case, on whichever
GPU the call gets (its mechanism profile, :data:`GPUS`).

Predictors of each full wave's median tile time (acquire to compute end; :data:`PREDICTORS`), as registered plan 83
computes them (:func:`plan83_alone_edge.wave_times`):

* ``flat``: every tile at the profile's tile rate, no memory hierarchy (``ctasim.predict.without_memory``: the naive
  predictor);
* ``lockstep``: the memory hierarchy over the producer's order with its CTAs in step (the kept level);
* ``profile``: the profile as it is (its family config's ticket spread, the threshold law in "thrash").

Claims (:data:`CLAIMS`), judged on the call's GPU. No adoption rule: nothing here changes a profile.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

import registered_plan  # noqa: E402
from plan83_alone_edge import M as _M83, tiles  # noqa: E402  (the producer's tiles at M = 16384, 128 x 256 each)

M = _M83
HS = (9216, 10240, 11264, 12288)
GPUS = {"H100": "h100-x8-mechanism", "H200": "h200-x2-mechanism"}
"""The call's GPU and the mechanism profile it is predicted on."""
ROW, PAIRS, G4, G8 = "cutlass_ctapipe", "cutlass_ctapipe_w21", "cutlass_ctapipe_w21g4", "cutlass_ctapipe_w21g8"
VARIANTS = (ROW, PAIRS, G4, G8)
GROUPED = (G4, G8)
PREDICTORS = ("flat", "lockstep", "profile")
RUNS = 5
LEVEL = 0.05
ESCAPE = 1.15
"""A traced run whose late mainloop (waves >= 2) is this many times its early one (waves 0-1) or more has lost part of
its reuse (plan 84's row-order runs: kept 1.08, lost 1.58-2.09)."""
REGISTERED = ROOT / "bench/predictions/reg85-grouped-kept"
JudgeError = registered_plan.JudgeError
WHY = ("plan 85's call runs python -m ctahw.percta RUN_DIR/OUT_H<h> --h <h> --ms 16384 --variants "
       + ",".join(VARIANTS) + " per H, and writes RUN_DIR/env.txt")
CLAIMS = {
    "a": f"grouped producers (w21g4, w21g8): the profile's mean over full waves >= 2 within {LEVEL:.0%} of the "
         "measured at every H",
    "b": f"grouped producers: every traced run's late-over-early mainloop ratio under {ESCAPE:g} (no run loses its "
         "reuse)",
    "c": "grouped producers: the profile's mean |error| of the mean at most half the flat (naive) predictor's over "
         "the eight cases",
    "d": "at every H the fastest of the four producers (measured mean) is a grouped one",
    "e": "pairs (w21): lockstep's mean nearer the measured than the profile's at every H (plan 83's pairs kept their "
         "reuse)",
}


def predictors(profile: str) -> dict:
    """Per predictor of :data:`PREDICTORS`: (profile, ticket spread) on the mechanism profile ``profile`` as
    registered (``ctasim.profiles.before_h100_x8_exposed``: before registered plan 87's adoption; plans 86-88 use it
    too). A later plan that means the adopted ``h100-x8-mechanism`` loads it itself."""
    from ctasim.predict import without_memory  # noqa: PLC0415
    from ctasim.profiles import before_h100_x8_exposed  # noqa: PLC0415

    base = before_h100_x8_exposed(profile)
    return {"flat": (without_memory(base), 0.0), "lockstep": (base, 0.0),
            "profile": (base, base.config(128, 256, kernel="ctapipe").ticket_spread)}


def flat_times(h: int, hw, m: int = M) -> np.ndarray:
    """Each wave's tile time (us) with no memory hierarchy: the profile's one tile time (``ctasim.costs.gemm_tile_ns``)
    in every wave."""
    from ctasim import costs  # noqa: PLC0415
    from ctasim.spec import Layer  # noqa: PLC0415

    waves = -(-tiles(h, m) // 132)
    return np.full(waves, costs.gemm_tile_ns(Layer(m, h, h, 128, 256), hw, 2, "ctapipe") / 1e3)


def wave_prediction(h: int, variant: str, name: str, hw, spread: float, m: int = M) -> np.ndarray:
    """Each wave's predicted median tile time (us) of ``variant``'s producer alone at M = ``m``, H = ``h`` under the
    predictor ``name`` on profile ``hw`` with the tickets' ``spread``: :func:`flat_times` for ``"flat"`` (no memory
    hierarchy), else :func:`plan83_alone_edge.wave_times`."""
    import plan83_alone_edge as p83  # noqa: PLC0415

    return flat_times(h, hw, m) if name == "flat" else p83.wave_times(h, variant, hw, spread, m)


def register_waves(gpus: dict, predictors_of, hs, m: int = M) -> pd.DataFrame:
    """Per GPU of ``gpus`` (its mechanism profile's name), H of ``hs``, variant of :data:`VARIANTS`, predictor of
    ``predictors_of(profile)`` (name: (profile, ticket spread)) and wave: the predicted median tile time (us) of that
    wave at M = ``m`` (:func:`wave_prediction`): the registration of the producer-alone plans 85, 88 and 89."""
    rows = []
    for gpu, profile in gpus.items():
        preds = predictors_of(profile)
        for h in hs:
            for v in VARIANTS:
                for name, (hw, spread) in preds.items():
                    t = wave_prediction(h, v, name, hw, spread, m)
                    rows += [dict(gpu=gpu, profile=profile, h=h, m=m, variant=v, predictor=name, spread=spread,
                                  wave=w, us=float(x)) for w, x in enumerate(t)]
    return pd.DataFrame(rows)


def register() -> pd.DataFrame:
    """Per GPU, H, variant, predictor and wave: the predicted median tile time (us) of that wave."""
    return register_waves(GPUS, predictors, HS)


def _numbers(t: pd.DataFrame, cols, f: Path, why: str = WHY) -> pd.DataFrame:
    """``t``'s ``cols`` as numbers; :class:`JudgeError` naming the first that is missing or not a number."""
    for col in cols:
        if col not in t:
            raise JudgeError(f"{f}: no column {col} ({why})")
        x = pd.to_numeric(t[col], errors="coerce")
        if x.isna().any():
            raise JudgeError(f"{f}: {col} of row {int(x.isna().to_numpy().argmax())} is not a number")
        t[col] = x
    return t


def _tiles(f: Path, h: int, why: str = WHY, m: int = M) -> pd.DataFrame:
    """A percta tile table of M = ``m``, H = ``h``: every CTA 0 .. tiles - 1 once, each time a number."""
    if not f.is_file():
        raise JudgeError(f"no {f} ({why})")
    try:
        t = pd.read_csv(f)
    except (OSError, ValueError, EOFError) as e:
        raise JudgeError(f"{f}: not a percta tile table ({type(e).__name__}: {e})") from None
    t = _numbers(t, ("cta", "t_acquire", "t_compute_end"), f, why)
    if len(t) != tiles(h, m):
        raise JudgeError(f"{f}: {len(t)} tiles, not the {tiles(h, m)} of M = {m}, H = {h}")
    if not np.array_equal(np.sort(t["cta"].to_numpy()), np.arange(tiles(h, m))):
        raise JudgeError(f"{f}: the CTAs are not 0 to {tiles(h, m) - 1}, each once")
    return t


def measured(run_dir: Path) -> pd.DataFrame:
    """Per H, variant and wave of the call's GPU: the median-span traced run's median tile time (us); and per traced
    run its late-over-early mainloop ratio (``ratio``, one row per run with ``wave`` = -1). Refused: a GPU whose probe
    ran other than :data:`percta_predict.SLOTS` CTAs at once (``percta.csv``'s ``slots``: the waves are cut so)."""
    return measured_at(run_dir, HS, WHY, "plan 85")


def percta_tables(out: Path, why: str, m: int, variants, run_cols) -> tuple[pd.DataFrame, pd.DataFrame, Path]:
    """A call's ``out/percta-runs.csv`` (``m``, ``run`` and ``run_cols`` as numbers) and ``out/percta.csv`` (``m``,
    ``slots``), each of ``variants`` run once at M = ``m`` with :data:`percta_predict.SLOTS` CTAs at once; and the runs
    table's path. :class:`JudgeError` in one line otherwise (``why`` says what should have written them)."""
    from percta_predict import SLOTS  # noqa: PLC0415

    runs_f, summary_f = out / "percta-runs.csv", out / "percta.csv"
    for f in (runs_f, summary_f):
        if not f.is_file():
            raise JudgeError(f"no {f} ({why})")
    try:
        runs, summary = pd.read_csv(runs_f), pd.read_csv(summary_f)
    except (OSError, ValueError) as e:
        raise JudgeError(f"{out}: not a percta table ({type(e).__name__}: {e})") from None
    for t, f in ((runs, runs_f), (summary, summary_f)):
        if "variant" not in t:
            raise JudgeError(f"{f}: no column variant ({why})")
    runs = _numbers(runs, ("m", "run", *run_cols), runs_f, why)
    summary = _numbers(summary, ("m", "slots"), summary_f, why)
    for v in variants:
        s = summary[(summary["variant"] == v) & (summary["m"] == m)]
        if len(s) != 1 or int(s["slots"].iloc[0]) != SLOTS:
            raise JudgeError(f"{summary_f}: {v} at M = {m} ran "
                             + (f"{int(s['slots'].iloc[0])} CTAs at once, not the {SLOTS}" if len(s) == 1
                                else f"{len(s)} times, not once"))
    return runs, summary, runs_f


def measured_at(run_dir: Path, hs, why: str, plan: str, m: int = M) -> pd.DataFrame:
    """:func:`measured` of a call of :data:`VARIANTS`' producers alone at M = ``m`` (default :data:`M`), :data:`RUNS`
    traced runs each, at each H of ``hs``: ``why`` says what should have written its files, ``plan`` names the plan in
    a refusal."""
    import plan83_alone_edge as p83  # noqa: PLC0415
    from percta_predict import wave_medians  # noqa: PLC0415

    gpu = p83.call_gpu(run_dir, why)
    rows = []
    for h in hs:
        out = run_dir / f"OUT_H{h}"
        runs, summary, runs_f = percta_tables(out, why, m, VARIANTS, ("mainloop_early_ns", "mainloop_late_ns"))
        for v in VARIANTS:
            f = out / f"percta-tiles-{m}-{v}.csv.gz"
            w = wave_medians(_tiles(f, h, why, m))
            registered_plan.positive_times(w["measured"], [f"H = {h} {v} wave {i}" for i in w["wave"]], f,
                                           "the median tile time")
            rows += [dict(gpu=gpu, h=h, variant=v, wave=int(r.wave), measured_us=float(r.measured), run=-1,
                          ratio=np.nan) for r in w.itertuples()]
            r = runs[(runs["variant"] == v) & (runs["m"] == m)]
            if len(r) != RUNS or sorted(r["run"]) != list(range(RUNS)):
                raise JudgeError(f"{runs_f}: {len(r)} runs of {v} at M = {m}, not the {RUNS} "
                                 f"(0 to {RUNS - 1}) {plan} asks")
            for col in ("mainloop_early_ns", "mainloop_late_ns"):
                registered_plan.positive_times(r[col], [f"H = {h} {v} run {int(i)}" for i in r["run"]], runs_f, col)
            rows += [dict(gpu=gpu, h=h, variant=v, wave=-1, measured_us=np.nan, run=int(x.run),
                          ratio=x.mainloop_late_ns / x.mainloop_early_ns) for x in r.itertuples()]
    return pd.DataFrame(rows)


def cases(pred: pd.DataFrame, meas: pd.DataFrame) -> pd.DataFrame:
    """Per H, variant and predictor of the call's GPU: the measured and predicted means over full waves >= 2 (us),
    the error of the mean (%), and the traced runs' ratios (min, max)."""
    import plan83_alone_edge as p83  # noqa: PLC0415
    from percta_predict import full_waves  # noqa: PLC0415

    gpu, p = p83.call_rows(pred, meas)
    rows = []
    for (h, v), g in meas.groupby(["h", "variant"], sort=True):
        waves, runs = g[g["wave"] >= 0], g[g["wave"] < 0]
        m = full_waves(waves, tiles(h)).set_index("wave")["measured_us"]
        mine = p[(p["h"] == h) & (p["variant"] == v)]
        for name in PREDICTORS:
            q = mine[mine["predictor"] == name].set_index("wave")["us"].reindex(m.index)
            if q.isna().any():
                raise JudgeError(f"the registration has no {name} prediction of {gpu} H = {h} {v} at every full wave")
            rows.append(dict(gpu=gpu, h=h, variant=v, predictor=name, waves=len(m), measured_us=float(m.mean()),
                             predicted_us=float(q.mean()), mean_err_pct=(q.mean() / m.mean() - 1) * 100,
                             ratio_min=float(runs["ratio"].min()), ratio_max=float(runs["ratio"].max())))
    return pd.DataFrame(rows)


def claims(c: pd.DataFrame, provenance: str) -> pd.DataFrame:
    grouped = c[c["variant"].isin(GROUPED)]
    by = {name: grouped[grouped["predictor"] == name] for name in PREDICTORS}
    prof, flat = by["profile"], by["flat"]
    worst = prof.loc[prof["mean_err_pct"].abs().idxmax()]
    means = c[c["predictor"] == "profile"].pivot(index="h", columns="variant", values="measured_us")
    fastest = means.idxmin(axis=1)
    pairs = c[c["variant"] == PAIRS].pivot(index="h", columns="predictor", values="mean_err_pct")
    prof_mape, flat_mape = prof["mean_err_pct"].abs().mean(), flat["mean_err_pct"].abs().mean()
    rows = [
        ("a", f"worst {worst['mean_err_pct']:+.1f}% ({worst['variant'].removeprefix('cutlass_ctapipe_')} at "
              f"H = {worst['h']})", bool((prof["mean_err_pct"].abs() <= LEVEL * 100).all())),
        ("b", f"ratios {prof['ratio_min'].min():.2f}-{prof['ratio_max'].max():.2f}",
         bool((prof["ratio_max"] < ESCAPE).all())),
        ("c", f"{prof_mape:.1f}% against {flat_mape:.1f}%", bool(prof_mape <= flat_mape / 2)),
        ("d", ", ".join(f"{h}: {v.removeprefix('cutlass_ctapipe_') if v != ROW else 'row'}" for h, v in
                        fastest.items()), bool(fastest.isin(GROUPED).all())),
        ("e", ", ".join(f"{h}: {r['lockstep']:+.1f} / {r['profile']:+.1f}%" for h, r in pairs.iterrows()),
         bool((pairs["lockstep"].abs() < pairs["profile"].abs()).all())),
    ]
    return registered_plan.claims_table(rows, CLAIMS, provenance)


PLAN = registered_plan.Plan(
    name="plan85_grouped_kept", description=__doc__.splitlines()[0], registered=REGISTERED,
    results=ROOT / "bench/results/validation-registered85", register=register, measured=measured, cases=cases,
    claims=claims, first_file=lambda run_dir: run_dir / "env.txt")


def main(argv: list[str] | None = None) -> int:
    return registered_plan.main(PLAN, argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
