"""Registered plan 104: one reference GEMM timed on the H100 in hand, scaling plan 103's block predictions (no GPU)

    python bench/plan104_reference_scaled.py --register [--out bench/predictions/reg104-reference-scaled]
    python bench/plan104_reference_scaled.py --judge RUN [--out bench/results/validation-registered104]

``ctasim predict --reference-ms T`` scales every model prediction by one GEMM timed on the user's machine: the
calibration GEMM, 16384 x 8192 x 8192 (``ctasim.predict.REFERENCE_EXPERIMENT``, ``REFERENCE_CASE``), measured over
the profile's time of it (``ctasim.predict.reference_model_ms``). Registered plan 63 tested that recipe on an H200
(met). On the lent H100s the pooled record (``bench/registered_record.py --machine h100``, post-hoc, 2026-12-07) says
the model's sequential error there is mostly the unit's speed: 3.68% as registered, 1.03% once each call's reference
ratio is taken out, in the 11 calls that timed it. Plan 104 asks that of a call not yet made: registered plan 103's
(four blocks op by op at M = 16384 and 32768, ``bench/hw/mlp_block_breakdown.py --model NAME --no-repeats``), with
one more line after it, ``--model llama3.1-70b --ms 16384 --no-repeats``, whose ``square_gemm`` item (M x H x H at H
= 8192) is the calibration GEMM, timed by the same harness and tuned order as the blocks' GEMMs.

The items judged are plan 103's registered GEMMs and whole blocks (:data:`ROLES`: every item but the memory passes,
which no GEMM's speed scales): ``model`` (plan 103's registered ``model_ms``, the profile as it was then), ``ref``
(the same times the call's reference ratio, as ``reference_scaled`` scales them) and the naive FLOPs line scaled by
its own ratio on the same GEMM (``naive_ref``). ``--register`` writes ``reference.csv`` (the profile's and the naive
line's time of the calibration GEMM, under plan 99's harness and seed, as plan 103 priced its items) and
``predicted.csv`` (plan 103's registered items of :data:`ROLES`); ``--judge RUN`` reads the call's
``breakdown-NAME.csv`` files and ``env.txt`` (an H100) and writes ``items.csv`` and ``claims.csv`` (:data:`CLAIMS`).
Refusals (one line, exit 2, nothing written): a missing file or item, a call on another GPU, a registration the code
no longer gives (the reference's price moved, or plan 103's registered items differ from these).

Nothing is adopted either way: the claims say whether the recipe the tool offers holds on an H100. Left out: the
memory passes (plan 103's own question), the sustained regime, a reference of another shape.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import pandas as pd  # noqa: E402

import plan101_block_ops as p101  # noqa: E402
import plan102_own_ops as p102  # noqa: E402
import plan103_pass_rates as p103  # noqa: E402

REGISTRATION = ROOT / "bench/predictions/reg104-reference-scaled"
RESULTS = ROOT / "bench/results/validation-registered104"
PLAN103 = p103.REGISTRATION
REFERENCE_MODEL = "llama3.1-70b"
"""The block whose ``square_gemm`` at M = 16384 (16384 x 8192 x 8192) is the calibration GEMM."""
REFERENCE_M = 16384
ROLES = ("up", "up_plain", "down", "down_plain", "block")
"""Plan 103's items a GEMM's speed scales: the GEMMs (plain and with their fused epilogues) and the whole blocks."""
SOURCES = ("model", "ref", "naive_ref")
MAPE, WORST = 2.0, 4.0
CLAIMS = {
    "a": f"ref: MAPE over the eight whole blocks <= {MAPE:g}% and worst |error| <= {WORST:g}%",
    "b": "ref: MAPE over the GEMMs and blocks below model's (plan 103's registered times, unscaled)",
    "c": "ref: that MAPE below naive_ref's (the naive FLOPs line scaled by its own ratio on the same GEMM)",
}


def reference() -> pd.DataFrame:
    """The calibration GEMM's time by the H100 profile (``ctasim.predict.reference_model_ms``: plan 103's blocks'
    profile and regime) and by the naive line plus the harness's ``run_ns`` (as :func:`plan101_block_ops.split` prices
    a GEMM item), both under plan 99's registration record (plan 103's harness, naive line and seed)."""
    from ctasim.predict import REFERENCE_CASE, REFERENCE_EXPERIMENT, Naive, reference_model_ms

    reg = p101._registration(p102.RECORD)
    harness = p101.harness_of(reg)
    exp = p103.experiment(p103.MODELS[0])
    m, n, k = REFERENCE_M, 8192, 8192
    return pd.DataFrame([dict(
        experiment=REFERENCE_EXPERIMENT, case=REFERENCE_CASE, m=m, n=n, k=k, hardware=exp.hardware.name,
        regime=exp.regime, model_ms=round(reference_model_ms(exp, harness, seed=reg["seed"]), 6),
        naive_ms=round(Naive(**reg["naive"]).gemm_ms(m, k, n) + harness.run_ns / 1e6, 6),
        measured_by=f"bench/hw/mlp_block_breakdown.py --model {REFERENCE_MODEL} --ms {m} --no-repeats: square_gemm")])


def predicted(plan103: Path = PLAN103) -> pd.DataFrame:
    """Plan 103's registered items of :data:`ROLES` (its ``model_ms`` and ``naive_ms``)."""
    p = pd.read_csv(plan103 / "predicted.csv")
    return p[p.role.isin(ROLES)][["block", "m", "item", "role", "what", "model_ms", "naive_ms"]].reset_index(drop=True)


