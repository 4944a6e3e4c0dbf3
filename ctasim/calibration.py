"""The memory hierarchy's constants from measurements: the L2 fit of the tile-order probe, the CTAs' drift from
per-tile traces (no GPU; what ``ctahw calibrate`` and the bench scripts derive them with).

What is derived
    * **The L2 constants** (:func:`fit_l2_constants`, :func:`grid_fit`): a profile's ``l2_sm_tflops`` (the rate of
      a CTA slot with every operand in L2, of the 128x256 config) and ``l2_hbm_exposed`` (the share of a wave's HBM
      time its math does not hide), fitted to the CUTLASS GEMM timed at its tile orders (the tile-order probe,
      ``ctahw.tile_orders.time_orders``). Each run is modelled as :mod:`ctasim.l2` times it: the wave traffic of its
      CUTLASS launch order (:func:`ctasim.l2.cutlass_sm90_order`, persistent grid, W multicast to ``cluster_m``
      row-blocks, the CTAs drifting apart by ``drift``), each wave ``max(compute + exposed x t_hbm, t_hbm)``, the
      compute ``tile_fixed_ns + 2 x 128 x 256 x K / rate``. Taken as measured, not fitted: ``l2_bytes``,
      ``hbm_gbps``, ``tile_fixed_ns`` and the drift. The fit is a grid search for the least mean |relative error|
      over the runs at the calibration split (:data:`CALIBRATION_N`, :data:`CALIBRATION_K`: every M, every order);
      on ties the first grid point (rate, then HBM rate, then exposed, then L2 efficiency, each ascending) wins.
    * **The drift** (:func:`trace_drift`, :func:`cta_drift`): from a per-tile trace of the plain persistent GEMM
      (``ctahw.tile_orders.trace_orders``), the growth per round of the spread (standard deviation) of the tiles'
      start times within a round, in units of the mainloop of rounds 1-3 (the lockstep start): the slope of a
      least-squares line over rounds 1 .. last - 1 (round 0 starts together by construction, the last round is
      partial). A profile's ``cta_drift`` is the median over the traces.
    * **The one-CTA-per-tile steps** (:func:`percta_steps`, :func:`percta_medians`): from a per-tile trace of the
      CTA-pipelined producer kernel of variant (a) (one CTA per tile, non-persistent grid; ``ctahw.percta`` runs it on
      one GPU with its output and scoreboard in that GPU's memory), the tiles' grid waves (``cta // slots``), the
      median mainloop (``t_mainloop_end - t_acquire``) of waves 0-1 and of waves >= 2, the exposed epilogue
      (``t_compute_end - t_mainloop_end``), the store-complete step (``t_store_end - t_compute_end``), the signal step
      (``t_signal - t_store_end``) and the CTA's hold after its compute (exit - compute end, exit = the later of store
      end and signal), each over waves >= 2, and the CTA turnover (a CTA's ``t_acquire`` minus the exit of the CTA
      before it on the same SM, CTAs of an SM in ``t_start`` order): the definitions ``ctasim.validation.ctapipe``
      fits ``tile_fixed_ns``, ``cta_launch_ns`` and ``signal_ns`` with on the 2-GPU traces, measured here without a
      second GPU.
    * **The ticket spread** (:func:`window_spans`, :func:`span_rate`, :func:`ticket_spread`): from a per-tile trace of
      a kernel that hands out its tiles in order as CTAs free (the chain kernel's tickets), the span of the start
      times of each window of ``slots`` consecutive tiles by start, in median mainloops, and its growth per window
      (a line over windows >= 1 while the span is below :data:`SPAN_SATURATED`); a profile's ``ticket_spread`` is the
      median over the traces. What grows the span (:func:`cta_cycles`, :func:`cta_pace_range`): each CTA's mean time
      from one tile to its next; a grid whose CTAs keep their own paces spreads by their range a window.
    * **The sharers' gap spread** (:func:`sharer_gaps`, :func:`gap_cv`): from the same kind of trace in pairs of
      row-blocks, each later sharer of a W panel's time after the sharer before over the reach the ticket laws price
      it at; a profile's ``ticket_gap_cv`` (``ctasim.l2.gap_survival``) is the median over the traces of their
      coefficient of variation.

Left out
    Which tile orders and shapes to run (the probes decide; :data:`CALIBRATION_MS` is the committed split); an L2
    efficiency below 1 and an HBM rate other than the measured copy rate in the profile's fit (:func:`grid_fit`
    takes grids of both for the bench scripts' comparisons); the spread of the drift between traces (reported, not
    modelled: one constant per profile); any clock or power effect on the timed runs (the probe rests the GPU
    before each one). For the one-CTA-per-tile steps: the wave slowdown's ramp and the tile-time variation (the
    2-GPU fit's ``wave_slowdown`` and ``tile_cv``), and the remote store (the probe's stores are local, so its store
    and signal steps are a lower bound of the NVLink ones).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from ctasim.l2 import RASTERS, WaveTraffic, cutlass_sm90_grid_ctas, cutlass_sm90_order, gemm_ns, wave_traffic

__all__ = [
    "TILE_M", "TILE_N", "ELEM_BYTES", "CALIBRATION_N", "CALIBRATION_K", "CALIBRATION_MS", "RATE_GRID", "EXPOSED_GRID",
    "is_calibration", "calibration_shapes", "tile_order_table", "run_traffic", "compute_ns", "predict_ns", "GridFit",
    "grid_fit", "fit_l2_constants", "tile_rounds", "trace_drift", "cta_drift", "PERCTA_COLUMNS", "PERCTA_STEPS", "percta_table",
    "percta_turnover", "percta_steps", "percta_medians", "SPAN_SATURATED", "window_spans", "span_rate", "cta_cycles",
    "cta_pace_range", "ticket_spread", "local_signal", "GAP_MIN_TICKETS", "sharer_gaps", "gap_cv",
]

TILE_M, TILE_N, ELEM_BYTES = 128, 256, 2
"""The kernel config the constants belong to: ctahw's CUTLASS GEMM, 128x256x64 tiles, bf16 operands."""
CALIBRATION_N = CALIBRATION_K = 8192
"""The calibration split of the tile-order probe: N = K = 8192 (fixed in ``bench/l2_model.py`` before any fit)."""
CALIBRATION_MS = (2048, 4096, 8192, 12288, 16384, 32768)
"""The calibration split's M values (6 shapes x 12 tile orders: 72 runs;
``bench/results/hw/2026-12-01-gemm-shapes``)."""
RATE_GRID = np.round(np.arange(6.30, 7.001, 0.01), 4)
"""Grid of ``l2_sm_tflops`` (TFLOP/s a slot): ``bench/l2_model.py``'s grid, around the 128x256 config's measured
6.28 (the rate with misses) and above it."""
EXPOSED_GRID = np.round(np.arange(0.0, 0.5001, 0.005), 4)
"""Grid of ``l2_hbm_exposed``: ``bench/l2_model.py``'s grid (0 = roofline; 0.5 = half the HBM time exposed)."""

