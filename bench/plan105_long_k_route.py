"""Registered plan 105: why the H100 profile prices long-K GEMMs short -- the exposed HBM rate or the drift's K law?

    python bench/plan105_long_k_route.py --register [--out bench/predictions/reg105-long-k-route]
    python bench/plan105_long_k_route.py --judge RUN [--out bench/results/validation-registered105]

Registered plan 103's call (GPU-7a1b197d) ran every long-K down GEMM of four blocks 1-4% slower than
``h100-x1-datasheet`` prices it. Post-hoc (``bench/posthoc_h100_down_law.py``, four committed calls) two single
changes of the profile each bring the down GEMMs at K > 12288 within 0.8%: the drift's tile law at every K (``tile``:
``drift_k_ref`` = 0, the law before registered plan 73's adoption) and the exposed HBM share charged at the H100's own
HBM rate (``hbm3``: ``l2_hbm_exposed_gbps`` = 0, as before registered plan 76's adoption). They part where plan 73
chose the absolute law: on wide-N long-K GEMMs the tile law priced 2-19% slow. Plan 105 times, alone at CUTLASS's 12
orders (``bench/hw/gemm_shape_probe.py``, plain), GEMMs no H100 call has timed alone (:data:`SHAPES`): three models'
down GEMMs (:data:`NARROW`: Mistral-Nemo-12B, Yi-34B, Falcon-40B; N = 5120-8192, K = 14336-32768) and two wide-N
long-K GEMMs (:data:`WIDE`), each at M = 8192 and 32768, against ``model`` (the profile as it is) and the two twins
(each the profile's file with one line changed: :func:`twin_text`), at each shape's best measured order; the naive
FLOPs line beside them.

``--register`` writes the two twins and ``predicted.csv`` (every order of every shape under the three profiles, the
picks, the naive line). ``--judge RUN`` reads the call's ``gemm_shapes.csv`` and ``env.txt`` (an H100) and writes
``orders.csv``, ``best.csv`` and ``claims.csv`` (:data:`CLAIMS`). Refusals as plan 100's. No adoption rule: the claims
say which route a later plan registers as a change to the profile (plan 76's rate was adopted on whole blocks, and
undoing it prices the short-K down GEMMs further off, post-hoc). Left out: epilogues, the blocks' memory passes, the
sustained regime.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import pandas as pd  # noqa: E402

import block_gemm_orders as bgo  # noqa: E402
import reuse_pricing  # noqa: E402
from ctasim.predict import Naive  # noqa: E402
from ctasim.spec import SPECS_DIR, load_hardware  # noqa: E402
from plan72_h100_drift import best_orders, orders_main, timed_orders  # noqa: E402

REGISTRATION = ROOT / "bench/predictions/reg105-long-k-route"
RESULTS = ROOT / "bench/results/validation-registered105"
BASE = "h100-x1-datasheet"
TWINS = {"tile": ("h100-x1-datasheet-tilek", "drift_k_ref = ",
                  "drift_k_ref = 0.0  # registered plan 105's twin: the drift cta_drift tile times a round at every K "
                  "(the tile law, as before registered plan 73's adoption)"),
         "hbm3": ("h100-x1-datasheet-hbm3x", "l2_hbm_exposed_gbps = ",
                  "l2_hbm_exposed_gbps = 0.0  # registered plan 105's twin: the exposed HBM share at hbm_gbps, the "
                  "H100's datasheet-scaled HBM3 rate (as before registered plan 76's adoption)")}
"""Twin -> (profile name, the one line of the profile's file it replaces (its start), the line it writes)."""
MS = (8192, 32768)
NARROW = {"mistral-nemo-12b": (5120, 14336), "yi-34b": (7168, 20480), "falcon-40b": (8192, 32768)}
"""Down GEMMs (N = hidden, K = intermediate: specs/models/NAME.toml) no H100 call timed alone."""
WIDE = ((12288, 36864), (16384, 24576))
"""Wide-N long-K GEMMs (N, K) like those plan 73 chose the absolute law on (the tile law 2-19% slow there)."""
SHAPES = tuple((m, n, k) for nk in (*NARROW.values(), *WIDE) for n, k in [nk] for m in MS)
PREDICTORS = ("model", "tile", "hbm3")
MAPE = 3.0
CLAIMS = {
    "a": "hbm3: MAPE at the best measured orders over the six down GEMMs below model's",
    "b": "tile: MAPE at the best measured orders over the six down GEMMs below model's",
    "c": f"hbm3: MAPE over the four wide-N GEMMs <= {MAPE:g}% and below tile's (the route that keeps plan 73's GEMMs)",
    "d": "read, not judged: model's MAPE over all ten against the naive line's",
}


def one_line_twin(base: str, name: str, start: str, line: str) -> str:
    """The committed profile ``base``'s file with its one line starting ``start`` replaced by ``line`` and its name
    ``name``. ValueError where the profile has not exactly one such line."""
    text = (SPECS_DIR / "hardware" / f"{base}.toml").read_text().splitlines()
    hits = [i for i, x in enumerate(text) if x.startswith(start)]
    if len(hits) != 1:
        raise ValueError(f"{base}.toml has {len(hits)} lines '{start}...' (a one-line twin replaces one)")
    text[hits[0]] = line
    return "\n".join(f'name = "{name}"' if x.startswith("name = ") else x for x in text) + "\n"


def twin_text(twin: str) -> str:
    """The profile's file as it is with the one line of ``twin`` (:data:`TWINS`) replaced, and the twin's name."""
    return one_line_twin(BASE, *TWINS[twin])


def profiles(registration: Path = REGISTRATION) -> dict:
    """``model``: the profile as it is; ``tile``, ``hbm3``: the registered twins."""
    return {"model": load_hardware(BASE),
            **{t: load_hardware(registration / f"{TWINS[t][0]}.toml") for t in TWINS}}


def register(out: Path) -> pd.DataFrame:
    out.mkdir(parents=True, exist_ok=True)
    for t, (name, _, _) in TWINS.items():
        (out / f"{name}.toml").write_text(twin_text(t))
    pred = bgo.predicted(list(SHAPES), profiles(out), Naive.fit(bgo.NAIVE_FROM))
    pred.round(4).to_csv(out / "predicted.csv", index=False)
    reuse_pricing.write(out, reuse_pricing.PROFILE)
    return pred


def kind_of(n: int, k: int) -> str:
    return next((f"down {b}" for b, nk in NARROW.items() if nk == (n, k)), "wide")


def judge(runs: pd.DataFrame, registration: Path = REGISTRATION) -> dict[str, pd.DataFrame]:
    """The call's tables and claims. ValueError (one line) where a twin file is not :func:`twin_text`'s, a shape was
    not timed, or the profiles no longer give the registered times."""
    first, *rest = TWINS
    for t in rest:
        name = TWINS[t][0]
        if (registration / f"{name}.toml").read_text() != twin_text(t):
            raise ValueError(f"{registration / (name + '.toml')} is not {BASE} with plan 105's {t} line as committed")
    o, reg = timed_orders(runs, registration, TWINS[first][0], twin_text(first), SHAPES, profiles(registration),
                          f"plan 105's {first} line")
    b = best_orders(o, reg, PREDICTORS)
    b.insert(3, "kind", [kind_of(n, k) for n, k in zip(b.n, b.k)])
    down, wide = b[b.kind != "wide"], b[b.kind == "wide"]
    mape = lambda d, p: d[f"{p}_pct"].abs().mean()  # noqa: E731
    rows = [
        ("a", f"{mape(down, 'hbm3'):.2f} against model's {mape(down, 'model'):.2f}% (tile {mape(down, 'tile'):.2f}%)",
         mape(down, "hbm3") < mape(down, "model")),
        ("b", f"{mape(down, 'tile'):.2f} against model's {mape(down, 'model'):.2f}%",
         mape(down, "tile") < mape(down, "model")),
        ("c", f"{mape(wide, 'hbm3'):.2f}% against tile's {mape(wide, 'tile'):.2f}% (model {mape(wide, 'model'):.2f}%)",
         mape(wide, "hbm3") <= MAPE and mape(wide, "hbm3") < mape(wide, "tile")),
        ("d", f"{mape(b, 'model'):.2f} against the naive line's {mape(b, 'naive'):.2f}%",
         mape(b, "model") < mape(b, "naive")),
    ]
    claims = pd.DataFrame([dict(claim=c, rule=CLAIMS[c], value=v, met=bool(m)) for c, v, m in rows])
    return {"orders": o, "best": b, "claims": claims}


def main(argv=None) -> int:
    return orders_main(argv, "plan105_long_k_route", __doc__.splitlines()[0], REGISTRATION, RESULTS, register, judge)


if __name__ == "__main__":
    raise SystemExit(main())
