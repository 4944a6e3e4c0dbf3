"""Post-hoc: the chain kernel's per-tile mainloop and cycle against the model's compute, one layer and two (no GPU).

    python bench/chain_tile_rate.py [--out bench/results/chain-tile-rate]

Registered plans 51 and 52 left the chain kernel (tickets design, groups of 8) 1-2% slower against sequential than
the measured L2 curve and the one-layer factor price it. This reads the committed traced runs of the one-layer
microbenchmark (plan 51, both machines) and of the two-layer chains (plans 51 and 52, :data:`RUNS`) and gives, per tile,
its mainloop (``t_mainloop_end - t_acquire``) and its CTA's cycle (the same CTA's next ``t_acquire - t_acquire``,
within one layer), each over the model's compute time of a tile at that H (the 128x256 config of h200-x1-calibrated:
``tile_fixed_ns + 2 * 128 * 256 * H / l2_sm_tflops``, :meth:`ctasim.spec.KernelConfig.tile_ns`), with the ticket's
wave counted within its layer (132 tickets a wave, the order of :func:`ctasim.plan.chain_order`). Every figure is
post-hoc: the runs were seen first.

Writes ``summary.csv`` (per machine, experiment, M and layer: medians over waves 1-3, over the whole layer, and over
waves 5 to the last but one, "steady"; the gap from a mainloop's end to the same CTA's next tile, µs) and
``per-wave.csv`` (per machine, experiment, M, layer and wave: the median mainloop and cycle over the model); prints the
summary. ~2 s.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from ctasim.cliargs import OneLineParser, parse_outputs  # noqa: E402
from ctasim.plan import chain_order  # noqa: E402
from ctasim.spec import load_hardware  # noqa: E402
from ctasim.trace import load_traces  # noqa: E402

HW = ROOT / "bench/results/hw"
RUNS = (("GPU-cc9b1fb6", "2026-12-04-registered51-1gpu/reg51-chain-rate-h8192"),
        ("GPU-cc9b1fb6", "2026-12-04-registered51-1gpu/reg51-chain-rate-h12288"),
        ("GPU-4d76155d", "2026-12-04-registered51-1gpu/call2-rate/reg51-chain-rate-h8192"),
        ("GPU-4d76155d", "2026-12-04-registered51-1gpu/call2-rate/reg51-chain-rate-h12288"),
        ("GPU-4d76155d", "2026-12-04-registered51-1gpu/reg51-chain-order-h6656"),
        ("GPU-4d76155d", "2026-12-04-registered51-1gpu/reg51-chain-order-h13312"),
        ("GPU-68b23485", "2026-12-04-registered52-1gpu/reg52-chain-faster-h7680"),
        ("GPU-68b23485", "2026-12-04-registered52-1gpu/reg52-chain-faster-h10752"))
"""(machine, run folder under bench/results/hw) of every committed traced chain run of plans 51 and 52."""
PROFILE = "h200-x1-calibrated"
SLOTS = 132
GROUP = 8  # groups of 8: strategy "intragpu", the traced one of each case
STRATEGY = "intragpu"


def tiles(tr) -> pd.DataFrame:
    """One traced run's tiles with their layer-local wave, mainloop, cycle and gap (ns), sorted by CTA and start."""
    t = tr.tiles.copy()
    m = int(str(tr.meta["case"]).split("=")[1])
    tm, tn = -(-m // 128), int(t["tile_n"].max()) + 1
    layers, per = int(t["layer"].max()) + 1, tm * tn
    if len(t) != layers * per:
        raise ValueError(f"trace {tr.meta.get('case')}: {len(t)} tiles, expected {layers} x {per}")
    order = chain_order(layers, tm, tn, GROUP)
    pos = np.empty(len(order), dtype=np.int64)
    pos[order] = np.arange(len(order))
    t["ticket"] = pos[(t["layer"] * per + t["tile_m"] * tn + t["tile_n"]).to_numpy()]
    t["wave"] = (t["ticket"] - t["layer"] * per) // SLOTS
    t = t.sort_values(["cta", "t_acquire"])
    g = t.groupby("cta")
    t["mainloop"] = t["t_mainloop_end"] - t["t_acquire"]
    same = g["layer"].shift(-1) == t["layer"]
    t["cycle"] = (g["t_acquire"].shift(-1) - t["t_acquire"]).where(same)
    t["gap"] = (g["t_acquire"].shift(-1) - t["t_mainloop_end"]).where(same)
    return t.assign(m=m, h=tn * 256, layers=layers)


def tables(runs=RUNS) -> tuple[pd.DataFrame, pd.DataFrame]:
    cfg = load_hardware(PROFILE).config(128, 256)
    rows, waves = [], []
    for machine, rel in runs:
        for tr in load_traces(HW / rel / "ctapipe_traces.trace.npz").values():
            if tr.meta.get("strategy") != STRATEGY:
                continue
            t = tiles(tr)
            model = cfg.tile_ns(int(t["h"].iloc[0]), cfg.l2_sm_tflops)
            key = {"machine": machine, "experiment": rel.rsplit("/", 1)[-1], "m": int(t["m"].iloc[0]),
                   "h": int(t["h"].iloc[0]), "layers": int(t["layers"].iloc[0])}
            for layer, d in t.groupby("layer"):
                last = d["wave"].max()
                row = dict(key, layer=int(layer), waves=int(last) + 1, model_us=round(model / 1e3, 3))
                for name, sel in (("w1_3", d[d["wave"].between(1, 3)]), ("all", d),
                                  ("steady", d[(d["wave"] >= 5) & (d["wave"] < last)])):
                    row[f"mainloop_{name}"] = round(sel["mainloop"].median() / model, 4)
                    row[f"cycle_{name}"] = round(sel["cycle"].median() / model, 4)
                row["gap_us"] = round(d["gap"].median() / 1e3, 3)
                rows.append(row)
                w = d.groupby("wave").agg(mainloop=("mainloop", "median"), cycle=("cycle", "median"))
                for wave, r in w.iterrows():
                    waves.append(dict(key, layer=int(layer), wave=int(wave), mainloop=round(r["mainloop"] / model, 4),
                                      cycle=round(r["cycle"] / model, 4)))
    return pd.DataFrame(rows), pd.DataFrame(waves)


def main(argv: list[str] | None = None) -> int:
    ap = OneLineParser(prog="python bench/chain_tile_rate.py", description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "bench/results/chain-tile-rate")
    args = parse_outputs(ap, argv, folders=("--out",))
    s, w = tables()
    args.out.mkdir(parents=True, exist_ok=True)
    s.to_csv(args.out / "summary.csv", index=False)
    w.to_csv(args.out / "per-wave.csv", index=False)
    pd.set_option("display.width", 250)
    print(s.to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
