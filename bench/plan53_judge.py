"""Registered plan 53: the tickets mainloop factor measured under the ticket law it is used with, judged.

    python bench/plan53_judge.py RUN_DIR [--out bench/results/validation-registered53]

RUN_DIR holds ``ctahw run``'s measurement of :data:`EXPERIMENTS` (the device runs them with ``bash
bench/hw/run_registered.sh --no-hw-tests reg49-reference reg53-chain-rate-h10240 reg53-chain-law-h8704
reg53-chain-law-h12800``). Each experiment but the reference has three registrations (:func:`registrations`): ``EXP``
(the profile: the ``"partition"`` law, no factor; its naive FLOPs line and waves predictor too), ``EXP-survival-own``
(the candidate: the ``"survival"`` law and the factor 1.019 measured under it) and ``EXP-threshold-own`` (the
``"threshold"`` law, the same factor). The rules and the adoption rule are in
``bench/predictions/reg53-chain-law-h8704/README.md`` (:data:`CLAIMS`).

Writes into ``--out``: ``cases.csv``, ``summary.csv``, ``rankings.csv``, ``chain-vs-sequential.csv`` (per (H, M) of
the chains and of the microbenchmark: groups of 8 over sequential, measured and per predictor), ``claims.csv`` and
``adoption.csv`` (per predictor the figures of (a) and (b), and the rule's verdict). A missing measurement, one that is
not these experiments', or one short of a registered case is refused (one line, exit 2).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import pandas as pd  # noqa: E402

import plan49_judge as P49  # noqa: E402
import plan50_judge as P50  # noqa: E402
import plan52_judge as P52  # noqa: E402

REFERENCE = P49.REFERENCE
RATE = "reg53-chain-rate-h10240"
CHAINS = ("reg53-chain-law-h8704", "reg53-chain-law-h12800")
EXPERIMENTS = (REFERENCE, RATE, *CHAINS)
BASE = P49.BASE
CANDIDATE, TWINS = "survival-own", ("survival-own", "threshold-own")
TARGET_MAPE, TARGET_WORST = 3.0, 6.0
MEAN_POINTS, RATE_POINTS = 1.0, 1.0
CLAIMS = {
    "a": f"{CANDIDATE}: mean |error| of the chain against sequential (groups of 8 / sequential) below the profile's",
    "b": f"{CANDIDATE}: MAPE below the profile's over the chain-kernel cases (every order, every H and M), each error "
         "normalised by the machine's speed (the reference GEMM at M = 16384)",
    "c": f"{CANDIDATE}: the faster of groups of 8 and sequential right at every (H, M)",
    "d": f"{CANDIDATE}: the fastest strategy right at every (H, M) (sequential or a chain-kernel order)",
    "e": f"{CANDIDATE}: MAPE <= {TARGET_MAPE:g}% and worst <= {TARGET_WORST:g}% over every measured case",
    "f": f"{CANDIDATE}: MAPE at most half of naive's over the chain-kernel cases (raw errors)",
    "g": f"{CANDIDATE}: mean |error| of the chain against sequential <= {MEAN_POINTS:g} point",
    "h": f"the factor is one constant: {CANDIDATE}'s groups of 8 / sequential within {RATE_POINTS:g} point of the "
         f"measured at both microbenchmark cases",
}
CHAIN_CASES = 26
"""The registered chain-kernel cases: 2 H x 4 M x 3 orders, and the microbenchmark's 2."""


def registrations(exp: str) -> dict[str, tuple[str, str]]:
    """Predictor -> (registration folder, its source) for ``exp``."""
    out = {"profile": (exp, "model"), "naive": (exp, "naive"), "waves": (exp, "waves")}
    if exp != REFERENCE:
        out.update({twin: (f"{exp}-{twin}", "model") for twin in TWINS})
    return out


def cases(run_dir: Path) -> pd.DataFrame:
    c = P49.cases(run_dir, EXPERIMENTS, registrations, REFERENCE, plain="profile", plan=53)
    return P49.check_count(c, CHAIN_CASES, 53)


def chain_stats(c: pd.DataFrame, cs: pd.DataFrame, src: str, experiments=CHAINS) -> dict:
    """:func:`plan52_judge.chain_stats` over the cases of ``experiments``, with the chain-kernel MAPE of the
    machine-normalised errors (``chain_kernel_normalised_mape_pct``, what (b) compares)."""
    chains = c[c["experiment"].isin(experiments)]
    kernel = chains[(chains["source"] == src) & chains["strategy"].str.startswith(BASE)]
    return dict(P52.chain_stats(chains, cs, src),
                chain_kernel_normalised_mape_pct=round(100 * kernel["error_normalised"].abs().mean(), 3))


