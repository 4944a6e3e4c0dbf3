"""Running an experiment spec on the GPUs: the cases and strategies ``ctasim predict`` predicts, measured.

``ctahw run EXPERIMENT`` takes what ``ctasim run`` takes (a name or a TOML path).  :func:`plan_runs` (CPU only)
expands the spec into one row per (case, strategy) in the schema of :mod:`ctasim.results`, each ``planned`` or
``skipped`` with the reason; :func:`run` measures the planned rows and returns the table ``ctasim compare`` reads.

What runs today:

* ``sequential``, ``microbatch`` (the spec's chunk counts, one row each, ``variant = "chunks=C"``) and ``tp``: the
  ctasim plan of the case (``ctasim.strategies``), issued by the one plan executor (:mod:`ctahw.executor`) on GPUs
  0 .. G-1: per GEMM the project's CUTLASS kernel (128x256x64, the kernel the profiles' default config describes;
  its tile order tuned per shape as the baselines do) with the layer's epilogue fused (gelu, silu, relu, or
  residual = + the workload's input or the residual stream, ``Layer.residual_source``, added by one K slice of a
  tensor-parallel pair) or, for a layer with
  ``epilogue_fused = false`` (swiglu's only path), the plain GEMM and then the ops as an elementwise kernel of
  their own (:func:`ctahw.rowwise.epilogue`); a layer's row-wise op (LayerNorm / RMSNorm, :mod:`ctahw.rowwise`) as
  its own kernel; micro-batching's hand-offs as peer copies on a copy stream; TP's all-reduce on NCCL. Any
  workload the plan describes: per-layer M / K / N, any number of layers (micro-batching: layer i on GPU i).
  Timed by the baselines' harness (``ctahw.baselines.Timed``: a sleep gate, rested GPUs, start and end events on
  GPU 0), ``reps`` medians, with the per-part breakdown; checked once on fresh random inputs with poisoned
  outputs against the fp32 workload (:func:`ctahw.executor.reference_output`, activations rounded to bf16 where
  the GPU stores them), on every GPU that ends with the output.
* ``ctapipe`` on two GPUs, for square 2-layer chains with no epilogue or row-wise op (the shapes its kernels
  run): one :class:`ctahw.baselines.Session` per H runs the variant the strategy names and its traced twin, whose
  traces are kept, as the flag shorthand does; each session row maps to the spec's row by :func:`sweep_rows`.
* ``ctapipe`` with ``gpus = 1`` (intra-GPU CTA-pipelining): the chain kernel (:mod:`ctahw.chain`) on GPU 0, every
  layer of a square chain in one persistent kernel, in the order of ctasim's plan; checked once against the fp32
  chain (poisoned outputs), timed by the same harness, plus one traced run whose trace is kept (the ticket count
  and error record checked after every run); tile_source 'queue' runs the tickets design, 'static' the static
  order with 2x1 clusters (:func:`chain_design`). With ``gpus = G`` below the layer count (a ring: layer l on GPU
  l mod G) one chain kernel per GPU, the same checks, the trace on GPU 0's clock (measured offsets); with as many GPUs
  as layers and ``placement = "ring"``, layers of any shapes with one fused op each, a LayerNorm between a residual
  layer and a GeLU layer folded into the second (:func:`chain_case`). An experiment with ``shared_device = true``
  runs a ring's kernels all on device 0, each on its own stream with its share of the SMs (the one-GPU test of a
  ring, against a profile of one share).
* Everything else is a ``skipped`` row with its reason: a strategy that needs more GPUs than the machine has; a
  plan the executor cannot issue (an all-gather: TP's unpaired last layer); a fused epilogue with no fused kernel
  (swiglu); a GEMM shape the CUTLASS kernel does not take; a ctapipe workload its kernels do not run (more than 2
  layers on as many GPUs, K != N, an epilogue or row-wise op on the chain kernel of several layers, a row-wise op a
  ring cannot fold); hybrid.

Left out: the cuBLAS backend (it fuses no epilogue; the flag interface times it), traces of non-pipelined kernels,
input sets rotated between repetitions (one set: the flag shorthand rotates them).
"""

from __future__ import annotations

import functools
import math
import sys
from dataclasses import dataclass, field
from typing import Callable

import pandas as pd

from ctasim.cases import Case, expand
from ctasim.results import COLUMNS
from ctasim.spec import Experiment, Hardware, Strategy
from ctasim.strategies import gpus_needed
from ctasim.plan import CHAIN_ROW_GROUP
from ctasim.strategies.ctapipe import chain_cluster_m

