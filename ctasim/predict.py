"""Registered predictions: what the simulator says an experiment will measure, written before it is measured.

``ctasim predict EXPERIMENT --out bench/predictions/NAME`` writes

* ``predictions.csv`` (:mod:`ctasim.results` schema): per case, strategy and variant (every micro-batching chunk
  count), the makespan the measurement harness will report (:func:`ctasim.harness.timed_makespan_ns`), from the
  model (``source = model``) and from a naive predictor beside it (``source = naive``, :class:`Naive`);
* where the profile has the memory hierarchy (``Hardware.l2_bytes``, :func:`ctasim.costs.tuned_gemm`), the same
  event model with it off (``source = flat``: every tile at the config's ``sm_tflops``), so that a report shows
  what the memory hierarchy adds; and where its configs have drift (``KernelConfig.cta_drift``), the memory hierarchy
  with the CTAs in lockstep (``source = lockstep``); and where a layer fuses an activation the profile prices apart
  from the GeLU (``Hardware.relu_epilogue_factor``, ``silu_epilogue_factor``), the model with every fused activation at
  the GeLU's cost (``source = gelu-priced``: the assumption before the activation probe); and where a layer reads a
  ReLU's output that the profile prices apart (``Hardware.relu_input_tile_factor``), the model with it priced as
  random data (``source = relu-input-off``); and where the profile has a clock curve (``Hardware.clock_curve_ns``),
  the model with the burst regime's one step instead (``source = clock-step``; burst experiments only: under the
  sustained regime the two are the same);
* with ``--reference-ms T`` (the calibration GEMM, 16384 x 8192 x 8192 sequential, timed on the machine the
  predictions are for: :data:`REFERENCE_EXPERIMENT`'s :data:`REFERENCE_CASE`), every model row again scaled by T over
  the model's own time of that GEMM (``source = model-ref``; registered plan 63 tested this correction: on a fast H200
  1.75% against 1.77% unscaled, on a slow one, post-hoc, 1.89% against 3.27%; docs/validation.md);
* ``schedules/<case>-<strategy>.tiles.csv.gz``: the per-CTA schedule of every CTA-pipelined strategy, on the clock of
  its first CTA (as the hardware traces are);
* ``registration.json``: the commit of the code and specs, sha256 of every spec file read, the harness values, the
  naive predictor's coefficients and :data:`RULES`, the judging rules fixed before the measurement exists.

A registration counts as a test only once it is committed before the measurement it answers: ``ctasim compare``
asks git which came first (:mod:`ctasim.accuracy`).

Left out: run-to-run spread (one number per case), the clock regime (the profile is a burst-regime profile).
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import hashlib
import json
import math
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ctasim import costs
from ctasim.cases import Case, expand, load_experiment
from ctasim.engine import simulate
from ctasim.harness import Harness, timed_makespan_ns, timed_plans
from ctasim.results import COLUMNS, staged_folder, write
from ctasim.spec import Experiment, Hardware, Strategy
from ctasim.strategies import build_plans, check_placement
from ctasim.strategies.ctapipe import fold_sides, is_ring, norm_folds, ring_gpus

__all__ = ["Naive", "Waves", "RULES", "ABLATIONS", "PREDICTORS", "without_memory", "without_drift", "gelu_priced", "relu_input_off", "one_step", "clock_step", "predict", "register", "reference_model_ms", "reference_scaled", "REFERENCE_EXPERIMENT", "REFERENCE_CASE", "spec_files", "git_commit", "schedule_name"]

RULES = {
    "judged": "every (case, strategy, variant) the measurement reports with status ok; nothing is left out after "
              "the measurement is seen",
    "makespan": "the median of the timed runs (ctahw Timed harness; burst regime: each run alone, behind the "
                "harness's rest (RunConfig.rest_ms: host sleep, GPUs idle) and its sleep gate); "
                "error = (predicted - measured) / measured",
    "best_chunks": "micro-batching's best chunk count: argmin over the chunk counts both ran",
    "ranking": "per case, the strategies ordered by their best makespan; agreement = the same order",
    "traced_runs": "every traced run is judged (no run is picked or dropped); per-CTA start error = median over "
                   "the tiles of |t_start predicted - t_start measured| / measured makespan, reported per run",
    "stall": "a traced run whose first counter completes more than 1.5x later than the earliest of its variant's "
             "traced runs is labelled 'stalled' in the report and still judged",
    "targets": "makespan MAPE <= 3%, worst |error| <= 6%, median per-CTA start error <= 2% of the makespan "
               "(the targets of docs/validation.md, unchanged)",
    "naive": "the naive predictors (source = naive: a FLOPs line fitted on measured GEMMs; source = waves: "
             "wave-quantized tile times of the profile, no events) are judged by the same rules beside the model",
    "flat": "where the profile has a memory hierarchy, the same event model without it (source = flat), and where "
            "it has drift the memory hierarchy in lockstep (source = lockstep), are judged by the same rules beside "
            "the model",
    "gelu-priced": "where a layer fuses a ReLU or SiLU that the profile prices apart from the GeLU, the model with "
                   "every fused activation at the GeLU's epilogue cost (source = gelu-priced) is judged by the same "
                   "rules beside the model",
    "relu-input-off": "where a layer reads a ReLU's output that the profile prices apart from random data, the model "
                      "with it priced as random data (source = relu-input-off) is judged by the same rules beside the "
                      "model",
    "clock-step": "where the profile has a clock curve (the burst regime's mean trajectory), the model with the one "
                  "step at the median onset instead (source = clock-step) is judged by the same rules beside the model",
}
"""The judging rules a registration fixes (``registration.json`` holds them; the report quotes them)."""


@dataclass(frozen=True)
class Naive:
    """A naive predictor: a straight line of measured GEMM time against FLOPs, composed by simple rules.

    One GEMM kernel takes ``a_ms + flops / (tflops * 1e9)`` ms (a least-squares line through the committed
    single-GEMM medians it was fitted on); a row-wise pass moves its bytes twice at the profile's HBM rate, an unfused
    epilogue (``Layer.epilogue_fused = false``) its bytes once each way (:func:`ctasim.costs.epilogue_pass_ns`).
    Sequential: the sum.  Micro-batching with ``c`` chunks over ``L`` GPUs: ``(c + L - 1)`` stages of the slowest
    layer's chunk.  TP: each GPU's half of every GEMM plus the profile's all-reduce time per layer pair.
    CTA-pipelining: the slowest layer plus one row-block of every other layer; on one GPU (``Strategy.gpus = 1``)
    the sum, as sequential (one GPU does every FLOP); on a ring (``1 < gpus < layers``, or ``placement = "ring"``, the layers of one square
    shape) GPU 0's layers, the most of any GPU, plus one row-block of every other layer.  Nothing else (no launch or
    harness terms, no wave quantization, no memory hierarchy).
    """

    a_ms: float
    tflops: float
    source: str

    def gemm_ms(self, m: int, k: int, n: int) -> float:
        return self.a_ms + 2.0 * m * k * n / (self.tflops * 1e9)

    @classmethod
    def fit(cls, baselines_csv: str | Path, backend: str = "cutlass") -> "Naive":
        """The line through the ``gemm`` rows of a ``ctahw run`` baselines.csv (``backend``), all M."""
        df = pd.read_csv(baselines_csv)
        g = df[(df["experiment"] == "gemm") & (df["backend"] == backend) & df["ok"].astype(bool)]
        if len(g) < 2:
            raise ValueError(f"{baselines_csv}: fewer than two {backend} gemm rows to fit the naive line on")
        h = g["k"].to_numpy(float)  # the baselines run square chains: K = N = H (column ``k``)
        return cls._line(2.0 * g["m"].to_numpy(float) * h * h, g["median_ms"],
                         f"least squares of {len(g)} {backend} gemm medians (M = {sorted(set(g['m'].astype(int)))}, "
                         f"N = K = {sorted(set(g['k'].astype(int)))}) of {Path(baselines_csv).parent.name}")

    @classmethod
    def _line(cls, flops, ms, source: str) -> "Naive":
        """The least-squares line of ``ms`` against ``flops``."""
        slope, a = np.polyfit(np.asarray(flops, dtype=float), np.asarray(ms, dtype=float), 1)
        return cls(float(a), float(1.0 / slope / 1e9), source)

    @classmethod
    def fit_shapes(cls, table_csv: str | Path, backend: str = "cutlass") -> "Naive":
        """The line through each shape's best measured order (the least median over its tile orders) of a
        ``gemm_shape_probe.py`` table or a calibration's ``tile_orders.csv`` (columns m, n, k, backend, order,
        median_ms): the FLOPs line a machine's own GEMM timings give. ValueError (one line) on fewer than two shapes."""
        df = pd.read_csv(table_csv)
        g = df[df["backend"] == backend].groupby(["m", "n", "k"], as_index=False)["median_ms"].min()
        if len(g) < 2:
            raise ValueError(f"{table_csv}: fewer than two {backend} shapes to fit the naive line on")
        return cls._line(2.0 * g["m"].to_numpy(float) * g["n"].to_numpy(float) * g["k"].to_numpy(float), g["median_ms"],
                         f"least squares of the best-order {backend} medians of {len(g)} shapes of "
                         f"{Path(table_csv).name} in {Path(table_csv).parent.name}")

    def predict_ms(self, strategy: Strategy, case: Case, hw: Hardware, variant: dict) -> float:
        layers = case.workload.layers
        eb = case.workload.elem_bytes
        row = _pass_ms(layers, eb, hw)
        full = [self.gemm_ms(l.m, l.k, l.n) + r for l, r in zip(layers, row)]
        kind = strategy.kind
        if kind == "sequential":
            return sum(full)
        if kind == "microbatch":
            c = int(variant["chunks"])
            stage = max(self.gemm_ms(l.m // c, l.k, l.n) + r / c for l, r in zip(layers, row))
            return (c + len(layers) - 1) * stage
        if kind == "tp":
            g = strategy.tp_degree or case.gpus
            ar = sum(costs.allreduce_ns(l.m * l.out_n * eb, g, hw) for l in layers[1::2]) / 1e6
            return sum(self.gemm_ms(l.m, l.k, l.n // g) if i % 2 == 0 else self.gemm_ms(l.m, l.k // g, l.n)
                       for i, l in enumerate(layers)) + sum(row) + ar
        if kind == "ctapipe" and strategy.gpus == 1:  # one GPU does every FLOP: the line sees no gain
            return sum(full)
        if kind == "ctapipe" and is_ring(strategy, case.workload):  # ring: GPU 0 (the most layers of equal ones)
            g = ring_gpus(strategy, case.workload)
            folded = norm_folds(case.workload, g)  # their LayerNorm runs as no pass of its own
            full = [f - (r if j in folded else 0.0) for j, (f, r) in enumerate(zip(full, row))]
            return sum(full[::g]) + sum(f / layers[j].tiles_m for j, f in enumerate(full) if j % g)
        if kind in ("ctapipe", "hybrid"):
            i = int(np.argmax(full))
            return full[i] + sum(f / layers[j].tiles_m for j, f in enumerate(full) if j != i)
        raise ValueError(f"no naive rule for strategy kind {kind!r}")


def _pass_ms(layers, eb: int, hw: Hardware) -> list[float]:
    """Each layer's memory passes, ms: its row-wise op (its stored output read and written once,
    :func:`ctasim.costs.rowwise_ns`) and its unfused epilogue (:func:`ctasim.costs.epilogue_pass_ns`), at the
    profile's pass rates; 0 without either."""
    return [((costs.rowwise_ns(l.m, l.out_n, eb, hw) if l.rowwise else 0.0)
             + (costs.epilogue_pass_ns(l, eb, hw) if l.epilogue_pass else 0.0)) / 1e6 for l in layers]


@dataclass(frozen=True)
class Waves:
    """The second naive predictor, from the profile alone (nothing fitted, no events): what a back-of-the-envelope
    estimate from the calibrated rates says, so that a report shows what the event model adds.

    One GEMM: ``kernel_fixed_ns + ceil(tiles / slots) x tile time`` (the profile's tile time of the layer's config:
    mainloop, epilogue, fused ops), the row-wise pass at the profile's row-wise rate. Sequential: the sum. Micro-batching with ``c``
    chunks over ``L`` GPUs: ``(c + L - 1)`` stages of the slowest layer's chunk, plus ``L - 1`` copies of one chunk
    at the copy-engine rate. TP: each GPU's share of every GEMM plus the profile's all-reduce per layer pair.
    CTA-pipelining and hybrid: the slower layer (on its share of the GPUs) plus one wave of each other layer;
    CTA-pipelining on one GPU (``Strategy.gpus = 1``): one kernel's fixed time plus ``ceil(all tiles / slots)`` tile
    times; on a ring (``1 < gpus < layers``, or ``placement = "ring"``): that of GPU 0's layers (the most) plus one wave of every other layer."""

    def gemm_ms(self, layer, hw: Hardware, eb: int) -> float:
        cfg = hw.config(layer.tile_m, layer.tile_n)
        slots = hw.sm_count * cfg.cta_slots_per_sm
        tiles = max(1, -(-layer.m // layer.tile_m) * -(-layer.n // layer.tile_n))
        return (cfg.kernel_fixed_ns + -(-tiles // slots) * costs.tile_ns(layer, layer.k, hw, eb)) / 1e6

    def wave_ms(self, layer, hw: Hardware, eb: int) -> float:
        return costs.tile_ns(layer, layer.k, hw, eb) / 1e6

    def predict_ms(self, strategy: Strategy, case: Case, hw: Hardware, variant: dict) -> float:
        import dataclasses as _dc

        layers = case.workload.layers
        eb = case.workload.elem_bytes
        row = _pass_ms(layers, eb, hw)
        full = [self.gemm_ms(l, hw, eb) + r for l, r in zip(layers, row)]
        kind = strategy.kind
        if kind == "sequential":
            return sum(full)
        if kind == "microbatch":
            c = int(variant["chunks"])
            parts = [_dc.replace(l, m=l.m // c) for l in layers]
            stage = max(self.gemm_ms(p, hw, eb) + r / c for p, r in zip(parts, row))
            copy = max(p.m * p.out_n * eb / hw.copy_engine_gbps for p in parts[:-1]) / 1e6 if len(parts) > 1 else 0.0
            return (c + len(layers) - 1) * stage + (len(layers) - 1) * copy
        if kind == "tp":
            g = strategy.tp_degree or case.gpus
            ar = sum(costs.allreduce_ns(l.m * l.out_n * eb, g, hw) for l in layers[1::2]) / 1e6
            return sum(self.gemm_ms(_dc.replace(l, n=l.n // g) if i % 2 == 0 else _dc.replace(l, k=l.k // g), hw, eb)
                       for i, l in enumerate(layers)) + sum(row) + ar
        if kind == "ctapipe" and strategy.gpus == 1:  # one kernel: the waves of every layer's tiles together
            first = layers[0]
            cfg = hw.config(first.tile_m, first.tile_n)
            slots = hw.sm_count * cfg.cta_slots_per_sm
            tiles = sum(-(-l.m // l.tile_m) * -(-l.n // l.tile_n) for l in layers)
            return (cfg.kernel_fixed_ns + -(-tiles // slots) * costs.tile_ns(first, first.k, hw, eb)) / 1e6 + sum(row)
        if kind == "ctapipe" and is_ring(strategy, case.workload):  # ring: the busiest GPU's kernel, a wave of the rest
            g = ring_gpus(strategy, case.workload)
            first = layers[0]
            cfg = hw.config(first.tile_m, first.tile_n)
            slots = hw.sm_count * cfg.cta_slots_per_sm
            tiles0 = sum(-(-l.m // l.tile_m) * -(-l.n // l.tile_n) for l in layers[::g])  # GPU 0: the most layers
            # a folded LayerNorm: its tiles' epilogue time (ctasim.strategies.ctapipe.fold_sides), no pass
            fold = {j: costs.norm_fold_ns(layers[j], hw, side) for j, side in fold_sides(case.workload, g).items()}
            folded = norm_folds(case.workload, g)
            tile0 = costs.tile_ns(first, first.k, hw, eb) + fold.get(0, 0.0)
            own = (cfg.kernel_fixed_ns + -(-tiles0 // slots) * tile0) / 1e6
            rest = sum(self.wave_ms(l, hw, eb) + fold.get(j, 0.0) / 1e6 for j, l in enumerate(layers) if j % g)
            return own + rest + sum(r for j, r in enumerate(row) if j not in folded)
        if kind in ("ctapipe", "hybrid"):
            t = strategy.tp_degree if kind == "hybrid" else 1
            shares = [_dc.replace(l, n=l.n // t) if i % 2 == 0 else _dc.replace(l, k=l.k // t)
                      for i, l in enumerate(layers)] if t > 1 else list(layers)
            times = [self.gemm_ms(p, hw, eb) + r for p, r in zip(shares, row)]
            i = int(np.argmax(times))
            ar = costs.allreduce_ns(layers[-1].m * layers[-1].out_n * eb, t, hw) / 1e6 if t > 1 else 0.0
            return times[i] + sum(self.wave_ms(p, hw, eb) for j, p in enumerate(shares) if j != i) + ar
        raise ValueError(f"no waves rule for strategy kind {kind!r}")


def without_memory(hw: Hardware) -> Hardware | None:
    """The profile with its memory hierarchy off (``l2_bytes = 0``: every tile at its config's ``sm_tflops``), the
    ``flat`` predictor beside a model that has one; None when the profile has none."""
    if not any(costs.memory_model(hw, c) for c in hw.kernel_configs):
        return None
    return dataclasses.replace(hw, l2_bytes=0.0)


def without_drift(hw: Hardware) -> Hardware | None:
    """The profile with its CTAs in lockstep (every ``cta_drift = 0`` and ``ticket_spread = 0``), the ``lockstep``
    predictor beside a memory hierarchy that has drift or ticket spread; None when there is neither."""
    if without_memory(hw) is None or not any(c.cta_drift > 0 or c.ticket_spread > 0 for c in hw.kernel_configs):
        return None
    return dataclasses.replace(hw, kernel_configs=tuple(dataclasses.replace(c, cta_drift=0.0, ticket_spread=0.0)
                                                        for c in hw.kernel_configs))


def gelu_priced(hw: Hardware, layers) -> Hardware | None:
    """The profile with every fused activation at the GeLU's epilogue cost (``silu_epilogue_factor`` =
    ``relu_epilogue_factor`` = 1), the ``gelu-priced`` predictor beside a profile that prices a fused activation of
    ``layers`` apart from the GeLU; None when none of ``layers`` fuses one it prices apart."""
    apart = {op for op in ("relu", "silu") if costs.activation_factor(hw, op) != 1.0}
    if not any(l.epilogue_fused and apart & set(l.epilogue) for l in layers):
        return None
    return dataclasses.replace(hw, silu_epilogue_factor=1.0, relu_epilogue_factor=1.0)


def relu_input_off(hw: Hardware, layers) -> Hardware | None:
    """The profile with a ReLU's output priced as random data (``relu_input_tile_factor`` = 1), the
    ``relu-input-off`` predictor beside a profile that prices it apart; None when no layer of ``layers`` reads a
    ReLU's output there (:func:`ctasim.costs.input_tile_factor`)."""
    if all(costs.input_tile_factor(layers, i, hw) == 1.0 for i in range(len(layers))):
        return None
    return dataclasses.replace(hw, relu_input_tile_factor=1.0)


def one_step(hw: Hardware) -> Hardware:
    """The profile with the burst regime's one step (``clock_onset_ns``, ``clock_sustained_slowdown``) instead of any
    clock curve (itself where it has none): how every plan before 26 was registered."""
    return dataclasses.replace(hw, clock_curve_ns=(), clock_curve_factor=()) if hw.clock_curve_ns else hw


def clock_step(hw: Hardware, regime: str) -> Hardware | None:
    """:func:`one_step`, the ``clock-step`` predictor beside a profile with a clock curve; None when it has none, or
    under the sustained regime (which never reads the curve: the same model)."""
    return one_step(hw) if hw.clock_curve_ns and regime == "burst" else None


ABLATIONS = (("flat", lambda e: without_memory(e.hardware)), ("lockstep", lambda e: without_drift(e.hardware)),
             ("gelu-priced", lambda e: gelu_priced(e.hardware, e.workload.layers)),
             ("relu-input-off", lambda e: relu_input_off(e.hardware, e.workload.layers)),
             ("clock-step", lambda e: clock_step(e.hardware, e.regime)))
"""The model with one mechanism off, each a predictor beside it (its ``source``): name and the profile it predicts
with, given the experiment (None: the mechanism is not there to switch off)."""

PREDICTORS = ("model",) + tuple(name for name, _ in ABLATIONS) + ("naive", "waves", "model-ref")
"""Every ``source`` a registration's ``predictions.csv`` may hold, in the order reports list them."""


def _variant(kind: str, params: dict) -> str:
    return f"chunks={params['chunks']}" if kind == "microbatch" else ""


def schedule_name(case: str, strategy: str) -> str:
    """The file name of a pipelined strategy's predicted per-CTA schedule in a registration's ``schedules/``."""
    return f"{case}-{strategy}.tiles.csv.gz".replace(",", "_").replace("=", "")


REFERENCE_EXPERIMENT = "reg49-reference"
"""The experiment of the calibration GEMM (M x 8192 x 8192, sequential, 128x256 tiles) whose measured time scales the
``model-ref`` rows: registered plan 63 scaled every registered prediction of a call by it (docs/validation.md)."""
REFERENCE_CASE = "m=16384"
"""The case of :data:`REFERENCE_EXPERIMENT` a user times (16384 x 8192 x 8192, the shape ``ctahw calibrate`` and
every committed call's reference GEMM ran)."""


def reference_model_ms(exp: Experiment, harness: Harness, seed: int = 0) -> float:
    """The model's time of the calibration GEMM (:data:`REFERENCE_EXPERIMENT`'s :data:`REFERENCE_CASE`) under
    ``exp``'s hardware profile and clock regime, as :func:`predict` prices a case (the harness's timed makespan)."""
    ref = dataclasses.replace(load_experiment(REFERENCE_EXPERIMENT), hardware=exp.hardware, regime=exp.regime)
    case = next(c for c in expand(ref) if c.label == REFERENCE_CASE)
    plan = timed_plans(ref.strategies[0], case.workload, ref.hardware, case.gpus, case.label, harness)[0]
    ns, _ = timed_makespan_ns(plan, ref.hardware, harness, seed=seed, regime=ref.regime)
    return ns / 1e6


def reference_scaled(df: pd.DataFrame, ratio: float) -> pd.DataFrame:
    """``df`` (:func:`predict`'s rows) with every ``model`` row again as ``model-ref``, its makespan times ``ratio``
    (the calibration GEMM's measured over modelled time); skipped rows stay skipped."""
    scaled = df[df["source"] == "model"].assign(source="model-ref", makespan_ms=lambda d: d["makespan_ms"] * ratio)
    return pd.concat([df, scaled], ignore_index=True)


def predict(exp: Experiment, harness: Harness, naive: Naive | None, seed: int = 0,
            schedules: Path | None = None) -> pd.DataFrame:
    """One row per (case, strategy, variant) and predictor: see the module docstring (``model-ref`` rows are added by
    :func:`register` where given the reference time)."""
    others = [(name, hw) for name, hw in ((name, off(exp)) for name, off in ABLATIONS) if hw is not None]
    rows = []
    for case in expand(exp):
        layers = len(case.workload.layers)
        m = case.workload.layers[0].m
        for s in exp.strategies:
            base = {"experiment": exp.name, "case": case.label, "strategy": s.label, "kind": s.kind, "m": m,
                    "layers": layers, "rel_err": float("nan")}
            problem = check_placement(s, case.workload, exp.hardware, case.gpus)
            if problem:
                for src in ("model",) + tuple(n for n, _ in others) + (("naive",) if naive else ()) + ("waves",):
                    rows.append(dict(base, variant="", gpus=case.gpus, source=src, status="skipped", reason=problem,
                                     makespan_ms=float("nan")))
                continue
            other_plans = [(name, hw, timed_plans(s, case.workload, hw, case.gpus, case.label, harness))
                           for name, hw in others]
            for i, plan in enumerate(timed_plans(s, case.workload, exp.hardware, case.gpus, case.label, harness)):
                ns, _ = timed_makespan_ns(plan, exp.hardware, harness, seed=seed, regime=exp.regime)
                v = _variant(s.kind, plan.params)
                rows.append(dict(base, variant=v, gpus=plan.gpus, source="model", status="ok", reason="",
                                 makespan_ms=ns / 1e6))
                for name, hw, plans in other_plans:
                    ns, _ = timed_makespan_ns(plans[i], hw, harness, seed=seed, regime=exp.regime)
                    rows.append(dict(base, variant=v, gpus=plan.gpus, source=name, status="ok", reason="",
                                     makespan_ms=ns / 1e6))
                if naive:
                    rows.append(dict(base, variant=v, gpus=plan.gpus, source="naive", status="ok", reason="",
                                     makespan_ms=naive.predict_ms(s, case, exp.hardware, plan.params)))
                rows.append(dict(base, variant=v, gpus=plan.gpus, source="waves", status="ok", reason="",
                                 makespan_ms=Waves().predict_ms(s, case, exp.hardware, plan.params)))
            if schedules is not None and s.kind == "ctapipe":
                hw0 = dataclasses.replace(exp.hardware, launch_ns=0.0)
                plan = build_plans(s, case.workload, hw0, case.gpus, case.label)[0]
                tiles = simulate(plan, hw0, seed=seed, regime=exp.regime).tiles
                schedules.mkdir(parents=True, exist_ok=True)
                tiles.to_csv(schedules / schedule_name(case.label, s.label),
                             index=False, float_format="%.1f")
    df = pd.DataFrame(rows)
    return df[list(COLUMNS)] if not df.empty else pd.DataFrame(columns=list(COLUMNS))


def spec_files(exp_path: Path, exp: Experiment) -> dict[str, str]:
    """sha256 of the experiment file and of the hardware and workload specs it names (as loaded)."""
    from ctasim.spec import SpecError, resolve_ref  # noqa: PLC0415

    out = {}
    paths = [exp_path]
    for kind, name in (("hardware", exp.hardware.name), ("workloads", exp.workload.name)):
        try:
            paths.append(resolve_ref(name, kind, exp_path.parent))
        except SpecError:  # an inline spec has no file of its own
            pass
    for p in paths:
        out[str(p.name if p.parent.name in ("experiments", "hardware", "workloads") else p)] = \
            hashlib.sha256(Path(p).read_bytes()).hexdigest()
    return out


def git_commit(where: Path) -> tuple[str, bool]:
    """(HEAD commit, whether the files a prediction depends on -- ctasim/ and specs/ -- differ from it) of the checkout
    holding ``where``; ('', False) outside git."""
    try:
        head = subprocess.run(["git", "-C", str(where), "rev-parse", "HEAD"], capture_output=True, text=True,
                              check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(where), "status", "--porcelain", "--untracked-files=no",
                                "--", ":/ctasim", ":/specs"],
                               capture_output=True, text=True, check=True).stdout.strip() != ""
        return head, dirty
    except (OSError, subprocess.CalledProcessError):
        return "", False


def register(exp: Experiment, exp_path: Path, out: Path, harness: Harness, naive: Naive | None, seed: int = 0,
             schedules: bool = True, reference_ms: float | None = None) -> list[Path]:
    """Write a registration into ``out`` (a new folder, written whole or not at all); ``schedules = False`` leaves
    out the per-CTA schedules (``ctasim compare`` then judges makespans only; the record says so); ``reference_ms``
    (the calibration GEMM timed on the machine) adds the ``model-ref`` rows and records the ratio."""
    if reference_ms is not None and not (math.isfinite(reference_ms) and reference_ms > 0):
        raise ValueError(f"reference_ms must be a positive time in ms, got {reference_ms}")
    with staged_folder(out) as tmp:
        df = predict(exp, harness, naive, seed=seed, schedules=tmp / "schedules" if schedules else None)
        reference = None
        if reference_ms is not None:
            modelled = reference_model_ms(exp, harness, seed=seed)
            reference = {"experiment": REFERENCE_EXPERIMENT, "case": REFERENCE_CASE, "measured_ms": reference_ms,
                         "model_ms": modelled, "ratio": reference_ms / modelled}
            df = reference_scaled(df, reference["ratio"])
        write(df, tmp / "predictions.csv")
        commit, dirty = git_commit(Path(__file__).parent)
        record = {
            "experiment": exp.name,
            "created_utc": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "code_commit": commit,
            "code_dirty": dirty,
            "spec_sha256": spec_files(exp_path, exp),
            "hardware": exp.hardware.name,
            "hardware_measured": exp.hardware.measured,
            "regime": exp.regime,
            "shared_device": exp.shared_device,
            "harness": {"name": harness.name, "source": harness.source, **harness.values()},
            "naive": dataclasses.asdict(naive) if naive else None,
            "seed": seed,
            "schedules": schedules,
            "reference": reference,
            "rules": RULES,
        }
        (tmp / "registration.json").write_text(json.dumps(record, indent=1) + "\n")
    return sorted(p for p in out.rglob("*") if p.is_file())
