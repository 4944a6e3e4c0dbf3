"""Running an experiment spec on the GPUs: the cases and strategies ``ctasim predict`` predicts, measured.

``ctahw run EXPERIMENT`` takes what ``ctasim run`` takes (a name or a TOML path).  :func:`plan_runs` (CPU only)
expands the spec into one row per (case, strategy) in the schema of :mod:`ctasim.results`, each ``planned`` or
``skipped`` with the reason; :func:`run` measures the planned rows and returns the table ``ctasim compare`` reads.

What runs today:

* ``sequential``: every layer of the workload on GPU 0, one stream, in order: per layer the project's CUTLASS
  GEMM (128x256x64, the kernel the profiles' default config describes; its tile order tuned per shape as the
  baselines do) with the layer's epilogue fused (gelu, silu, relu, or residual = + the workload's input) or, for
  a layer with ``epilogue_fused = false`` (swiglu's only path), the plain GEMM and then the ops as an elementwise
  kernel of their own (:func:`ctahw.rowwise.epilogue`), then the layer's row-wise op (LayerNorm / RMSNorm,
  :mod:`ctahw.rowwise`) as its own kernel.  Timed by the same harness as
  the baselines (``ctahw.baselines.Timed``: a sleep gate, start and end events on GPU 0), ``reps`` medians, checked
  once on fresh random inputs with poisoned outputs against an fp32 chain (activations rounded to bf16 where the
  GPU stores them).
* ``microbatch``, ``tp``, ``ctapipe`` on two GPUs, for square 2-layer chains with no epilogue or row-wise op (the
  shapes their kernels run): one :class:`ctahw.baselines.Sweep` per (M, H) does what the flag shorthand does
  (micro-batching over the spec's chunk counts, one row each, ``variant = "chunks=C"``; TP with the NCCL
  all-reduce; CTA-pipelining with the variant the strategy names and its traced twin, whose traces are kept), with
  the CUTLASS backend, the kernel the profiles describe. Each Sweep row maps to the spec's row by
  :func:`sweep_rows`.
* ``ctapipe`` with ``gpus = 1`` (intra-GPU CTA-pipelining): the chain kernel (:mod:`ctahw.chain`) on GPU 0, every
  layer of a square chain in one persistent kernel, in the order of ctasim's plan; checked once against the fp32
  chain (poisoned outputs), timed by the same harness, plus one traced run whose trace is kept (the ticket count
  and error record checked after every run); tile_source 'queue' runs the tickets design, 'static' the static
  order with 2x1 clusters (:func:`chain_design`).
* Everything else is a ``skipped`` row with its reason: a strategy that needs more GPUs than the machine has; a
  fused epilogue with no fused kernel (swiglu); a multi-GPU strategy on a workload its kernels do not run (more than 2 layers,
  K != N, epilogue or row-wise ops); hybrid.

Left out: the cuBLAS backend (it fuses no epilogue; the flag interface times it), traces of non-pipelined kernels.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field
from typing import Callable

import pandas as pd

from ctasim.cases import Case, expand
from ctasim.results import COLUMNS
from ctasim.spec import Experiment, Strategy
from ctasim.strategies import gpus_needed
from ctasim.plan import CHAIN_ROW_GROUP
from ctasim.strategies.ctapipe import chain_cluster_m

__all__ = ["RunConfig", "plan_runs", "reason_for", "run", "sweep_rows", "microbatch_chunks", "chain_design", "SPEC_KINDS",
           "SWEEP_KINDS"]

SPEC_KINDS = ("sequential", "microbatch", "tp", "ctapipe")
"""Strategy kinds ``ctahw run EXPERIMENT`` measures from a spec; others are skipped rows with their reason."""
SWEEP_KINDS = ("microbatch", "tp", "ctapipe")
"""The kinds measured through :class:`ctahw.baselines.Sweep` (square 2-layer chains, layer i on GPU i)."""


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


def reason_for(strategy: Strategy, case: Case, gpus: int) -> str | None:
    """Why this machine (``gpus`` GPUs) cannot run ``strategy`` on ``case`` from a spec, or None."""
    from ctahw.gemm import fused_epilogue_reason  # noqa: PLC0415 - pure function, no CuPy

    need = gpus_needed(strategy, case.workload, case.gpus)
    if need > gpus:
        return f"needs {need} GPUs, this machine has {gpus}"
    if strategy.kind not in SPEC_KINDS:
        return f"{strategy.kind} is not yet run from an experiment spec"
    layers = case.workload.layers
    if strategy.kind == "ctapipe" and 1 < strategy.gpus < len(layers):
        return (f"ctapipe on a ring ({len(layers)} layers on {strategy.gpus} GPUs) has no ctahw kernel yet "
                f"(the simulator models it)")
    if strategy.kind == "ctapipe" and strategy.gpus == 1:
        from ctasim.strategies.ctapipe import chain_reason  # noqa: PLC0415

        why = chain_reason(case.workload)
        if why:
            return why
        if layers[0].k % 256:
            return f"the chain kernel needs H={layers[0].k} to be a multiple of 256 (its tile's N)"
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
        if "residual" in l.epilogue and (l.out_n != layers[0].k or l.m != layers[0].m):
            return (f"layer {i}: the residual is the workload's input ({layers[0].m}x{layers[0].k}), which does not "
                    f"match its output ({l.m}x{l.out_n})")
        if (l.tile_m, l.tile_n) != (128, 256):
            return f"layer {i}: tile {l.tile_m}x{l.tile_n} has no ctahw kernel (128x256 only)"
        if l.k % 64 or l.n % 8:
            return f"layer {i}: K={l.k} must be a multiple of 64 and N={l.n} of 8 for the CUTLASS kernel"
    return None


def _sweep_reason(strategy: Strategy, case: Case) -> str | None:
    """Why the Sweep's 2-GPU kernels cannot run ``strategy`` on ``case``, or None."""
    from ctasim.variants import VARIANTS  # noqa: PLC0415

    layers = case.workload.layers
    h = layers[0].k
    if len(layers) != 2:
        return f"{strategy.kind} from a spec runs 2-layer chains (layer i on GPU i); this case has {len(layers)}"
    if any(l.k != h or l.n != h or l.m != layers[0].m for l in layers):
        return f"{strategy.kind} from a spec runs square chains (K = N for every layer)"
    if any(l.epilogue or l.rowwise for l in layers):
        return f"{strategy.kind} has no 2-GPU kernel path for epilogue or row-wise ops yet"
    if any((l.tile_m, l.tile_n) != (128, 256) for l in layers):
        return f"{strategy.kind}: tile {layers[0].tile_m}x{layers[0].tile_n} has no ctahw kernel (128x256 only)"
    if h % 256:
        return f"{strategy.kind}: H={h} must be a multiple of 256 for the 2-GPU kernels"
    if strategy.kind == "tp" and strategy.tp_degree not in (0, 2):
        return f"tp degree {strategy.tp_degree}: the 2-GPU TP runs degree 2"
    if strategy.kind == "ctapipe":
        if not strategy.variant:
            return "ctapipe without a variant: name a ctahw kernel variant (ctasim.variants.VARIANTS)"
        if strategy.variant not in VARIANTS or VARIANTS[strategy.variant].trace:
            return f"ctapipe variant {strategy.variant!r} is not an untraced ctahw kernel variant"
    return None