__all__ = ["RunConfig", "plan_runs", "reason_for", "run", "sweep_rows", "microbatch_chunks", "chain_design", "chain_streams", "chain_case",
           "SPEC_KINDS",
           "PLAN_KINDS", "SWEEP_KINDS", "case_plans"]

SPEC_KINDS = ("sequential", "microbatch", "tp", "ctapipe")
"""Strategy kinds ``ctahw run EXPERIMENT`` measures from a spec; others are skipped rows with their reason."""
PLAN_KINDS = ("sequential", "microbatch", "tp")
"""The kinds whose ctasim plans the plan executor issues (:mod:`ctahw.executor`)."""
SWEEP_KINDS = ("ctapipe",)
"""The kinds measured through a shorthand session (:class:`ctahw.baselines.Session`) on two GPUs (square 2-layer chains, layer i on GPU i)."""


@dataclass(frozen=True)
class RunConfig:
    """How a spec's cases are measured (not what: that is the spec)."""

    reps: int = field(default=15, metadata={"help": "timed repetitions per case (median reported)"})
    warmup: int = field(default=3, metadata={"help": "untimed repetitions first"})
    tune_rounds: int = field(default=4, metadata={"help": "timed rounds per CUTLASS tile order when tuning (0: none)"})
    gate_ms: float = field(default=3.0, metadata={"help": "sleep on GPU 0 before each timed run (host enqueues)"})
    sustain_s: float = field(default=0.0, metadata={"help": "0: burst clocks; > 0: repeat back to back (sustained)"})
    rest_ms: float = field(default=250.0, metadata={
        "help": "host sleep before each timed run, GPUs idle: every run starts on a rested GPU (burst regime; "
                "bench/results/hw/2026-12-01-clock-regime: the power cap engages after 27-86 ms busy)"})
    seed: int = field(default=20261201, metadata={"help": "random seed for inputs"})


def case_plans(strategy: Strategy, case: Case, hw: Hardware) -> list:
    """The ctasim plans of a plan-executor kind on ``case`` (micro-batching: one per chunk count that cuts M), with
    the placement check the simulator makes; ValueError with its reason where it cannot place the case."""
    from ctasim.strategies import REGISTRY  # noqa: PLC0415

    mod = REGISTRY[strategy.kind]
    gpus = max(case.gpus, gpus_needed(strategy, case.workload, case.gpus))
    why = mod.check(strategy, case.workload, hw, gpus)
    if why:
        raise ValueError(why)
    return mod.build(strategy, case.workload, hw, gpus, case.label)


def reason_for(strategy: Strategy, case: Case, gpus: int, hw: Hardware | None = None) -> str | None:
    """Why this machine (``gpus`` GPUs) cannot run ``strategy`` on ``case`` from a spec, or None. ``hw``: the
    profile the plans are built with (only their structure matters here; default: the case's own)."""
    from ctahw.gemm import fused_epilogue_reason  # noqa: PLC0415 - pure function, no CuPy

    need = gpus_needed(strategy, case.workload, case.gpus)
    if need > gpus:
        return f"needs {need} GPUs, this machine has {gpus}"
    if strategy.kind not in SPEC_KINDS:
        return f"{strategy.kind} is not yet run from an experiment spec"
    layers = case.workload.layers
    if strategy.kind == "ctapipe" and _chain_kernel_strategy(strategy, case):
        from ctasim.strategies.ctapipe import chain_reason, ring_gpus, ring_reason, ring_size_reason  # noqa: PLC0415

        why = (chain_reason(case.workload) if strategy.gpus == 1
               else ring_size_reason(strategy, case.workload)
               or ring_reason(case.workload, ring_gpus(strategy, case.workload)))
        if why:
            return why
        for i, l in enumerate(layers):
            if l.n % 256 or l.k % 64:
                return f"layer {i}: the chain kernel needs N = {l.n} a multiple of 256 and K = {l.k} of 64 (its tile)"
    elif strategy.kind in SWEEP_KINDS:
        why = _sweep_reason(strategy, case)
        if why:
            return why
    for i, l in enumerate(layers):
        # an unfused epilogue (epilogue_fused = false) runs every op as a kernel; the chain kernel and the 2-GPU
        # kernels, which have no place for it, refused the workload above
        why = None if l.epilogue_pass else fused_epilogue_reason(tuple(l.epilogue))
        if why:
            return f"layer {i}: {why}"
        if "residual" in l.epilogue and l.residual_source == "input" and (l.out_n != layers[0].k or l.m != layers[0].m):
            return (f"layer {i}: the residual is the workload's input ({layers[0].m}x{layers[0].k}), which does not "
                    f"match its output ({l.m}x{l.out_n})")
        if (l.tile_m, l.tile_n) != (128, 256):
            return f"layer {i}: tile {l.tile_m}x{l.tile_n} has no ctahw kernel (128x256 only)"
    if strategy.kind in PLAN_KINDS:
        return _plan_reason(strategy, case, hw)
    for i, l in enumerate(layers):
        if l.k % 64 or l.n % 8:
            return f"layer {i}: K={l.k} must be a multiple of 64 and N={l.n} of 8 for the CUTLASS kernel"
    return None


