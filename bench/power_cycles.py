"""Does a kernel's time follow the reported SM clock? Registered plan 33's claims on one call's power probe (no GPU).

    python bench/power_cycles.py --register NAME=MxNxK[+OP],... --family NAME,NAME,... --out bench/predictions/reg33-cycles
    python bench/power_model.py --spec bench/predictions/reg33-cycles        # the --kernels line to time
    python bench/power_cycles.py --probe PROBE_DIR --registered bench/predictions/reg33-cycles --out OUT

Plan 32 (post-hoc, ``power_model.py --posthoc``) found that back to back, under the power limit, the square GEMM does
the same work per reported SM cycle whatever its operands hold (457-461 TFLOP per GHz on dense, ReLU'd, both-ReLU'd
and zero A), while rested, at a reported 1980 MHz with no clock-event reason active, it does less the more its
operands toggle (378, 399, 424, 460): a limiter NVML does not report slows dense operands at rest, and the reported
clock is the whole story once the power limit holds the clock. The ``--family`` kernels are one shape on operands
ordered from most to least toggling (dense first); the claims (README of the registration) are checked on a fresh
machine's ``bench/hw/power_probe.py`` tables. ``kernels.csv`` gives every kernel's work per reported GHz, rested and
sustained (``power_model.work_per_cycle``), ``claims.csv`` the rules.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import pandas as pd  # noqa: E402

from ctasim.cliargs import OneLineParser, parse_outputs  # noqa: E402
from hw.clock_trajectory import parse_kernels  # noqa: E402
from power_model import measured, read_probe, register, registered_table, work_per_cycle, write_tables  # noqa: E402

SAME_TOL_PCT = 2.0
"""Claims (a), (b): 'the same work per cycle' means within this (plan 32: the family's sustained figures 0.75% apart,
the zero A's rested against sustained 0.6%)."""
DENSE_GAP_PCT = 10.0
"""Claim (d): the dense kernel's rested work per reported cycle at least this far under its sustained (plan 32: 18%)."""


def register_family(kernels: dict[str, tuple], family: list[str] | list[list[str]],
                    constants: list[str] = ()) -> tuple[pd.DataFrame, pd.DataFrame]:
    """kernels.csv and constants.csv of a registration. ``family``: one list of kernel names, or several; each is
    one shape on operands ordered from most to least toggling (two or more kernels). kernels.csv gives each kernel
    its ``group`` (which family, -1 outside every family, reported only) and its ``family`` rank in it (0 = densest);
    the first family's first kernel is the calibration kernel of ``power_model.measured``'s duty fit. ``constants``:
    ``KERNEL:COLUMN=VALUE+-TOL`` (TOL in percent), a figure of ``kernels.csv`` claimed on this machine as measured on
    earlier ones, or ``KERNEL/KERNEL:COLUMN=...``, the ratio of two kernels' figures."""
    families = [family] if family and isinstance(family[0], str) else list(family)
    for fam in families:
        missing = [f for f in fam if f not in kernels]
        if missing or len(fam) < 2:
            raise ValueError(f"--family needs two or more of the kernels (unknown: {', '.join(missing) or 'none'})")
        shapes = {kernels[f][:3] for f in fam}
        if len(shapes) != 1:
            raise ValueError(f"--family kernels must share one shape, got {sorted(shapes)}")
    named = [f for fam in families for f in fam]
    if len(set(named)) != len(named):
        raise ValueError("--family: a kernel is in two families")
    reg = register(kernels, families[0][0])
    where = {f: (g, fam.index(f)) for g, fam in enumerate(families) for f in fam}
    reg["group"] = [where.get(n, (-1, -1))[0] for n in reg["kernel"]]
    reg["family"] = [where.get(n, (-1, -1))[1] for n in reg["kernel"]]
    if len(families) == 1:  # plan 33's layout: one family, no group column
        reg = reg.drop(columns=["group"])
    rows = []
    for text in constants:
        try:
            who, _, rest = text.partition(":")
            col, _, val = rest.partition("=")
            value, _, tol = val.partition("+-")
            rows.append({"kernel": who, "column": col, "value": float(value), "tol_pct": float(tol)})
        except ValueError:
            raise ValueError(f"--constant {text!r} is not KERNEL:COLUMN=VALUE+-TOL") from None
        if any(w not in kernels for w in who.split("/")) or who.count("/") > 1 or col not in CONSTANT_COLUMNS:
            raise ValueError(f"--constant {text!r}: kernel not registered or column not one of "
                             f"{', '.join(CONSTANT_COLUMNS)}")
    return reg, pd.DataFrame(rows, columns=["kernel", "column", "value", "tol_pct"])


CONSTANT_COLUMNS = ("rested_ms", "sustained_ms", "rested_tflop_per_ghz", "sustained_tflop_per_ghz")
"""The figures a ``--constant`` may claim."""


def _family_claims(fam: pd.DataFrame, suffix: str) -> list[dict]:
    sus = fam["sustained_tflop_per_ghz"]
    spread = (100 * (sus / sus.mean() - 1)).abs().max()
    last = fam.iloc[-1]
    zero_gap = 100 * (last.rested_tflop_per_ghz / last.sustained_tflop_per_ghz - 1)
    rested = list(fam["rested_tflop_per_ghz"])
    dense = fam.iloc[0]
    dense_gap = 100 * (dense.rested_tflop_per_ghz / dense.sustained_tflop_per_ghz - 1)
    return [
        {"claim": "a" + suffix, "rule": f"the family's sustained TFLOP/GHz each within {SAME_TOL_PCT}% of their mean",
         "value": f"worst {spread:.2f}%", "met": bool(spread <= SAME_TOL_PCT)},
        {"claim": "b" + suffix,
         "rule": f"the least-toggling kernel's rested TFLOP/GHz within {SAME_TOL_PCT}% of its sustained",
         "value": f"{last.kernel} {zero_gap:+.2f}%", "met": bool(abs(zero_gap) <= SAME_TOL_PCT)},
        {"claim": "c" + suffix, "rule": "rested TFLOP/GHz rises strictly along the family (densest to least toggling)",
         "value": " < ".join(f"{x:.1f}" for x in rested),
         "met": bool(all(a < b for a, b in zip(rested, rested[1:])))},
        {"claim": "d" + suffix,
         "rule": f"the densest kernel's rested TFLOP/GHz at least {DENSE_GAP_PCT}% under its sustained",
         "value": f"{dense.kernel} {dense_gap:+.2f}%", "met": bool(dense_gap <= -DENSE_GAP_PCT)},
    ]


def judge(probe: dict[str, pd.DataFrame], reg: pd.DataFrame,
          constants: pd.DataFrame | None = None) -> dict[str, pd.DataFrame]:
    """kernels.csv (work per reported cycle, rested and sustained) and claims.csv: claims a-d per family (suffixed
    with the family's number where there are several) and one claim per registered constant (``k1``, ``k2``, ...)."""
    k = work_per_cycle(measured(probe, reg), reg)
    cols = ["kernel", "family"] + (["group"] if "group" in reg else [])
    k = k.merge(reg[cols], on="kernel")
    groups = sorted(g for g in k["group"].unique() if g >= 0) if "group" in k else [None]
    claims = []
    for g in groups:
        fam = k[(k["family"] >= 0) & ((k["group"] == g) if g is not None else True)].sort_values("family")
        claims += _family_claims(fam, "" if g is None else str(g))
    for i, c in enumerate((constants if constants is not None else pd.DataFrame()).itertuples(), 1):
        top, _, bottom = c.kernel.partition("/")
        got = float(k.loc[k["kernel"] == top, c.column].iloc[0])
        if bottom:
            got /= float(k.loc[k["kernel"] == bottom, c.column].iloc[0])
        off = 100 * (got / c.value - 1)
        claims.append({"claim": f"k{i}", "rule": f"{c.kernel} {c.column} within {c.tol_pct}% of {c.value}",
                       "value": f"{got:.4f} ({off:+.2f}%)", "met": bool(abs(off) <= c.tol_pct)})
    return {"kernels": k, "claims": pd.DataFrame(claims)}


def main(argv=None) -> int:
    ap = OneLineParser(prog="python bench/power_cycles.py", description=__doc__.splitlines()[0])
    ap.add_argument("--register", metavar="NAME=MxNxK[+OP],...")
    ap.add_argument("--family", metavar="NAME,NAME,...", action="append",
                    help="with --register: one shape, densest operands first (repeat for more families)")
    ap.add_argument("--constant", metavar="KERNEL:COLUMN=VALUE+-TOL", action="append", default=[],
                    help="with --register: a figure claimed as earlier machines measured it (TOL in percent); "
                         "KERNEL/KERNEL for the ratio of two kernels' figures")
    ap.add_argument("--probe", type=Path, metavar="DIR")
    ap.add_argument("--registered", type=Path, metavar="DIR")
    ap.add_argument("--out", type=Path, required=True)
    args = parse_outputs(ap, argv, folders=("--out",))
    try:
        if args.register:
            if not args.family:
                raise ValueError("--register needs --family NAME,NAME,...")
            reg, constants = register_family(parse_kernels(args.register), [f.split(",") for f in args.family],
                                             args.constant)
            tables = {"kernels": reg, **({"constants": constants} if len(constants) else {})}
        else:
            if not (args.probe and args.registered):
                raise ValueError("give --register with --family, or --probe with --registered")
            const = args.registered / "constants.csv"
            tables = judge(read_probe(args.probe), registered_table(args.registered),
                           pd.read_csv(const) if const.is_file() else None)
    except ValueError as e:
        print(f"power_cycles: {e}", file=sys.stderr)
        return 2
    write_tables(args.out, tables)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
