"""Post-hoc: registered plan 95's call wave by wave -- the first wave's excess in time, the waves after it, and the
mainloop the model's tile time leaves once the call's own exposed epilogue is taken off.

    python bench/posthoc_k_apart.py [--out bench/results/posthoc-k-apart]

Plan 95 (``bench/results/hw-h100/2026-12-07-registered95-1gpu``, one H100) judged the first wave only, against the
model's tile time less the profile's ``tile_fixed_ns`` (2.24 us). Here, per (n, K) and producer: the median mainloop of
wave 0 and of wave 1 (CTAs 132-263) of the traced run the call kept, the model's (its wave-0 and wave-1 tile times at
spread 0, ``plan95_k_apart.mainloops``'s profile, less ``tile_fixed_ns``), the excess in us (measured less model), and
the model's wave-0 and wave-1 tile times against the measured mainloop plus the call's own exposed epilogue
(``percta.csv``'s ``epilogue_ns``, the median of five traced runs): like for like without the profile's
``tile_fixed_ns``, which holds 0.7-0.9 us that the trace counts in the mainloop. Writes ``cases.csv`` and prints it.
Post-hoc throughout; no claim rests on it. Left out: waves after wave 1 (``plan85_grouped_kept``'s measure), other calls
(no other ran K != N).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import pandas as pd  # noqa: E402

from ctasim.cliargs import OneLineParser, parse_outputs  # noqa: E402

OUT = ROOT / "bench/results/posthoc-k-apart"
CALL = ROOT / "bench/results/hw-h100/2026-12-07-registered95-1gpu"


def model_waves(h: int, k: int, variant: str, hw) -> tuple[float, float]:
    """The model's wave-0 and wave-1 tile times (us) of ``variant``'s producer at (H, K): plan 95's profile."""
    from ctasim import costs  # noqa: PLC0415
    from percta_predict import SLOTS, order_of  # noqa: PLC0415
    from plan95_k_apart import layer  # noqa: PLC0415

    lay = layer(h, k)
    t = costs.order_tile_times(lay, hw, 2, order_of(variant, lay.tiles_m, lay.tiles_n), SLOTS, kernel="ctapipe",
                               drift=0.0, ticket_spread=0.0)
    return float(t[0]) / 1e3, float(t[SLOTS]) / 1e3


def cases() -> pd.DataFrame:
    import plan95_k_apart as p95  # noqa: PLC0415
    from ctasim.spec import load_hardware  # noqa: PLC0415
    from percta_predict import SLOTS  # noqa: PLC0415
    from plan93_tile_rate_domain import fixed_us  # noqa: PLC0415

    hw = load_hardware(p95.GPUS["H100"])
    fixed = fixed_us(hw)
    rows = []
    for h, k in p95.HK:
        out = CALL / f"OUT_H{h}_K{k}"
        epilogue = pd.read_csv(out / "percta.csv").set_index("variant")["epilogue_ns"] / 1e3
        for v in p95.VARIANTS:
            t = pd.read_csv(out / f"percta-tiles-{p95.M}-{v}.csv.gz")
            ml = (t["t_mainloop_end"] - t["t_acquire"]) / 1e3
            w0 = float(ml[t["cta"] < SLOTS].median())
            w1 = float(ml[(t["cta"] >= SLOTS) & (t["cta"] < 2 * SLOTS)].median())
            m0, m1 = model_waves(h, k, v, hw)
            rows.append(dict(n=h // 256, k=k, w_mb=h * k * 2 / 1e6, variant=v, wave0_us=w0, model0_us=m0 - fixed,
                             excess0_us=w0 - (m0 - fixed), wave1_us=w1, model1_us=m1 - fixed,
                             excess1_us=w1 - (m1 - fixed), epilogue_us=float(epilogue[v]),
                             tile0_err_pct=(m0 / (w0 + epilogue[v]) - 1) * 100,
                             tile1_err_pct=(m1 / (w1 + epilogue[v]) - 1) * 100))
    return pd.DataFrame(rows).round(4)


def main(argv: list[str] | None = None) -> int:
    ap = OneLineParser(prog="python bench/posthoc_k_apart.py", description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=None, help=f"output folder (default {OUT.relative_to(ROOT)})")
    a = parse_outputs(ap, argv, folders=("--out",))
    out = Path(a.out) if a.out else OUT
    c = cases()
    out.mkdir(parents=True, exist_ok=True)
    c.to_csv(out / "cases.csv", index=False)
    with pd.option_context("display.width", 200):
        print(c.round(2).to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
