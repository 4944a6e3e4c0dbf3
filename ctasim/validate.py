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
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ctasim import costs
from ctasim.engine import simulate
from ctasim.harness import Harness, timed_makespan_ns, timed_plans
from ctasim.plan import Plan
from ctasim.spec import Hardware, Layer, Strategy, Workload
from ctasim.strategies import build_plans

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

CTAPIPE_RUN = "2026-11-29-ctapipe"
CTAPIPE_FIT_ALSO = ("2026-11-29-ctapipe-range", "2026-11-29-ctapipe-trace3")
CTAPIPE_ALSO = ("2026-11-29-ctapipe-run1", "2026-11-29-ctapipe-rerun3", "2026-11-29-ctapipe-clean")
"""The committed ctapipe runs (folders of bench/results/hw) behind the committed profile: the main run (fitted at
``validate_ctapipe.FIT_MS``, judged at the others), the runs fitted on at those M values too, and the runs judged in
full; ``main``'s defaults, bench/validate_new_variants.py and the CI gates take them from here."""

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


# ------------------------------------------------------------------------------------------------ report
def _md(df: pd.DataFrame, floatfmt: str = ".2f") -> str:
    cols = list(df.columns)
    out = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in df.itertuples(index=False):
        out.append("| " + " | ".join(format(v, floatfmt) if isinstance(v, float) else str(v) for v in r) + " |")
    return "\n".join(out)


def _per_cta_demo(hw: Hardware, out: Path, ms=(1024, 4096, 16384)) -> pd.DataFrame:
    """The per-CTA comparison on CTA-pipelined plans, against a stand-in "measured" trace (1% tile jitter)."""
    from ctasim import plots
    from ctasim.compare import compare

    rows = []
    for m in ms:
        layer = Layer(m, 8192, 8192, 128, 256)
        plan = build_plans(Strategy("ctapipe"), Workload(f"chain2-{m}", "bf16", (layer, layer)), hw, 2, f"m={m}")[0]
        meas, sim = simulate(plan, hw, seed=3, jitter=0.01), simulate(plan, hw)
        c = compare(meas, sim, plan)
        rows.append({"m": m, **{k: v for k, v in c.summary().items()}})
        if m == ms[0]:
            plots.gantt_pair(meas, sim, out / f"gantt-ctapipe-m{m}.png",
                             title=f"ctapipe M={m}: stand-in measured (1% jitter) vs simulated",
                             labels=("stand-in 'measured' (simulated, 1% tile jitter)", "simulated"))
    return pd.DataFrame(rows)


CTAPIPE_TILE_TABLES = ((1024, "cutlass_ctapipe"), (4096, "cutlass_ctapipe_c21"))
"""Measured traces committed as reduced tile tables (``ctapipe-tiles-m<M>-<variant>.csv.gz``) for the CI
gates: held-out M, the 1x1 kernel and the best variant."""


