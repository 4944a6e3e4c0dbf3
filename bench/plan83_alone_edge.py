"""Registered plan 83: where the one-CTA-per-tile producer alone loses its weights' L2 reuse, on an H100 and an H200

    python bench/plan83_alone_edge.py --register [--out bench/predictions/reg83-alone-edge]
    python bench/plan83_alone_edge.py --judge RUN_DIR [--registered bench/predictions/reg83-alone-edge]
                                      [--out bench/results/validation-registered83]
    # the measurement (one GPU, one call; the registration's README gives the commands): per H of the call's GPU
    # (:data:`GPUS`), python -m ctahw.percta RUN_DIR/OUT_H<h> --h <h> --ms 16384 --variants <VARIANTS>

Registered plans 13 and 14 ran the producer kernel of the 2-GPU CTA-pipelining plan alone on one H200
(``ctahw.percta``: one CTA per tile, row order, no consumer) and found it keeping the weights' L2 reuse through
H = 10240 and losing it, suddenly and to the full-miss level the model computes, from H = 11264; of the threshold
ticket law's two consistent states, "hold" (keep the reuse until that is inconsistent) was nearest where the reuse
was lost, and neither where it was kept at 10240. The profiles that price the 2-GPU grids take the other state
("thrash", ``h200-x2-mechanism``) or the one H200's survival law (registered plan 82's twins), and every one of them
prices the producer alone as losing its reuse at H = 8192 (post-hoc, ``bench/ctapipe_mechanism.py``,
``probe-waves.csv``). Which state a one-CTA-per-tile grid takes decides the 2-GPU predictions' level.

Plan 83 asks it where the L2 is another size: on an H100 (50 MiB against the H200's 60 MiB, and a slower HBM, so
that a lost reuse costs twice the tile time there) at H = 8192-11264, and on an H200 at three H no committed run has
(:data:`GPUS`), M = 16384, in row order (``cutlass_ctapipe``, 1x1) and in row-block pairs (``cutlass_ctapipe_c21``'s
producer, 2x1: the control, whose sharers start together). Predictors of each full wave's median tile time (acquire
to compute end; :data:`PREDICTORS`), on the GPU's mechanism profile (``h100-x8-mechanism``: the H200's with the H100
datasheet's L2 and HBM; ``h200-x2-mechanism``):

* ``lockstep``: its memory hierarchy over the producer's order, no spread (the naive predictor here: every tile at
  the no-miss time whatever the order);
* ``hold`` and ``thrash``: the profile's threshold ticket law at the producer alone's spread (0.0524 a wave, plan
  14's: ``percta_rule_predict.alone_spread``), in either state;
* ``profile``: the profile as it is (its family config's spread, "thrash");
* ``survival`` and ``survival_gap``: plan 82's survival ticket law (the one H200's L2 survival curve, in L2 sizes --
  an H100's probed the same, ``h100-x1-datasheet`` --, its gap spread, touched bytes 1.3 or 1.0) at the family
  spread.

Claims (:data:`CLAIMS`), judged on the call's GPU. No adoption rule: nothing here changes a profile.
"""

from __future__ import annotations

import dataclasses
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

import registered_plan  # noqa: E402