def register(out: Path) -> pd.DataFrame:
    out.mkdir(parents=True, exist_ok=True)
    reference().to_csv(out / "reference.csv", index=False)
    p = predicted()
    p.to_csv(out / "predicted.csv", index=False)
    return p


def read_call(run: Path) -> pd.DataFrame:
    """Plan 103's blocks' tables and the reference block's (:func:`plan101_block_ops.read_call`'s checks)."""
    return p101.read_call(run, (*p103.MODELS, REFERENCE_MODEL), "plan 104")


def items(runs: pd.DataFrame, registration: Path = REGISTRATION) -> tuple[pd.DataFrame, dict]:
    """The registered items with the call's medians, the reference's ratios and each source's error (%)."""
    ref = pd.read_csv(registration / "reference.csv").iloc[0]
    reg = pd.read_csv(registration / "predicted.csv")
    now = reference().iloc[0]
    if abs(now.model_ms - ref.model_ms) > 2e-6 or abs(now.naive_ms - ref.naive_ms) > 2e-6 \
            or not predicted().round(6).equals(reg.round(6)):
        raise ValueError("the registration is not what the model gives now (the reference's price, or plan 103's "
                         "registered items, moved since it was written)")
    sq = runs[(runs.block == REFERENCE_MODEL) & (runs.m == REFERENCE_M) & (runs["item"] == "square_gemm")]
    if sq.empty:
        raise ValueError(f"the call timed no square_gemm of {REFERENCE_MODEL} at M = {REFERENCE_M} (the reference)")
    measured = float(sq.median_ms.iloc[0])
    ratio = {"ref": measured / ref.model_ms, "naive_ref": measured / ref.naive_ms}
    t = reg.assign(ref_ms=reg.model_ms * ratio["ref"], naive_ref_ms=reg.naive_ms * ratio["naive_ref"])
    t = p101.measured_items(runs, t, (*SOURCES, "naive"))
    return t, dict(measured_ms=measured, **{f"{s}_ratio": r for s, r in ratio.items()})


def judge(runs: pd.DataFrame, registration: Path = REGISTRATION) -> dict[str, pd.DataFrame]:
    t, r = items(runs, registration)
    blocks = t[t.role == "block"]
    mape = {s: t[f"{s}_pct"].abs().mean() for s in (*SOURCES, "naive")}
    bmape = {s: blocks[f"{s}_pct"].abs().mean() for s in (*SOURCES, "naive")}
    worst = blocks.loc[blocks.ref_pct.abs().idxmax(), "ref_pct"]
    rows = [
        ("a", f"{bmape['ref']:.2f}%, worst {worst:+.2f}% over {len(blocks)} blocks (model {bmape['model']:.2f}%, "
              f"naive_ref {bmape['naive_ref']:.2f}%; the reference {r['measured_ms']:.4f} ms, ratio "
              f"{r['ref_ratio']:.4f})",
         bmape["ref"] <= MAPE and abs(worst) <= WORST),
        ("b", f"{mape['ref']:.2f} against model's {mape['model']:.2f}% over {len(t)} GEMMs and blocks",
         mape["ref"] < mape["model"]),
        ("c", f"{mape['ref']:.2f} against naive_ref's {mape['naive_ref']:.2f}% (naive unscaled {mape['naive']:.2f}%)",
         mape["ref"] < mape["naive_ref"]),
    ]
    claims = pd.DataFrame([dict(claim=c, rule=CLAIMS[c], value=v, met=bool(m)) for c, v, m in rows])
    return {"items": t, "claims": claims}


def main(argv=None) -> int:
    return p101.breakdown_main(argv, "plan104_reference_scaled", __doc__.splitlines()[0], REGISTRATION, RESULTS,
                               register, judge, read_call)


if __name__ == "__main__":
    raise SystemExit(main())