def _plan_reason(strategy: Strategy, case: Case, hw: Hardware | None) -> str | None:
    """Why the plan executor cannot issue the case's plans (the first reason of any chunk count), or None."""
    from ctahw.executor import plan_reason  # noqa: PLC0415

    try:
        plans = case_plans(strategy, case, _structure_profile(hw))
    except ValueError as e:
        return str(e)
    for plan in plans:
        why = plan_reason(plan, case.workload)
        if why:
            return why
        for k in plan.kernels():
            r = k.region
            if r.k % 64 or r.n % 8:
                return f"{k.name}: K={r.k} must be a multiple of 64 and N={r.n} of 8 for the CUTLASS kernel"
    return None


def _structure_profile(hw: Hardware | None) -> Hardware:
    """A profile to build plans with when only their structure is wanted (the uncalibrated H200 profile: no memory
    hierarchy, so plans build quickly; the structure does not depend on the profile)."""
    return hw if hw is not None else _h200()


@functools.lru_cache(maxsize=1)
def _h200() -> Hardware:
    from ctasim.spec import load_hardware  # noqa: PLC0415

    return load_hardware("h200-x2")


def _sweep_reason(strategy: Strategy, case: Case) -> str | None:
    """Why the shorthand's 2-GPU CTA-pipelining kernels cannot run ``strategy`` on ``case``, or None."""
    from ctahw.pipelined import workload_reason  # noqa: PLC0415 - pure function, no CuPy
    from ctasim.variants import VARIANTS  # noqa: PLC0415

    why = workload_reason(case.workload)
    if why:
        return f"{strategy.kind}: {why}"
    if not strategy.variant:
        return "ctapipe without a variant: name a ctahw kernel variant (ctasim.variants.VARIANTS)"
    if strategy.variant not in VARIANTS or VARIANTS[strategy.variant].trace:
        return f"ctapipe variant {strategy.variant!r} is not an untraced ctahw kernel variant"
    if VARIANTS[strategy.variant].persistent and any(l.epilogue for l in case.workload.layers):
        return f"ctapipe variant {strategy.variant!r} is persistent (variant (b)), which fuses no epilogue op"
    return None


def microbatch_chunks(strategy: Strategy, m: int) -> list[int]:
    """The chunk counts of ``strategy`` that cut M into equal chunks of whole 128-row tiles (what the shorthand runs)."""
    from ctahw.baselines import chunk_counts  # noqa: PLC0415 - pure function, no CuPy

    return chunk_counts(m, strategy.chunks)


def plan_runs(exp: Experiment, gpus: int) -> pd.DataFrame:
    """One row per (case, strategy) -- per chunk count for micro-batching -- ``planned`` or ``skipped`` with its
    reason (no GPU needed)."""
    rows = []
    for case in expand(exp):
        m = case.workload.layers[0].m
        for s in exp.strategies:
            # a shared device: the ring's plan GPUs are kernels on device 0 (one GPU is enough)
            have = max(gpus, gpus_needed(s, case.workload, case.gpus)) if exp.shared_device and gpus >= 1 else gpus
            why = reason_for(s, case, have, _structure_profile(None))
            base = {"experiment": exp.name, "case": case.label, "strategy": s.label, "kind": s.kind,
                    "variant": "", "gpus": gpus_needed(s, case.workload, case.gpus), "m": m,
                    "layers": len(case.workload.layers), "source": "hw",
                    "status": "skipped" if why else "planned", "reason": why or "", "makespan_ms": float("nan"),
                    "rel_err": float("nan")}
            if s.kind == "microbatch":
                chunks = microbatch_chunks(s, m)
                for c in s.chunks:
                    row = dict(base, variant=f"chunks={c}")
                    if not why and c not in chunks:
                        row.update(status="skipped", reason=f"{c} chunks do not cut M={m} into 128-row tiles")
                    rows.append(row)
            else:
                rows.append(base)
    return pd.DataFrame(rows, columns=list(COLUMNS))


