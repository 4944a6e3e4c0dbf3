"""Validation: the simulator against measured runs, with a calibration split that keeps judged cases unseen.

Inputs are ``ctahw run`` results (``baselines.csv``: one row per experiment x backend x M x chunk count, with
the median makespan and a compute / comm / copy / idle breakdown).  Each measured row becomes a
:class:`MeasuredCase`; the same plan is built by :mod:`ctasim.strategies` and simulated with a hardware
profile under a :class:`Harness` model (how ``ctahw``'s timing harness launches and times a run), and the
predicted makespan is set beside the measured one.

Calibration split (:func:`fit`): parameters the profile cannot measure directly are estimated from the
*components* of the measured rows at the fitting M values only (per-kernel GEMM event times, copy event
times, idle of the 1- and 2-kernel runs); the makespans of the other M values are the judged cases.  A row
is reported as ``held_out`` only if its M is not a fitting M.

What is fitted, and from what (see docs/validation.md):

* ``KernelConfig.kernel_fixed_ns`` — median over full-grid kernels of (measured kernel time - simulated
  kernel time without it): the case's plan simulated (seed :data:`FIT_SEED`) with ``kernel_fixed_ns = 0``
  and ``max_clock_boost = 1``, so the tile-time variation (``KernelConfig.tile_cv``: the slowest CTA sets
  the kernel's end) is in the model and not absorbed by the fixed part;
* ``Hardware.max_clock_boost`` — the ceiling of the partial-grid tile-rate gain, least squares over
  kernels that fill fewer slots than the GPU has (the same simulated kernel times, scaled by the boost);
* :class:`Harness` ``run_ns`` (start event to first kernel plus last kernel to end event; idle of the
  1-kernel ``gemm`` runs), ``gap_ns`` (between two timed kernels of one stream: idle of ``sequential``
  minus that of ``gemm``) and ``copy_ns`` (fixed part of a timed peer copy: copy event time minus
  bytes / ``copy_engine_gbps``);
* :class:`Harness` ``wait_ns`` and ``hop_ns`` (a kernel's wait on a peer copy's event: the cost of the wait
  command in its own stream, and what the hop from copy to kernel takes beyond ``event_wait_ns``) -- least
  squares of the *makespans* of the micro-batched runs at the fitting M values, with everything above fixed
  (:func:`_fit_waits`): nothing else measured separates them.

Other cross-GPU event hops (the start and end events) use the profile's ``event_wait_ns`` (measured by
``ctahw calibrate``), not a fit.

Left out: cuBLAS rows (another kernel than the profile's tile config), ``remote_d`` (a kernel-level
ratio, fitted by ``ctahw calibrate``), run-to-run spread (one median per case).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ctasim import costs
from ctasim.engine import simulate
from ctasim.harness import Harness, timed_makespan_ns, timed_plans
from ctasim.plan import Plan
from ctasim.spec import Hardware, Layer, Strategy, Workload

__all__ = [
    "Harness",
    "MeasuredCase",
    "FIT_MS",
    "load_cases",
    "harness_plan",
    "predict_ns",
    "fit",
    "apply_fit",
    "validate",
    "summary",
    "choice_agreement",
]

FIT_MS = (2048, 8192)
"""M values whose measured components are used to fit; every other M is judged."""

FIT_SEED = 0
"""Seed of the simulations :func:`fit` compares the kernel event times with (the ``tile_cv`` draws)."""

MAX_FIT_ROUNDS = 2
"""``kernel_fixed_ns`` is fitted on full-grid kernels of at most this many rounds (where it is >= 3% of the time)."""

EXPERIMENTS = ("gemm", "sequential", "microbatch", "tp")
STRATEGY_OF = {"gemm": "gemm", "sequential": "sequential", "microbatch": "microbatch", "tp": "tp"}


@dataclass(frozen=True)
class MeasuredCase:
    """One measured row: what ran (experiment, M, chunk count) and what was measured (ms, breakdown)."""

    experiment: str
    backend: str
    m: int
    h: int
    chunks: int
    median_ms: float
    compute_ms: float
    copy_ms: float
    idle_ms: float
    run: str = ""

    @property
    def label(self) -> str:
        return f"{self.experiment} M={self.m}" + (f" c={self.chunks}" if self.experiment == "microbatch" else "")

    def workload(self, tile: tuple[int, int] = (128, 256)) -> Workload:
        layer = Layer(self.m, self.h, self.h, *tile)
        layers = (layer,) if self.experiment == "gemm" else (layer, layer)
        return Workload(f"chain{len(layers)}-{self.m}", "bf16", layers)

    def strategy(self) -> tuple[Strategy, int]:
        """The strategy and GPU count that build the measured plan."""
        if self.experiment in ("gemm", "sequential"):
            return Strategy("sequential"), 1
        if self.experiment == "microbatch":
            return Strategy("microbatch", chunks=(self.chunks,)), 2
        if self.experiment == "tp":
            return Strategy("tp", tp_degree=2), 2
        raise ValueError(f"no plan for experiment {self.experiment!r}")

    @property
    def kernels_per_gpu(self) -> int:
        """Timed GEMM kernels one GPU runs (the breakdown's ``compute_ms`` is their sum, mean over GPUs)."""
        return {"gemm": 1, "sequential": 2, "tp": 2}.get(self.experiment, self.chunks)


class ValidationInputError(ValueError):
    """A results folder or file the validation cannot read; the message names it (one line)."""


def load_cases(results_dir: str | Path, backend: str = "cutlass") -> list[MeasuredCase]:
    """The measured rows of one ``ctahw run`` results folder that the simulator models."""
    path = Path(results_dir) / "baselines.csv"
    if not path.is_file():
        raise ValidationInputError(f"{path}: no such file (a `ctahw run` results folder holds baselines.csv)")
    try:
        df = pd.read_csv(path)
        df = df[df["experiment"].isin(EXPERIMENTS) & (df["backend"] == backend) & df["ok"].astype(bool)]
        needed = ["m", "k", "chunks", "median_ms", "compute_ms", "copy_ms", "idle_ms"]
        if df[needed].astype(float).isna().any().any():
            raise ValueError("rows with missing values (a truncated file?)")
    except (ValueError, KeyError, UnicodeDecodeError, pd.errors.ParserError) as e:
        raise ValidationInputError(f"{path}: not a ctahw run baselines.csv ({type(e).__name__}: "
                                   f"{str(e).splitlines()[0] if str(e) else e!r})") from None
    return [MeasuredCase(r.experiment, r.backend, int(r.m), int(r.k), int(r.chunks), float(r.median_ms),
                         float(r.compute_ms), float(r.copy_ms), float(r.idle_ms), Path(results_dir).name)
            for r in df.itertuples()]


# ------------------------------------------------------------------------------------------------ simulation
def harness_plan(case: MeasuredCase, hw: Hardware, harness: Harness) -> Plan:
    """The measured case's plan with the harness's launch delays (:func:`ctasim.harness.timed_plans`)."""
    strategy, gpus = case.strategy()
    return timed_plans(strategy, case.workload(), hw, gpus, case.label, harness)[0]


def predict_ns(case: MeasuredCase, hw: Hardware, harness: Harness) -> float:
    """Predicted makespan of the case as the harness times it: start event to end event on GPU 0."""
    return timed_makespan_ns(harness_plan(case, hw, harness), hw, harness)[0]


# ------------------------------------------------------------------------------------------------ fitting
def _kernel_rows(cases: list[MeasuredCase], hw: Hardware, harness: Harness | None = None) -> pd.DataFrame:
    """Per measured run: one GEMM kernel's mean event time, its tile count, rounds and modelled tile time.

    With ``harness``, also ``sim_ns``: the mean simulated time of the case's GEMM kernels (the plan of
    :func:`harness_plan` on ``hw``, seed :data:`FIT_SEED`), tile-time variation included."""
    rows = []
    for c in cases:
        if c.experiment not in ("gemm", "sequential", "microbatch"):
            continue  # TP mixes two kernel shapes in one compute figure
        layer = Layer(c.m // max(c.chunks, 1), c.h, c.h, 128, 256)
        cfg = hw.config(layer.tile_m, layer.tile_n)
        slots = hw.sm_count * cfg.cta_slots_per_sm
        tile = costs.tile_ns(layer, layer.k, hw, 2)
        row = {"case": c.label, "m": c.m, "tiles": layer.tiles, "slots": slots,
               "rounds": -(-layer.tiles // slots), "tile_ns": tile,
               "kernel_ns": c.compute_ms * 1e6 / c.kernels_per_gpu}
        if harness is not None:
            plan = harness_plan(c, hw, harness)
            ops = simulate(plan, hw, seed=FIT_SEED).ops
            k = ops[ops["kind"] == "kernel"]
            row["sim_ns"] = float((k["t_end"] - k["t_begin"]).mean())
        rows.append(row)
    return pd.DataFrame(rows)


def fit(cases: list[MeasuredCase], hw: Hardware, fit_ms=FIT_MS) -> tuple[dict, Harness, pd.DataFrame]:
    """Fit the unmeasured parameters on the components of the cases whose M is in ``fit_ms``.

    Returns ``(profile_fields, harness, evidence)``: ``profile_fields`` = ``{"kernel_fixed_ns": ...,
    "max_clock_boost": ...}`` for the profile's 128x256 config, the harness, and one row per parameter
    saying what it was fitted to.
    """
    train = [c for c in cases if c.m in fit_ms]
    if not train:
        raise ValueError(f"no measured case at the fitting M values {fit_ms}")

    def one(exp):
        return {c.m: c for c in train if c.experiment == exp}

    gemm, seq = one("gemm"), one("sequential")
    run_ns = float(np.median([c.idle_ms * 1e6 for c in gemm.values()]))
    gap_ns = float(np.median([(seq[m].idle_ms - gemm[m].idle_ms) * 1e6 for m in seq if m in gemm]))
    copies = []
    for c in train:
        if c.experiment == "microbatch":
            nbytes = c.m // c.chunks * c.h * 2
            # copy_ms is summed over the copying GPUs (one here): per copy, minus the bandwidth term.
            copies.append(c.copy_ms * 1e6 / c.chunks - nbytes / hw.copy_engine_gbps - hw.link_latency_ns)
    copy_ns = float(np.median(copies)) if copies else 0.0
    harness = Harness(run_ns, gap_ns, copy_ns)
    # The kernels simulated without the two fitted parameters (tile-time variation in, seeded): the fixed part
    # is what the measured kernel takes beyond them; the boost scales their tile times (not the fixed part).
    hw0 = apply_fit(hw, {"kernel_fixed_ns": 0.0, "max_clock_boost": 1.0})
    k = _kernel_rows(train, hw0, harness)
    # Short kernels only: in a kernel of many rounds the fixed part is < 1% of its time, below the spread of
    # the tile rate between tile orders, so it says nothing about the fixed part.
    full = k[(k["tiles"] >= k["slots"]) & (k["rounds"] <= MAX_FIT_ROUNDS)]
    fixed = float(np.median(full["kernel_ns"] - full["sim_ns"]))
    part = k[k["tiles"] < k["slots"]]
    grid = np.round(np.arange(1.0, 1.5001, 0.001), 3)

    def loss(b):
        hw_b = dataclasses.replace(hw, max_clock_boost=float(b))
        pred = fixed + part["sim_ns"] / [costs.clock_boost(hw_b, t, s) for t, s in zip(part["tiles"], part["slots"])]
        return float((((pred - part["kernel_ns"]) / part["kernel_ns"]) ** 2).sum())

    boost = float(grid[int(np.argmin([loss(b) for b in grid]))]) if len(part) else 1.0
    fitted = {"kernel_fixed_ns": fixed, "max_clock_boost": boost}
    mb = [c for c in train if c.experiment == "microbatch"]
    harness, waits = _fit_waits(mb, apply_fit(hw, fitted), harness)

    ms = ", ".join(str(m) for m in fit_ms)
    evidence = pd.DataFrame([
        {"parameter": "kernel_config[128x256].kernel_fixed_ns", "value": round(fixed, 1),
         "fitted to": f"median of (kernel event time - simulated kernel time, tile_cv {hw.config(128, 256).tile_cv:g} seed {FIT_SEED}) over {len(full)} full-grid kernels of <= {MAX_FIT_ROUNDS} rounds, M in {{{ms}}}"},
        {"parameter": "max_clock_boost", "value": round(boost, 3),
         "fitted to": f"least squares (relative) over {len(part)} partial-grid kernels (simulated kernel time / boost), M in {{{ms}}}"},
        {"parameter": "harness.run_ns", "value": round(run_ns, 1),
         "fitted to": f"median idle of the 1-kernel gemm runs, M in {{{ms}}}"},
        {"parameter": "harness.gap_ns", "value": round(gap_ns, 1),
         "fitted to": f"median idle(sequential) - idle(gemm), M in {{{ms}}}"},
        {"parameter": "harness.copy_ns", "value": round(copy_ns, 1),
         "fitted to": f"median (copy event time - bytes/copy_engine_gbps - link_latency_ns) over {len(copies)} micro-batched runs, M in {{{ms}}}"},
        {"parameter": "harness.wait_ns", "value": round(harness.wait_ns, 1),
         "fitted to": f"least squares of the makespan over {len(mb)} micro-batched runs (with hop_ns), their kernels at the measured event time, M in {{{ms}}}; {waits}"},
        {"parameter": "harness.hop_ns", "value": round(harness.hop_ns, 1),
         "fitted to": f"same fit: a wait on a peer copy's event beyond event_wait_ns = {hw.event_wait_ns:g} ns"},
    ])
    return fitted, harness, evidence


def _at_measured_kernel_time(case: MeasuredCase, hw: Hardware, harness: Harness) -> Hardware:
    """``hw`` with the default 128x256 config's times (tile rate, per-tile and per-kernel fixed parts) scaled so
    that the case's simulated GEMM kernel takes its measured event time (``compute_ms`` per kernel): what is left
    of the makespan error is the harness's."""
    k = _kernel_rows([case], hw, harness).iloc[0]
    f = float(k["sim_ns"] / k["kernel_ns"])
    configs = tuple(dataclasses.replace(c, sm_tflops=c.sm_tflops * f, tile_fixed_ns=c.tile_fixed_ns / f,
                                        kernel_fixed_ns=c.kernel_fixed_ns / f)
                    if (c.tile_m, c.tile_n) == (128, 256) and not c.kernel else c for c in hw.kernel_configs)
    return dataclasses.replace(hw, kernel_configs=configs)


def _fit_waits(cases: list[MeasuredCase], hw: Hardware, harness: Harness, rounds: int = 3) -> tuple[Harness, str]:
    """``Harness.wait_ns`` and ``hop_ns``: least squares of the micro-batched makespans over the two, each
    case simulated with its GEMM kernels at their measured event time (:func:`_at_measured_kernel_time`), so
    that kernel-model error is not absorbed (without this the two drift with the split: 3.8 / 15.9 us on
    M = 2048, 8192 but 1.1 / 36.9 us on the other M values).

    The makespan is piecewise linear in them (the critical path can switch between the copy chain and the
    last GPU's stream), so the fit is linearised: the sensitivity of every case to 1 us of each is simulated
    at the current values, the linear least-squares step is taken, and this is repeated ``rounds`` times
    (it settles in two).  Both are kept >= 0.  Returns the harness and a line of evidence.
    """
    if not cases:
        return harness, "no micro-batched run"
    measured = np.array([c.median_ms * 1e6 for c in cases])
    hws = [_at_measured_kernel_time(c, hw, harness) for c in cases]

    def residual(h: Harness) -> np.ndarray:
        return np.array([predict_ns(c, hc, h) for c, hc in zip(cases, hws)]) - measured

    step = 1000.0
    for _ in range(rounds):
        r0 = residual(harness)
        a = np.column_stack([(residual(dataclasses.replace(harness, **{f: getattr(harness, f) + step})) - r0) / step
                             for f in ("wait_ns", "hop_ns")])
        x, *_ = np.linalg.lstsq(a, -r0, rcond=None)
        harness = dataclasses.replace(harness, wait_ns=max(0.0, harness.wait_ns + float(x[0])),
                                      hop_ns=max(0.0, harness.hop_ns + float(x[1])))
    r = np.abs(residual(harness))
    return harness, f"residual (kernels at their measured time) median {np.median(r) / 1e3:.1f} us, max {r.max() / 1e3:.1f} us"


def apply_fit(hw: Hardware, fields: dict, tile: tuple[int, int] = (128, 256)) -> Hardware:
    """The profile with fitted ``kernel_fixed_ns`` (on the ``tile`` config) and ``max_clock_boost``."""
    configs = tuple(dataclasses.replace(c, kernel_fixed_ns=fields["kernel_fixed_ns"])
                    if (c.tile_m, c.tile_n) == tile else c for c in hw.kernel_configs)
    return dataclasses.replace(hw, kernel_configs=configs, max_clock_boost=fields["max_clock_boost"])


# ------------------------------------------------------------------------------------------------ judging
def validate(cases: list[MeasuredCase], hw: Hardware, harness: Harness, fit_ms=FIT_MS) -> pd.DataFrame:
    """One row per case: measured and predicted makespan, signed error, and whether its M was fitted."""
    rows = []
    for c in cases:
        pred = predict_ns(c, hw, harness) / 1e6
        rows.append({"run": c.run, "experiment": c.experiment, "strategy": STRATEGY_OF[c.experiment],
                     "m": c.m, "chunks": c.chunks, "case": c.label,
                     "role": "fitted" if c.m in fit_ms else "held_out",
                     "measured_ms": c.median_ms, "simulated_ms": pred,
                     "error": (pred - c.median_ms) / c.median_ms})
    return pd.DataFrame(rows)


def summary(df: pd.DataFrame, by: str = "strategy") -> pd.DataFrame:
    """MAPE and worst |error| per ``by`` over the held-out rows, plus an ``all`` row."""
    held = df[df["role"] == "held_out"]
    out = []
    for key, g in list(held.groupby(by, sort=False)) + [("all", held)]:
        worst = g.loc[g["error"].abs().idxmax()]
        out.append({by: key, "cases": len(g), "mape_pct": 100 * g["error"].abs().mean(),
                    "worst_pct": 100 * worst["error"], "worst_case": worst["case"]})
    return pd.DataFrame(out)


def choice_agreement(df: pd.DataFrame) -> pd.DataFrame:
    """Per M: the best micro-batching chunk count and the ranking of strategies, measured vs simulated.

    Strategies are ranked by makespan, micro-batching at its own best chunk count (``gemm`` is not a
    strategy and is left out).
    """
    rows = []
    for m, g in df.groupby("m"):
        mb = g[g["strategy"] == "microbatch"]
        best_meas = int(mb.loc[mb["measured_ms"].idxmin(), "chunks"]) if len(mb) else -1
        best_sim = int(mb.loc[mb["simulated_ms"].idxmin(), "chunks"]) if len(mb) else -1
        strat = g[g["strategy"] != "gemm"].groupby("strategy")[["measured_ms", "simulated_ms"]].min()
        rank_meas = " < ".join(strat["measured_ms"].sort_values().index)
        rank_sim = " < ".join(strat["simulated_ms"].sort_values().index)
        margin = (mb["measured_ms"].nsmallest(2).iloc[-1] / mb["measured_ms"].min() - 1) if len(mb) > 1 else math.nan
        rows.append({"m": m, "role": g["role"].iloc[0], "best_chunks_measured": best_meas,
                     "best_chunks_simulated": best_sim, "best_chunks_agree": best_meas == best_sim,
                     "runner_up_margin_pct": 100 * margin,
                     "ranking_measured": rank_meas, "ranking_simulated": rank_sim,
                     "ranking_agrees": rank_meas == rank_sim})
    return pd.DataFrame(rows)
