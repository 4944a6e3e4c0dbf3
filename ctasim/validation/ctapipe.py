"""Validation of CTA-pipelining: the simulator against per-CTA ``%globaltimer`` traces of the ctapipe kernels.

Inputs: a ``ctahw run ... ctapipe`` results folder (:data:`TRACES_FILE`: a ctasim trace bundle that ``ctahw``
writes at capture time, one trace per traced run), or the reduced tile tables this module writes
(:func:`save_tiles`, one CSV per trace; what the CI gates read).

Each measured trace is variant (a) of the kernel: one CTA per tile (``persistent=False``), consumers pop the
work-queue (``tile_source="queue"``), clusters per layer as :data:`VARIANT_KERNELS` says. The same plan is
built by :mod:`ctasim.strategies` (``Strategy.kernels`` picks the profile's kernel config of each layer's
cluster shape), with the producer's tile order read from the trace (CTA ``blockIdx`` order: the plan's row
order, or row-block pairs for the 2x1 producer), simulated with ``launch_ns = 0`` (a trace's clock starts at
its first CTA) and compared with :func:`ctasim.validation.traces.compare`.

Calibration split (:func:`fit`): the per-kernel-variant fields are fitted on the traces at :data:`FIT_MS`
only; accuracy is reported on the other M values (and on an earlier run, nothing fitted on it):

* ``sm_tflops`` from the median mainloop (``t_mainloop_end - t_acquire``) of the first two waves;
* ``tile_fixed_ns``: median epilogue (``t_compute_end - t_mainloop_end``) from the third wave on;
* ``wave_slowdown``, ``wave_slowdown_waves``: least squares of the per-wave median mainloop over the first
  waves' (a linear ramp to a plateau);
* ``cta_launch_ns``: median turnover of a static (producer) grid: a CTA's ``t_acquire`` after the previous
  CTA on the same SM left (its store end or signal); a config used only by queue consumers (``ctapipe-1x2-c21``)
  takes its kernel's (``ctapipe-1x2``);
* ``signal_hold_ns``: median (producer CTA exit - compute end) from the third wave on, minus what the model
  already holds the slot for (the remote store: ``bytes / sm_remote_store_gbps + link_latency_ns``), >= 0;
* ``signal_ns``: median (producer signal - store end) from the third wave on: fence and counter atomic as the
  loaded kernel sees them (3.5-4.3 us against 1.7 us from the unloaded probes);
* ``tile_cv``: median, over the full waves >= 1 of each layer (tiles sorted by ``t_acquire``, ``slots`` to a
  wave), of the mainloop's within-wave coefficient of variation (``np.std / np.mean``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ctasim import costs
from ctasim.calibration import SPAN_SATURATED, span_rate, window_spans  # noqa: F401 (re-exported)
from ctasim.validation.traces import compare
from ctasim.engine import simulate
from ctasim.plan import Plan
from ctasim.spec import Hardware, Layer, Strategy, Workload
from ctasim.strategies import build_plans
from ctasim.strategies.ctapipe import apply_memory
from ctasim.trace import EVENT_COLUMNS, OP_COLUMNS, TRACES_FILE, Trace, load_traces
from ctasim.variants import VARIANTS, strategy_fields

__all__ = ["VARIANT_KERNELS", "TURNOVER_FROM", "FIT_MS", "STALL_NS", "MeasuredTrace", "load_folder", "load_tiles", "save_tiles", "plan_for",
           "simulate_for", "fit", "fit_family", "window_spans", "span_rate", "apply_fit", "judge", "summary",
           "TILE_CSV_COLUMNS"]

FIT_MS = (2048, 8192, 32768)
"""M values whose traces are fitted on (every trace at them, of every run given); every other M is judged.  2048
and 8192 are the baselines' split; 32768 (``2026-11-29-ctapipe-range``, ``-trace3``; above the judged range) is there
because the wave slowdown of the one-CTA-per-tile grids keeps growing past the 15 waves of M = 8192 and levels off
only after ~25 (docs/validation.md): fitted on M <= 8192 alone, M = 16384 was an extrapolation (1x2: -9.9%)."""

STALL_NS = 100_000.0
"""A trace whose consumer's first tile comes more than this later than the simulation says has a first-wave store
stall (row orders: 280-290 us measured against 116-119 us simulated, where traces without one measure 120-124 us;
intermittent, in the traced run of some variants at M >= 16384, not in the timed medians): :func:`judge` marks it
``stalled`` and :func:`summary` leaves it out; :func:`fit` keeps it (its per-tile figures -- mainloops, later waves'
epilogues and exits, turnovers -- are not the stalled stores: at M = 16384 the stalled traces' per-wave mainloops,
exit and signal steps lie within the spread of the same variants' unstalled traces of two other runs)."""

VARIANT_KERNELS = {n: v.kernels for n, v in VARIANTS.items() if v.kernels and not v.trace}
"""Kernel config (``KernelConfig.kernel``) of each layer per kernel variant that the profiles model, derived from
:data:`ctasim.variants.VARIANTS` (clusters 1x1/1x1, 1x2/1x2, producer 2x1 + consumer 1x2, 2x1 on both GPUs);
layers past the tuple take its last entry.  The 1x2 consumer behind the 2x1 producer (c21) has a config of its
own: it receives row-blocks in pairs and runs its tiles measurably faster than the same kernel in c12 (median
104 vs 115 us at M = 16384) -- tile-order L2 reuse the model does not have, fitted per use instead
(docs/validation.md)."""

TURNOVER_FROM = {"ctapipe-1x2-c21": "ctapipe-1x2"}
"""Configs used only by queue consumers (no static grid whose CTA turnover the traces show) and the config of the
same kernel whose ``cta_launch_ns`` they take; :func:`fit` raises if that one has no fitting trace.  Such a config
describes a consumer only: its ``signal_ns`` and ``signal_hold_ns`` are 0 (no producer tiles)."""

VARIANT_STRATEGY = {n: {k: f for k, f in strategy_fields(n).items() if k in ("tile_source", "counter_rows")
                        and f != {"tile_source": "queue", "counter_rows": 0}[k]}
                    for n in VARIANT_KERNELS}
"""Strategy fields of the variants whose plan is not the default one, derived from :func:`ctasim.variants.strategy_fields`
(one counter per 256 rows; consumers that wait on counters in a fixed order instead of popping)."""

H = 8192
TILE = (128, 256)
TILE_CSV_COLUMNS = ["kernel", "layer", "gpu", "cta", "sm", "tile_m", "tile_n", "slot", "t_start", "t_acquire",
                    "t_ready", "t_mainloop_end", "t_compute_end", "t_store_end", "t_signal"]


@dataclass
class MeasuredTrace:
    m: int
    variant: str  # without the "_trace" suffix
    trace: Trace
    order: np.ndarray  # the producer's tile order (CTA blockIdx order)
    run: str = ""

    @property
    def label(self) -> str:
        return f"{self.variant} M={self.m}"


def _order(trace: Trace, layer: int | None = None) -> np.ndarray:
    """The tile order of ``layer`` (default: the first) as its CTAs ran it (tiles sorted by CTA index)."""
    t = trace.tiles
    first = t[t["layer"] == (t["layer"].min() if layer is None else layer)].sort_values("cta")
    return (first["tile_m"] * (H // TILE[1]) + first["tile_n"]).to_numpy(np.int64)


def load_folder(folder: str | Path) -> list[MeasuredTrace]:
    """The kept traced runs (``meta["kept"]``) of the variants the profiles model, from a ctapipe results folder's
    :data:`TRACES_FILE`, sorted by (M, variant).  Raises :class:`ctasim.trace.TraceFileError` if it has none."""
    folder = Path(folder)
    out = []
    for tr in load_traces(folder / TRACES_FILE).values():
        v = str(tr.meta["variant"]).removesuffix("_trace")
        if v in VARIANT_KERNELS and tr.meta.get("kept", True):
            out.append(MeasuredTrace(int(tr.meta["m"]), v, tr, _order(tr), folder.name))
    return sorted(out, key=lambda t: (t.m, t.variant))


def save_tiles(mt: MeasuredTrace, path: str | Path) -> Path:
    """The trace's tile table as integer ns (stamps are 32 ns ticks), the columns the comparison needs."""
    t = mt.trace.tiles.copy()
    for c in TILE_CSV_COLUMNS:
        t[c] = np.round(t[c]).astype(np.int64)
    # gzip without a timestamp: the same trace writes the same bytes (committed files are not rewritten by a re-run)
    t[TILE_CSV_COLUMNS].to_csv(path, index=False, compression={"method": "infer", "mtime": 0})
    return Path(path)


def load_tiles(path: str | Path, m: int, variant: str, run: str = "") -> MeasuredTrace:
    """A :class:`MeasuredTrace` from a tile table written by :func:`save_tiles` (no events, no ops)."""
    t = pd.read_csv(path)
    t.insert(0, "source", "hw")
    for c in TILE_CSV_COLUMNS[8:]:
        t[c] = t[c].astype(np.float64)
    tr = Trace(t, pd.DataFrame(columns=list(EVENT_COLUMNS)), pd.DataFrame(columns=list(OP_COLUMNS)),
               {"source": "hw", "m": m, "variant": variant})
    return MeasuredTrace(m, variant, tr, _order(tr), run)


def plan_for(m: int, variant: str, hw: Hardware, order=None, consumer_order=None) -> Plan:
    """ctasim's plan of what the trace ran: 2-layer m x 8192 x 8192 chain, one CTA per tile, queue pops (or
    the variant's :data:`VARIANT_STRATEGY`), each layer on its variant's kernel config, the producer walking
    ``order`` and a waiting consumer ``consumer_order``; ``launch_ns = 0``. Where the profile has the memory
    hierarchy, the tiles' times come from these orders (:func:`ctasim.strategies.ctapipe.apply_memory`)."""
    layer = Layer(m, H, H, *TILE)
    wl = Workload(f"chain2-{m}", "bf16", (layer, layer))
    fields = dict({"tile_source": "queue"}, **VARIANT_STRATEGY.get(variant, {}))
    st = Strategy("ctapipe", persistent=False, kernels=VARIANT_KERNELS[variant], **fields)
    plan = build_plans(st, wl, dataclasses.replace(hw, launch_ns=0.0), 2, f"{variant} m={m}")[0]
    ks = sorted(plan.kernels(), key=lambda k: k.layer)
    for k, o in ((ks[0], order), (ks[-1], consumer_order)):
        if o is None:
            continue
        o = np.asarray(o, dtype=np.int64)
        if sorted(o.tolist()) != list(range(k.tiles)):
            raise ValueError(f"order is not a permutation of {k.name}'s tiles")
        k.order = o
    # the memory hierarchy (where the profile has it) times the orders just set
    apply_memory(plan, wl, hw)
    return plan


def simulate_for(mt: MeasuredTrace, hw: Hardware, seed: int = 0) -> tuple[Plan, Trace]:
    """The plan of ``mt`` simulated on ``hw`` (``seed``: the tile-time draws of ``KernelConfig.tile_cv``)."""
    waits = VARIANT_STRATEGY.get(mt.variant, {}).get("tile_source") == "static"
    plan = plan_for(mt.m, mt.variant, hw, mt.order, _order(mt.trace, 1) if waits else None)
    return plan, simulate(plan, hw, seed=seed)


# ------------------------------------------------------------------------------------------------ fitting
def _kernel_of(variant: str, layer: int) -> str:
    ks = VARIANT_KERNELS[variant]
    return ks[min(layer, len(ks) - 1)]


def _tiles_by_config(traces: list[MeasuredTrace], slots: int) -> pd.DataFrame:
    rows = []
    for mt in traces:
        t = mt.trace.tiles.copy()
        t["config"] = [_kernel_of(mt.variant, int(l)) for l in t["layer"]]
        t["static"] = t["slot"] < 0
        t["wave"] = np.where(t["static"], t["cta"], t["slot"]) // slots
        t["mainloop"] = t["t_mainloop_end"] - t["t_acquire"]
        t["epilogue"] = t["t_compute_end"] - t["t_mainloop_end"]
        t["exit"] = t[["t_store_end", "t_signal"]].max(axis=1)
        t["case"] = f"{mt.run} {mt.label}" if mt.run else mt.label  # one trace per case, also across runs
        last = t.groupby("layer")["wave"].transform("max")
        t["full_wave"] = t["wave"] < last
        # waves in start order (tile_cv): the layer's tiles sorted by t_acquire, `slots` to a wave
        rank = t.groupby("layer")["t_acquire"].rank(method="first").astype(np.int64) - 1
        t["acq_wave"] = rank // slots
        t["acq_full"] = t.groupby(["layer", "acq_wave"])["acq_wave"].transform("size") == slots
        rows.append(t)
    return pd.concat(rows, ignore_index=True)


def _turnover(t: pd.DataFrame) -> np.ndarray:
    """Static tiles: t_acquire of a CTA minus the exit of the previous CTA on the same SM (same kernel)."""
    out = []
    for (_case, _k, _sm), g in t[t["static"]].groupby(["case", "kernel", "sm"]):
        g = g.sort_values("t_start")
        out.append(g["t_acquire"].to_numpy()[1:] - g["exit"].to_numpy()[:-1])
    return np.concatenate(out) if out else np.zeros(0)


def _wave_cvs(c: pd.DataFrame) -> np.ndarray:
    """Within-wave coefficient of variation (std / mean) of the mainloop, one per full wave >= 1 of each layer of each
    trace, waves in start order (:func:`_tiles_by_config`: ``acq_wave``)."""
    w = c[c["acq_full"] & (c["acq_wave"] >= 1)]
    g = w.groupby(["case", "layer", "acq_wave"])["mainloop"]
    return (g.std(ddof=0) / g.mean()).to_numpy(float)


def _ramp_fit(r: pd.DataFrame) -> tuple[float, float]:
    """Least squares of per-wave relative slowdown ``r.rel`` ~ s * min(1, wave / W) over s and W."""
    w, y = r["wave"].to_numpy(float), r["rel"].to_numpy(float)
    best = (np.inf, 0.0, 1.0)
    for W in np.arange(1.0, 41.0):
        x = np.minimum(1.0, w / W)
        s = max(0.0, float((x @ y) / (x @ x))) if (x @ x) > 0 else 0.0
        loss = float(((y - s * x) ** 2).sum())
        if loss < best[0]:
            best = (loss, s, W)
    return round(best[1], 4), best[2]


def _training(traces: list[MeasuredTrace], hw: Hardware, fit_ms) -> tuple[list[MeasuredTrace], int, pd.DataFrame, float]:
    """What :func:`fit` and :func:`fit_family` start from: the traces at ``fit_ms`` (ValueError if none), the CTA slots
    of a GPU, their tiles by config (:func:`_tiles_by_config`) and the store the model holds a slot for (ns)."""
    train = [mt for mt in traces if mt.m in fit_ms]
    if not train:
        raise ValueError(f"no ctapipe trace at the fitting M values {fit_ms}")
    base_cfg = hw.config(*TILE)
    slots = hw.sm_count * base_cfg.cta_slots_per_sm
    model_store = costs.remote_store_ns(TILE[0] * TILE[1] * 2, hw, base_cfg.cta_slots_per_sm)
    return train, slots, _tiles_by_config(train, slots), model_store


def fit(traces: list[MeasuredTrace], hw: Hardware, fit_ms=FIT_MS) -> tuple[dict[str, dict], pd.DataFrame]:
    """Per kernel variant: the fitted KernelConfig fields, and one evidence row per (variant, field)."""
    _, slots, t, model_store = _training(traces, hw, fit_ms)
    flops = 2.0 * TILE[0] * TILE[1] * H
    ms = ", ".join(map(str, fit_ms))
    fields, ev = {}, []
    for cfg in sorted(t["config"].unique()):
        c = t[t["config"] == cfg]
        base = float(c.loc[c["wave"] <= 1, "mainloop"].median())
        later = c[c["wave"] >= 2]
        fixed = float(later["epilogue"].median())
        per_wave = (c[c["full_wave"]].groupby(["case", "layer", "wave"])["mainloop"].median() / base - 1.0)
        s, W = _ramp_fit(per_wave.rename("rel").reset_index())
        turn = _turnover(c)
        launch = float(np.median(turn)) if len(turn) else 0.0
        prod = later[later["static"]]
        held = float((prod["exit"] - prod["t_compute_end"]).median()) if len(prod) else 0.0
        hold = max(0.0, held - model_store)
        sig = float((prod["t_signal"] - prod["t_store_end"]).median()) if len(prod) else 0.0
        cvs = _wave_cvs(c)
        cv = round(float(np.median(cvs)), 4) if len(cvs) else 0.0
        f = {"sm_tflops": round(flops / base / 1e3, 4), "tile_fixed_ns": round(fixed, 1),
             "wave_slowdown": s, "wave_slowdown_waves": W, "cta_launch_ns": round(launch, 1),
             "signal_hold_ns": round(hold, 1), "signal_ns": round(sig, 1), "tile_cv": cv}
        fields[cfg] = f
        n = len(c)
        cases = sorted(c["case"].unique())
        ev += [
            {"kernel": cfg, "field": "sm_tflops", "value": f["sm_tflops"],
             "fitted to": f"median mainloop of waves 0-1 = {base:.0f} ns over {int((c['wave'] <= 1).sum())} tiles"},
            {"kernel": cfg, "field": "tile_fixed_ns", "value": f["tile_fixed_ns"],
             "fitted to": f"median epilogue (compute end - mainloop end), waves >= 2, {len(later)} tiles"},
            {"kernel": cfg, "field": "wave_slowdown", "value": s,
             "fitted to": f"least squares, per-wave median mainloop / waves-0-1 median - 1, {len(per_wave)} full waves"},
            {"kernel": cfg, "field": "wave_slowdown_waves", "value": W, "fitted to": "same fit (W in 1..40)"},
            {"kernel": cfg, "field": "cta_launch_ns", "value": f["cta_launch_ns"],
             "fitted to": f"median static-grid turnover (acquire - previous CTA's exit, same SM), {len(turn)} pairs"},
            {"kernel": cfg, "field": "signal_hold_ns", "value": f["signal_hold_ns"],
             "fitted to": (f"median producer exit - compute end = {held:.0f} ns ({len(prod)} tiles, waves >= 2) "
                           f"minus the modelled store {model_store:.0f} ns, >= 0") if len(prod) else "no producer tiles"},
            {"kernel": cfg, "field": "signal_ns", "value": f["signal_ns"],
             "fitted to": (f"median producer signal - store end ({len(prod)} tiles, waves >= 2); the unloaded probes' "
                           f"fence_sys_ns + remote_atomic_ns = {hw.fence_sys_ns + hw.remote_atomic_ns:.0f} ns")
             if len(prod) else "no producer tiles"},
            {"kernel": cfg, "field": "tile_cv", "value": cv,
             "fitted to": (f"median over {len(cvs)} full waves >= 1 (tiles by t_acquire, {slots} a wave) of the "
                           f"mainloop's std/mean; range {np.min(cvs):.4f}-{np.max(cvs):.4f}") if len(cvs) else "no full wave >= 1"},
        ]
        for e in ev[-8:]:
            e["traces"] = "; ".join(cases)
            e["tiles"] = n
            e["fit_ms"] = ms
    ev = pd.DataFrame(ev)
    for cfg, source in TURNOVER_FROM.items():  # consumer-only configs: the same kernel's CTA turnover
        if cfg not in fields:
            continue
        if source not in fields:
            raise ValueError(f"{cfg} takes its cta_launch_ns from {source}, which has no trace at the fitting M values")
        fields[cfg]["cta_launch_ns"] = fields[source]["cta_launch_ns"]
        row = (ev["kernel"] == cfg) & (ev["field"] == "cta_launch_ns")
        ev.loc[row, "value"] = fields[cfg]["cta_launch_ns"]
        ev.loc[row, "fitted to"] = f"no static grid to measure it on: {source}'s (the same kernel)"
    return fields, ev


def fit_family(traces: list[MeasuredTrace], hw: Hardware, fit_ms=FIT_MS) -> tuple[dict, pd.DataFrame]:
    """The one-CTA-per-tile kernel's per-tile steps as ONE set of figures for every variant (a kernel family's config,
    ``KernelConfig.kernel = "ctapipe"``), from the producer tiles of every variant at ``fit_ms`` pooled, waves >= 2:

    * ``signal_ns``: median (signal - store end): fence and counter atomic under load;
    * ``signal_hold_ns``: median (exit - compute end) minus the modelled store, >= 0 (as :func:`fit`);
    * ``tile_fixed_ns``: median exposed epilogue (compute end - mainloop end);
    * ``cta_launch_ns``: median turnover of the static (producer) grids (:func:`_turnover`);
    * ``ticket_spread``: median over the traces of the growth per wave of the producer's start-time span
      (:func:`window_spans`, :func:`span_rate`): a one-CTA-per-tile grid hands each freed slot the next tile, as
      tickets do.

    Returns the fields and one evidence row per field."""
    train, slots, t, model_store = _training(traces, hw, fit_ms)
    prod = t[t["static"] & (t["layer"] == 0) & (t["wave"] >= 2)]
    held = float((prod["exit"] - prod["t_compute_end"]).median())
    turn = _turnover(t[t["layer"] == 0])
    rates = []
    for mt in train:
        tt = mt.trace.tiles
        r = span_rate(window_spans(tt[tt["layer"] == 0], slots))
        if r is not None:
            rates.append(r)
    if not len(prod) or not len(turn) or not rates:
        raise ValueError("the traces at the fitting M values have no producer tiles past wave 1 to fit on")
    fields = {"signal_ns": round(float((prod["t_signal"] - prod["t_store_end"]).median()), 1),
              "signal_hold_ns": round(max(0.0, held - model_store), 1),
              "tile_fixed_ns": round(float(prod["epilogue"].median()), 1),
              "cta_launch_ns": round(float(np.median(turn)), 1),
              "ticket_spread": round(float(np.median(rates)), 4)}
    n = f"{len(prod)} producer tiles of every variant, waves >= 2"
    ev = pd.DataFrame([
        {"field": "signal_ns", "value": fields["signal_ns"], "fitted to": f"median signal - store end, {n}"},
        {"field": "signal_hold_ns", "value": fields["signal_hold_ns"],
         "fitted to": f"median exit - compute end = {held:.0f} ns, {n}, minus the modelled store {model_store:.0f} ns"},
        {"field": "tile_fixed_ns", "value": fields["tile_fixed_ns"], "fitted to": f"median compute end - mainloop end, {n}"},
        {"field": "cta_launch_ns", "value": fields["cta_launch_ns"],
         "fitted to": f"median static-grid turnover (acquire - previous CTA's exit, same SM), {len(turn)} pairs"},
        {"field": "ticket_spread", "value": fields["ticket_spread"],
         "fitted to": f"median over {len(rates)} traces of the producer's start-time span growth per wave "
                      f"({min(rates):.3f}-{max(rates):.3f})"},
    ])
    ev["traces"] = "; ".join(sorted(t["case"].unique()))
    ev["fit_ms"] = ", ".join(map(str, fit_ms))
    return fields, ev


def apply_fit(hw: Hardware, fields: dict[str, dict]) -> Hardware:
    """The profile with one kernel config per fitted variant (replacing any of the same key)."""
    base = hw.config(*TILE)
    keep = [c for c in hw.kernel_configs if not (c.kernel in fields and (c.tile_m, c.tile_n) == TILE)]
    new = [dataclasses.replace(base, kernel=k, kernel_fixed_ns=0.0, source=f"fitted: ctapipe traces ({k})", **f)
           for k, f in sorted(fields.items())]
    return dataclasses.replace(hw, kernel_configs=tuple(keep + new))


# ------------------------------------------------------------------------------------------------ judging
def judge(traces: list[MeasuredTrace], hw: Hardware, fit_ms=FIT_MS, seed: int = 0) -> tuple[pd.DataFrame, dict]:
    """One row of :meth:`Comparison.summary` per trace (plus m, variant, run, role); the simulated traces."""
    rows, sims = [], {}
    for mt in traces:
        plan, sim = simulate_for(mt, hw, seed)
        c = compare(mt.trace, sim, plan)
        sims[(mt.run, mt.m, mt.variant)] = (plan, sim)
        s = c.summary()
        late = s.get("first_tile_delay_L1_meas_ns", np.nan) - s.get("first_tile_delay_L1_sim_ns", np.nan)
        rows.append({"run": mt.run, "m": mt.m, "variant": mt.variant,
                     "role": "fitted" if mt.m in fit_ms else "held_out", "stalled": bool(late > STALL_NS), **s})
    return pd.DataFrame(rows), sims


def summary(df: pd.DataFrame) -> pd.DataFrame:
    """Per M over the held-out rows without a first-wave store stall (:data:`STALL_NS`): MAPE of the makespan,
    worst, median per-CTA start error (fraction)."""
    stalled = df["stalled"].fillna(False).astype(bool) if "stalled" in df else pd.Series(False, index=df.index)
    held = df[(df["role"] == "held_out") & ~stalled]
    out = []
    for key, g in list(held.groupby("m")) + [("all", held)]:
        worst = g.loc[g["makespan_error"].abs().idxmax()]
        out.append({"m": key, "traces": len(g), "makespan_mape_pct": 100 * g["makespan_error"].abs().mean(),
                    "worst_pct": 100 * worst["makespan_error"], "worst": worst["variant"],
                    "start_median_pct_max": 100 * g["start_median_frac"].max(),
                    "start_p95_pct_max": 100 * g["start_p95_frac"].max()})
    return pd.DataFrame(out)