def sweep_rows(kind: str, strategy: Strategy, rows: list[dict]) -> dict[str, dict]:
    """The rows of a shorthand session's CTA-pipelining run (``ctapipe_rows`` at one M) that answer ``strategy``, by result
    variant (''): {variant: {"makespan_ms", "rel_err", "ok", "error", ...extras}}: the untraced variant's row, with
    its traced twin's trace figures."""
    if kind not in SWEEP_KINDS:
        raise ValueError(f"{kind} is not measured through the shorthand session (the plan executor runs it)")
    out = {}
    for r in rows:
        if r.get("backend") != strategy.variant:
            continue
        extra = {k: r[k] for k in ("tflops", "trace_makespans_ms", "first_rowblock_ms", "trace_violations") if k in r}
        twin = next((t for t in rows if t.get("backend") == strategy.variant + "_trace"), None)
        if twin is not None:
            extra.update({f"trace_{k}": twin[k] for k in ("median_ms", "rel_err") if k in twin})
            extra.update({k: twin[k] for k in ("trace_makespans_ms", "first_rowblock_ms", "trace_violations")
                          if k in twin})
        out[""] = {"makespan_ms": float(r["median_ms"]), "rel_err": float(r["rel_err"]), "ok": bool(r["ok"]), **extra}
    return out


def _run_sweep_kinds(exp: Experiment, df: pd.DataFrame, cfg: RunConfig, extra: dict, traces: dict,
                     log: Callable[[str], None]) -> None:
    """Measure the planned 2-GPU CTA-pipelining rows of ``df`` in place: one shorthand session per H on GPUs 0 and 1, run once
    per M (every named variant interleaved, as the shorthand does)."""
    from ctahw.baselines import Session, SweepConfig  # noqa: PLC0415
    from ctahw.device import is_cuda_fault  # noqa: PLC0415
    from ctahw.pipelined import ctapipe_rows  # noqa: PLC0415

    strategies = {s.label: s for s in exp.strategies}
    cases = {c.label: c for c in expand(exp)}
    todo = df[(df["status"] == "planned") & df["kind"].isin(SWEEP_KINDS) & ~df.index.isin(_chain_rows(exp, df))]
    shape = todo["case"].map(lambda c: tuple((l.k, l.n, l.epilogue, l.rowwise) for l in cases[c].workload.layers))
    for _, rows_h in todo.groupby(shape, sort=False):
        h = cases[rows_h["case"].iloc[0]].workload.layers[0].k
        used = [strategies[n] for n in dict.fromkeys(rows_h["strategy"])]
        variants = tuple(x for s in used for x in (s.variant, s.variant + "_trace"))
        scfg = SweepConfig(ms=tuple(sorted(set(rows_h["m"].astype(int)))), h=int(h), gpus=2,
                           backends=("cutlass",), experiments=(), reps=cfg.reps, warmup=cfg.warmup,
                           tune_rounds=cfg.tune_rounds, gate_ms=cfg.gate_ms, sustain_s=cfg.sustain_s,
                           rest_ms=cfg.rest_ms, seed=cfg.seed, ctapipe_variants=tuple(dict.fromkeys(variants)))
        run_kind = {"ctapipe": lambda sw, m, wl: ctapipe_rows(sw, m, wl)}
        with Session(scfg, log) as sw:
            done: dict[tuple[int, str], list[dict] | str] = {}
            for (m, label), idx in rows_h.groupby([rows_h["m"].astype(int), rows_h["strategy"]]).groups.items():
                st = strategies[label]
                if (m, st.kind) not in done:
                    log(f"{exp.name}: {st.kind} M={m} H={h} on GPUs 0, 1")
                    sw.traces = {}
                    try:
                        done[(m, st.kind)] = run_kind[st.kind](sw, m, cases[df.loc[idx[0], "case"]].workload)
                    except (RuntimeError, ValueError) as e:  # a failed check or a protocol timeout: a failed row
                        if is_cuda_fault(e):  # the context may be broken: the run stops (one line in the CLI)
                            raise
                        done[(m, st.kind)] = f"{type(e).__name__}: {e}"
                    finally:
                        sw.free()
                    case = df.loc[idx[0], "case"]
                    by_variant = {strategies[n].variant: n for n in rows_h[rows_h["m"] == m]["strategy"]
                                  if strategies[n].kind == "ctapipe"}
                    for t in sw.traces.values():  # each traced run names the case and strategy it answers
                        variant = str(t.meta["variant"])
                        t.meta.update(case=case, strategy=by_variant.get(variant.removesuffix("_trace"), ""))
                        traces[f"{case}:{variant}:run{t.meta['run']}"] = t
                got = done[(m, st.kind)]
                res = sweep_rows(st.kind, st, got) if isinstance(got, list) else {}
                for i in idx:
                    r = res.get(df.loc[i, "variant"] if isinstance(df.loc[i, "variant"], str) else "")
                    if r is None:
                        df.loc[i, "status"] = "failed"
                        df.loc[i, "reason"] = got if isinstance(got, str) else "the run returned no row for it"
                        continue
                    df.loc[i, "makespan_ms"] = r["makespan_ms"]
                    df.loc[i, "rel_err"] = r["rel_err"]
                    df.loc[i, "status"] = "ok" if r["ok"] else "failed"
                    if not r["ok"]:
                        df.loc[i, "reason"] = f"relative error {r['rel_err']:.3g} above the bf16 tolerance"
                    extra[i] = {k: v for k, v in r.items() if k not in ("makespan_ms", "rel_err", "ok")}


