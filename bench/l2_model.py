"""The L2-reuse model of the CUTLASS GEMM (ctasim.l2) against the measured tile orders of one H200.

    python bench/l2_model.py

Data: bench/results/hw/2026-12-01-gemm-shapes/gemm_shapes.csv (27 shapes x 12 tile orders, CUTLASS 128x256x64,
cluster 2x1, persistent grid of 132 CTAs; bench/hw/gemm_shape_probe.py).

Calibration split, fixed in this file before the rest of the data was fitted or compared with the model:

* CALIBRATION: the K = 8192, N = 8192 shapes (M = 2048, 4096, 8192, 12288, 16384, 32768) at all 12 tile orders
  (72 runs). The model's constants are fitted on these only; so are the two naive predictors.
* HELD OUT: every other shape at all 12 tile orders (252 runs): N = 4096, 14336, 28672 at K = 8192 (new N), and
  M = 16384, N = 8192 at K = 4096, 14336, 28672 (new K).

Post-hoc: the team had already looked at the whole gemm-shapes table (its README summarises it); only this split
is held out from the choices made here.
"""

from __future__ import annotations

CAL_N, CAL_K = 8192, 8192


def is_calibration(m: int, n: int, k: int) -> bool:
    """The calibration subset: N = 8192, K = 8192, every M, every tile order."""
    return n == CAL_N and k == CAL_K