def ctapipe_section(hw0: Hardware, hw: Hardware, folder: Path, also: list[Path], out: Path,
                    fit_also: list[Path] = ()) -> list[str]:
    """Fit the ctapipe kernel variants on the FIT_MS traces of ``folder`` and ``fit_also``, judge every trace,
    write CSVs, plots, tile tables."""
    from ctasim import plots
    from ctasim import validate_ctapipe as VC

    traces = VC.load_folder(folder)
    missing = [str(p) for p in fit_also if not (Path(p) / VC.TRACES_FILE).exists()]
    if missing:
        raise FileNotFoundError(f"--ctapipe-fit-also: no {VC.TRACES_FILE} in {', '.join(missing)}")
    both = {Path(p).resolve() for p in fit_also} & {Path(p).resolve() for p in also}
    if both:
        raise ValueError(f"{', '.join(map(str, sorted(both)))} given both to fit on and to judge in full")
    extra = [VC.load_folder(p) for p in fit_also]
    fields, evidence = VC.fit(traces + [t for e in extra for t in e], hw0)
    hw_c = VC.apply_fit(hw, fields)
    df, sims = VC.judge(traces, hw_c)
    df_extra = [VC.judge(e, hw_c)[0] for e in extra]
    base = hw0.config(128, 256)
    before = {k: dict(sm_tflops=base.sm_tflops, tile_fixed_ns=base.tile_fixed_ns, wave_slowdown=0.0,
                      wave_slowdown_waves=1.0, cta_launch_ns=0.0, signal_hold_ns=0.0, signal_ns=0.0, tile_cv=0.0) for k in fields}
    df_before, _ = VC.judge(traces, VC.apply_fit(hw, before))
    others = [VC.judge(VC.load_folder(p), hw_c, fit_ms=())[0] for p in also if (p / VC.TRACES_FILE).exists()]
    cols = ["run", "m", "variant", "role", "stalled", "makespan_meas_us", "makespan_sim_us", "makespan_error",
            "start_median_frac", "start_p95_frac", "end_median_frac", "end_p95_frac", "dequeue_spearman",
            "start_order_spearman", "consumer_source", "first_tile_delay_L1_meas_ns", "first_tile_delay_L1_sim_ns", "busy_gpu0_meas", "busy_gpu0_sim",
            "busy_gpu1_meas", "busy_gpu1_sim", "overlap_L0-L1_meas", "overlap_L0-L1_sim"]
    allrows = pd.concat([df] + df_extra + others, ignore_index=True)
    allrows[cols].round(5).to_csv(out / "ctapipe.csv", index=False)
    summ = VC.summary(df)
    summ.round(3).to_csv(out / "ctapipe-summary.csv", index=False)
    summ_all = VC.summary(allrows)
    evidence.to_csv(out / "ctapipe-fit.csv", index=False)
    plots.error_vs_m(df.assign(error=df["makespan_error"], series=df["variant"]), out / "ctapipe-error-vs-m.png",
                     title=f"{folder.name}: CTA-pipelining makespan, simulated vs measured traces")
    for m, v in ((16384, "cutlass_ctapipe_c21"), (1024, "cutlass_ctapipe")):
        mt = next((t for t in traces if t.m == m and t.variant == v), None)
        if mt is not None:
            plots.gantt_pair(mt.trace, sims[(mt.run, m, v)][1], out / f"gantt-ctapipe-hw-m{m}-{v}.png",
                             title=f"{v} M={m}: measured trace (2xH200) vs simulated ({hw_c.name} + ctapipe fit)",
                             labels=("measured (%globaltimer)", "simulated"))
    for m, v in CTAPIPE_TILE_TABLES:
        mt = next((t for t in traces if t.m == m and t.variant == v), None)
        if mt is not None:
            VC.save_tiles(mt, out / f"ctapipe-tiles-m{m}-{v}.csv.gz")
    show = ["m", "variant", "role", "stalled", "makespan_meas_us", "makespan_sim_us", "makespan_error", "start_median_frac",
            "start_p95_frac", "end_median_frac", "dequeue_spearman", "start_order_spearman", "first_tile_delay_L1_meas_ns",
            "first_tile_delay_L1_sim_ns"]
    lines = ["## CTA-pipelining: measured per-CTA traces (" + folder.name + ")", "",
             "Kernel variants fitted on the traces at M in " + str(VC.FIT_MS) + " of " + ", ".join(
                 [folder.name] + [p.name for p in fit_also]) + "; judged on the others. Makespan = "
             "first CTA start to last tile end in the trace (no harness); per-CTA errors as fractions of it. "
             f"Traces with a first-wave store stall (the consumer's first tile more than {VC.STALL_NS / 1e3:.0f} us "
             "later than simulated: `stalled`) are listed but left out of the summaries.", "",
             "### Fitted kernel-config fields", "", _md(evidence[["kernel", "field", "value", "fitted to"]], ".4f"), "",
             "### Accuracy on held-out M", "", _md(summ), "",
             "Every held-out trace of every run judged here (this run, the runs fitted on too, the other runs; "
             "stalls left out):", "", _md(summ_all), "",
             "### Every trace", "", _md(df[show], ".4f"), "",
             "### Without the fitted variant configs (the default 128x256 config for every layer)", "",
             _md(VC.summary(df_before)), "", _md(df_before[show], ".4f"), ""]
    for e in df_extra:
        lines += [f"### Run fitted on at M in {VC.FIT_MS}, judged at the others: {e['run'].iloc[0]}", "",
                  _md(e[show], ".4f"), ""]
    for o in others:
        lines += [f"### Other run, judged in full: {o['run'].iloc[0]}", "", _md(o[show], ".4f"), ""]
    lines += ["Plots: `ctapipe-error-vs-m.png`, `gantt-ctapipe-hw-m16384-cutlass_ctapipe_c21.png`, "
              "`gantt-ctapipe-hw-m1024-cutlass_ctapipe.png`. Tile tables for the CI gates: "
              + ", ".join(f"`ctapipe-tiles-m{m}-{v}.csv.gz`" for m, v in CTAPIPE_TILE_TABLES) + ".", ""]
    print(_md(summ))
    return lines