M = 16384
GPUS = {"H100": ("h100-x8-mechanism", (8192, 9216, 10240, 11264)), "H200": ("h200-x2-mechanism", (9216, 10752, 11776))}
"""Per GPU: its mechanism profile and the H (K = N) of the call; the H200's are new (plans 13 and 14 ran 8192, 10240,
11264 and 12288)."""
SURVIVAL_TWINS = {"survival": "h200-x2-mechanism-survival", "survival_gap": "h200-x2-mechanism-survival-gap"}
"""Registered plan 82's twins: where the survival law's curve and refinements are read from."""
ROW, PAIRS = "cutlass_ctapipe", "cutlass_ctapipe_c21"
VARIANTS = (ROW, PAIRS)
PREDICTORS = ("lockstep", "hold", "thrash", "profile", "survival", "survival_gap")
KEPT, LOST = 1.10, 1.25
"""A run keeps its reuse where its mean over full waves >= 2 is under KEPT x lockstep's, and has lost it at LOST x or
more (between: partly)."""
LEVEL = 0.05
REGISTERED = ROOT / "bench/predictions/reg83-alone-edge"
JudgeError = registered_plan.JudgeError
WHY = "plan 83's call runs python -m ctahw.percta RUN_DIR/OUT_H<h> --h <h> --ms 16384 per H, and writes RUN_DIR/env.txt"
CLAIMS = {
    "a": "row order: hold has the lowest per-wave error (mean |error| of the full waves' medians) of the six "
         "predictors (a tie counts) in all but at most one H",
    "b": f"row order: the measured state (kept under {KEPT}x lockstep's mean, lost from {LOST}x) is hold's at every H",
    "c": f"row order: hold's mean within {LEVEL:.0%} at every H",
    "d": "row order: the survival law (plan 82's, as adopted) has a lower mean per-wave error than the profile's "
         "threshold law in thrash over the H",
    "e": f"pairs: lockstep's mean within {LEVEL:.0%} at every H (the control keeps its reuse)",
    "f": "row order: hold's mean |error| of the mean at most half lockstep's (the naive predictor's) over the H",
}


def survival_profile(base, twin):
    """``base`` (a mechanism profile) under the survival ticket law of plan 82's ``twin`` (a profile's name): its L2
    survival curve (in L2 sizes) and its ticket-scheduled configs' law, gap spread and touched bytes."""
    from ctasim.spec import load_hardware  # noqa: PLC0415

    t = load_hardware(twin)
    c = t.config(128, 256, kernel="ctapipe")
    hw = dataclasses.replace(base, l2_survival_taken=t.l2_survival_taken, l2_survival_share=t.l2_survival_share)
    return hw.with_tickets(ticket_law=c.ticket_law, ticket_gap_cv=c.ticket_gap_cv, ticket_touched=c.ticket_touched)


def predictors(profile: str) -> dict:
    """Per predictor of :data:`PREDICTORS`: (profile, spread) on the mechanism profile ``profile`` as registered
    (``ctasim.profiles.before_h100_x8_exposed``: before registered plan 87's adoption; a later plan that means the
    adopted ``h100-x8-mechanism`` loads it itself)."""
    from ctasim.profiles import before_h100_x8_exposed  # noqa: PLC0415
    from percta_rule_predict import alone_spread  # noqa: PLC0415

    base = before_h100_x8_exposed(profile)
    fam = base.config(128, 256, kernel="ctapipe").ticket_spread
    alone = alone_spread()
    return {"lockstep": (base, 0.0), "hold": (base.with_tickets(ticket_state="hold"), alone),
            "thrash": (base.with_tickets(ticket_state="thrash"), alone), "profile": (base, fam),
            **{name: (survival_profile(base, twin), fam) for name, twin in SURVIVAL_TWINS.items()}}


