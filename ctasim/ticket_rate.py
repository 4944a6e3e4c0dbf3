"""The tickets design's mainloop factor (``KernelConfig.ticket_mainloop_factor``) from a one-layer microbenchmark.

What is modelled
    The chain kernel's tickets design hands each CTA its next tile from a counter; with ONE layer no tile waits on
    another, so it is a plain GEMM but for its scheduler. The microbenchmark (:data:`RATE_EXPERIMENTS`, the specs of
    registered plan 51: M x H x H, H = 8192 and 12288, M = 8192 and 16384) times it in groups of 8 row-blocks against
    the plain CUTLASS GEMM of the same shape on one GPU (``ctahw calibrate`` or ``ctahw run``). Registered plan 51's
    rule (:func:`rate_cases`, :func:`mainloop_factor`): per case, (measured groups of 8 / measured sequential) over
    (predicted groups of 8 / predicted sequential), the predictions the profile's own at factor 1; the factor is the
    median over the cases, rounded to 3 places.

    The predictions must be under the ticket law the factor will be used with: the law prices the one-layer chain
    kernel too (the next group of row-blocks reads the same weight panels), the partition law 0.5-3.2 points slower
    than the survival law on these cases. Plan 51 divided by the partition profile's predictions and used the factor
    under the survival law, which counted that difference twice (``bench/posthoc_law_factor.py``; registered plan 53
    tested the factor measured under its own law, 1.019, and the profile took it).

Left out
    Any shape dependence beyond these four cases (under the survival law they were within a point of their median on
    plan 51's two machines, as were plan 53's two cases at H = 10240 on a third, and spread two points on a fourth, a
    quick calibration of 5 repetitions); the machine's own part (1.011-1.022 over the four under h200-x1-calibrated:
    ``ctahw calibrate`` measures it per machine); the factor
    applies to the chain kernel's tiles only (not the static design, not the plain GEMM, not the one-CTA-per-tile
    kernels of two GPUs); the run-to-run spread of the ratios (~0.5 point).
"""

from __future__ import annotations

import dataclasses
import statistics
from typing import Sequence

import pandas as pd

from ctasim.accuracy import judge
from ctasim.cases import load_experiment
from ctasim.harness import load_harness
from ctasim.predict import predict
from ctasim.spec import Hardware

__all__ = ["RATE_EXPERIMENTS", "HARNESS", "TICKETS", "PLAIN", "at_factor_one", "rate_cases", "mainloop_factor"]

RATE_EXPERIMENTS = ("reg51-chain-rate-h8192", "reg51-chain-rate-h12288")
"""The microbenchmark: registered plan 51's one-layer specs (``specs/experiments``), 2 cases each."""
HARNESS = "ctahw-timed-2xh200"
"""The timing harness of their registrations (``specs/harness``): ctahw's timed runs."""
TICKETS, PLAIN = "intragpu", "sequential"
"""The two strategies of each case: the chain kernel's tickets design in groups of 8, and the plain GEMM."""


def at_factor_one(hw: Hardware) -> Hardware:
    """``hw`` with every ticket-scheduled config at factor 1, each keeping its own ticket law."""
    return hw.with_tickets(ticket_mainloop_factor=1.0)


def rate_cases(hw: Hardware, measured: pd.DataFrame, experiments: Sequence[str] = RATE_EXPERIMENTS) -> pd.DataFrame:
    """Per microbenchmark case: groups of 8 over sequential, measured (``measured``: ``ctahw run``'s rows of
    ``experiments``, results columns) and as ``hw`` predicts it at factor 1 under its own ticket law, and their ratio
    (the case's factor). ValueError (one line) where a case lacks either measurement."""
    harness = load_harness(HARNESS)
    base = at_factor_one(hw)
    rows = []
    for name in experiments:
        exp = dataclasses.replace(load_experiment(name), hardware=base)
        pred = predict(exp, harness, None)
        meas = measured[measured["experiment"] == name]
        j = judge(pred[pred["source"] == "model"], meas)
        for case, g in j.groupby("case", sort=False):
            t = g.set_index("strategy")
            if not {TICKETS, PLAIN} <= set(t.index) or t.loc[[TICKETS, PLAIN], "measured_ms"].isna().any():
                raise ValueError(f"{name} {case}: the microbenchmark needs both {TICKETS} and {PLAIN} measured")
            meas_ratio = t.loc[TICKETS, "measured_ms"] / t.loc[PLAIN, "measured_ms"]
            pred_ratio = t.loc[TICKETS, "predicted_ms"] / t.loc[PLAIN, "predicted_ms"]
            rows.append({"experiment": name, "case": case, "measured": round(meas_ratio, 5),
                         "predicted": round(pred_ratio, 5), "factor": round(meas_ratio / pred_ratio, 5)})
    if not rows:
        raise ValueError(f"no case of {', '.join(experiments)} measured")
    return pd.DataFrame(rows)


def mainloop_factor(cases: pd.DataFrame) -> float:
    """Plan 51's rule: the median of the cases' factors, rounded to 3 places."""
    return round(float(statistics.median(cases["factor"])), 3)
