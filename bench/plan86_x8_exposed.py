"""Registered plan 86: does the 8xH100 mechanism profile take plan 76's exposed rate? The producers alone at new H.

    python bench/plan86_x8_exposed.py --register [--out bench/predictions/reg86-x8-exposed]
    python bench/plan86_x8_exposed.py --judge RUN_DIR [--registered bench/predictions/reg86-x8-exposed]
                                      [--out bench/results/validation-registered86]
    # the measurement (one H100, one call): per H of :data:`HS`,
    # python -m ctahw.percta RUN_DIR/OUT_H<h> --h <h> --ms 16384 --variants <plan 85's VARIANTS> --reps 5

Registered plan 85 ran the producers of row order, row-block pairs and groups of 4 and 8 row-blocks alone on an H100
(H = 9216-12288): the grouped ones kept their reuse but ran 2.2-5.0% faster than ``h100-x8-mechanism`` says, and the
flat predictor (no memory hierarchy) was nearer. Post-hoc (``bench/posthoc_h100_x8_exposed.py``), charging the exposed
share of a wave's HBM time at the H200's measured rate -- the field registered plan 76 adopted on
``h100-x1-datasheet``, which the derived 8-GPU profile did not take -- priced the grouped producers at 0.74% and every
non-row producer's first two waves at 0.4-0.9% (against 3.7% and 3.7-4.5%); the pairs' later waves, which climb as
they lose part of their reuse, it prices 3.3-8.4% fast. The twin is ``h100-x8-mechanism-exposed``
(``ctasim.profiles``). Plan 86 asks it on H that no call has run these producers at, on whichever H100 comes: the same
four producers alone (``ctahw.percta``, M = 16384) at H = :data:`HS`, five traced and five untraced rested runs each.

Predictors of each wave's median tile time (:data:`PREDICTORS`): ``flat`` (the naive one: every tile at the profile's
tile rate, no memory hierarchy), ``lockstep`` and ``profile`` (``h100-x8-mechanism`` at ticket spread 0 and at its
ctapipe family's spread), ``twin_lockstep`` and ``twin`` (``h100-x8-mechanism-exposed`` the same two ways).

Claims (:data:`CLAIMS`) and the adoption rule (:data:`ADOPT`): where (a), (b) and (d) are met, ``h100-x8-mechanism``
takes ``l2_hbm_exposed_gbps`` (``ctasim.profiles``), and docs/advice.md is written again. Row order is the control,
with one claim (e): at the two lower H the profile prices it lost (twice its lockstep level), where plan 83's unit
kept the reuse at 8192 (the rule that spreads the tickets by a fixed amount a wave says lost whatever the unit).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import pandas as pd  # noqa: E402

import plan85_grouped_kept as p85  # noqa: E402
import registered_plan  # noqa: E402
from plan83_alone_edge import LOST, tiles  # noqa: E402

M, VARIANTS, RUNS = p85.M, p85.VARIANTS, p85.RUNS
ROW, PAIRS, GROUPED = p85.ROW, p85.PAIRS, p85.GROUPED
HS = (6144, 7168, 13312, 14336)
"""New H: plans 83-85 ran the producers alone at 8192-12288 (plan 84's row order at 8704-9728)."""
GPU = "H100"
PROFILE, TWIN = "h100-x8-mechanism", "h100-x8-mechanism-exposed"
PREDICTORS = ("flat", "lockstep", "profile", "twin_lockstep", "twin")
EARLY = (0, 1)
"""The waves of the early means: before any wave of the producer has re-read what it read before."""
LEVEL = 0.025
LOW = HS[:2]
"""The H where the profile prices row order's producer at its lost level and plan 83's unit kept the reuse at a larger
H (8192): claim (e), no part of the adoption rule."""
REGISTERED = ROOT / "bench/predictions/reg86-x8-exposed"
JudgeError = registered_plan.JudgeError
WHY = ("plan 86's call runs python -m ctahw.percta RUN_DIR/OUT_H<h> --h <h> --ms 16384 --variants "
       + ",".join(VARIANTS) + " per H, and writes RUN_DIR/env.txt")
CLAIMS = {
    "a": "grouped producers (w21g4, w21g8): the twin's mean |error| of the mean over full waves >= 2 at most half the "
         "profile's over the eight cases",
    "b": f"grouped producers: the twin within {LEVEL:.1%} of the measured mean over full waves >= 2 at every H",
    "c": "grouped producers: the twin's mean |error| under the flat (naive) predictor's over the eight cases",
    "d": "waves 0-1 of the pairs and the grouped producers: twin_lockstep's mean |error| of their mean at most half "
         "lockstep's over the twelve cases",
    "e": f"row order at H = {LOW[0]} and {LOW[1]}: lost, as the profile says (the measured mean over full waves >= 2 "
         f"at least {LOST:g}x lockstep's)",
}
ADOPT = ("where (a), (b) and (d) are met, h100-x8-mechanism takes l2_hbm_exposed_gbps (the H200's measured hbm_gbps, "
         "as h100-x1-datasheet since plan 76) and docs/advice.md is written again")


def predictors() -> dict:
    """Per predictor of :data:`PREDICTORS`: (profile, ticket spread): plan 85's three on :data:`PROFILE`, and its
    lockstep and profile levels on :data:`TWIN` as ``twin_lockstep`` and ``twin``."""
    twin = p85.predictors(TWIN)
    return {**p85.predictors(PROFILE), "twin_lockstep": twin["lockstep"], "twin": twin["profile"]}


def register_at(hs, m: int) -> pd.DataFrame:
    """Per H of ``hs``, variant, predictor and wave at M = ``m``: the predicted median tile time (us) of that wave
    (:func:`plan85_grouped_kept.wave_prediction`)."""
    preds = predictors()
    rows = []
    for h in hs:
        for v in VARIANTS:
            for name, (hw, spread) in preds.items():
                t = p85.wave_prediction(h, v, name, hw, spread, m)
                rows += [dict(gpu=GPU, h=h, m=m, variant=v, predictor=name, spread=spread, wave=w, us=float(x))
                         for w, x in enumerate(t)]
    return pd.DataFrame(rows)


def register() -> pd.DataFrame:
    """Per H, variant, predictor and wave: the predicted median tile time (us) of that wave."""
    return register_at(HS, M)


def measured(run_dir: Path) -> pd.DataFrame:
    """:func:`plan85_grouped_kept.measured_at` at :data:`HS`: the waves' medians and the traced runs' ratios."""
    return p85.measured_at(run_dir, HS, WHY, "plan 86")


def cases(pred: pd.DataFrame, meas: pd.DataFrame, tiles_of=tiles, names=PREDICTORS) -> pd.DataFrame:
    """Per H, variant and predictor of ``names``: the measured and predicted means over full waves >= 2 (us) and the
    error of the mean (%), the same over waves 0-1 (``early_``), and the traced runs' late-over-early ratios (min,
    max). ``tiles_of(h)``: the producer's tiles at H = ``h`` (default M = 16384's)."""
    import plan83_alone_edge as p83  # noqa: PLC0415
    from percta_predict import full_waves  # noqa: PLC0415

    gpu, p = p83.call_rows(pred, meas)
    rows = []
    for (h, v), g in meas.groupby(["h", "variant"], sort=True):
        waves, runs = g[g["wave"] >= 0], g[g["wave"] < 0]
        m = full_waves(waves, tiles_of(h)).set_index("wave")["measured_us"]
        early = waves.set_index("wave")["measured_us"].reindex(list(EARLY))
        if early.isna().any():
            raise JudgeError(f"no waves 0-1 of H = {h} {v}")
        mine = p[(p["h"] == h) & (p["variant"] == v)]
        for name in names:
            q = mine[mine["predictor"] == name].set_index("wave")["us"]
            full, first = q.reindex(m.index), q.reindex(early.index)
            if full.isna().any() or first.isna().any():
                raise JudgeError(f"the registration has no {name} prediction of {gpu} H = {h} {v} at every judged "
                                 "wave")
            rows.append(dict(gpu=gpu, h=h, variant=v, predictor=name, waves=len(m), measured_us=float(m.mean()),
                             predicted_us=float(full.mean()), mean_err_pct=(full.mean() / m.mean() - 1) * 100,
                             early_measured_us=float(early.mean()), early_predicted_us=float(first.mean()),
                             early_err_pct=(first.mean() / early.mean() - 1) * 100,
                             ratio_min=float(runs["ratio"].min()), ratio_max=float(runs["ratio"].max())))
    return pd.DataFrame(rows)


def mae(rows: pd.DataFrame, name: str, col: str = "mean_err_pct") -> float:
    """The mean |error| (``col``, %) of predictor ``name`` over ``rows`` of :func:`cases`."""
    return float(rows.loc[rows["predictor"] == name, col].abs().mean())


def claims(c: pd.DataFrame, provenance: str) -> pd.DataFrame:
    grouped = c[c["variant"].isin(GROUPED)]
    twin = grouped[grouped["predictor"] == "twin"]
    worst = twin.loc[twin["mean_err_pct"].abs().idxmax()]
    early = c[c["variant"].isin((PAIRS, *GROUPED))]
    t, pr, fl = mae(grouped, "twin"), mae(grouped, "profile"), mae(grouped, "flat")
    te, le = mae(early, "twin_lockstep", "early_err_pct"), mae(early, "lockstep", "early_err_pct")
    row = c[(c["variant"] == ROW) & (c["predictor"] == "lockstep") & c["h"].isin(LOW)].set_index("h")
    over = row["measured_us"] / row["predicted_us"]
    rows = [
        ("a", f"{t:.2f}% against {pr:.2f}%", bool(t <= pr / 2)),
        ("b", f"worst {worst['mean_err_pct']:+.2f}% ({worst['variant'].removeprefix('cutlass_ctapipe_')} at "
              f"H = {worst['h']})", bool((twin["mean_err_pct"].abs() <= LEVEL * 100).all())),
        ("c", f"{t:.2f}% against {fl:.2f}%", bool(t < fl)),
        ("d", f"{te:.2f}% against {le:.2f}%", bool(te <= le / 2)),
        ("e", ", ".join(f"{h}: {r:.2f}x" for h, r in over.items()), bool((over >= LOST).all())),
    ]
    return registered_plan.with_adoption(registered_plan.claims_table(rows, CLAIMS), ("a", "b", "d"), ADOPT,
                                         provenance)


PLAN = registered_plan.Plan(
    name="plan86_x8_exposed", description=__doc__.splitlines()[0], registered=REGISTERED,
    results=ROOT / "bench/results/validation-registered86", register=register, measured=measured, cases=cases,
    claims=claims, first_file=lambda run_dir: run_dir / "env.txt")


def main(argv: list[str] | None = None) -> int:
    return registered_plan.main(PLAN, argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