def microbatch_chunks(strategy: Strategy, m: int) -> list[int]:
    """The chunk counts of ``strategy`` that cut M into equal chunks of whole 128-row tiles (what the Sweep runs)."""
    from ctahw.baselines import chunk_counts  # noqa: PLC0415 - pure function, no CuPy

    return chunk_counts(m, strategy.chunks)


def plan_runs(exp: Experiment, gpus: int) -> pd.DataFrame:
    """One row per (case, strategy) -- per chunk count for micro-batching -- ``planned`` or ``skipped`` with its
    reason (no GPU needed)."""
    rows = []
    for case in expand(exp):
        m = case.workload.layers[0].m
        for s in exp.strategies:
            why = reason_for(s, case, gpus)
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
    """The rows of a Sweep experiment (``Sweep.microbatch`` / ``Sweep.tp`` / ``ctapipe_rows`` at one M) that answer
    ``strategy``, by result variant: {variant: {"makespan_ms", "rel_err", "ok", "error", ...extras}}. CUTLASS
    backend rows only; for CTA-pipelining the untraced variant's row, with its traced twin's trace figures."""
    out = {}
    for r in rows:
        if kind in ("microbatch", "tp") and r.get("backend") != "cutlass":
            continue
        if kind == "ctapipe" and r.get("backend") != strategy.variant:
            continue
        variant = f"chunks={int(r['chunks'])}" if kind == "microbatch" else ""
        extra = {k: r[k] for k in ("tflops", "trace_makespans_ms", "first_rowblock_ms", "trace_violations")
                 if k in r}
        if kind == "ctapipe":
            twin = next((t for t in rows if t.get("backend") == strategy.variant + "_trace"), None)
            if twin is not None:
                extra.update({f"trace_{k}": twin[k] for k in ("median_ms", "rel_err") if k in twin})
                extra.update({k: twin[k] for k in ("trace_makespans_ms", "first_rowblock_ms", "trace_violations")
                              if k in twin})
        out[variant] = {"makespan_ms": float(r["median_ms"]), "rel_err": float(r["rel_err"]), "ok": bool(r["ok"]),
                        **extra}
    return out


