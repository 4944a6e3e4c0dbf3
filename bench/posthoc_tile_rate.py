"""Post-hoc: the committed 1x1 first waves on the H100s floored at the tensor-copy probe's L2-to-SM rate by tiles a row.

    python bench/posthoc_tile_rate.py [--out bench/results/posthoc-tile-rate]

The reading registered plan 92 was built on. Per committed H100 call that ran the row-order producer (1x1 cluster,
``cutlass_ctapipe``) alone (``posthoc_cluster_mainloop``'s cases: plans 83-89, and registered plan 91's three H, all
before plan 92), its wave-0 median mainloop against the model's (the H100 mechanism profile at spread 0) and the same
floored at the wave's L2-to-SM reads (``plan91_l2_rate_wave0.bound_us``) at the probe's rate at the wave's tiles a row
(``plan92_tile_rate_wave0.rate_by_n``, from ``bench/results/hw-h100/2026-12-07-l2-tile-1gpu``); ``drawn_tbs`` what
the wave drew from the L2 (132 tiles' A and W over its mainloop). Writes ``cases.csv`` and prints each one's mean
|error|; and ``plan92-mainloops.csv``, plan 92's call read like for like (:func:`mainloops`). Post-hoc throughout:
every call was seen, and the probe ran after plan 91's. Left out: plan 90's call (where ``posthoc_cluster_mainloop``
reads its rate) and, from ``cases.csv``, plan 92's own (judged by its plan), the 2x1 producers (the floor never binds
on them at these rates) and waves after the first.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import pandas as pd  # noqa: E402

from ctasim.cliargs import OneLineParser, parse_outputs  # noqa: E402

OUT = ROOT / "bench/results/posthoc-tile-rate"
ROW = "cutlass_ctapipe"


def cases() -> pd.DataFrame:
    from plan91_l2_rate_wave0 import bound_us  # noqa: PLC0415
    from plan92_tile_rate_wave0 import rate_by_n  # noqa: PLC0415

    c = pd.read_csv(ROOT / "bench/results/posthoc-cluster-mainloop/cases.csv")
    c = c[(c["gpu"] == "H100") & (c["variant"] == ROW)][["call", "h", "m", "wave0_us", "model_us"]]
    p91 = pd.read_csv(ROOT / "bench/results/validation-registered91/cases.csv")
    p91 = p91[(p91["predictor"] == "model") & (p91["variant"] == ROW)]
    c = pd.concat([c, pd.DataFrame({"call": "plan 91", "h": p91["h"], "m": 16384, "wave0_us": p91["measured_us"],
                                    "model_us": p91["predicted_us"]})], ignore_index=True)
    c["n"] = c["h"] // 256
    c["drawn_tbs"] = 132 * 384 * c["h"] * 2 / c["wave0_us"] / 1e6
    c["rate_gbps"] = [rate_by_n(n) for n in c["n"]]
    c["by_n_us"] = [bound_us(h, ROW, m, r) for h, m, r in zip(c["h"], c["model_us"], c["rate_gbps"])]
    for name in ("model", "by_n"):
        c[f"{name}_err_pct"] = (c[f"{name}_us"] / c["wave0_us"] - 1) * 100
    return c.sort_values(["h", "m", "call"]).round(4).reset_index(drop=True)


def mainloops() -> pd.DataFrame:
    """Registered plan 92's call like for like: its judged cases (``bench/results/validation-registered92``) compare a
    wave-0 *mainloop* (acquire to mainloop end) with each predictor's whole *tile* time, which holds the config's
    ``tile_fixed_ns`` (epilogue and turnover: 2240 ns on the H100 profile) that no mainloop does. Here each predictor's
    time less that fixed part (``flat``, ``model``) or its floor where the floor binds (``one``, ``by_n``: the floor is
    a mainloop's loads), against the measured mainloop: ``err_pct`` per H, producer and predictor."""
    from ctasim.spec import load_hardware  # noqa: PLC0415
    from plan92_tile_rate_wave0 import GPUS  # noqa: PLC0415

    fixed = load_hardware(GPUS["H100"]).config(128, 256, kernel="ctapipe").tile_fixed_ns / 1e3
    c = pd.read_csv(ROOT / "bench/results/validation-registered92/cases.csv")
    model = c[c["predictor"] == "model"].set_index(["h", "variant"])["predicted_us"]
    rows = []
    for r in c.itertuples():
        floor = r.predicted_us > model[(r.h, r.variant)] + 1e-9  # the floor binds: a mainloop's loads
        pred = r.predicted_us if floor else r.predicted_us - fixed
        rows.append(dict(h=r.h, n=r.n, variant=r.variant, predictor=r.predictor, measured_us=r.measured_us,
                         mainloop_us=pred, floor=bool(floor), err_pct=(pred / r.measured_us - 1) * 100))
    return pd.DataFrame(rows).round(4)


def main(argv: list[str] | None = None) -> int:
    ap = OneLineParser(prog="python bench/posthoc_tile_rate.py", description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=None, help=f"output folder (default {OUT.relative_to(ROOT)})")
    a = parse_outputs(ap, argv, folders=("--out",))
    out = Path(a.out) if a.out else OUT
    c = cases()
    out.mkdir(parents=True, exist_ok=True)
    c.to_csv(out / "cases.csv", index=False)
    m = mainloops()
    m.to_csv(out / "plan92-mainloops.csv", index=False)
    print(c[["call", "h", "m", "n", "wave0_us", "drawn_tbs", "rate_gbps", "model_err_pct", "by_n_err_pct"]]
          .to_string(index=False))
    print(f"{len(c)} cases: mean |error| model {c['model_err_pct'].abs().mean():.2f}%, floored at the probe's rate by "
          f"tiles a row {c['by_n_err_pct'].abs().mean():.2f}%")
    print("plan 92 like for like (mainloop against mainloop; % by H):")
    print(m.pivot_table(index=["variant", "h"], columns="predictor", values="err_pct").round(2).to_string())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