def tiles(h: int, m: int = M) -> int:
    """The producer's tiles at M = ``m`` (default :data:`M`), K = N = ``h`` (128 x 256 each)."""
    return (m // 128) * (h // 256)


def wave_times(h: int, variant: str, hw, spread: float, m: int = M) -> np.ndarray:
    """Each wave's predicted median tile time (us) of ``variant``'s producer alone at H = ``h`` on profile ``hw`` with
    the tickets' ``spread``: its first tile's (``ctasim.costs.order_tile_times``, the producer's order)."""
    from ctasim import costs  # noqa: PLC0415
    from ctasim.spec import Layer  # noqa: PLC0415
    from percta_predict import SLOTS, order_of  # noqa: PLC0415

    layer = Layer(m, h, h, 128, 256)
    order = order_of(variant, layer.tiles_m, layer.tiles_n)
    t = costs.order_tile_times(layer, hw, 2, order, SLOTS, kernel="ctapipe", drift=0.0, ticket_spread=spread)
    return t[::SLOTS][:-(-layer.tiles // SLOTS)] / 1e3


def register() -> pd.DataFrame:
    """Per GPU, H, variant, predictor and wave: the predicted median tile time (us) of that wave."""
    rows = []
    for gpu, (profile, hs) in GPUS.items():
        preds = predictors(profile)
        for h in hs:
            for v in VARIANTS:
                for name, (hw, spread) in preds.items():
                    rows += [dict(gpu=gpu, profile=profile, h=h, m=M, variant=v, predictor=name, spread=spread,
                                  wave=w, us=float(x)) for w, x in enumerate(wave_times(h, v, hw, spread))]
    return pd.DataFrame(rows)


def call_gpu(run_dir: Path, why: str = WHY) -> str:
    """The call's GPU (a key of :data:`GPUS`) from ``run_dir/env.txt``; :class:`JudgeError` where it names none, or
    where there is no such file (``why`` says what should have written it)."""
    env = run_dir / "env.txt"
    if not env.is_file():
        raise JudgeError(f"no {env} ({why})")
    found = sorted({g for g in GPUS if re.search(rf"NVIDIA {g}\b", env.read_text(errors="replace"))})
    if len(found) != 1:
        raise JudgeError(f"{env}: names {' and '.join(found) if found else 'no GPU'} of {', '.join(GPUS)}, "
                         "not exactly one")
    return found[0]


def call_rows(pred: pd.DataFrame, meas: pd.DataFrame) -> tuple[str, pd.DataFrame]:
    """The measured call's GPU (``meas``'s ``gpu``) and the registration's rows of it; :class:`JudgeError` where there
    are none."""
    gpu = meas["gpu"].iloc[0]
    p = pred[pred["gpu"] == gpu]
    if p.empty:
        raise JudgeError(f"the registration has no rows for {gpu}")
    return gpu, p


def measured(run_dir: Path) -> pd.DataFrame:
    """Per H of the call's GPU, variant and wave: the kept traced run's median tile time (us), and the run's spread
    (``ctasim.calibration.span_rate`` of its windows, a reading, not in the claims)."""
    from ctasim.calibration import span_rate, window_spans  # noqa: PLC0415
    from percta_predict import SLOTS, wave_medians  # noqa: PLC0415

    gpu = call_gpu(run_dir)
    rows = []
    for h in GPUS[gpu][1]:
        for v in VARIANTS:
            f = run_dir / f"OUT_H{h}" / f"percta-tiles-{M}-{v}.csv.gz"
            if not f.is_file():
                raise JudgeError(f"no {f} ({WHY})")
            try:
                t = pd.read_csv(f)
                w = wave_medians(t)
                spread = span_rate(window_spans(t, SLOTS))
            except (OSError, KeyError, ValueError, EOFError) as e:
                raise JudgeError(f"{f}: not a percta tile table ({type(e).__name__}: {e})") from None
            if len(t) != tiles(h):
                raise JudgeError(f"{f}: {len(t)} tiles, not the {tiles(h)} of M = {M}, H = {h}")
            registered_plan.positive_times(w["measured"], [f"H = {h} {v} wave {i}" for i in w["wave"]], f,
                                           "the median tile time")
            rows += [dict(gpu=gpu, h=h, variant=v, wave=int(r.wave), measured_us=float(r.measured),
                          spread=np.nan if spread is None else float(spread)) for r in w.itertuples()]
    return pd.DataFrame(rows)


def cases(pred: pd.DataFrame, meas: pd.DataFrame) -> pd.DataFrame:
    """Per H, variant and predictor of the call's GPU, over the full waves >= 2: the measured and predicted means
    (us), the error of the mean (%), the mean |error| of the waves' medians (us), and the states."""
    from percta_predict import full_waves  # noqa: PLC0415

    gpu, p = call_rows(pred, meas)
    rows = []
    for (h, v), run in meas.groupby(["h", "variant"], sort=True):
        m = full_waves(run, tiles(h)).set_index("wave")["measured_us"]
        mine = p[(p["h"] == h) & (p["variant"] == v)]
        lock = mine[mine["predictor"] == "lockstep"].set_index("wave")["us"].reindex(m.index)
        for name in PREDICTORS:
            q = mine[mine["predictor"] == name].set_index("wave")["us"].reindex(m.index)
            if q.isna().any():
                raise JudgeError(f"the registration has no {name} prediction of {gpu} H = {h} {v} at every full wave")
            rows.append(dict(gpu=gpu, h=h, variant=v, predictor=name, waves=len(m), measured_us=float(m.mean()),
                             predicted_us=float(q.mean()), mean_err_pct=(q.mean() / m.mean() - 1) * 100,
                             wave_mae_us=float((q - m).abs().mean()),
                             measured_state=state(m.mean() / lock.mean()),
                             predicted_state=state(q.mean() / lock.mean()),
                             measured_spread=float(run["spread"].iloc[0])))
    return pd.DataFrame(rows)


def state(ratio: float) -> str:
    """A mean over the no-miss (lockstep) mean as a state: kept, partly or lost (:data:`KEPT`, :data:`LOST`)."""
    return "kept" if ratio < KEPT else "lost" if ratio >= LOST else "partly"


def claims(c: pd.DataFrame, provenance: str) -> pd.DataFrame:
    row, pairs = c[c["variant"] == ROW], c[c["variant"] == PAIRS]
    hs = sorted(row["h"].unique())
    by = {name: row[row["predictor"] == name].set_index("h") for name in PREDICTORS}
    low = {h: min(by[name].loc[h, "wave_mae_us"] for name in PREDICTORS) for h in hs}
    best = {h: "/".join(n for n in PREDICTORS if by[n].loc[h, "wave_mae_us"] <= low[h] + 1e-6) for h in hs}
    hold, lock = by["hold"], by["lockstep"]
    states = ", ".join(f"{h}: {hold.loc[h, 'measured_state']} / {hold.loc[h, 'predicted_state']}" for h in hs)
    surv, prof = by["survival"]["wave_mae_us"].mean(), by["profile"]["wave_mae_us"].mean()
    lp = pairs[pairs["predictor"] == "lockstep"].set_index("h")["mean_err_pct"]
    hold_mape, lock_mape = hold["mean_err_pct"].abs().mean(), lock["mean_err_pct"].abs().mean()
    rows = [
        ("a", "; ".join(f"{h}: {best[h]}" for h in hs), sum("hold" not in best[h].split("/") for h in hs) <= 1),
        ("b", f"measured / hold {states}", bool((hold["measured_state"] == hold["predicted_state"]).all())),
        ("c", ", ".join(f"{h}: {hold.loc[h, 'mean_err_pct']:+.1f}%" for h in hs),
         bool((hold["mean_err_pct"].abs() <= LEVEL * 100).all())),
        ("d", f"{surv:.1f} against {prof:.1f} us", bool(surv < prof)),
        ("e", ", ".join(f"{h}: {e:+.1f}%" for h, e in lp.items()), bool((lp.abs() <= LEVEL * 100).all())),
        ("f", f"{hold_mape:.1f}% against {lock_mape:.1f}%", bool(hold_mape <= lock_mape / 2)),
    ]
    return registered_plan.claims_table(rows, CLAIMS, provenance)


def waves_table(c: pd.DataFrame) -> pd.DataFrame:
    """Per H and variant: the measured mean, its state, spread and ratio to the pairs' measured mean at the same H (a
    reading beside claim (b)'s state, whose base is the predicted lockstep), and each predictor's mean (us)."""
    keys = ["gpu", "h", "variant"]
    w = c.pivot_table(index=keys, columns="predictor", values="predicted_us").reset_index()
    m = c.drop_duplicates(keys)[[*keys, "measured_us", "measured_state", "measured_spread"]]
    w = m.merge(w, on=keys, how="left")
    pairs = w[w["variant"] == PAIRS].set_index(["gpu", "h"])["measured_us"]
    w.insert(6, "over_pairs", w["measured_us"].to_numpy() / pairs.loc[list(zip(w["gpu"], w["h"]))].to_numpy())
    return w[[*keys, "measured_us", "measured_state", "measured_spread", "over_pairs", *PREDICTORS]]


PLAN = registered_plan.Plan(
    name="plan83_alone_edge", description=__doc__.splitlines()[0], registered=REGISTERED,
    results=ROOT / "bench/results/validation-registered83", register=register, measured=measured, cases=cases,
    claims=claims, first_file=lambda run_dir: run_dir / "env.txt", tables=lambda c: {"means": waves_table(c)})


def main(argv: list[str] | None = None) -> int:
    return registered_plan.main(PLAN, argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