def _run_sweep_kinds(exp: Experiment, df: pd.DataFrame, cfg: RunConfig, extra: dict, traces: dict,
                     log: Callable[[str], None]) -> None:
    """Measure the planned micro-batching / TP / CTA-pipelining rows of ``df`` in place: one Sweep per H on GPUs 0
    and 1, each kind run once per M (CTA-pipelining: every named variant interleaved, as the shorthand does)."""
    from ctahw.baselines import Sweep, SweepConfig  # noqa: PLC0415
    from ctahw.device import is_cuda_fault  # noqa: PLC0415
    from ctahw.pipelined import ctapipe_rows  # noqa: PLC0415

    strategies = {s.label: s for s in exp.strategies}
    cases = {c.label: c for c in expand(exp)}
    todo = df[(df["status"] == "planned") & df["kind"].isin(SWEEP_KINDS) & ~df.index.isin(_chain_rows(exp, df))]
    for h, rows_h in todo.groupby(todo["case"].map(lambda c: cases[c].workload.layers[0].k), sort=True):
        used = [strategies[n] for n in dict.fromkeys(rows_h["strategy"])]
        chunks = tuple(sorted({c for s in used if s.kind == "microbatch" for c in s.chunks})) or (1,)
        variants = tuple(x for s in used if s.kind == "ctapipe" for x in (s.variant, s.variant + "_trace"))
        scfg = SweepConfig(ms=tuple(sorted(set(rows_h["m"].astype(int)))), h=int(h), gpus=2, chunks=chunks,
                           backends=("cutlass",), experiments=(), reps=cfg.reps, warmup=cfg.warmup,
                           tune_rounds=cfg.tune_rounds, gate_ms=cfg.gate_ms, sustain_s=cfg.sustain_s,
                           rest_ms=cfg.rest_ms, seed=cfg.seed,
                           **({"ctapipe_variants": tuple(dict.fromkeys(variants))} if variants else {}))
        run_kind = {"microbatch": lambda sw, m: sw.microbatch(m), "tp": lambda sw, m: sw.tp(m),
                    "ctapipe": ctapipe_rows}
        with Sweep(scfg, log) as sw:
            done: dict[tuple[int, str], list[dict] | str] = {}
            for (m, label), idx in rows_h.groupby([rows_h["m"].astype(int), rows_h["strategy"]]).groups.items():
                st = strategies[label]
                if (m, st.kind) not in done:
                    log(f"{exp.name}: {st.kind} M={m} H={h} on GPUs 0, 1")
                    sw.traces = {}
                    try:
                        done[(m, st.kind)] = run_kind[st.kind](sw, m)
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


def _chain_rows(exp: Experiment, df: pd.DataFrame) -> list:
    """Index of the rows the chain kernel answers (ctapipe with gpus = 1)."""
    strategies = {s.label: s for s in exp.strategies}
    return [i for i, r in df.iterrows() if r["kind"] == "ctapipe" and strategies[r["strategy"]].gpus == 1]


