"""Post-hoc: what prices registered plan 105's long-K GEMMs slow at M = 32768 -- the drift or the exposed HBM share?

    python bench/posthoc_h100_drift_waves.py [--out bench/results/posthoc-h100-drift-waves]

Registered plan 105's call (GPU-e8a691c8, ten long-K GEMMs alone at every CUTLASS order) found ``h100-x1-datasheet``
within 0.9% at M = 8192 but 3.0-4.7% slow on the N >= 8192 GEMMs at M = 32768, where the naive FLOPs line was within
1.4%. Here each shape's best measured order is priced by the profile (``model``), by the profile without the drift
(``nodrift``: ``cta_drift`` = 0, so no tile's re-reads are priced) and without the exposed HBM share (``noexposed``:
``l2_hbm_exposed`` = 0, the math hides every HBM byte), each the profile's file with one line changed
(:func:`twin`). Writes ``best.csv`` (per shape: waves, the best order and time, each variant's error, %) and prints
it. Post-hoc throughout: read after plan 105's call was seen; nothing is chosen or adopted from it. Left out: every
other order, the sustained regime (the call's SW power cap samples: its README).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import pandas as pd  # noqa: E402

from ctasim.cliargs import OneLineParser, parse_outputs  # noqa: E402

OUT = ROOT / "bench/results/posthoc-h100-drift-waves"
RUN = ROOT / "bench/results/hw-h100/2026-12-07-registered105-1gpu"
BASE = "h100-x1-datasheet"
VARIANTS = {"model": None, "nodrift": ("cta_drift = ", "0.0"), "noexposed": ("l2_hbm_exposed = ", "0.0")}
"""Variant -> (the start of the profile line it replaces, the value it writes) or None (the profile as it is)."""


def twin(name: str, start: str, value: str, folder: Path):
    """``BASE``'s file with the one line starting ``start`` set to ``value``
    (:func:`plan105_long_k_route.one_line_twin`), loaded as profile ``name``."""
    from ctasim.spec import load_hardware  # noqa: PLC0415
    from plan105_long_k_route import one_line_twin  # noqa: PLC0415

    (folder / f"{name}.toml").write_text(one_line_twin(BASE, name, start, f"{start}{value}"))
    return load_hardware(folder / f"{name}.toml")


def best(run: Path = RUN) -> pd.DataFrame:
    import block_gemm_orders as bgo  # noqa: PLC0415
    from ctasim.spec import load_hardware  # noqa: PLC0415

    runs = pd.read_csv(run / "gemm_shapes.csv")
    runs = runs[runs.backend == "cutlass"]
    with tempfile.TemporaryDirectory() as tmp:
        hws = {v: load_hardware(BASE) if spec is None else twin(f"{BASE}-{v}", *spec, Path(tmp))
               for v, spec in VARIANTS.items()}
        o = bgo.orders(runs, hws)
    waves = runs.groupby(["m", "n", "k"]).waves.first()
    rows = []
    for (m, n, k), d in o.groupby(["m", "n", "k"], sort=False):
        r = d.loc[d["measured_ms"].idxmin()]
        rows.append(dict(m=m, n=n, k=k, waves=round(float(waves[(m, n, k)]), 2), best_order=r["order"],
                         best_ms=round(float(r["measured_ms"]), 4),
                         **{f"{v}_pct": round(float(r[f"{v}_pct"]), 2) for v in VARIANTS}))
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> int:
    ap = OneLineParser(prog="python bench/posthoc_h100_drift_waves.py", description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=None, help=f"output folder (default {OUT.relative_to(ROOT)})")
    a = parse_outputs(ap, argv, folders=("--out",))
    out = Path(a.out) if a.out else OUT
    b = best()
    out.mkdir(parents=True, exist_ok=True)
    b.to_csv(out / "best.csv", index=False)
    with pd.option_context("display.width", 200):
        print(b.to_string(index=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
