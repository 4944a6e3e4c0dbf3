"""Post-hoc: registered plan 21 with the fused activations' measured factors (no GPU).

    python bench/posthoc_activation.py [--out bench/results/posthoc-activation]

Plan 21 was predicted with every fused activation at the erf-GeLU's epilogue cost; afterwards the same GEMM was timed
with silu and relu fused (``bench/results/hw/2026-12-02-activation-costs``): relu costs nothing, silu 1.19 times the
GeLU; later the plain GEMM on a ReLU'd A (``bench/results/hw/2026-12-03-padded-orders-relu-input``): 0.946 of its
time on random A (``relu_input_tile_factor``). Each of plan 21's block experiments is predicted again with
h200-x1-calibrated as it is now (both in), without the ReLU input (``interleaved (no relu input)``: the factors only),
and as registered (``silu_epilogue_factor`` = ``relu_epilogue_factor`` = ``relu_input_tile_factor`` = 1, which gives
the registered figures back), judged against both committed measurements. Post-hoc: OPT-66B's over-prediction was
seen before either was measured. Plan 22's blocks (OPT-30B's ReLU input) too, on its three machines, with the profile
as it is now and without the ReLU input (``interleaved (no relu input)``: plan 22's registered profile, which gives its
registered figures back). Writes ``cases.csv`` and ``summary.csv`` (MAPE, worst, bias per run and predictor over the 10 blocks) and
prints the summary.
The profiles are taken with the clock's one step (``ctasim.predict.one_step``), as the plans judged here were
registered; ``bench/posthoc_clock_curve.py`` judges the clock curve. "As it is now" is as of the table (2026-12-03):
a panel's reuse across waves an LRU of the whole L2, as before registered plan 67's adoption on an H200
(``ctasim.profiles.before_h200_reuse``).
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import pandas as pd  # noqa: E402
from plan_judge import blocks  # noqa: E402
from posthoc_drift_form import judged, write  # noqa: E402

from ctasim.cliargs import OneLineParser, parse_outputs  # noqa: E402
from ctasim.predict import one_step  # noqa: E402
from ctasim.profiles import before_h200_reuse  # noqa: E402
from ctasim.spec import load_hardware  # noqa: E402

RUNS = ("2026-12-02-registered21-1gpu", "2026-12-02-registered21-1gpu-run2")
RUNS22 = ("2026-12-03-registered22-1gpu", "2026-12-03-registered22-1gpu-run2", "2026-12-03-registered22-23-1gpu-run3")


def main(argv=None) -> int:
    ap = OneLineParser(prog="python bench/posthoc_activation.py", description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "bench/results/posthoc-activation")
    args = parse_outputs(ap, argv, folders=("--out",))
    hw = before_h200_reuse(load_hardware("h200-x1-calibrated"))  # a table made before plan 67's adoption on an H200
    hw = one_step(hw)  # the clock's one step, as plans 21 and 22 were registered
    preds = {"interleaved": (hw, ("model",)),
             "interleaved (no relu input)": (dataclasses.replace(hw, relu_input_tile_factor=1.0), ("model",)),
             "interleaved (registered)": (dataclasses.replace(hw, silu_epilogue_factor=1.0, relu_epilogue_factor=1.0,
                                                              relu_input_tile_factor=1.0), ("model",))}
    preds22 = {k: v for k, v in preds.items() if k != "interleaved (registered)"}
    write(pd.concat([judged(run, name, preds) for run in RUNS for name in blocks(21)]
                    + [judged(run, name, preds22) for run in RUNS22 for name in blocks(22)], ignore_index=True), args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