def _chain(exp: Experiment, case: Case, strategy: Strategy, cfg: RunConfig, timed, log: Callable[[str], None],
           traces: dict) -> dict:
    """Measure one chain-kernel case on GPU 0 (intra-GPU CTA-pipelining): correctness, timing, one traced run."""
    from ctahw.baselines import Chain  # noqa: PLC0415
    from ctahw.chain import ChainRunner  # noqa: PLC0415
    from ctahw.device import REL_TOL_BF16, output_error, poison, reference_chain, summarize  # noqa: PLC0415
    from ctasim.strategies.ctapipe import build_chain  # noqa: PLC0415

    cp = timed.cp
    layers = case.workload.layers
    plan = build_chain(strategy, case.workload, exp.hardware, case.label)
    data = Chain(cp, cfg.seed)
    x = data.rand(0, (layers[0].m, layers[0].k), salt=11)
    ws = [data.rand(0, (l.n, l.k), 1 / math.sqrt(l.k), salt=12 + i) for i, l in enumerate(layers)]
    s0 = timed.compute[0]
    design = chain_design(strategy, layers[0].tiles_m)
    runner = ChainRunner(plan, x, ws, device=0, design=design)
    poison(runner.x[1:])
    runner.launch(stream=s0)
    s0.synchronize()
    runner.check_errors()
    rel = float(output_error(cp, runner.out, reference_chain(cp, x, ws, 0), 0))

    def enqueue(t):
        t.part("compute", 0, s0, lambda: runner.launch(stream=s0))
        return [(s0, 0)]

    for _ in range(cfg.warmup):
        timed.run(enqueue)
    samples = [timed.run(enqueue)[0] for _ in range(cfg.reps)]
    runner.check_errors()
    tm = summarize(samples)
    del runner
    traced = ChainRunner(plan, x, ws, device=0, trace=True, design=design)
    tr_ms, _ = timed.run(lambda t: (t.part("compute", 0, s0, lambda: traced.launch(stream=s0)), [(s0, 0)])[1])
    traced.check_errors()
    tr = traced.read_trace({"case": case.label, "strategy": strategy.label, "variant": "chain", "run": 0,
                            "makespan_ms": tr_ms, "design": design, "grid": traced.grid})
    traces[f"{case.label}:{strategy.label}:run0"] = tr  # two chain strategies of one case keep both traces
    log(f"  {case.label}: chain kernel ({design}, grid {traced.grid}) {tm.median_ms:.4f} ms (traced {tr_ms:.4f}), "
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


def _sequential(case: Case, cfg: RunConfig, timed, gemm, log: Callable[[str], None]) -> dict:
    """Measure one sequential case on GPU 0: makespan median, per-part breakdown, relative error."""
    from ctahw import rowwise  # noqa: PLC0415
    from ctahw.baselines import Chain, breakdown, tune_schedule  # noqa: PLC0415
    from ctahw.device import (REL_TOL_BF16, bf16_bits_to_f32, f32_to_bf16_bits, poison, rel_error,  # noqa: PLC0415
                              summarize)

    cp = timed.cp
    layers = case.workload.layers
    data = Chain(cp, cfg.seed)
    x = data.rand(0, (layers[0].m, layers[0].k), salt=11)
    ws = [data.rand(0, (l.n, l.k), 1 / math.sqrt(l.k), salt=12 + i) for i, l in enumerate(layers)]
    with cp.cuda.Device(0):
        ys = [cp.empty((l.m, l.out_n), dtype=cp.uint16) for l in layers]
        zs = [cp.empty((l.m, l.out_n), dtype=cp.uint16) if l.rowwise else None for l in layers]
        gs = [cp.empty((l.m, l.n), dtype=cp.uint16) if l.epilogue_pass else None for l in layers]  # unfused: GEMM out
    s0 = timed.compute[0]
    for l in layers:  # tile order per GEMM shape, as the baselines choose it
        if cfg.tune_rounds > 0 and (l.m, l.n, l.k) not in gemm.schedule:
            a, w = data.rand(0, (l.m, l.k), salt=7001), data.rand(0, (l.n, l.k), 1 / math.sqrt(l.k), salt=7002)
            with cp.cuda.Device(0):
                d = cp.empty((l.m, l.n), dtype=cp.uint16)
            gemm.schedule[(l.m, l.n, l.k)], _ = tune_schedule(gemm, timed, a, w, d, l.m, l.n, l.k, s0, cfg.tune_rounds)
            del a, w, d

    def enqueue(t):
        inp = x
        for i, l in enumerate(layers):
            res = x if "residual" in l.epilogue else None
            if l.epilogue_pass:
                t.part("compute", 0, s0, lambda inp=inp, i=i, l=l: gemm(inp, ws[i], gs[i], l.m, l.n, l.k, s0))
                t.part("compute", 0, s0, lambda i=i, l=l, res=res: rowwise.epilogue(
                    tuple(l.epilogue), gs[i], ys[i], l.m, l.n, l.tile_n, residual=res, stream=s0))
            else:
                t.part("compute", 0, s0, lambda inp=inp, i=i, l=l, res=res: gemm(
                    inp, ws[i], ys[i], l.m, l.n, l.k, s0, epilogue=tuple(l.epilogue), c=res))
            inp = ys[i]
            if l.rowwise:
                t.part("compute", 0, s0, lambda i=i, l=l: rowwise.rowwise(l.rowwise, ys[i], zs[i], l.m, l.out_n, s0))
                inp = zs[i]
        return [(s0, 0)]

    # correctness: poisoned outputs, one run, fp32 reference with bf16 rounding where the GPU stores
    for b in ys + [z for z in zs if z is not None]:
        poison(b)
    timed.run(enqueue)
    with cp.cuda.Device(0):
        x32 = bf16_bits_to_f32(x, cp)
        act = x32
        for i, l in enumerate(layers):
            y32 = act @ bf16_bits_to_f32(ws[i], cp).T
            if l.epilogue_pass:  # the GEMM stores bf16 before the ops run
                y32 = bf16_bits_to_f32(f32_to_bf16_bits(y32, cp), cp)
            out = rowwise.reference_epilogue(y32, tuple(l.epilogue), tile_n=l.tile_n,
                                             residual_f32=x32 if "residual" in l.epilogue else None)
            del y32
            if l.rowwise:
                out = rowwise.reference_rowwise(bf16_bits_to_f32(f32_to_bf16_bits(out, cp), cp), l.rowwise)
            last = out
            act = bf16_bits_to_f32(f32_to_bf16_bits(out, cp), cp)
        final = zs[-1] if layers[-1].rowwise else ys[-1]
        rel = float(rel_error(final, last, cp))
        del x32, act, out, last
    for _ in range(cfg.warmup):
        timed.run(enqueue)
    samples, bds = [], []
    for _ in range(cfg.reps):
        ms, parts = timed.run(enqueue)
        samples.append(ms)
        bds.append(breakdown(ms, parts, [0]))
    tm = summarize(samples)
    log(f"  {case.label}: {tm.median_ms:.4f} ms, rel err {rel:.2e}")
    return {"makespan_ms": tm.median_ms, "rel_err": rel, "ok": rel <= REL_TOL_BF16,
            "compute_ms": float(pd.Series([b["compute_ms"] for b in bds]).median()),
            "samples_ms": ";".join(f"{v:.5f}" for v in samples),
            "schedules": ";".join(f"{m}x{n}x{k}:{r}/{s}" for (m, n, k), (r, s) in gemm.schedule.items())}


def run(exp: Experiment, cfg: RunConfig, log: Callable[[str], None] = lambda s: print(s, file=sys.stderr),
        traces: dict | None = None) -> pd.DataFrame:
    """Measure every planned row of ``exp`` on this machine's GPUs; the table of :func:`plan_runs`, filled in.
    CTA-pipelining traces (every traced run, ctasim traces keyed ``<case>:<variant>:run<i>``, their ``meta`` naming
    the case and strategy they answer) go into ``traces``."""
    from ctahw.baselines import Timed  # noqa: PLC0415
    from ctahw.device import gpus as list_gpus  # noqa: PLC0415
    from ctahw.gemm import CutlassGemm  # noqa: PLC0415

    found = list_gpus()
    df = plan_runs(exp, len(found))
    if not (df["status"] == "planned").any():
        return df
    extra: dict[int, dict] = {}
    if (df["status"].eq("planned") & df["kind"].isin(SWEEP_KINDS)).any():
        _run_sweep_kinds(exp, df, cfg, extra, traces if traces is not None else {}, log)
    chain_rows = set(_chain_rows(exp, df))
    one_gpu = df["status"].eq("planned") & (df["kind"].eq("sequential") | df.index.isin(chain_rows))
    if not one_gpu.any():
        return pd.concat([df.reset_index(drop=True), pd.DataFrame([extra.get(i, {}) for i in df.index])], axis=1)
    timed = Timed([0], cfg.gate_ms, cfg.sustain_s, cfg.rest_ms)
    gemm = CutlassGemm(0)
    cases = {c.label: c for c in expand(exp)}
    strategies = {s.label: s for s in exp.strategies}
    for i, r in df.iterrows():
        if not one_gpu[i]:
            continue
        log(f"{exp.name}: {r['strategy']} {r['case']}")
        if i in chain_rows:
            res = _chain(exp, cases[r["case"]], strategies[r["strategy"]], cfg, timed, log,
                         traces if traces is not None else {})
        else:
            res = _sequential(cases[r["case"]], cfg, timed, gemm, log)
        df.loc[i, "makespan_ms"] = res["makespan_ms"]
        df.loc[i, "rel_err"] = res["rel_err"]
        df.loc[i, "status"] = "ok" if res["ok"] else "failed"
        if not res["ok"]:
            df.loc[i, "reason"] = f"relative error {res['rel_err']:.3g} above the bf16 tolerance"
        extra[i] = {k: v for k, v in res.items() if k not in ("makespan_ms", "rel_err", "ok")}
        timed.cp.get_default_memory_pool().free_all_blocks()
    return pd.concat([df.reset_index(drop=True), pd.DataFrame([extra.get(i, {}) for i in df.index])], axis=1)