def main(argv=None) -> int:
    from ctasim.cli import OneLineParser, _out_folder
    from ctasim.results import staged_folder
    from ctasim.spec import SpecError
    from ctasim.trace import TraceFileError

    ap = OneLineParser(prog="python -m ctasim.validate", description=__doc__.split("\n\n")[0])
    ap.add_argument("results", nargs="?", default=None,
                    help="ctahw run results folder (baselines.csv; default: RUNS/2026-11-29-run2)")
    ap.add_argument("--runs", type=Path, default=None,
                    help="the folder of committed measurements (a checkout's bench/results/hw; default: the one beside "
                         "this package when it runs from a checkout)")
    ap.add_argument("--profile", default="h200-x2-calibrated")
    ap.add_argument("--also", nargs="*", default=None,
                    help="other runs judged in full with the same fit (nothing fitted on them; default RUNS/2026-11-29-run1)")
    ap.add_argument("--out", default="out/validation",
                    help="report folder (default out/validation; the committed report is bench/results/validation, "
                         "rewritten only when named here)")
    ap.add_argument("--ctapipe", default=None,
                    help=f"ctapipe results folder with per-CTA traces (ctapipe_traces.trace.npz; default RUNS/{CTAPIPE_RUN}); "
                         "'' skips")
    ap.add_argument("--ctapipe-also", nargs="*", default=None, help="other ctapipe runs judged in full with the same fit")
    ap.add_argument("--ctapipe-fit-also", nargs="*", default=None,
                    help="other ctapipe runs whose traces at the fitting M values are fitted on too (the others judged)")
    args = ap.parse_args(argv)
    try:
        runs = args.runs or Path(__file__).resolve().parent.parent / "bench" / "results" / "hw"
        if not runs.is_dir():
            raise ValidationInputError(f"{runs}: no committed measurements there; give --runs DIR (a checkout's "
                                       f"bench/results/hw)")
        args.results = args.results or str(runs / "2026-11-29-run2")
        args.also = [str(runs / "2026-11-29-run1")] if args.also is None else args.also
        args.ctapipe = str(runs / CTAPIPE_RUN) if args.ctapipe is None else args.ctapipe
        args.ctapipe_also = [str(runs / r) for r in CTAPIPE_ALSO] if args.ctapipe_also is None else args.ctapipe_also
        args.ctapipe_fit_also = ([str(runs / r) for r in CTAPIPE_FIT_ALSO] if args.ctapipe_fit_also is None
                                 else args.ctapipe_fit_also)
        out = _out_folder(args.out)
        with staged_folder(out, merge=True) as tmp:
            _validate_main(args, tmp, argv)
    except (ValidationInputError, TraceFileError, FileNotFoundError) as e:
        print(f"python -m ctasim.validate: error: {e}", file=sys.stderr)
        return 2
    except SpecError as e:
        print(f"python -m ctasim.validate: error: {e}", file=sys.stderr)
        return 2
    return 0


