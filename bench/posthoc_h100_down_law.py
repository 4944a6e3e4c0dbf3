"""Post-hoc: the H100 blocks' GEMMs under the drift's two K laws and two exposed HBM rates, over four calls (no GPU)

    python bench/posthoc_h100_down_law.py [--out bench/results/posthoc-h100-down-law]

Registered plan 103's call (GPU-7a1b197d) found every GEMM of four blocks slower than ``h100-x1-datasheet`` prices it,
the long-K down GEMMs most (K = 14336-24576: -1.1 to -4.3%), while the calibration GEMM timed beside them (plan 104)
ran at the profile's speed. The profile prices the drift's re-reads by the absolute law above ``drift_k_ref`` = 8192
(the same drift time a round at every K: registered plan 73's adoption, from GEMMs alone at K up to 65536) and by the
tile law below it (``drift_k_law`` = "capped": plan 98). Here every GEMM item of the four committed
``mlp_block_breakdown.py --no-repeats`` calls (plans 101 and 101's repeat, 102, 103: three H100 units) and the whole
blocks, priced as registered (:func:`plan101_block_ops.split` under plan 99's harness and seed, the profile before
plan 103's pass rates: ``registered``), with the tile law at every K (``tile``: ``ctasim.profiles.before_h100_drift``,
the drift before plan 73's adoption), and with the exposed HBM share at the H100's own HBM rate (``hbm3``:
``before_h100_exposed``, the profile before plan 76's adoption charged it at the H200's measured rate; the profile
plan 73's GEMMs alone were priced with when it chose the absolute law), against the measured medians. Writes
``items.csv`` (per call, block, M and item: K, each variant's error, %) and ``summary.csv`` (per K range and role:
items, each variant's mean |error| and mean error).

Post-hoc throughout: the reading was made after plan 103's call was seen. The two harnesses agree where they timed
the same GEMM (16384 x 4096 x 14336: 2.406 ms in plan 73's call, 2.408 ms as plan 103's Llama-3.1-8B down GEMM), so
what moved is the profile. Left out: the memory passes.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import pandas as pd  # noqa: E402

from ctasim.cliargs import OneLineParser, parse_outputs  # noqa: E402

OUT = ROOT / "bench/results/posthoc-h100-down-law"
CALLS = (("validation-registered101", "plan101_block_ops", "BLOCKS"),
         ("validation-registered101-run2", "plan101_block_ops", "BLOCKS"),
         ("validation-registered102", "plan102_own_ops", "MODELS"),
         ("validation-registered103", "plan103_pass_rates", "MODELS"))
"""Each committed judged call (bench/results/), the plan script whose experiments it ran and their list."""
ROLES = ("up", "up_plain", "down", "down_plain", "block")
VARIANTS = ("registered", "tile", "hbm3")
"""The profile as registered, with the tile law at every K, with the exposed HBM share at the H100's HBM rate."""
K_EDGES = (0, 8192, 12288, 65536)


def items() -> pd.DataFrame:
    import importlib  # noqa: PLC0415

    import plan101_block_ops as p101  # noqa: PLC0415
    import plan102_own_ops as p102  # noqa: PLC0415
    from ctasim.profiles import before_h100_drift, before_h100_exposed  # noqa: PLC0415

    reg = p101._registration(p102.RECORD)
    rows = []
    for folder, script, names in CALLS:
        plan = importlib.import_module(script)
        meas = pd.read_csv(ROOT / "bench/results" / folder / "items.csv").set_index(["block", "m", "item"])
        for name in getattr(plan, names):
            exp = plan.experiment(name)
            l0, l1 = exp.workload.layers
            laws = {law: {(r["m"], r["item"]): r for r in p101.split(exp, reg, hw)}
                    for law, hw in zip(VARIANTS, (exp.hardware, before_h100_drift(exp.hardware),
                                                  before_h100_exposed(exp.hardware)))}
            for (m, item), r in laws["registered"].items():
                if r["role"] not in ROLES:
                    continue
                ms = float(meas.loc[(name, m, item), "measured_ms"])
                k = l0.k if r["role"].startswith("up") else l1.k if r["role"].startswith("down") else 0
                rows.append(dict(call=folder.removeprefix("validation-"), block=name, m=m, item=item, role=r["role"],
                                 k=k, measured_ms=ms,
                                 **{f"{law}_pct": (laws[law][(m, item)]["model_ms"] / ms - 1) * 100 for law in laws}))
    return pd.DataFrame(rows).round(4)


def summary(t: pd.DataFrame) -> pd.DataFrame:
    """Per role (``up``, ``down``: plain and fused alike) and K range, and the whole blocks: items, each variant's
    mean |error| and mean error (%)."""
    g = t[t.role != "block"].assign(k_range=pd.cut(t.k, list(K_EDGES), right=True),
                                    kind=t.role.str.replace("_plain", ""))
    parts = [g.groupby(["kind", "k_range"], sort=True, observed=True),
             t[t.role == "block"].assign(kind="block", k_range="").groupby(["kind", "k_range"])]
    rows = []
    for grouped in parts:
        for (kind, kr), h in grouped:
            rows.append(dict(kind=kind, k_range=str(kr), items=len(h),
                             **{f"{law}_{s}": getattr(h[f"{law}_pct"].abs() if s == "mape_pct" else h[f"{law}_pct"],
                                                      "mean")() for law in VARIANTS
                                for s in ("mape_pct", "mean_pct")}))
    return pd.DataFrame(rows).round(3)


def main(argv: list[str] | None = None) -> int:
    ap = OneLineParser(prog="python bench/posthoc_h100_down_law.py", description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=None, help=f"output folder (default {OUT.relative_to(ROOT)})")
    a = parse_outputs(ap, argv, folders=("--out",))
    out = Path(a.out) if a.out else OUT
    t = items()
    s = summary(t)
    out.mkdir(parents=True, exist_ok=True)
    t.to_csv(out / "items.csv", index=False)
    s.to_csv(out / "summary.csv", index=False)
    with pd.option_context("display.width", 200):
        print(s.to_string(index=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
