"""Registered plan 98: on an H100, the drift's K law capped at the tile law below K = 8192 (no GPU)

    python bench/plan98_capped_drift.py --register [--out bench/predictions/reg98-capped-drift]
    python bench/plan98_capped_drift.py --judge RUN [--out bench/results/validation-registered98]

Since registered plan 73's adoption, ``h100-x1-datasheet`` charges a plain persistent GEMM's drift the same time a
round at every K (``cta_drift x 8192 / K`` tile times: the "absolute" law), nearer than the tile law on long-K GEMMs.
Below K = 8192 that law charges more drift in tile times than at 8192 (four times at K = 2048), and registered plan 97
found the model +2.6 to +6.5% on six wide-N gate-and-up GEMMs at K = 1536-3072 (its drift-free twin -0.3 to -4.7%);
read after that judgement (post-hoc, ``bench/results/validation-registered97``'s call priced again), the tile law
there was within 0.98% mean |error| (all sixteen of plan 97's GEMMs 1.25% against the model's 2.64%). The ``capped``
law (``KernelConfig.drift_k_law``, ``ctasim.l2.DRIFT_K_LAWS``) is the absolute law above ``drift_k_ref`` and the tile
law below it: nothing fitted, nothing changes at K >= 8192.

Plan 98 asks it on twelve GEMMs no call timed (:data:`SHAPES`: N = 4096-28672, K = 1024-6144, M = 16384-65536, where
the two laws part by 1.0-5.8%), CUTLASS at its 12 orders on an H100 (``bench/hw/gemm_shape_probe.py``). Predictors at
each shape's best measured order: ``absolute`` (``h100-x1-datasheet`` as it is), ``capped`` (its twin with
``drift_k_law = "capped"``, written into the registration by :func:`twin_text`) and the naive FLOPs line.

``--register`` writes the twin and ``predicted.csv``; ``--judge RUN`` reads the call's ``gemm_shapes.csv`` and
``env.txt`` (an H100) and writes ``orders.csv``, ``best.csv`` (per shape each predictor's error at the best measured
order, and each profile's pick's measured loss) and ``claims.csv`` (:data:`CLAIMS`, with the adoption rule's
verdict). Refused in one line, exit 2, nothing written: a missing file or shape, another GPU's call, profiles that no
longer give the registered times.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import pandas as pd  # noqa: E402

from ctasim.profiles import before_h100_capped, before_h100_capped_text  # noqa: E402
from ctasim.spec import load_hardware  # noqa: E402
from plan72_h100_drift import best_orders, orders_main, register_orders, timed_orders  # noqa: E402

REGISTRATION = ROOT / "bench/predictions/reg98-capped-drift"
RESULTS = ROOT / "bench/results/validation-registered98"
BASE, TWIN = "h100-x1-datasheet", "h100-x1-datasheet-capped"
SHAPES = ((32768, 12288, 2560), (16384, 12288, 4096), (32768, 12288, 6144), (32768, 24576, 1024),
          (16384, 24576, 2560), (16384, 24576, 5120), (16384, 28672, 2048), (32768, 28672, 4096),
          (16384, 28672, 3584), (32768, 8192, 2048), (65536, 8192, 4096), (65536, 4096, 2048))
"""Twelve GEMMs at K < 8192 (M x N x K), none timed on any GPU at these shapes."""
MAPE, WORST, PICK = 3.0, 6.0, 2.0
CLAIMS = {
    "a": "capped: MAPE at the best measured orders below absolute's (12 GEMMs)",
    "b": f"capped: MAPE at the best orders <= {MAPE:g}% and worst |error| <= {WORST:g}%",
    "c": f"capped: every pick measures within {PICK:g}% of the best measured order",
    "d": "capped: MAPE at the best orders at most half the naive line's",
}
ADOPT = ("a", "b")
"""Adoption rule: where (a) and (b) hold, ``h100-x1-datasheet``'s derivation (``ctasim.profiles``) sets
``drift_k_law = "capped"`` on its 128x256 config; otherwise the profile stays."""


def twin_text() -> str:
    """``h100-x1-datasheet`` as registered (before this plan's adoption: ``ctasim.profiles.before_h100_capped_text``)
    with ``drift_k_law = "capped"`` after its ``drift_k_ref`` line and the twin's name: the only changes. ValueError
    where the profile has another count of ``drift_k_ref`` lines."""
    lines, done = [], 0
    for line in before_h100_capped_text().splitlines():
        if line.startswith("name = "):
            line = f'name = "{TWIN}"'
        lines.append(line)
        if line.startswith("drift_k_ref = "):
            lines.append('drift_k_law = "capped"  # registered plan 98\'s twin: the absolute law above drift_k_ref, '
                         "cta_drift tile times below it")
            done += 1
    if done != 1:
        raise ValueError(f"{BASE} has {done} drift_k_ref lines, not the one 128x256 config's")
    return "\n".join(lines) + "\n"


def profiles(registration: Path = REGISTRATION) -> dict:
    """``absolute``: ``h100-x1-datasheet`` as registered (``ctasim.profiles.before_h100_capped``: this plan's adoption
    came after); ``capped``: the registered twin."""
    return {"absolute": before_h100_capped(load_hardware(BASE)),
            "capped": load_hardware(registration / f"{TWIN}.toml")}


def register(out: Path) -> pd.DataFrame:
    return register_orders(out, TWIN, twin_text(), SHAPES, profiles)


def best(o: pd.DataFrame, reg: pd.DataFrame) -> pd.DataFrame:
    """Per shape: the best measured order and time, each predictor's error (%) there, and each profile's pick and what
    it measured over the best (%) (``plan72_h100_drift.best_orders``)."""
    return best_orders(o, reg, ("absolute", "capped"), picks=True)


def judge(runs: pd.DataFrame, registration: Path = REGISTRATION) -> dict[str, pd.DataFrame]:
    """The call's tables and claims. ValueError (one line) where the twin file is not :func:`twin_text`, a shape was
    not timed, or the profiles no longer give the registered times."""
    o, reg = timed_orders(runs, registration, TWIN, twin_text(), SHAPES, profiles(registration), "the capped law")
    b = best(o, reg)
    mape = {s: b[f"{s}_pct"].abs().mean() for s in ("absolute", "capped", "naive")}
    worst = b.loc[b["capped_pct"].abs().idxmax(), "capped_pct"]
    lost = b["capped_pick_lost_pct"].max()
    rows = [
        ("a", f"{mape['capped']:.2f} against {mape['absolute']:.2f}%", mape["capped"] < mape["absolute"]),
        ("b", f"{mape['capped']:.2f}%, worst {worst:+.2f}%", mape["capped"] <= MAPE and abs(worst) <= WORST),
        ("c", f"the worst pick {lost:.2f}% over the best (absolute's {b['absolute_pick_lost_pct'].max():.2f}%)",
         bool(lost <= PICK)),
        ("d", f"{mape['capped']:.2f} against the naive line's {mape['naive']:.2f}%",
         mape["capped"] <= mape["naive"] / 2),
    ]
    claims = pd.DataFrame([dict(claim=c, rule=CLAIMS[c], value=v, met=bool(m)) for c, v, m in rows])
    adopt = bool(claims.set_index("claim").loc[list(ADOPT), "met"].all())
    claims = pd.concat([claims, pd.DataFrame([dict(claim="adopt", rule=ADOPT_RULE, value="yes" if adopt else "no",
                                                   met=adopt)])], ignore_index=True)
    return {"orders": o, "best": b, "claims": claims}


ADOPT_RULE = ("where (a) and (b) hold, h100-x1-datasheet's derivation sets drift_k_law = 'capped' on its 128x256 "
              "config")


def main(argv=None) -> int:
    return orders_main(argv, "plan98_capped_drift", __doc__.splitlines()[0], REGISTRATION, RESULTS, register, judge)


if __name__ == "__main__":
    raise SystemExit(main())
