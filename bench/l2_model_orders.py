"""Where the L2 model misses on large GEMMs: its error per tile order, on both machines' tile-order probes (post-hoc).

    python bench/l2_model_orders.py [--out bench/results/l2-model/orders.csv]

Data: the 27-shape x 12-order probes of two H200s (bench/results/hw/2026-12-01-gemm-shapes, the machine the
constants were fitted on; bench/results/hw/2026-12-02-registered7-1gpu/diag, the machine of registered plan 7).
Model: ctasim.l2 with the committed constants of h200-x1-calibrated (rate 6.64 TFLOP/s a slot, exposed 0.19, L2 60
MiB, HBM 4257 GB/s), the same as bench/l2_model.py.

Prints, for the five largest-error shapes and a small one, every order's error and its modelled HBM traffic; then
the calibration-split refit at L2 efficiencies 0.3-1.0 (how much the capacity matters). Writes every run's error to
``--out``. Post-hoc: this looks at data already seen; nothing here is a registered figure.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

import l2_model as L  # noqa: E402

from ctasim import calibration as C  # noqa: E402
from ctasim.cliargs import OneLineParser, parse_outputs  # noqa: E402

MACHINES = {"A (2026-12-01)": ROOT / "bench/results/hw/2026-12-01-gemm-shapes/gemm_shapes.csv",
            "B (2026-12-02)": ROOT / "bench/results/hw/2026-12-02-registered7-1gpu/diag/gemm_shapes.csv"}
SHAPES = [(32768, 28672, 8192), (16384, 28672, 8192), (16384, 8192, 28672), (32768, 8192, 8192), (4096, 8192, 8192)]
RATE, EXPOSED = 6.64, 0.19  # h200-x1-calibrated: l2_sm_tflops, l2_hbm_exposed


def main(argv=None) -> int:
    ap = OneLineParser(prog="python bench/l2_model_orders.py", description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "bench/results/l2-model/orders.csv")
    args = parse_outputs(ap, argv, files=("--out",))
    rows = []
    for name, path in MACHINES.items():
        d = L.load(path)
        tr = C.run_traffic(d, L.L2_BYTES, sm_count=L.SLOTS)
        d["predicted_ns"] = L.predict_l2(d, {1.0: tr}, RATE, L.HBM_GBPS, EXPOSED, 1.0)
        d["error"] = d.predicted_ns / d.ns - 1
        d["hbm_gb"] = [t.hbm.sum() / 1e9 for t in tr]
        d["machine"] = name
        rows.append(d[["machine", "m", "n", "k", "order", "ns", "predicted_ns", "error", "hbm_gb"]])
        print(f"machine {name}: error (predicted / measured - 1) per order, fastest first; modelled HBM GB")
        for m, n, k in SHAPES:
            g = d[(d.m == m) & (d.n == n) & (d.k == k)].sort_values("ns")
            print(f"  {m} x {n} x {k}: " + "  ".join(f"{o}: {100 * e:+.1f}% ({h:.0f})"
                                                   for o, e, h in zip(g.order, g.error, g.hbm_gb)))
    out = pd.concat(rows, ignore_index=True)
    by = out.assign(swizzle=out.order.str.split("swizzle").str[1].astype(int),
                    large=(out.m * out.n * out.k) >= 16384 * 8192 * 28672 // 2)
    print("\nmean error by swizzle, shapes of >= 2 TFLOP (2 x M x N x K):")
    print((100 * by[by.large].groupby(["machine", "swizzle"]).error.mean()).round(2).unstack().to_string())
    a = L.load(MACHINES["A (2026-12-01)"])
    effs = (0.3, 0.5, 0.7, 1.0)
    tra = {e: C.run_traffic(a, L.L2_BYTES, l2_efficiency=e, sm_count=L.SLOTS) for e in effs}
    print("\nrefit on the calibration split at each L2 efficiency (capacity x efficiency):")
    for e in effs:
        c = L.fit(a, tra, dict(rate=C.RATE_GRID, hbm=[L.HBM_GBPS], exposed=np.round(np.arange(0.0, 0.5001, 0.01), 4),
                               eff=[e]))
        p = L.predict_l2(a, tra, c.rate, L.HBM_GBPS, c.exposed, e)
        ho = ~a.cal.values
        ea = p[ho] / a.ns.values[ho] - 1
        print(f"  efficiency {e}: rate {c.rate:.2f}, exposed {c.exposed:.2f}, "
              f"calibration {100 * c.mean_abs_error:.2f}%, "
              f"held-out MAPE {100 * np.abs(ea).mean():.2f}% bias {100 * ea.mean():+.2f}%")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    out.to_csv(args.out, index=False, float_format="%.6g")
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
