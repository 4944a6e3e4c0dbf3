"""Post-hoc: the 2x1 pairs' first wave against the model's mainloop, by the W its wave reads cold, on the H100s.

    python bench/posthoc_first_wave_hbm.py [--out bench/results/posthoc-first-wave-hbm]

Registered plan 93 found the pairs' first wave (``cutlass_ctapipe_w21``, 2x1 clusters, where no L2-to-SM floor binds)
5.0-9.0% over the model's mainloop at 25-37 tiles a row. Here every committed H100 call that ran the pairs alone
(``posthoc_cluster_mainloop``'s cases: plans 85-89; plans 91-93's judged cases) gives its wave-0 median mainloop
against the model's, like for like: the model's wave-0 tile time (the H100 mechanism profile at spread 0) less the
profile's ``tile_fixed_ns`` (2.24 us), which no mainloop holds. ``w_mb`` is W's size (H x H x 2 bytes): a pairs' first
wave covers all of W's columns from 132 / 2 >= n tiles a row on, every byte of it cold. Writes ``cases.csv`` (one row
per call and H) and prints it with the mean error up to and from 70 MB of W; ``tile_err_pct`` reads the same cases
with registered plan 95's yardstick (the model's tile time against the measured mainloop plus the call's own exposed
epilogue, ``percta.csv``'s ``epilogue_ns``: the profile's ``tile_fixed_ns`` holds more than a traced epilogue).
Post-hoc throughout; no claim rests on it. Left out: the H200s (no call ran the pairs alone on one at these H), the
1x1 producer (its L2-to-SM floor: ``bench/posthoc_tile_rate.py``) and waves after the first.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import pandas as pd  # noqa: E402

from ctasim.cliargs import OneLineParser, parse_outputs  # noqa: E402

OUT = ROOT / "bench/results/posthoc-first-wave-hbm"
PAIRS = "cutlass_ctapipe_w21"
JUDGED = {"plan 91": ("validation-registered91", 16384, 2.24), "plan 92": ("validation-registered92", 16384, 2.24),
          "plan 93": ("validation-registered93", 24576, 0.0)}
"""Plans 91-93's judged cases: the folder, M, and what their ``model`` rows hold beyond a mainloop (plans 91 and 92
registered tile times, plan 93 mainloops)."""
JUDGED_RUNS = {call: f"bench/results/hw-h100/2026-12-07-registered{call[5:]}-1gpu" for call in JUDGED}
"""Plans 91-93's calls (their ``OUT_H<h>`` folders hold each H's ``percta.csv``)."""
SPLIT_MB = 70.0
"""W's size where the printed means split, read off the table itself (the pairs' first wave within 1.1% of the model's
mainloop up to 69 MB, 2.1-9.0% over it from 75 MB): post-hoc."""


def tables_folder(call: str, h: int) -> Path:
    """The folder of ``call``'s tables at ``h`` (its ``percta.csv``): ``posthoc_local_spread.ALONE_CALLS``' for the
    calls listed there, plans 91-93's ``OUT_H<h>``."""
    from posthoc_local_spread import ALONE_CALLS  # noqa: PLC0415

    for name, _, folder, hs, _ in ALONE_CALLS:
        if name == call:
            return ROOT / folder / hs[h]
    return ROOT / JUDGED_RUNS[call] / f"OUT_H{h}"


def cases() -> pd.DataFrame:
    from ctasim.spec import load_hardware  # noqa: PLC0415

    fixed = load_hardware("h100-x8-mechanism").config(128, 256, kernel="ctapipe").tile_fixed_ns / 1e3
    c = pd.read_csv(ROOT / "bench/results/posthoc-cluster-mainloop/cases.csv")
    c = c[(c["gpu"] == "H100") & (c["variant"] == PAIRS)]
    rows = [dict(call=r.call, h=r.h, m=r.m, wave0_us=r.wave0_us, model_us=r.model_us - fixed) for r in c.itertuples()]
    for call, (folder, m, extra) in JUDGED.items():
        d = pd.read_csv(ROOT / "bench/results" / folder / "cases.csv")
        d = d[(d["predictor"] == "model") & (d["variant"] == PAIRS)]
        rows += [dict(call=call, h=r.h, m=m, wave0_us=r.measured_us, model_us=r.predicted_us - extra)
                 for r in d.itertuples()]
    out = pd.DataFrame(rows)
    out["n"] = out["h"] // 256
    out["w_mb"] = out["h"] ** 2 * 2 / 1e6
    out["err_pct"] = (out["model_us"] / out["wave0_us"] - 1) * 100
    epilogue = []
    for r in out.itertuples():
        p = pd.read_csv(tables_folder(r.call, r.h) / "percta.csv")
        epilogue.append(float(p.loc[(p["variant"] == PAIRS) & (p["m"] == r.m), "epilogue_ns"].iloc[0]) / 1e3)
    out["epilogue_us"] = epilogue
    out["tile_err_pct"] = ((out["model_us"] + fixed) / (out["wave0_us"] + out["epilogue_us"]) - 1) * 100
    return out.sort_values(["h", "m", "call"]).round(4).reset_index(drop=True)


def main(argv: list[str] | None = None) -> int:
    ap = OneLineParser(prog="python bench/posthoc_first_wave_hbm.py", description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=None, help=f"output folder (default {OUT.relative_to(ROOT)})")
    a = parse_outputs(ap, argv, folders=("--out",))
    out = Path(a.out) if a.out else OUT
    c = cases()
    out.mkdir(parents=True, exist_ok=True)
    c.to_csv(out / "cases.csv", index=False)
    print(c[["call", "h", "m", "n", "w_mb", "wave0_us", "model_us", "err_pct", "epilogue_us", "tile_err_pct"]]
          .to_string(index=False))
    small, big = c[c["w_mb"] < SPLIT_MB], c[c["w_mb"] >= SPLIT_MB]
    print(f"the model's mainloop against the pairs' first wave: {small['err_pct'].mean():+.2f}% mean over "
          f"{len(small)} cases with W under {SPLIT_MB:g} MB, {big['err_pct'].mean():+.2f}% over {len(big)} from it "
          f"({big['err_pct'].min():+.2f} to {big['err_pct'].max():+.2f}%)")
    print(f"like for like (the model's tile time against the first wave's mainloop plus the call's own exposed "
          f"epilogue): {small['tile_err_pct'].mean():+.2f}% mean under {SPLIT_MB:g} MB "
          f"({small['tile_err_pct'].min():+.2f} "
          f"to {small['tile_err_pct'].max():+.2f}%), {big['tile_err_pct'].mean():+.2f}% from it "
          f"({big['tile_err_pct'].min():+.2f} to {big['tile_err_pct'].max():+.2f}%)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
