"""Registered plan 88: does a producer alone on one GPU spread as the one-GPU tickets, not as the 2-GPU producers?

    python bench/plan88_local_spread.py --register [--out bench/predictions/reg88-local-spread]
    python bench/plan88_local_spread.py --judge RUN_DIR [--registered bench/predictions/reg88-local-spread]
                                        [--out bench/results/validation-registered88]
    # the measurement (one H100 or one H200, one call): per H of :data:`HS`,
    # python -m ctahw.percta RUN_DIR/OUT_H<h> --h <h> --ms 16384 --variants <plan 85's VARIANTS> --reps 5

The mechanism profiles price a one-CTA-per-tile grid's later sharers of a panel by how fast the grid's start times
spread (``ctasim.l2.ticket_rereads``). The ``ctapipe`` family's spread, 0.1292 tile times a wave, was fitted on the
2xH200 producers of CTA-pipelining, whose stores and signals cross NVLink to the consumer's GPU; the chain kernel's
tickets on one GPU spread 0.0189 (``bench/ticket_spread.py``). Every producer-alone plan (13, 83-87: ``ctahw.percta``,
the producer on one GPU, output and queue in its own memory) priced the producer at the family's 2-GPU spread. Read
post-hoc on every committed producer-alone call (``python bench/posthoc_local_spread.py``), the grouped producers alone
spread as the one-GPU tickets do (groups of 8 0.017-0.022 a wave on two H100s, groups of 4 0.018-0.028 on three GPUs),
the pairs less (0.003-0.016: ``bench/posthoc_alone_spread.py`` found them spreading least and climbing most, a loss the
spread does not explain) and row order more (0.016-0.17, its order's spread, not the device's); at the one-GPU spread
the mechanism profiles price the H100s' pairs at 2.9% mean |error| (at the family's spread 6.4%, at spread 0 2.2%; 8
cases), their row order at 13.3% (21.7%, 15 cases; the one-GPU spread nearer at 6144-8192, where the family's prices the
reuse lost and the runs kept most of it, and at two of three runs at 9216; the family's nearer at 8704 and from 9728 up,
within 6% where the one-GPU spread is 10-24% fast), the H200s' row order at 6.6% (21.9%, 5 cases); groups of 8 the
same at both, groups of 4 the same or nearer (by 1.2-2.4 points at 6144-7168).

Plan 88 registers that reading at H no call has run these producers at, on whichever GPU comes: plan 85's four
producers alone (``ctahw.percta``, M = 16384) at H = :data:`HS`, five traced and five untraced rested runs each.
Predictors of each wave's median tile time (:data:`PREDICTORS`), on the GPU's mechanism profile (:data:`GPUS`):
``flat`` (the naive one: the profile's tile rate, no memory hierarchy), ``lockstep`` (spread 0), ``profile`` (the
``ctapipe`` family's spread) and ``local`` (the 128x256 config's ``ticket_spread``: the one-GPU tickets').

Claims (:data:`CLAIMS`) and the adoption rule (:data:`ADOPT`): where (a), (b) and (d) are met, a one-CTA-per-tile grid
run alone on one GPU is priced at its profile's one-GPU tickets' spread wherever the project predicts one, and the
family's spread is kept for the grids it was fitted on (the 2-GPU producers, whose stores and signals cross NVLink).
Amended after a read-only review, before any run: claim (d) reads the grouped producers and the pairs apart (it read
their twelve runs pooled, which the grouped eight decide), the figures above say the pairs spread less than the
tickets, and a tile table without ``t_mainloop_end`` is refused in one line.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

import plan85_grouped_kept as p85  # noqa: E402
import plan86_x8_exposed as p86  # noqa: E402
import registered_plan  # noqa: E402
import plan83_alone_edge as p83  # noqa: E402

M, VARIANTS, RUNS = p85.M, p85.VARIANTS, p85.RUNS
ROW, PAIRS, GROUPED = p85.ROW, p85.PAIRS, p85.GROUPED
KEPT, LOST, tiles = p83.KEPT, p83.LOST, p83.tiles
HS = (6656, 7680, 8448, 15360)
"""New H: plans 83-86 ran the producers alone at 6144-14336 (6144, 7168, 8192, 8704-14336 by 512 or 1024 steps), none
at these; the three lower are where the two spreads part on an H100 (row order and pairs), 15360 where both price row
order lost."""
GPUS = {"H100": "h100-x8-mechanism", "H200": "h200-x2-mechanism"}
"""Per GPU the call may get: the mechanism profile it is priced on (as plans 83-87)."""
PREDICTORS = ("flat", "lockstep", "profile", "local")
SPREAD_RANGE = 1.5
"""Claim (d): the grouped producers' own spread within this factor of the one-GPU tickets' (either way), the pairs'
under it times this."""
REGISTERED = ROOT / "bench/predictions/reg88-local-spread"
JudgeError = registered_plan.JudgeError
WHY = ("plan 88's call runs python -m ctahw.percta RUN_DIR/OUT_H<h> --h <h> --ms 16384 --variants "
       + ",".join(VARIANTS) + " per H, and writes RUN_DIR/env.txt")
CLAIMS = {
    "a": "pairs (w21): local's mean |error| of the mean over full waves >= 2 at most half the profile's over the four "
         "H",
    "b": "row order: local's mean |error| of the mean over full waves >= 2 at most half the profile's over the four H",
    "c": "all sixteen cases: local's mean |error| under each of flat's, lockstep's and the profile's",
    "d": f"the call's own spread: the median span rate of the grouped producers' eight traced runs within "
         f"{SPREAD_RANGE:g}x of the one-GPU tickets' spread, either way, and the pairs' four runs' median under "
         f"{SPREAD_RANGE:g}x it (every run's rate fitted)",
    "e": f"row order: at every H where the measured mean over full waves >= 2 is kept (under {KEPT:g}x lockstep's) or "
         f"lost (at least {LOST:g}x), local's says the same, and at least two H are so judged",
}
ADOPT = ("where (a), (b) and (d) are met, a one-CTA-per-tile grid run alone on one GPU is priced at its profile's "
         "one-GPU tickets' spread (the 128x256 config's ticket_spread) wherever the project predicts one, the ctapipe "
         "family's spread kept for the 2-GPU producers it was fitted on, whose stores and signals cross NVLink")


def predictors(profile: str) -> dict:
    """Per predictor of :data:`PREDICTORS`: (profile, ticket spread) on the mechanism profile ``profile``: plan 85's
    three and ``local``, its lockstep level's profile at the 128x256 config's (the one-GPU tickets') spread."""
    from ctasim.costs import alone_ticket_spread  # noqa: PLC0415

    p = p85.predictors(profile)
    hw = p["lockstep"][0]
    return {**p, "local": (hw, alone_ticket_spread(hw))}


def register() -> pd.DataFrame:
    """Per GPU, H, variant, predictor and wave: the predicted median tile time (us) of that wave
    (:func:`plan85_grouped_kept.wave_prediction`)."""
    return p85.register_waves(GPUS, predictors, HS, M)


def measured(run_dir: Path) -> pd.DataFrame:
    """:func:`plan85_grouped_kept.measured_at` at :data:`HS` (the waves' medians and the traced runs' ratios), each
    row with its case's ``span_rate``: ``ctasim.calibration.span_rate`` of the median-span traced run's windows (NaN
    where it has too few windows to fit)."""
    from ctasim.calibration import span_rate, window_spans  # noqa: PLC0415
    from percta_predict import SLOTS  # noqa: PLC0415

    meas = p85.measured_at(run_dir, HS, WHY, "plan 88")
    rates = {}
    for h in HS:
        for v in VARIANTS:
            f = run_dir / f"OUT_H{h}" / f"percta-tiles-{M}-{v}.csv.gz"  # read and checked by measured_at
            t = p85._numbers(pd.read_csv(f), ("t_acquire", "t_mainloop_end"), f, WHY)
            r = span_rate(window_spans(t, SLOTS))
            rates[(h, v)] = np.nan if r is None else float(r)
    meas["span_rate"] = [rates[k] for k in zip(meas["h"], meas["variant"])]
    return meas


def cases(pred: pd.DataFrame, meas: pd.DataFrame) -> pd.DataFrame:
    """:func:`plan86_x8_exposed.cases` over :data:`PREDICTORS`, each row with its predictor's registered ``spread``
    and its case's measured ``span_rate``."""
    c = p86.cases(pred, meas, names=PREDICTORS)
    mine = pred[pred["gpu"] == c["gpu"].iloc[0]]
    spread = mine.groupby("predictor")["spread"].first()
    rate = meas.groupby(["h", "variant"])["span_rate"].first()
    c["spread"] = c["predictor"].map(spread)
    c["span_rate"] = [rate[k] for k in zip(c["h"], c["variant"])]
    return c


def _state(ratio: float) -> str:
    return "kept" if ratio < KEPT else "lost" if ratio >= LOST else "between"


def claims(c: pd.DataFrame, provenance: str) -> pd.DataFrame:
    mae = p86.mae
    pairs, row = c[c["variant"] == PAIRS], c[c["variant"] == ROW]
    la, pa = mae(pairs, "local"), mae(pairs, "profile")
    lb, pb = mae(row, "local"), mae(row, "profile")
    lc, others = mae(c, "local"), {n: mae(c, n) for n in ("flat", "lockstep", "profile")}
    local = c[c["predictor"] == "local"]
    spread = float(local["spread"].iloc[0])
    grouped_rates = local.loc[local["variant"].isin(GROUPED), "span_rate"]
    pairs_rates = local.loc[local["variant"] == PAIRS, "span_rate"]
    fitted = int(grouped_rates.notna().sum() + pairs_rates.notna().sum())
    g_rate, p_rate = float(grouped_rates.median()), float(pairs_rates.median())  # NaN where a run has none
    by = row.pivot(index="h", columns="predictor", values="predicted_us")
    measured_state = (row.groupby("h")["measured_us"].first() / by["lockstep"]).map(_state)
    local_state = (by["local"] / by["lockstep"]).map(_state)
    judged = measured_state[measured_state != "between"]
    rows = [
        ("a", f"{la:.2f}% against {pa:.2f}%", bool(la <= pa / 2)),
        ("b", f"{lb:.2f}% against {pb:.2f}%", bool(lb <= pb / 2)),
        ("c", f"{lc:.2f}% against " + ", ".join(f"{n} {x:.2f}%" for n, x in others.items()),
         bool(all(lc < x for x in others.values()))),
        ("d", f"grouped {g_rate:.4f}, pairs {p_rate:.4f} against {spread:.4f} (the family's "
              f"{float(c.loc[c['predictor'] == 'profile', 'spread'].iloc[0]):.4f}; {fitted} of "
              f"{len(grouped_rates) + len(pairs_rates)} runs fitted)",
         bool(fitted == len(grouped_rates) + len(pairs_rates)
              and spread / SPREAD_RANGE <= g_rate <= spread * SPREAD_RANGE and p_rate < spread * SPREAD_RANGE)),
        ("e", ", ".join(f"{h}: {measured_state[h]} / {local_state[h]}" for h in measured_state.index),
         bool(len(judged) >= 2 and (local_state[judged.index] == judged).all())),
    ]
    return registered_plan.with_adoption(registered_plan.claims_table(rows, CLAIMS), ("a", "b", "d"), ADOPT,
                                         provenance)


PLAN = registered_plan.Plan(
    name="plan88_local_spread", description=__doc__.splitlines()[0], registered=REGISTERED,
    results=ROOT / "bench/results/validation-registered88", register=register, measured=measured, cases=cases,
    claims=claims, first_file=lambda run_dir: run_dir / "env.txt")


def main(argv: list[str] | None = None) -> int:
    return registered_plan.main(PLAN, argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
