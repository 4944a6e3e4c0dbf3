"""Fit ``sm_remote_store_gbps`` to the measured cost of a GEMM whose output D lives on the peer GPU.

    python bench/fit_remote_store.py

Measurement (../shared/DEVICE.md, nvidia-h200-x2, 2026-11-29): CUTLASS cooperative 128x256 bf16 GEMM,
M=16384 N=K=8192, local D 2.93 ms -> remote D 3.34 ms (+14.0%).  The model (``epilogue_store_overlap = 0``)
is fitted to that one ratio by bisection; the other measured points are held out and reported beside the
prediction: pingpong 128x128 at M=16384 3.09 -> 3.52 ms (+13.9%); "~0-5%" at M=4096; "~10-17%" at M=1024.
Writes ``bench/results/sim/remote_store_fit.csv``.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's ctasim, not an installed one

import pandas as pd  # noqa: E402

from ctasim.cliargs import OneLineParser  # noqa: E402
from ctasim.engine import simulate  # noqa: E402
from ctasim.spec import Layer, Strategy, Workload, load_hardware  # noqa: E402
from ctasim.strategies import build_plans  # noqa: E402

TARGET = ("cooperative 128x256", 16384, (128, 256), 2.93, 3.34)
HELD_OUT = [
    ("pingpong 128x128", 16384, (128, 128), 3.09, 3.52),
    ("cooperative 128x256", 4096, (128, 256), None, (1.00, 1.05)),
    ("cooperative 128x256", 1024, (128, 256), None, (1.10, 1.17)),
]


def slowdown(hw, m: int, tile: tuple[int, int]) -> float:
    layer = Layer(m, 8192, 8192, *tile)
    remote = simulate(build_plans(Strategy("ctapipe"), Workload("w", "bf16", (layer, layer)), hw, 2, "r")[0], hw)
    local = simulate(build_plans(Strategy("sequential"), Workload("w", "bf16", (layer,)), hw, 1, "l")[0], hw)
    span = lambda tr: tr.ops.iloc[0].t_end - tr.ops.iloc[0].t_begin  # the producer kernel alone
    return span(remote) / span(local)


def main(argv: list[str] | None = None) -> int:
    OneLineParser(prog="python bench/fit_remote_store.py", description=__doc__.splitlines()[0]).parse_args(argv or [])
    base = dataclasses.replace(load_hardware("h200-x2"), epilogue_store_overlap=0.0)
    name, m, tile, t_local, t_remote = TARGET
    target = t_remote / t_local
    lo, hi = 0.5, 500.0
    for _ in range(50):
        mid = (lo * hi) ** 0.5
        if slowdown(dataclasses.replace(base, sm_remote_store_gbps=mid), m, tile) > target:
            lo = mid
        else:
            hi = mid
    fitted = round(mid, 2)
    hw = dataclasses.replace(base, sm_remote_store_gbps=fitted)
    rows = [{"kernel": name, "m": m, "role": "fitted", "measured": f"{target:.3f}",
             "predicted": round(slowdown(hw, m, tile), 3)}]
    for name, m, tile, t_local, meas in HELD_OUT:
        measured = f"{meas / t_local:.3f}" if t_local else f"{meas[0]:.2f}-{meas[1]:.2f}"
        rows.append({"kernel": name, "m": m, "role": "held out", "measured": measured,
                     "predicted": round(slowdown(hw, m, tile), 3)})
    df = pd.DataFrame(rows)
    print(f"sm_remote_store_gbps = {fitted} (profile h200-x2 has {load_hardware('h200-x2').sm_remote_store_gbps})")
    print(df.to_string(index=False))
    out = Path(__file__).resolve().parent / "results" / "sim" / "remote_store_fit.csv"
    df.to_csv(out, index=False)
    from provenance import provenance

    prov = provenance("python bench/fit_remote_store.py")
    prov["fitted_sm_remote_store_gbps"] = fitted
    out.with_suffix(".provenance.json").write_text(json.dumps(prov, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