def _chain_kernel_strategy(strategy: Strategy, case: Case) -> bool:
    """Whether the chain kernel runs this ctapipe strategy: on one GPU, or on a ring (fewer GPUs than layers, or
    ``placement = "ring"``)."""
    from ctasim.strategies.ctapipe import is_ring  # noqa: PLC0415

    return strategy.kind == "ctapipe" and (strategy.gpus == 1 or is_ring(strategy, case.workload))


def _chain_rows(exp: Experiment, df: pd.DataFrame) -> list:
    """Index of the rows the chain kernel answers (ctapipe with gpus = 1, or a ring)."""
    strategies = {s.label: s for s in exp.strategies}
    cases = {c.label: c for c in expand(exp)}
    return [i for i, r in df.iterrows()
            if r["kind"] == "ctapipe" and _chain_kernel_strategy(strategies[r["strategy"]], cases[r["case"]])]


def chain_streams(timed, devices) -> list:
    """The stream each chain kernel is enqueued on: kernel g on device ``devices[g]``, the first kernel of a device on
    its compute stream, a second on its copy stream, a third and more on further streams (``Timed.stream``; all gated
    by the harness's start)."""
    streams, used = [], {}
    for d in devices:
        n = used[d] = used.get(d, 0) + 1
        streams.append(timed.stream(d, n - 1))
    return streams


