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

import block_gemm_orders as bgo  # noqa: E402
from ctasim.cliargs import OneLineParser, parse_outputs  # noqa: E402
from ctasim.profiles import before_h100_capped, before_h100_capped_text  # noqa: E402
from ctasim.spec import load_hardware  # noqa: E402
from plan72_h100_drift import derived_text, read_call, register_orders  # noqa: E402

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
    is order-blind)."""
    rows = []
    for (m, n, k), d in o.groupby(["m", "n", "k"], sort=False):
        r = d.loc[d["measured_ms"].idxmin()]
        naive = float(reg[(reg.m == m) & (reg.n == n) & (reg.k == k)]["naive_ms"].iloc[0])
        rows.append(dict(m=m, n=n, k=k, role=role(n, k), best_order=r["order"], best_ms=r["measured_ms"],
                         model_pct=r["model_pct"], nodrift_pct=r["nodrift_pct"],
                         naive_pct=(naive / r["measured_ms"] - 1) * 100))
    return pd.DataFrame(rows)


def judge(runs: pd.DataFrame, registration: Path = REGISTRATION) -> dict[str, pd.DataFrame]:
    """The call's tables and claims. ValueError (one line) where the twin file is not :func:`twin_text`, a shape was
    not timed, or the profiles no longer give the registered times."""
    if (registration / f"{TWIN}.toml").read_text() != twin_text():
        raise ValueError(f"{registration / (TWIN + '.toml')} is not {BASE} with the drift off as committed")
    runs = runs[runs.backend == "cutlass"]
    timed = set(map(tuple, runs[["m", "n", "k"]].drop_duplicates().values.tolist()))
    missing = [s for s in SHAPES if s not in timed]
    if missing:
        raise ValueError(f"the call timed no {'x'.join(map(str, missing[0]))} (of {len(missing)} shapes missing)")
    reg = pd.read_csv(registration / "predicted.csv")
    hws = profiles(registration)
    o = bgo.orders(runs, hws)
    bgo.judge(runs, o, reg, hws)  # refuses profiles that no longer give the registered times
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
    ap = OneLineParser(prog="python bench/plan97_small_gemms.py", description=__doc__.splitlines()[0])
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--register", action="store_true", help="write the registration (the twin, predicted.csv)")
    mode.add_argument("--judge", type=Path, metavar="RUN", help="the call's folder (gemm_shapes.csv, env.txt)")
    ap.add_argument("--out", type=Path)
    args = parse_outputs(ap, argv, folders=("--out",))
    try:
        if args.register:
            out = args.out or REGISTRATION
            if (out / "predicted.csv").exists():
                raise ValueError(f"{out / 'predicted.csv'} exists (a registration is never overwritten)")
            print(register(out).round(3).to_string(index=False))
            return 0
        runs, _ = read_call(args.judge, ("H100",), "plan 97")
        tables = judge(runs)
    except ValueError as e:
        print(f"plan97_small_gemms: {str(e).removeprefix('block_gemm_orders: ')}", file=sys.stderr)
        return 2
    out = args.out or RESULTS
    out.mkdir(parents=True, exist_ok=True)
    for name, t in tables.items():
        t.round(4).to_csv(out / f"{name}.csv", index=False)
    with pd.option_context("display.width", 200, "display.max_colwidth", 100):
        print(tables["best"].round(2).to_string(index=False))
        print(tables["claims"].to_string(index=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