def comparing_claims(c: pd.DataFrame, s: pd.DataFrame, r: pd.DataFrame, cs: pd.DataFrame, candidate: str,
                     other: str, experiments=CHAINS, other_label: str | None = None) -> list[tuple[str, str, bool]]:
    """Claims (a)-(g) of a chain plan (plans 53 and 54): predictor ``candidate`` against ``other`` (named
    ``other_label`` in the values) and the naive line over ``experiments``' chain cases, the targets over every case
    of ``candidate`` (``s``'s "all" row): (claim, value, met)."""
    st = {src: chain_stats(c, cs, src, experiments) for src in (candidate, other, "naive")}
    m, p, n = st[candidate], st[other], st["naive"]
    a = s[s["cases"] == "all"].set_index("predictor").loc[candidate]
    label = other_label or other
    return [
        ("a", f"{m['chain_vs_sequential_points']:.2f} against {p['chain_vs_sequential_points']:.2f} points",
         m["chain_vs_sequential_points"] < p["chain_vs_sequential_points"]),
        ("b", f"{m['chain_kernel_normalised_mape_pct']:.2f}% against {p['chain_kernel_normalised_mape_pct']:.2f}% "
              f"(raw {m['chain_kernel_mape_pct']:.2f} against {p['chain_kernel_mape_pct']:.2f}%)",
         m["chain_kernel_normalised_mape_pct"] < p["chain_kernel_normalised_mape_pct"]),
        ("c", f"{m['faster_right']} of {m['comparisons']} ({label} {p['faster_right']})",
         m["faster_right"] == m["comparisons"]),
        ("d", f"{int(r[f'{candidate}_fastest_right'].sum())} of {len(r)} ({label} "
              f"{int(r[f'{other}_fastest_right'].sum())})", bool(r[f"{candidate}_fastest_right"].all())),
        ("e", f"MAPE {a['mape_pct']:.2f}%, worst {a['worst_pct']:+.2f}%",
         a["mape_pct"] <= TARGET_MAPE and abs(a["worst_pct"]) <= TARGET_WORST),
        ("f", f"{m['chain_kernel_mape_pct']:.2f}% against naive {n['chain_kernel_mape_pct']:.2f}%",
         m["chain_kernel_mape_pct"] <= 0.5 * n["chain_kernel_mape_pct"]),
        ("g", f"{m['chain_vs_sequential_points']:.2f} points", m["chain_vs_sequential_points"] <= MEAN_POINTS),
    ]


def claim_table(rows, rules: dict[str, str]) -> pd.DataFrame:
    return pd.DataFrame([{"claim": k, "rule": rules[k], "value": v, "met": bool(ok)} for k, v, ok in rows])


def claims(c: pd.DataFrame, s: pd.DataFrame, r: pd.DataFrame, cs: pd.DataFrame, rate: pd.DataFrame) -> pd.DataFrame:
    rate_pts = 100 * (rate[CANDIDATE] - rate["measured"]).abs()
    h = ("h", "; ".join(f"{row.case}: measured {row.measured:.4f}, {CANDIDATE} {row[CANDIDATE]:.4f}"
                        for _, row in rate.iterrows()) + f" (at most {rate_pts.max():.2f} points)",
         bool(len(rate) == 2 and (rate_pts <= RATE_POINTS).all()))
    return claim_table([*comparing_claims(c, s, r, cs, CANDIDATE, "profile"), h], CLAIMS)


def adoption(c: pd.DataFrame, cs: pd.DataFrame, cl: pd.DataFrame) -> pd.DataFrame:
    """The adoption rule: (a) and (b); per predictor the figures they compare."""
    t = pd.DataFrame([chain_stats(c, cs, src) for src in ("profile", *TWINS)])
    met = cl.set_index("claim")["met"]
    return t.assign(adopt_survival_own=bool(met["a"] and met["b"]))


def main(argv: list[str] | None = None) -> int:
    def tables(c, run_dir):
        s, r = P49.summary(c), P49.rankings(c, CHAINS)
        cs, rate = P50.chain_vs_sequential(c, CHAINS), P50.chain_vs_sequential(c, (RATE,))
        cl = claims(c, s, r, cs, rate)
        return {"summary": s, "rankings": r, "chain-vs-sequential": pd.concat([cs, rate], ignore_index=True),
                "claims": cl, "adoption": adoption(c, cs, cl)}

    return P49.judge_main(argv, 53, __doc__, cases, tables, ("summary", "chain-vs-sequential", "claims", "adoption"))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