_PROBE_COLUMNS = ("m", "n", "k", "backend", "order", "median_ms")
_TRACE_COLUMNS = ("cta", "t_acquire", "t_mainloop_end")


def is_calibration(m: int, n: int, k: int) -> bool:
    """The calibration subset: N = K = 8192, every M, every tile order."""
    return n == CALIBRATION_N and k == CALIBRATION_K


def calibration_shapes() -> list[tuple[int, int, int]]:
    """(M, N, K) of the calibration split, the shapes ``ctahw calibrate`` times at every tile order."""
    return [(m, CALIBRATION_N, CALIBRATION_K) for m in CALIBRATION_MS]


def tile_order_table(table: pd.DataFrame, where: str = "tile-order table") -> pd.DataFrame:
    """The CUTLASS runs of a tile-order probe's table (columns m, n, k, backend, order ``raster/swizzleS``,
    median_ms), index reset, with ``raster``, ``swizzle``, ``cal`` (:func:`is_calibration`), ``flops`` and ``ns``
    added. ValueError (one line naming ``where``) on a missing column, an unknown order or a time <= 0."""
    missing = [c for c in _PROBE_COLUMNS if c not in table.columns]
    if missing:
        raise ValueError(f"{where}: no column {', '.join(missing)} "
                         f"(a tile-order probe has {', '.join(_PROBE_COLUMNS)})")
    d = table[table.backend == "cutlass"].copy()
    if d.empty:
        raise ValueError(f"{where}: no cutlass runs")
    parts = d.order.astype(str).str.split("/swizzle")
    bad = [o for o, p in zip(d.order, parts) if len(p) != 2 or p[0] not in RASTERS or not p[1].isdigit()]
    if bad:
        raise ValueError(f"{where}: order {bad[0]!r} is not raster/swizzleS with raster one of {', '.join(RASTERS)}")
    d["raster"] = d.order.str.split("/").str[0]
    d["swizzle"] = d.order.str.split("swizzle").str[1].astype(int)
    d["cal"] = [is_calibration(m, n, k) for m, n, k in zip(d.m, d.n, d.k)]
    d["flops"] = 2.0 * d.m * d.n * d.k
    d["ns"] = d.median_ms * 1e6
    if not (np.isfinite(d.ns) & (d.ns > 0)).all():
        raise ValueError(f"{where}: a median_ms that is not a positive number")
    return d.reset_index(drop=True)