def _validate_main(args, out: Path, argv) -> None:
    import json

    from ctasim import plots
    from ctasim.spec import load_hardware

    hw0 = load_hardware(args.profile)
    cases = load_cases(args.results)
    fields, harness, evidence = fit(cases, hw0)
    hw = apply_fit(hw0, fields)
    df = validate(cases, hw, harness)
    # The reverse split: fitted on the other M values, judged on these (a check that the fit is stable).
    rev_ms = tuple(sorted({c.m for c in cases} - set(FIT_MS)))
    rf, rh, rev_evidence = fit(cases, hw0, rev_ms)
    rev = validate(cases, apply_fit(hw0, rf), rh, rev_ms)
    plain = validate(cases, hw0, Harness(0.0, hw0.kernel_gap_ns, 0.0))
    plain_nofit = validate(cases, apply_fit(hw0, {"kernel_fixed_ns": 0.0, "max_clock_boost": 1.0}), harness)
    others = [validate([dataclasses.replace(c) for c in load_cases(p)], hw, harness, fit_ms=()) for p in args.also]

    df["series"] = [f"microbatch c={c}" if s == "microbatch" else s for s, c in zip(df["strategy"], df["chunks"])]
    df.round(5).to_csv(out / "validation.csv", index=False)
    summ = summary(df)
    summ.round(3).to_csv(out / "summary.csv", index=False)
    agree = choice_agreement(df)
    agree.to_csv(out / "choices.csv", index=False)
    evidence.to_csv(out / "fit.csv", index=False)
    plots.error_vs_m(df, out / "error-vs-m.png", title=f"{Path(args.results).name}: simulated vs measured makespan")
    demo = _per_cta_demo(hw, out)
    demo.round(5).to_csv(out / "per-cta-demo.csv", index=False)

    lines = [
        f"# Validation: {Path(args.results).name} vs `{args.profile}`", "",
        "Written by `python -m ctasim.validate` (see docs/validation.md); CUTLASS backend rows; makespan = the "
        "harness's start-to-end event time; error = (simulated - measured) / measured.", "",
        f"Fitted on M in {FIT_MS} (components only), judged on the other M values.", "",
        "## Fitted parameters", "", _md(evidence, ".3f"), "",
        "## Accuracy on held-out M (this fit)", "", _md(summ), "",
        "## Reverse split (fitted on " + ", ".join(map(str, rev_ms)) + f"; judged on {FIT_MS})", "",
        _md(summary(rev)), "", _md(rev_evidence, ".3f"), "",
        "## Without the model change or the harness (same held-out rows)", "",
        "Profile fields only, no harness model:", "", _md(summary(plain)), "",
        "Harness model, but kernel_fixed_ns = 0 and max_clock_boost = 1:", "", _md(summary(plain_nofit)), "",
        "## Best chunk count and strategy ranking per M", "", _md(agree), "",
        "## Every case", "", _md(df[["case", "role", "measured_ms", "simulated_ms", "error"]], ".4f"), "",
    ]
    for p, o in zip(args.also, others):
        lines += [f"## Other run, judged in full: {Path(p).name}", "", _md(summary(o.assign(role="held_out"))), ""]
    lines += ["## Per-CTA comparison, CTA-pipelining (stand-in measured traces)", "",
              "No per-CTA hardware traces exist yet; 'measured' here is the simulator with 1% tile jitter, to show "
              "the figures the comparison reports. Not evidence of accuracy.", "",
              _md(demo[["m", "makespan_error", "start_median_frac", "start_p95_frac", "end_median_frac",
                        "dequeue_spearman", "tiles_matched"]], ".4f"), "",
              "Plots: `error-vs-m.png`, `gantt-ctapipe-m1024.png`.", ""]
    if args.ctapipe:
        lines += ctapipe_section(hw0, hw, Path(args.ctapipe), [Path(p) for p in args.ctapipe_also], out,
                                 [Path(p) for p in args.ctapipe_fit_also])
    (out / "report.md").write_text("\n".join(lines))
    prov = {"command": "python -m ctasim.validate " + " ".join(argv or []), "results": str(args.results),
            "profile": args.profile, "fit_ms": FIT_MS, "harness": dataclasses.asdict(harness), "fitted": fields}
    (out / "provenance.json").write_text(json.dumps(prov, indent=1, default=str) + "\n")
    print(_md(summ))
    print()
    print(_md(agree))
    print(f"\nwrote {args.out}/report.md, validation.csv, summary.csv, choices.csv, fit.csv, per-cta-demo.csv, plots")


if __name__ == "__main__":
    raise SystemExit(main())