def chain_case(exp: Experiment, case: Case, strategy: Strategy, cfg: RunConfig, timed, log: Callable[[str], None],
           traces: dict, devices=None) -> dict:
    """Measure one chain-kernel case (intra-GPU CTA-pipelining on GPU 0, or a ring on GPUs 0 .. G-1): correctness,
    timing, one traced run. ``devices[g]``: the device of the plan's GPU g (default g; a ring's kernels may share a
    device, the one-GPU check of this path). A ring of one layer per GPU fuses each layer's epilogue op (the
    residual: the workload's input or the residual stream, copied to its layer's device), folds a LayerNorm between
    two layers into the second (``ctasim.strategies.ctapipe.ring_ops``: gamma = 1, beta = 0, as the workload's
    LayerNorm has no affine weights) and runs the last layer's row-wise op as its own kernel where the output lands,
    after the last layer's kernel (an event), inside the timed run; checked against the workload's reference
    (:func:`ctahw.executor.reference_bf16`: the LayerNorm's output rounded to bf16, as the pass stores it)."""
    from ctahw import rowwise  # noqa: PLC0415
    from ctahw.baselines import Chain  # noqa: PLC0415
    from ctahw.chain import ChainRunner, output_place  # noqa: PLC0415
    from ctahw.device import REL_TOL_BF16, output_error, poison, summarize, to_device  # noqa: PLC0415
    from ctahw.executor import reference_bf16  # noqa: PLC0415
    from ctasim.strategies.ctapipe import build_chain, build_ring, norm_folds, ring_ops  # noqa: PLC0415

    cp = timed.cp
    layers = case.workload.layers
    G = gpus_needed(strategy, case.workload, case.gpus)  # 1: the chain kernel; else the ring's GPUs
    devices = list(devices) if devices is not None else list(range(G))
    plan = (build_chain if G == 1 else build_ring)(strategy, case.workload, exp.hardware, case.label)
    data = Chain(cp, cfg.seed)
    x = data.rand(devices[0], (layers[0].m, layers[0].k), salt=11)
    ws = [data.rand(devices[l % G], (l_.n, l_.k), 1 / math.sqrt(l_.k), salt=12 + l) for l, l_ in enumerate(layers)]
    streams = chain_streams(timed, devices)
    ends = [(s, d) for s, d in zip(streams, devices)]
    design = chain_design(strategy, layers[0].tiles_m)
    epilogues = ring_ops(case.workload, G)  # one GPU: each layer's op (one for all: chain_reason), no fold
    stream = _stream_input(data, case.workload, devices[0])
    res = next((l for l, lay in enumerate(layers) if "residual" in lay.epilogue), None)
    residual = None
    if res is not None:
        residual = to_device(cp, stream if layers[res].residual_source == "stream" else x, devices[res % G])
    folds = norm_folds(case.workload, G)
    layernorm = None
    if folds:  # the workload's LayerNorm has no affine weights: gamma = 1, beta = 0 (the fold still runs its algebra)
        cols = layers[folds[0]].out_n
        with cp.cuda.Device(devices[(folds[0] + 1) % G]):
            layernorm = (cp.ones(cols, dtype=cp.float32), cp.zeros(cols, dtype=cp.float32))
    out_gpu = output_place(plan)[0]
    out_dev, s_out = devices[out_gpu], streams[out_gpu]
    norm, cols = layers[-1].rowwise, layers[-1].n
    with cp.cuda.Device(out_dev):
        z = cp.empty((layers[0].m, cols), dtype=cp.uint16) if norm else None
    kw = {"devices": devices, "design": design, "epilogues": epilogues, "residual": residual, "layernorm": layernorm}

    def launch(r) -> None:
        """One run: the kernels, then the row-wise op where the output landed, after the last layer's kernel."""
        r.launch(streams=streams)
        if norm:
            last = streams[(len(layers) - 1) % G]
            with cp.cuda.Device(devices[(len(layers) - 1) % G]):
                ev = cp.cuda.Event(disable_timing=True)
                ev.record(last)
            with cp.cuda.Device(out_dev):
                s_out.wait_event(ev)
                rowwise.rowwise(norm, r.out, z, layers[0].m, cols, s_out)

    runner = ChainRunner(plan, x, ws, **kw)
    runner.poison_outputs()
    if norm:
        poison(z)
    launch(runner)
    for s in streams:
        s.synchronize()
    runner.check_errors()
    ref = reference_bf16(cp, x, ws, layers, out_dev, stream_bits=stream)
    rel = float(output_error(cp, z if norm else runner.out, ref, out_dev))
    del ref

    def enqueue(t):
        t.part("compute", devices[0], streams[0], lambda: launch(runner))
        return ends

    for _ in range(cfg.warmup):
        timed.run(enqueue)
    samples = [timed.run(enqueue)[0] for _ in range(cfg.reps)]
    runner.check_errors()
    tm = summarize(samples)
    del runner
    traced = ChainRunner(plan, x, ws, trace=True, **kw)
    tr_ms, _ = timed.run(lambda t: (t.part("compute", devices[0], streams[0], lambda: launch(traced)), ends)[1])
    traced.check_errors()
    offsets = {}
    distinct = list(dict.fromkeys(devices))
    if len(distinct) > 1:  # each plan GPU's clock against GPU 0's device (kernels sharing a device share its clock)
        from ctahw.pipelined import measure_offsets  # noqa: PLC0415

        by_dev = {int(d): float(v["offset_ns"]) for d, v in measure_offsets(distinct).items()}
        offsets = {g: by_dev.get(d, 0.0) for g, d in enumerate(devices)}
    grids = [p.grid for p in traced.gpus]
    tr = traced.read_trace({"case": case.label, "strategy": strategy.label, "variant": "chain", "run": 0,
                            "makespan_ms": tr_ms, "design": design, "grid": grids[0] if G == 1 else grids,
                            "offsets_ns": offsets}, offsets)
    traces[f"{case.label}:{strategy.label}:run0"] = tr  # two chain strategies of one case keep both traces
    log(f"  {case.label}: chain kernel{'s' if G > 1 else ''} ({design}, grid {grids}) {tm.median_ms:.4f} ms "
        f"(traced {tr_ms:.4f}), "
        f"rel err {rel:.2e}")
    del traced
    return {"makespan_ms": tm.median_ms, "rel_err": rel, "ok": rel <= REL_TOL_BF16,
            "samples_ms": ";".join(f"{v:.5f}" for v in samples), "trace_median_ms": tr_ms, "design": design}