def run_traffic(runs: pd.DataFrame, l2_bytes: float, *, l2_efficiency: float = 1.0, drift: float = 0.0,
                cluster_m: int = 2, sm_count: int = 132, drift_form: str = "wave", reuse_law: str = "lru",
                survival: tuple[Sequence[float], Sequence[float]] = ((), ())) -> list[WaveTraffic]:
    """Each run's wave traffic (:func:`ctasim.l2.wave_traffic`) in its CUTLASS launch order and persistent grid
    (``runs``: rows of :func:`tile_order_table`); W multicast to ``cluster_m`` row-blocks; CTAs drifting apart by
    ``drift`` tile times a round, charged by ``drift_form`` (:data:`ctasim.l2.DRIFT_FORMS`); reuse across waves by
    ``reuse_law`` (:data:`ctasim.l2.REUSE_LAWS`; ``"survival"`` reads the curve ``survival``)."""
    out = []
    for r in runs.itertuples():
        tm, tn = -(-r.m // TILE_M), -(-r.n // TILE_N)
        order = cutlass_sm90_order(tm, tn, r.raster, r.swizzle)
        slots = cutlass_sm90_grid_ctas(tm, tn, r.raster, r.swizzle, sm_count=sm_count)
        out.append(wave_traffic(order, r.m, r.n, r.k, TILE_M, TILE_N, ELEM_BYTES, slots, l2_bytes, l2_efficiency,
                                drift=drift, cluster_m=cluster_m, drift_form=drift_form, reuse_law=reuse_law,
                                survival=survival))
    return out


def compute_ns(k: int, rate: float, tile_fixed_ns: float) -> float:
    """A 128x256 tile's compute at ``rate`` TFLOP/s a slot: ``tile_fixed_ns + 2 x 128 x 256 x K / rate``."""
    return tile_fixed_ns + 2.0 * TILE_M * TILE_N * k / (rate * 1e3)


def predict_ns(ks: Sequence[int], traffic: Sequence[WaveTraffic], rate: float, hbm_gbps: float, exposed: float,
               tile_fixed_ns: float) -> np.ndarray:
    """Each run's modelled time (ns): the sum of its waves (:func:`ctasim.l2.gemm_ns`)."""
    return np.array([gemm_ns(t, compute_ns(k, rate, tile_fixed_ns), hbm_gbps, exposed) for k, t in zip(ks, traffic)])


@dataclass(frozen=True)
class GridFit:
    """The best grid point of :func:`grid_fit`: ``rate`` (TFLOP/s a slot), ``hbm_gbps``, ``exposed``,
    ``l2_efficiency``; ``mean_abs_error``: mean |predicted / measured - 1| over the fitted runs; ``runs``: how
    many; ``edges``: the grid axes (of more than one value) whose best value is the grid's first or last (a constant
    at an edge may lie outside the grid)."""

    rate: float
    hbm_gbps: float
    exposed: float
    l2_efficiency: float
    mean_abs_error: float
    runs: int
    edges: tuple[str, ...]


def grid_fit(ks: Sequence[int], ns: Sequence[float], traffic: Mapping[float, Sequence[WaveTraffic]],
             tile_fixed_ns: float, *, hbm_gbps: Sequence[float], rate: Sequence[float] = RATE_GRID,
             exposed: Sequence[float] = EXPOSED_GRID, l2_efficiency: Sequence[float] = (1.0,)) -> GridFit:
    """Least mean |relative error| of :func:`predict_ns` against the measured ``ns`` over a grid of constants.

    ``traffic``: per L2 efficiency of the grid, each run's wave traffic (:func:`run_traffic`), in the order of
    ``ks`` and ``ns``. Every grid point is evaluated (vectorised over HBM rates and exposed shares, so a grid of
    7000 points over 72 runs takes ~0.1 s); the first least error in grid order wins (module docstring).
    """
    ks = np.asarray(ks)
    ns = np.asarray(ns, dtype=np.float64)
    grids = {name: np.asarray(v, dtype=np.float64).ravel() for name, v in
             (("rate", rate), ("hbm_gbps", hbm_gbps), ("exposed", exposed), ("l2_efficiency", l2_efficiency))}
    if len(ks) != len(ns) or not len(ns):
        raise ValueError(f"grid fit: {len(ks)} K values for {len(ns)} measured times (need equal and > 0)")
    if any(not len(v) for v in grids.values()):
        raise ValueError(f"grid fit: an empty grid ({', '.join(k for k, v in grids.items() if not len(v))})")
    rates, hbms, exps, effs = grids.values()
    err = np.empty((len(rates), len(hbms), len(exps), len(effs)))
    for f, eff in enumerate(effs):
        runs = traffic[float(eff)]
        if len(runs) != len(ns):
            raise ValueError(f"grid fit: {len(runs)} traffics at L2 efficiency {eff} for {len(ns)} runs")
        # t_hbm per (HBM rate, 1, wave) of each run, as ctasim.l2.wave_ns divides it
        t_hbm = [t.hbm[None, None, :] / hbms[:, None, None] for t in runs]
        for r, rt in enumerate(rates):
            pred = np.empty((len(hbms), len(exps), len(ns)))
            for i, (k, t) in enumerate(zip(ks, t_hbm)):
                pred[:, :, i] = np.maximum(compute_ns(k, rt, tile_fixed_ns) + exps[None, :, None] * t, t).sum(axis=-1)
            err[r, :, :, f] = np.abs(pred / ns - 1).mean(axis=-1)
    best = np.unravel_index(int(np.argmin(err)), err.shape)
    edges = tuple(name for (name, g), i in zip(grids.items(), best) if len(g) > 1 and i in (0, len(g) - 1))
    return GridFit(rate=float(rates[best[0]]), hbm_gbps=float(hbms[best[1]]), exposed=float(exps[best[2]]),
                   l2_efficiency=float(effs[best[3]]), mean_abs_error=float(err[best]), runs=len(ns), edges=edges)


def fit_l2_constants(table: pd.DataFrame, *, l2_bytes: float, hbm_gbps: float, tile_fixed_ns: float, drift: float,
                     cluster_m: int = 2, sm_count: int = 132, rate: Sequence[float] = RATE_GRID,
                     exposed: Sequence[float] = EXPOSED_GRID, where: str = "tile-order table",
                     drift_form: str = "wave", reuse_law: str = "lru",
                     survival: tuple[Sequence[float], Sequence[float]] = ((), ())) -> GridFit:
    """A profile's ``l2_sm_tflops`` (``.rate``) and ``l2_hbm_exposed`` (``.exposed``) from a tile-order probe's
    table: :func:`grid_fit` over its calibration-split runs at the measured L2 size, HBM rate, tile fixed time and
    drift charged by ``drift_form`` (L2 efficiency 1), reuse across waves by ``reuse_law`` (:func:`run_traffic`).
    ValueError (one line) on a table without calibration-split runs or with fewer than two
    tile orders of a shape (the orders are what separates the rate from the exposed share)."""
    d = tile_order_table(table, where)
    cal = d[d.cal].reset_index(drop=True)
    if cal.empty:
        raise ValueError(f"{where}: no CUTLASS runs at the calibration split N = {CALIBRATION_N}, K = {CALIBRATION_K}")
    orders = cal.groupby("m").order.nunique()
    if (orders < 2).any():
        raise ValueError(f"{where}: M = {int(orders.idxmin())} at the calibration split has {int(orders.min())} tile "
                         "order(s); the fit needs at least two per shape")
    tr = run_traffic(cal, l2_bytes, drift=drift, cluster_m=cluster_m, sm_count=sm_count, drift_form=drift_form,
                     reuse_law=reuse_law, survival=survival)
    return grid_fit(cal.k.values, cal.ns.values, {1.0: tr}, tile_fixed_ns, hbm_gbps=[hbm_gbps], rate=rate,
                    exposed=exposed)


def tile_rounds(tiles: pd.DataFrame) -> pd.DataFrame:
    """A per-tile trace of a persistent GEMM sorted by ``t_acquire``, with ``round``: each tile's rank (from 0) among
    its CTA's tiles by ``t_acquire``."""
    t = tiles.sort_values("t_acquire")
    t["round"] = t.groupby("cta").t_acquire.rank(method="first").astype(int) - 1
    return t


def trace_drift(tiles: pd.DataFrame, where: str = "trace") -> dict:
    """The drift of one per-tile trace of a persistent GEMM (columns cta, t_acquire, t_mainloop_end; ns).

    A tile's round is its rank among its CTA's tiles by ``t_acquire``. Returns ``rounds``, ``mainloop_start_ns``
    (median mainloop of rounds 1-3), ``mainloop_mean_rel`` and ``mainloop_late_rel`` (mean mainloop, median of the
    late half's, over it), ``start_sd_per_round`` (the drift: slope over rounds 1 .. last - 1 of the within-round
    standard deviation of ``t_acquire`` in start mainloops) and ``start_sd_last_round`` (that spread in the last
    full round). ValueError (one line naming ``where``) on missing columns or fewer than 4 rounds.
    """
    missing = [c for c in _TRACE_COLUMNS if c not in tiles.columns]
    if missing:
        raise ValueError(f"{where}: no column {', '.join(missing)} (a per-tile trace has {', '.join(_TRACE_COLUMNS)})")
    t = tile_rounds(tiles)
    t["mainloop"] = t.t_mainloop_end - t.t_acquire
    last = int(t["round"].max())
    if last < 3:
        raise ValueError(f"{where}: {last + 1} round(s) of tiles; the drift needs at least 4 (rounds 1 .. last - 1)")
    base = t[t["round"].between(1, 3)].mainloop.median()
    if not base > 0:
        raise ValueError(f"{where}: the mainloop of rounds 1-3 is {base} ns, not a positive time")
    sd = (t.groupby("round").t_acquire.std() / base).to_numpy()
    slope = float(np.polyfit(np.arange(1, last), sd[1:last], 1)[0])
    return {"rounds": last + 1, "mainloop_start_ns": base, "mainloop_mean_rel": t.mainloop.mean() / base,
            "mainloop_late_rel": t[t["round"] >= last // 2].mainloop.median() / base,
            "start_sd_per_round": slope, "start_sd_last_round": float(sd[last - 1])}


def cta_drift(traces: Iterable[pd.DataFrame]) -> float:
    """A profile's ``cta_drift``: the median :func:`trace_drift` over per-tile traces (tile times per round)."""
    vals = [trace_drift(t, f"trace {i}")["start_sd_per_round"] for i, t in enumerate(traces)]
    if not vals:
        raise ValueError("no per-tile traces to measure the drift on")
    return float(np.median(vals))


SPAN_SATURATED = 0.9
"""A window span at or above this (tile times) has stopped growing: the spread saturates at about one tile time."""


def window_spans(tiles: pd.DataFrame, slots: int) -> np.ndarray:
    """Span (max - min) of the start times (``t_acquire``) of each window of ``slots`` consecutive tiles by start, in
    median mainloops (``t_mainloop_end - t_acquire``): how far a grid that hands out tiles in order has spread."""
    missing = [c for c in ("t_acquire", "t_mainloop_end") if c not in tiles.columns]
    if missing:
        raise ValueError(f"trace: no column {', '.join(missing)}")
    if slots < 1:
        raise ValueError(f"slots must be >= 1, got {slots}")
    t = tiles.sort_values("t_acquire")
    tile = float(np.median(t["t_mainloop_end"] - t["t_acquire"]))
    acq = t["t_acquire"].to_numpy(float)
    n = len(acq) // slots
    return np.array([np.ptp(acq[i * slots:(i + 1) * slots]) for i in range(n)]) / tile


def span_rate(spans: np.ndarray) -> float | None:
    """Growth per window of :func:`window_spans` (a line over windows >= 1 with a span below :data:`SPAN_SATURATED`);
    None with fewer than 6 windows or 4 such points."""
    v = np.arange(len(spans))
    sel = (v >= 1) & (spans < SPAN_SATURATED)
    if len(spans) < 6 or sel.sum() < 4:
        return None
    return float(np.polyfit(v[sel], spans[sel], 1)[0])


def cta_cycles(tiles: pd.DataFrame) -> pd.Series:
    """Each CTA's mean time from one tile's start (``t_acquire``) to its next, in median mainloops (the unit of
    :func:`window_spans`), indexed by ``cta``; CTAs with a single tile are left out. Where every CTA keeps its own pace
    (CTA i a tile every c_i), window w of a ticket grid holds each CTA's w-th tile and spans w (max c - min c): the
    range of these is then the :func:`span_rate` itself, a spread that comes from CTAs running at different paces,
    not from the tiles' noise (which grows a span as the square root of the windows)."""
    missing = [c for c in ("cta", "t_acquire", "t_mainloop_end") if c not in tiles.columns]
    if missing:
        raise ValueError(f"trace: no column {', '.join(missing)}")
    t = tiles.sort_values("t_acquire")
    tile = float(np.median(t["t_mainloop_end"] - t["t_acquire"]))
    if not tile > 0:
        raise ValueError("trace: no tile has a mainloop (t_mainloop_end after t_acquire)")
    cycle = t.groupby("cta")["t_acquire"].shift(-1) - t["t_acquire"]
    return (cycle.groupby(t["cta"]).mean() / tile).dropna()


def cta_pace_range(tiles: pd.DataFrame) -> float:
    """The range (max - min) of :func:`cta_cycles`: the span rate a ticket grid whose CTAs each keep their pace would
    have. ValueError with fewer than two CTAs of two tiles or more."""
    c = cta_cycles(tiles)
    if len(c) < 2:
        raise ValueError("trace: fewer than two CTAs ran two tiles or more")
    return float(c.max() - c.min())


def ticket_spread(traces: Iterable[pd.DataFrame], slots: int | Sequence[int]) -> tuple[float, list[float | None]]:
    """A profile's ``ticket_spread``: the median :func:`span_rate` over per-tile traces of a ticket-scheduled kernel
    (the chain kernel's tickets design), with each trace's rate (None where it has too few windows to fit).
    ``slots``: the CTAs of every trace's grid, or one count per trace."""
    traces = list(traces)
    per = [int(slots)] * len(traces) if np.ndim(slots) == 0 else [int(x) for x in slots]
    if len(per) != len(traces):
        raise ValueError(f"{len(traces)} traces but {len(per)} grid sizes")
    rates = [span_rate(window_spans(t, n)) for t, n in zip(traces, per)]
    fitted = [r for r in rates if r is not None]
    if not fitted:
        raise ValueError("no per-tile trace with enough windows (6, 4 below saturation) to measure the ticket spread on")
    return float(np.median(fitted)), rates


def local_signal(traces: Iterable[pd.DataFrame]) -> tuple[float, list[float | None]]:
    """A profile's ``local_signal_ns`` from per-tile traces of the chain kernel on one GPU: per trace the median over
    its tiles of ``t_signal - t_compute_end`` (the epilogue has issued the tile's stores; then their completion, the
    barrier of the 256 epilogue threads and the GPU-scope release reduction; None for a trace without those columns),
    and the median of those. ValueError where no trace has both columns."""
    per = [float((t["t_signal"] - t["t_compute_end"]).median())
           if {"t_signal", "t_compute_end"} <= set(t.columns) and len(t) else None for t in traces]
    got = [v for v in per if v is not None]
    if not got:
        raise ValueError("no per-tile trace with t_signal and t_compute_end to measure the local signal on")
    return float(np.median(got)), per


GAP_MIN_TICKETS = 4
"""The fewest tickets between two sharers of a W panel for :func:`sharer_gaps` to count the later one: nearer sharers
are the order's own neighbours (a pair's other row-block), which read the panel together."""


def sharer_gaps(tiles: pd.DataFrame, spread: float, slots: int) -> np.ndarray:
    """Each later sharer's measured time after the sharer before, over the reach the ticket laws take for it, from a
    per-tile trace of the chain kernel's tickets (``layer``, ``tile_n``, ``t_acquire``, ``t_mainloop_end``): the tiles
    in ``t_acquire`` order are its tickets; a later sharer is a tile of the same layer and ``tile_n`` (the same W
    column panel) at least :data:`GAP_MIN_TICKETS` tickets after the one before, in the same window of ``slots``
    tickets and past the first window; its time after that one, in the trace's median mainloops, over ``g / slots x
    min(1, spread x window)`` (``ctasim.l2.ticket_rereads``' reach: ``g`` the tickets between them, ``spread`` the
    profile's ``ticket_spread``)."""
    missing = [c for c in ("layer", "tile_n", "t_acquire", "t_mainloop_end") if c not in tiles.columns]
    if missing:
        raise ValueError(f"a per-tile trace without column {', '.join(missing)}: no sharers' gaps to measure")
    d = tiles.sort_values("t_acquire", kind="stable").reset_index(drop=True)
    pos = np.arange(len(d))
    tile = float(np.median((d["t_mainloop_end"] - d["t_acquire"]).to_numpy()))
    out = []
    for _, g in d.assign(pos=pos).groupby(["layer", "tile_n"], sort=False):
        p, t = g["pos"].to_numpy(), g["t_acquire"].to_numpy()
        gap_p, window = np.diff(p), p[1:] // slots
        keep = (window == p[:-1] // slots) & (gap_p >= GAP_MIN_TICKETS) & (window >= 1)
        reach = gap_p[keep] / slots * np.minimum(1.0, spread * window[keep])
        out.append(np.diff(t)[keep] / tile / reach)
    return np.concatenate(out) if out else np.zeros(0)


def gap_cv(traces: Iterable[pd.DataFrame], spread: float,
           slots: int | Sequence[int]) -> tuple[float, list[float | None]]:
    """A profile's ``ticket_gap_cv``: per trace the coefficient of variation (standard deviation over mean) of its
    :func:`sharer_gaps` (None where it has fewer than two), and the median of those. The traces are of the order the
    refinement is priced on (pairs of row-blocks: groups of 4 and 8 keep their sharers near, where it does not reach;
    docs/validation.md). ``slots``: the CTAs of every trace's grid, or one count per trace. ValueError where no trace
    has two later sharers."""
    traces = list(traces)
    per = [int(slots)] * len(traces) if np.ndim(slots) == 0 else [int(x) for x in slots]
    if len(per) != len(traces):
        raise ValueError(f"{len(traces)} traces but {len(per)} grid sizes")
    cvs: list[float | None] = []
    for t, n in zip(traces, per):
        r = sharer_gaps(t, spread, n)
        cvs.append(float(np.std(r) / np.mean(r)) if len(r) >= 2 else None)
    got = [c for c in cvs if c is not None]
    if not got:
        raise ValueError("no per-tile trace with two later sharers of a W panel to measure the gap spread on")
    return float(np.median(got)), cvs


PERCTA_COLUMNS = ("cta", "sm", "t_start", "t_acquire", "t_mainloop_end", "t_compute_end", "t_store_end", "t_signal")
"""The columns of a per-tile trace of a one-CTA-per-tile kernel that :func:`percta_steps` reads (ns, any origin)."""
PERCTA_STEPS = ("mainloop_early_ns", "mainloop_late_ns", "epilogue_ns", "turnover_ns", "store_ns", "signal_ns",
                "held_ns")
"""The medians :func:`percta_steps` derives (module docstring): mainloop of waves 0-1 and of waves >= 2, exposed
epilogue, CTA turnover, store-complete step, signal step, hold after the compute."""


def percta_table(tiles: pd.DataFrame, slots: int, where: str = "trace") -> pd.DataFrame:
    """The tiles of a one-CTA-per-tile trace (:data:`PERCTA_COLUMNS`) with ``wave`` (``cta // slots``: the grid wave
    of a static grid of ``slots`` concurrent CTAs), ``mainloop``, ``epilogue``, ``store``, ``signal``, ``exit`` and
    ``held`` added (module docstring). ValueError (one line naming ``where``) on a missing column or ``slots`` < 1."""
    missing = [c for c in PERCTA_COLUMNS if c not in tiles.columns]
    if missing:
        raise ValueError(f"{where}: no column {', '.join(missing)} (a per-tile trace has {', '.join(PERCTA_COLUMNS)})")
    if int(slots) < 1:
        raise ValueError(f"{where}: {slots} CTA slots; a grid wave needs at least one")
    t = tiles.copy()
    t["wave"] = t["cta"].astype(np.int64) // int(slots)
    t["mainloop"] = t.t_mainloop_end - t.t_acquire
    t["epilogue"] = t.t_compute_end - t.t_mainloop_end
    t["store"] = t.t_store_end - t.t_compute_end
    t["signal"] = t.t_signal - t.t_store_end
    t["exit"] = t[["t_store_end", "t_signal"]].max(axis=1)
    t["held"] = t["exit"] - t.t_compute_end
    return t


def percta_turnover(tiles: pd.DataFrame) -> np.ndarray:
    """The CTA turnovers of a static grid (rows of :func:`percta_table`): per SM, its CTAs in ``t_start`` order, each
    CTA's ``t_acquire`` minus the ``exit`` of the CTA before it; one value per pair of consecutive CTAs of an SM."""
    out = [np.zeros(0)]
    for _, g in tiles.groupby("sm", sort=True):
        g = g.sort_values("t_start", kind="stable")
        out.append(g["t_acquire"].to_numpy(np.float64)[1:] - g["exit"].to_numpy(np.float64)[:-1])
    return np.concatenate(out)


def percta_steps(tiles: pd.DataFrame, slots: int, where: str = "trace") -> dict:
    """The one-CTA-per-tile steps of one per-tile trace (module docstring): the medians :data:`PERCTA_STEPS` (ns), and
    ``tiles``, ``waves``, ``late_tiles`` (tiles of waves >= 2), ``turnover_pairs`` and ``span_ns`` (first CTA start to
    the last exit). ValueError (one line naming ``where``) on a missing column or fewer than 3 grid waves (waves >= 2
    are the steady state the epilogue and the steps are taken from)."""
    t = percta_table(tiles, slots, where)
    waves = int(t["wave"].max()) + 1 if len(t) else 0
    if waves < 3:
        raise ValueError(f"{where}: {waves} grid wave(s) of {slots} CTAs; the steps need at least 3 (waves >= 2)")
    early, late = t[t["wave"] <= 1], t[t["wave"] >= 2]
    turn = percta_turnover(t)
    return {"tiles": int(len(t)), "waves": waves, "late_tiles": int(len(late)),
            "mainloop_early_ns": float(early["mainloop"].median()),
            "mainloop_late_ns": float(late["mainloop"].median()),
            "epilogue_ns": float(late["epilogue"].median()),
            "turnover_ns": float(np.median(turn)) if len(turn) else float("nan"), "turnover_pairs": int(len(turn)),
            "store_ns": float(late["store"].median()), "signal_ns": float(late["signal"].median()),
            "held_ns": float(late["held"].median()),
            "span_ns": float(t["exit"].max() - t["t_start"].min())}


def percta_medians(runs: pd.DataFrame, keys: Sequence[str] = ("m", "variant")) -> pd.DataFrame:
    """Per ``keys`` (one case, several traced runs): the median over the runs of each of :data:`PERCTA_STEPS` and
    ``span_ns``, with ``runs`` (how many) and the runs' range of each step (``mainloop_early_min_ns``,
    ``mainloop_early_max_ns``, ...).
    ``runs``: one row per traced run with ``keys`` and the :func:`percta_steps` columns; other columns are left out.
    ValueError on a missing column or no rows."""
    cols = list(PERCTA_STEPS) + ["span_ns"]
    missing = [c for c in list(keys) + cols if c not in runs.columns]
    if missing:
        raise ValueError(f"per-tile steps: no column {', '.join(missing)}")
    if runs.empty:
        raise ValueError("per-tile steps: no traced runs")
    g = runs.groupby(list(keys), sort=True)[cols]
    out = g.median()
    lo, hi = g.min(), g.max()
    for c in PERCTA_STEPS:
        out[f"{c.removesuffix('_ns')}_min_ns"] = lo[c]
        out[f"{c.removesuffix('_ns')}_max_ns"] = hi[c]
    out.insert(0, "runs", g.size())
    return out.reset_index()
