"""Registered plan 97: where registered plan 96's small blocks are overpriced -- their GEMMs alone on an H100 (no GPU)

    python bench/plan97_small_gemms.py --register [--out bench/predictions/reg97-small-gemms]
    python bench/plan97_small_gemms.py --judge RUN [--out bench/results/validation-registered97]

Registered plan 96 found ``h100-x1-datasheet`` slow on all six SwiGLU blocks of three small models (+1.1 to +3.7%),
with ``waves`` and ``flat`` (no drift re-reads) nearer; the model's own time over its lockstep twin was 2-3 points above
the measured one. The profile's drift charge is not spread evenly over a block: by the model (:func:`register`) the
CTAs' drift adds 4.4-4.9% to the wide-N short-K gate-and-up GEMMs at M = 16384 and 8.3-9.1% at 65536, and 0.2-2.4% to
the down GEMMs (narrow N, K = 8192-8960) and to Pythia-410M's two. Plan 97 times the blocks' 16 GEMMs alone
(:data:`SHAPES`; CUTLASS at its 12 orders, ``bench/hw/gemm_shape_probe.py``) on an H100, to put the blocks' overprice
where it is. Predictors at each shape's best measured order: ``model`` (``h100-x1-datasheet`` as it is) and ``nodrift``
(the same with ``cta_drift`` = 0 on its 128x256 config, written into the registration by :func:`twin_text`; registered
plan 72's twin was the profile before plans 73 and 76), and the naive FLOPs line (order-blind).

``--register`` writes the twin and ``predicted.csv`` (``block_gemm_orders.predicted``: every order of every shape under
both profiles, the picks, the naive line). ``--judge RUN`` reads the call's ``gemm_shapes.csv`` and ``env.txt`` (an
H100) and writes ``orders.csv`` (each run's errors), ``best.csv`` (per shape, its role and each predictor's error at
the best measured order) and ``claims.csv`` (:data:`CLAIMS`). A missing file or shape, a call on another GPU or
profiles that no longer give the registered times are refused in one line, exit 2, nothing written. No adoption rule.
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
from plan72_h100_drift import best_orders, derived_text, orders_main, register_orders, timed_orders  # noqa: E402

REGISTRATION = ROOT / "bench/predictions/reg97-small-gemms"
RESULTS = ROOT / "bench/results/validation-registered97"
BASE, TWIN = "h100-x1-datasheet", "h100-x1-datasheet-nodrift-now"
MS = (16384, 65536)
UP = ((16384, 2048), (16384, 3072), (17920, 1536))
"""(N, K) of the three SwiGLU blocks' gate-and-up GEMMs (Llama-3.2-1B, -3B, Qwen2.5-1.5B): wide N, short K."""
DOWN = ((2048, 8192), (3072, 8192), (1536, 8960))
"""(N, K) of their down GEMMs: 6-12 tiles a row, K = 8192-8960."""
PYTHIA = ((4096, 1024), (1024, 4096))
"""Pythia-410M's up and down GEMMs (priced near on plan 96's call): a control."""
ROLES = {"up": UP, "down": DOWN, "pythia": PYTHIA}
SHAPES = tuple((m, n, k) for pairs in ROLES.values() for n, k in pairs for m in MS)
UP_OVER, DOWN_NEAR, MAPE = 2.0, 2.0, 3.0
CLAIMS = {
    "a": f"model: mean error at the best measured order over the six gate-and-up GEMMs at least +{UP_OVER:g}% (the "
         "blocks' overprice is there)",
    "b": f"model: mean |error| at the best measured order over the six down GEMMs at most {DOWN_NEAR:g}%",
    "c": "nodrift: mean |error| over the six gate-and-up GEMMs below model's (the excess is the drift's re-reads)",
    "d": f"nodrift: MAPE at the best measured orders <= {MAPE:g}% over all 16 GEMMs",
}


def twin_text() -> str:
    """``h100-x1-datasheet`` as registered (before registered plan 98's adoption: ``ctasim.profiles
    .before_h100_capped_text``) with ``cta_drift`` = 0 on its 128x256 config and the twin's name: the only changes
    (``plan72_h100_drift.derived_text``)."""
    return derived_text(BASE, TWIN, "cta_drift = 0.0  # registered plan 97's twin: no drift, so no re-reads of the "
                        "k-slices a drifting wave lets fall out of the L2",
                        text=before_h100_capped_text())


def profiles(registration: Path = REGISTRATION) -> dict:
    """``model``: ``h100-x1-datasheet`` as registered (the absolute drift law: ``ctasim.profiles.before_h100_capped``,
    before registered plan 98's adoption); ``nodrift``: the registered twin."""
    return {"model": before_h100_capped(load_hardware(BASE)), "nodrift": load_hardware(registration / f"{TWIN}.toml")}


def register(out: Path) -> pd.DataFrame:
    return register_orders(out, TWIN, twin_text(), SHAPES, profiles)


def role(n: int, k: int) -> str:
    return next(r for r, pairs in ROLES.items() if (n, k) in pairs)


def best(o: pd.DataFrame, reg: pd.DataFrame) -> pd.DataFrame:
    """Per shape: its role, the best measured order and time, and each predictor's error (%) there (the naive line's
    is order-blind; ``plan72_h100_drift.best_orders``)."""
    b = best_orders(o, reg, ("model", "nodrift"))
    b.insert(3, "role", [role(n, k) for n, k in zip(b["n"], b["k"])])
    return b


def judge(runs: pd.DataFrame, registration: Path = REGISTRATION) -> dict[str, pd.DataFrame]:
    """The call's tables and claims. ValueError (one line) where the twin file is not :func:`twin_text`, a shape was
    not timed, or the profiles no longer give the registered times."""
    o, reg = timed_orders(runs, registration, TWIN, twin_text(), SHAPES, profiles(registration), "the drift off")
    b = best(o, reg)
    up, down = b[b.role == "up"], b[b.role == "down"]
    rows = [
        ("a", f"{up.model_pct.mean():+.2f}% (nodrift {up.nodrift_pct.mean():+.2f}%)", up.model_pct.mean() >= UP_OVER),
        ("b", f"{down.model_pct.abs().mean():.2f}% (mean {down.model_pct.mean():+.2f}%)",
         down.model_pct.abs().mean() <= DOWN_NEAR),
        ("c", f"{up.nodrift_pct.abs().mean():.2f} against {up.model_pct.abs().mean():.2f}%",
         up.nodrift_pct.abs().mean() < up.model_pct.abs().mean()),
        ("d", f"{b.nodrift_pct.abs().mean():.2f}% (model {b.model_pct.abs().mean():.2f}%, naive "
              f"{b.naive_pct.abs().mean():.2f}%)", b.nodrift_pct.abs().mean() <= MAPE),
    ]
    claims = pd.DataFrame([dict(claim=c, rule=CLAIMS[c], value=v, met=bool(m)) for c, v, m in rows])
    return {"orders": o, "best": b, "claims": claims}


def main(argv=None) -> int:
    return orders_main(argv, "plan97_small_gemms", __doc__.splitlines()[0], REGISTRATION, RESULTS, register, judge)


if __name__ == "__main__":
    raise SystemExit(main())