def chain_design(strategy: Strategy, tiles_m: int) -> str:
    """The chain kernel's design for ``strategy`` (ctahw.chain.DESIGNS): tickets for tile_source 'queue'; a static
    order for 'static', with 2x1 clusters (W multicast) where the row-blocks pair up (an even count)."""
    if strategy.tile_source != "static":
        return "tickets"
    return "static2x1" if chain_cluster_m(True, tiles_m, strategy.chain_group or CHAIN_ROW_GROUP) == 2 else "static"


class _Machines:
    """What the planned rows share on this machine: one timing harness and one CUTLASS GEMM per GPU count, the tile
    order tuned once per shape (on GPU 0, used on every GPU, as the baselines do)."""

    def __init__(self, cfg: RunConfig, log: Callable[[str], None]):
        self.cfg, self.log = cfg, log
        self.timed: dict[int, object] = {}
        self.gemms: dict[int, object] = {}

    def get(self, gpus: int):
        from ctahw.baselines import Timed  # noqa: PLC0415
        from ctahw.device import enable_peer_access  # noqa: PLC0415
        from ctahw.gemm import CutlassGemm  # noqa: PLC0415

        if gpus not in self.timed:
            if gpus > 1:
                enable_peer_access(list(range(gpus)))
            self.timed[gpus] = Timed(list(range(gpus)), self.cfg.gate_ms, self.cfg.sustain_s, self.cfg.rest_ms)
        for d in range(gpus):
            if d not in self.gemms:
                self.gemms[d] = CutlassGemm(d)
        return self.timed[gpus], [self.gemms[d] for d in range(gpus)]

    def tune(self, timed, shapes) -> None:
        from ctahw.baselines import Chain, tune_shape  # noqa: PLC0415

        gemms = [self.gemms[d] for d in sorted(self.gemms)]
        for shape in shapes:
            tune_shape(gemms, timed, Chain(timed.cp, self.cfg.seed), *shape, self.cfg.tune_rounds)
        for g in gemms[1:]:  # a GPU's GEMM made after a shape was tuned takes GPU 0's order too
            g.schedule.update(gemms[0].schedule)


def _stream_input(data, wl, device: int):
    """The residual stream of a workload whose layers add it (M x ``Workload.stream_cols`` random bf16 on
    ``device``; the salt is its own), or None."""
    return data.rand(device, (wl.layers[0].m, wl.stream_cols), salt=10) if wl.stream_cols else None


def _planned(case: Case, plan, cfg: RunConfig, machines: _Machines, log: Callable[[str], None]) -> dict:
    """Measure one plan of a case through the plan executor: correctness once (poisoned outputs, fp32 reference),
    then ``warmup`` + ``reps`` timed runs; the makespan median, the per-part breakdown, the relative error."""
    from ctahw.baselines import Chain, breakdown, median_breakdown  # noqa: PLC0415
    from ctahw.device import REL_TOL_BF16, output_error, poison, summarize  # noqa: PLC0415
    from ctahw.executor import CudaMachine, Inputs, PlanExecutor, reference_bf16  # noqa: PLC0415

    timed, gemms = machines.get(plan.gpus)
    cp = timed.cp
    layers = case.workload.layers
    data = Chain(cp, cfg.seed)
    x = data.rand(0, (layers[0].m, layers[0].k), salt=11)
    ws = [data.rand(0, (l.n, l.k), 1 / math.sqrt(l.k), salt=12 + i) for i, l in enumerate(layers)]
    stream = _stream_input(data, case.workload, 0)
    machine = CudaMachine(cp, list(range(plan.gpus)), gemms, log)
    try:
        ex = PlanExecutor(plan, case.workload, machine, Inputs(x, ws, stream))
        machines.tune(timed, [s for shapes in ex.gemm_shapes().values() for s in shapes])

        def enqueue(t):
            machine.bind(t)
            return [(machine.stream(s), s[0]) for s in ex.issue()]

        for b in ex.written():
            poison(b)
        timed.run(enqueue)
        ref = reference_bf16(cp, x, ws, layers, stream_bits=stream)
        rel = max(float(output_error(cp, out, ref, 0)) for out in ex.outputs().values())
        del ref
        for _ in range(cfg.warmup):
            timed.run(enqueue)
        samples, bds = [], []
        devices = list(range(plan.gpus))
        for _ in range(cfg.reps):
            ms, parts = timed.run(enqueue)
            samples.append(ms)
            bds.append(breakdown(ms, parts, devices))
        tm = summarize(samples)
    finally:
        machine.close()
    chunks = plan.params.get("chunks")
    log(f"  {case.label}{f' chunks={chunks}' if chunks else ''}: {tm.median_ms:.4f} ms, rel err {rel:.2e}")
    return {"makespan_ms": tm.median_ms, "rel_err": rel, "ok": rel <= REL_TOL_BF16,
            **median_breakdown(bds),
            "samples_ms": ";".join(f"{v:.5f}" for v in samples),
            "schedules": ";".join(f"{m}x{n}x{k}:{r}/{s}" for (m, n, k), (r, s) in gemms[0].schedule.items()
                                  if any((m, n, k) in v for v in ex.gemm_shapes().values()))}


