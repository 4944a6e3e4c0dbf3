"""Registered plan 72: on an H100, does the drift's re-read cost overprice wide-N and long-K GEMMs? (no GPU)

    python bench/plan72_h100_drift.py --register [--out bench/predictions/reg72-h100-drift]
    python bench/plan72_h100_drift.py --judge RUN --out bench/results/validation-registered72

The memory hierarchy spreads a persistent grid's CTAs by ``cta_drift`` tile times a round and charges the k-slices a
drifting wave lets fall out of the L2 as HBM re-reads (``ctasim.l2``). On an H100 (HBM 3.0 TB/s against the H200's
4.3) those re-reads bind the wave's HBM roofline: post-hoc, on registered plan 71's two H100 calls
(``bench/posthoc_h100_drift.py``), ``h100-x1-datasheet`` priced four plain GEMMs at CUTLASS's default order at MAPE
11.0% (long K 16384 x 8192 x 28672: +21.5 and +23.9%), the same profile with the drift off at 1.95%, the naive line at
3.5%. The twin, ``h100-x1-datasheet-nodrift`` (``cta_drift`` = 0 on its 128x256 config, nothing else changed, nothing
fitted), is written into the registration by :func:`twin_text`.

``--register`` writes ``h100-x1-datasheet-nodrift.toml`` and ``predicted.csv`` (``block_gemm_orders.predicted``: every
CUTLASS order of :data:`SHAPES` under ``datasheet`` and ``nodrift``, each one's pick, the naive FLOPs line) and
``pricing.txt``. ``--judge RUN`` reads the call's ``gemm_shapes.csv`` (``bench/hw/gemm_shape_probe.py``, CUTLASS at
its 12 orders) and ``env.txt`` (an H100), and writes ``orders.csv`` (each run's errors), ``shapes.csv`` and
``judged.csv`` (``block_gemm_orders.judge``: per predictor the MAPE over the unpadded runs and at the best measured
order, the worst, the picks' loss) and ``claims.csv`` (:data:`CLAIMS`, with the adoption rule's verdict). Left out:
why the CTAs drift, and the chain kernels (their tickets price the drift too; a chain plan would judge them).
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
from ctasim.cliargs import OneLineParser, parse_outputs  # noqa: E402
from ctasim.predict import Naive  # noqa: E402
from ctasim.profiles import before_h100_adoptions, before_h100_drift_text  # noqa: E402
from ctasim.spec import SPECS_DIR, load_hardware  # noqa: E402

REGISTRATION = ROOT / "bench/predictions/reg72-h100-drift"
TWIN = "h100-x1-datasheet-nodrift"
SHAPES = ((16384, 8192, 8192),  # the reference GEMM
          (16384, 16384, 53248), (8192, 12288, 49152), (8192, 14848, 59392), (16384, 6144, 32768),
          (8192, 12288, 33792), (16384, 7168, 20480), (16384, 12288, 28672),  # registered plan 46's long K
          (8192, 59136, 8192), (16384, 57344, 8192), (16384, 40960, 7168))  # registered plan 29's wide N
"""Plan 46's eight GEMMs (the reference and seven long-K down GEMMs) and plan 29's three wide-N gate-and-up GEMMs; none
timed on an H100 at these orders (plan 71 timed 16384 x 8192 x 28672 at the default order only, and the reference)."""
CLAIMS = {
    "a": "nodrift: MAPE at the best measured orders below datasheet's",
    "b": "nodrift: MAPE over the unpadded runs (every order) below datasheet's",
    "c": "nodrift: MAPE at the best orders <= 3% and worst <= 6%",
    "d": "nodrift: MAPE at the best orders at most half the naive line's",
    "e": "nodrift: every pick measures within 2% of the best measured order",
}
"""Adoption rule: where (a), (b) and (c) hold, ``h100-x1-datasheet``'s derivation (``ctasim.profiles``) sets
``cta_drift`` = 0 on its 128x256 config for the plain GEMM (the chain kernels keep it until a chain plan judges
them); otherwise the profile stays."""


def derived_text(base: str, name: str, drift_line: str, text: str | None = None) -> str:
    """Committed profile ``base``'s text (or ``text``, where given) with its name ``name`` and its one ``cta_drift``
    line (the 128x256 config's) replaced by ``drift_line`` (which may add lines): the only changes. Without ``text``,
    ``h100-x1-datasheet`` is taken as it was when these registrations were made
    (``ctasim.profiles.before_h100_drift_text``: before registered plan 73's and 76's adoptions on an H100).
    ValueError where ``base`` has another count of ``cta_drift`` lines."""
    lines, done = [], 0
    if text is None:
        text = (before_h100_drift_text() if base == "h100-x1-datasheet"
                else (SPECS_DIR / "hardware" / f"{base}.toml").read_text())
    for line in text.splitlines():
        if line.startswith("name = "):
            line = f'name = "{name}"'
        elif line.startswith("cta_drift = "):
            line, done = drift_line, done + 1
        lines.append(line)
    if done != 1:
        raise ValueError(f"{base} has {done} cta_drift lines, not the one 128x256 config's")
    return "\n".join(lines) + "\n"


def twin_text() -> str:
    """``h100-x1-datasheet`` with ``cta_drift`` = 0 on its 128x256 config and the twin's name: the only changes."""
    return derived_text("h100-x1-datasheet", TWIN,
                        "cta_drift = 0.0  # registered plan 72's twin: no drift, so no re-reads of the k-slices a "
                        "drifting wave lets fall out of the L2 (h100-x1-datasheet: 0.0078, measured on H200 traces)")


def profiles(registration: Path = REGISTRATION) -> dict:
    """``datasheet`` as registered (before registered plan 73's adoption of the absolute drift law and plan 76's of
    the exposed rate, 2026-12-06: ``ctasim.profiles.before_h100_adoptions``) and the twin."""
    return {"datasheet": before_h100_adoptions("h100-x1-datasheet"),
            "nodrift": load_hardware(registration / f"{TWIN}.toml")}


def register(out: Path) -> pd.DataFrame:
    return register_orders(out, TWIN, twin_text(), SHAPES, profiles)


def register_orders(out: Path, twin: str, text: str, shapes, profiles_of) -> pd.DataFrame:
    """A GEMM-order twin plan's registration (plans 72 and 97) into ``out``: the twin's profile file ``twin``.toml
    (``text``), ``predicted.csv`` (``block_gemm_orders.predicted``: every order of ``shapes`` under
    ``profiles_of(out)``, the picks, the naive line) and the reuse law it was priced by."""
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{twin}.toml").write_text(text)
    pred = bgo.predicted(list(shapes), profiles_of(out), Naive.fit(bgo.NAIVE_FROM))
    pred.round(4).to_csv(out / "predicted.csv", index=False)
    reuse_pricing.write(out, reuse_pricing.PROFILE)
    return pred


def check_timed(runs: pd.DataFrame, shapes) -> None:
    """ValueError (one line) where the probe table ``runs`` timed no run of a shape of ``shapes`` (the first such, in
    the order given, is named)."""
    timed = set(map(tuple, runs[["m", "n", "k"]].drop_duplicates().values.tolist()))
    missing = [s for s in shapes if s not in timed]
    if missing:
        raise ValueError(f"the call timed no {'x'.join(map(str, missing[0]))} (of {len(missing)} shapes missing)")


def timed_orders(runs: pd.DataFrame, registration: Path, twin: str, text: str, shapes, hws: dict,
                 law: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A GEMM-order twin plan's call (plans 97 and 98) against its registration: each CUTLASS run beside each profile
    of ``hws`` (``block_gemm_orders.orders``) and the registration's ``predicted.csv``. ValueError (one line) where the
    registered twin file ``twin``.toml is not ``text`` (``law``: what the twin changes, for the message), a shape of
    ``shapes`` was not timed, or the profiles no longer give the registered times."""
    if (registration / f"{twin}.toml").read_text() != text:
        raise ValueError(f"{registration / (twin + '.toml')} is not h100-x1-datasheet with {law} as committed")
    runs = runs[runs.backend == "cutlass"]
    check_timed(runs, shapes)
    reg = pd.read_csv(registration / "predicted.csv")
    o = bgo.orders(runs, hws)
    bgo.judge(runs, o, reg, hws)  # refuses profiles that no longer give the registered times
    return o, reg


def best_orders(o: pd.DataFrame, reg: pd.DataFrame, predictors, picks: bool = False) -> pd.DataFrame:
    """Per shape of :func:`timed_orders`' runs ``o``: the best measured order and time, each of ``predictors``' error
    (%) there, the naive line's (order-blind, from the registration ``reg``), and with ``picks`` each predictor's pick
    and what it measured over the best (%)."""
    rows = []
    for (m, n, k), d in o.groupby(["m", "n", "k"], sort=False):
        r = d.loc[d["measured_ms"].idxmin()]
        q = reg[(reg.m == m) & (reg.n == n) & (reg.k == k)]
        row = dict(m=m, n=n, k=k, best_order=r["order"], best_ms=r["measured_ms"],
                   **{f"{p}_pct": r[f"{p}_pct"] for p in predictors},
                   naive_pct=(float(q["naive_ms"].iloc[0]) / r["measured_ms"] - 1) * 100)
        for p in predictors if picks else ():
            pick = q.loc[q[f"{p}_pick"].astype(bool), "order"]
            got = d[d["order"] == pick.iloc[0]] if len(pick) else d.iloc[:0]
            row[f"{p}_pick"] = pick.iloc[0] if len(pick) else ""
            row[f"{p}_pick_lost_pct"] = ((got["measured_ms"].min() / r["measured_ms"] - 1) * 100 if len(got)
                                         else float("nan"))
        rows.append(row)
    return pd.DataFrame(rows)


def orders_main(argv, name: str, description: str, registration: Path, results: Path, register, judge) -> int:
    """The command line of a GEMM-order twin plan that judges an H100's call (plans 97 and 98): ``--register [--out]``
    writes ``register(out)`` (never over a registration), ``--judge RUN [--out]`` writes ``judge(runs)``'s tables and
    prints the ``best`` and ``claims`` ones; a refusal is one line, exit 2, nothing written."""
    ap = OneLineParser(prog=f"python bench/{name}.py", description=description)
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--register", action="store_true", help="write the registration (the twin, predicted.csv)")
    mode.add_argument("--judge", type=Path, metavar="RUN", help="the call's folder (gemm_shapes.csv, env.txt)")
    ap.add_argument("--out", type=Path)
    args = parse_outputs(ap, argv, folders=("--out",))
    try:
        if args.register:
            out = args.out or registration
            if (out / "predicted.csv").exists():
                raise ValueError(f"{out / 'predicted.csv'} exists (a registration is never overwritten)")
            print(register(out).round(3).to_string(index=False))
            return 0
        runs, _ = read_call(args.judge, ("H100",), f"plan {name.removeprefix('plan').split('_')[0]}")
        tables = judge(runs)
    except ValueError as e:
        print(f"{name}: {str(e).removeprefix('block_gemm_orders: ')}", file=sys.stderr)
        return 2
    out = args.out or results
    out.mkdir(parents=True, exist_ok=True)
    for table, t in tables.items():
        t.round(4).to_csv(out / f"{table}.csv", index=False)
    with pd.option_context("display.width", 200, "display.max_colwidth", 100):
        print(tables["best"].round(2).to_string(index=False))
        print(tables["claims"].to_string(index=False))
    return 0


def judge_twin(runs: pd.DataFrame, reg: pd.DataFrame, hws: dict, shapes: tuple, model: str, twin: str,
               claims_text: dict[str, str]) -> dict[str, pd.DataFrame]:
    """A GEMM-order twin plan's tables (this plan's and registered plan 73's): ``runs`` (a probe table) against the
    registration ``reg`` under ``hws`` (``model`` the committed profile, ``twin`` its twin), and claims (a)-(e) of
    ``claims_text`` -- the twin nearer at the best orders, nearer over the unpadded runs, within 3% / 6%, at most half
    the naive line's, its picks within 2% -- with the rule's verdict (``adopt``: (a), (b) and (c)). ValueError (one
    line) where a shape was not timed or the profiles no longer give the registered times."""
    runs = runs[runs.backend == "cutlass"]
    check_timed(runs, sorted(set(shapes)))
    o = bgo.orders(runs, hws)
    got, judged = bgo.judge(runs, o, reg, hws)
    j = judged.set_index("predictor")
    tw, ds, nv = j.loc[twin], j.loc[model], j.loc["naive"]
    met = {"a": tw.best_mape_pct < ds.best_mape_pct, "b": tw.unpadded_mape_pct < ds.unpadded_mape_pct,
           "c": tw.best_mape_pct <= 3 and abs(tw.best_worst_pct) <= 6, "d": tw.best_mape_pct <= nv.best_mape_pct / 2,
           "e": tw.pick_lost_max_pct <= 2}
    value = {"a": (tw.best_mape_pct, ds.best_mape_pct), "b": (tw.unpadded_mape_pct, ds.unpadded_mape_pct),
             "c": (tw.best_mape_pct, tw.best_worst_pct), "d": (tw.best_mape_pct, nv.best_mape_pct),
             "e": (tw.pick_lost_max_pct, ds.pick_lost_max_pct)}
    claims = pd.DataFrame([{"claim": c, "what": claims_text[c], "value": value[c][0], "against": value[c][1],
                            "met": bool(met[c])} for c in claims_text])
    claims["adopt"] = bool(met["a"] and met["b"] and met["c"])
    return {"orders": o, "shapes": got, "judged": judged, "claims": claims}


def judge(runs: pd.DataFrame, registration: Path = REGISTRATION) -> dict[str, pd.DataFrame]:
    """The tables of one call's CUTLASS runs against the registration (:func:`judge_twin`). ValueError (one line)
    where the twin file is not :func:`twin_text`, the profiles no longer give the registered times, or a shape was
    not timed."""
    if (registration / f"{TWIN}.toml").read_text() != twin_text():
        raise ValueError(f"{registration / (TWIN + '.toml')} is not h100-x1-datasheet with the drift off as committed")
    return judge_twin(runs, pd.read_csv(registration / "predicted.csv"), profiles(registration), SHAPES, "datasheet",
                      "nodrift", CLAIMS)


def main(argv=None) -> int:
    ap = OneLineParser(prog="python bench/plan72_h100_drift.py", description=__doc__.splitlines()[0])
    ap.add_argument("--register", action="store_true", help="write the registration (the twin, predicted.csv)")
    ap.add_argument("--judge", type=Path, metavar="RUN", help="the call's folder (gemm_shapes.csv, env.txt)")
    ap.add_argument("--out", type=Path, required=True)
    args = parse_outputs(ap, argv, folders=("--out",))
    try:
        if args.register == (args.judge is not None):
            raise ValueError("give --register or --judge RUN")
        if args.register:
            print(register(args.out).round(3).to_string(index=False))
            return 0
        runs, _ = read_call(args.judge, ("H100",), "plan 72")
        tables = judge(runs)
    except ValueError as e:
        print(f"plan72_h100_drift: {str(e).removeprefix('block_gemm_orders: ')}", file=sys.stderr)
        return 2
    write_judged(args.out, tables)
    return 0


def read_call(run: Path, gpus: tuple[str, ...], plan: str) -> tuple[pd.DataFrame, str]:
    """A GEMM-order call's probe table (``RUN/gemm_shapes.csv``) and the one GPU of ``gpus`` its ``env.txt`` names.
    ValueError (one line) where a file is missing or ``env.txt`` names none or several of them."""
    for name in ("gemm_shapes.csv", "env.txt"):
        if not (run / name).is_file():
            raise ValueError(f"no {run / name}")
    env = (run / "env.txt").read_text()
    named = [g for g in gpus if g in env]
    if len(named) != 1:
        raise ValueError(f"{run / 'env.txt'} names {' and '.join(named) or 'neither'} of {', '.join(gpus)}: "
                         f"{plan} is judged per GPU" if len(gpus) > 1 else
                         f"{run / 'env.txt'} names no {gpus[0]}: {plan} is judged on an {gpus[0]}'s call")
    return pd.read_csv(run / "gemm_shapes.csv"), named[0]


def write_judged(out: Path, tables: dict[str, pd.DataFrame]) -> None:
    """:func:`judge_twin`'s tables into ``out`` (one CSV each), the judged figures and claims printed."""
    out.mkdir(parents=True, exist_ok=True)
    for name, t in tables.items():
        t.round(4).to_csv(out / f"{name}.csv", index=False)
    pd.set_option("display.width", 200)
    print(tables["judged"].round(2).to_string(index=False))
    print(tables["claims"].round(2).to_string(index=False))


if __name__ == "__main__":
    raise SystemExit(main())