def _free(gpus: int) -> None:
    """Give CuPy's cached blocks on every GPU back (between rows: the next case's buffers may be larger)."""
    from ctahw.device import require_cupy  # noqa: PLC0415

    cp = require_cupy()
    for d in range(gpus):
        with cp.cuda.Device(d):
            cp.get_default_memory_pool().free_all_blocks()


def _plan_of(strategy: Strategy, case: Case, hw: Hardware, variant: str):
    """The plan a row answers: micro-batching's for its chunk count (``variant = "chunks=C"``), else the one plan."""
    plans = case_plans(strategy, case, hw)
    if strategy.kind != "microbatch":
        return plans[0]
    want = int(variant.removeprefix("chunks="))
    return next(p for p in plans if p.params.get("chunks") == want)


def run(exp: Experiment, cfg: RunConfig, log: Callable[[str], None] = lambda s: print(s, file=sys.stderr),
        traces: dict | None = None) -> pd.DataFrame:
    """Measure every planned row of ``exp`` on this machine's GPUs; the table of :func:`plan_runs`, filled in.
    CTA-pipelining traces (every traced run, ctasim traces keyed ``<case>:<variant>:run<i>``, their ``meta`` naming
    the case and strategy they answer) go into ``traces``. A failed check or a protocol timeout fails its row; a
    CUDA fault stops the run (it may have broken the context)."""
    from ctahw.device import gpus as list_gpus, is_cuda_fault  # noqa: PLC0415

    found = list_gpus()
    df = plan_runs(exp, len(found))
    if not (df["status"] == "planned").any():
        return df
    extra: dict[int, dict] = {}
    traces = traces if traces is not None else {}
    chain_rows = set(_chain_rows(exp, df))
    if (df["status"].eq("planned") & df["kind"].isin(SWEEP_KINDS) & ~df.index.isin(chain_rows)).any():
        _run_sweep_kinds(exp, df, cfg, extra, traces, log)
    here = df["status"].eq("planned") & (df["kind"].isin(PLAN_KINDS) | df.index.isin(chain_rows))
    if not here.any():
        return pd.concat([df.reset_index(drop=True), pd.DataFrame([extra.get(i, {}) for i in df.index])], axis=1)
    machines = _Machines(cfg, log)
    cases = {c.label: c for c in expand(exp)}
    strategies = {s.label: s for s in exp.strategies}
    for i, r in df.iterrows():
        if not here[i]:
            continue
        log(f"{exp.name}: {r['strategy']} {r['case']}{' ' + r['variant'] if r['variant'] else ''}")
        case, st = cases[r["case"]], strategies[r["strategy"]]
        try:
            if i in chain_rows:
                G = gpus_needed(st, case.workload, case.gpus)
                # a shared device: every plan GPU a kernel on device 0, with its share of the SMs
                timed, _ = machines.get(1 if exp.shared_device else G)
                res = chain_case(exp, case, st, cfg, timed, log, traces,
                                 devices=[0] * G if exp.shared_device else None)
            else:
                res = _planned(case, _plan_of(st, case, exp.hardware, r["variant"]), cfg, machines, log)
        except (RuntimeError, ValueError) as e:  # a failed check or a protocol timeout: a failed row
            if is_cuda_fault(e):
                raise
            df.loc[i, "status"] = "failed"
            df.loc[i, "reason"] = f"{type(e).__name__}: {e}"
            continue
        finally:
            _free(len(found))
        df.loc[i, "makespan_ms"] = res["makespan_ms"]
        df.loc[i, "rel_err"] = res["rel_err"]
        df.loc[i, "status"] = "ok" if res["ok"] else "failed"
        if not res["ok"]:
            df.loc[i, "reason"] = f"relative error {res['rel_err']:.3g} above the bf16 tolerance"
        extra[i] = {k: v for k, v in res.items() if k not in ("makespan_ms", "rel_err", "ok")}
    return pd.concat([df.reset_index(drop=True), pd.DataFrame([extra.get(i, {}) for i in df.index])], axis=1)
