"""Baselines for chains of bf16 GEMM layers ``Y_{l+1} = Y_l @ W_l^T`` (K = N = H) on 1..G GPUs.

Each baseline is tuned honestly and timed the same way (:class:`Timed`):

* ``gemm``: one GEMM, the project's CUTLASS kernel vs cuBLAS, interleaved; ratios to cuBLAS.
* ``remote_d``: the CUTLASS GEMM with its output D on the next GPU (the epilogue stores over NVLink) vs
  local D, interleaved: the cost CTA-pipelining must hide.
* ``sequential``: all layers on GPU 0, one after the other (per backend).
* ``microbatch``: layer i on GPU i; M cut into ``c`` chunks; chunk j of layer i runs on GPU i's compute
  stream, is handed to GPU i+1 by a copy-engine peer copy on GPU i's copy stream, and GPU i+1's compute
  stream waits on that copy's event. Swept over chunk counts (equal chunks of at least 128 rows); the best
  per M is marked ``best = True``.
* ``tp``: Megatron-style tensor parallelism over G GPUs for pairs of layers: layer 2p column-parallel
  (each GPU holds H/G output features of W), layer 2p+1 row-parallel (H/G input features), then a NCCL
  sum-all-reduce of the [M, H] partial result. Compute and all-reduce are timed separately per GPU.

These three are ctasim's plans of the square chain (``ctasim.strategies``), issued by the plan executor
(:mod:`ctahw.executor`), the same code ``ctahw run EXPERIMENT`` runs them with; the session adds the backends,
the interleaving and the rotated input sets.

The CUTLASS kernel's tile order (raster along M or N, swizzle 1-8: runtime arguments of its persistent
scheduler) is tuned per problem shape before timing (:func:`tune_schedule`, interleaved medians); the
``gemm`` experiment also times CUTLASS's default order as ``cutlass_default``. cuBLAS picks its own algorithm.

Timing of a run: all devices idle; GPU 0's stream first runs a sleep probe (a few ms) so that the host
enqueues the whole run behind it; the start event is recorded after the sleep and every other stream waits
on it; at the end GPU 0's stream waits on each final stream's event and records the end event. The makespan
is start -> end on GPU 0 (it includes one cross-GPU event hand-back at the end, a few microseconds).
Breakdown: ``compute_ms`` (summed GEMM event times, mean over GPUs), ``comm_ms`` (collectives on the
compute stream, i.e. the NCCL all-reduce, mean over GPUs), ``copy_ms`` (copy-engine transfers on the copy
streams, summed over GPUs: they hold no SMs and overlap compute), ``idle_ms`` = makespan - compute - comm
(mean over GPUs: the time a GPU's SMs wait). Per-GPU figures are in ``detail`` (JSON).

Correctness: each variant runs once more on fresh random inputs with poisoned outputs and is compared with
an fp32 chain on GPU 0 (activations rounded to bf16 between layers, as the GPUs do).
"""

from __future__ import annotations

import json
import math
import sys
import time
from dataclasses import dataclass, field
from typing import Callable, Sequence

from ctahw import probes
from ctahw.device import (REL_TOL_BF16, chain_flops, enable_peer_access, output_error, poison, random_bf16,
                          reference_chain, require_cupy, require_gpus, rotation_sets, summarize)
from ctasim.variants import DEFAULT_RUN
from ctahw.gemm import SCHEDULES, CutlassGemm, GemmError, make_backend, schedule_name

__all__ = ["SweepConfig", "chunk_counts", "chain_flops", "mark_best", "plan_sweep", "Timed",
           "tune_schedule", "tune_shape", "pick_schedule"]

ROW_TILE = 128
"""Rows of the CUTLASS CTA tile: chunks are kept to whole row tiles so no chunk runs a partial wave of rows."""


@dataclass(frozen=True)
class SweepConfig:
    """What ``ctahw run baselines`` runs. Defaults: the sweep of issue 4."""

    ms: tuple[int, ...] = field(default=(1024, 2048, 4096, 8192, 16384), metadata={"help": "rows M to sweep"})
    h: int = field(default=8192, metadata={"help": "K = N of every layer"})
    gpus: int = field(default=2, metadata={"help": "GPUs (= layers for microbatch; TP degree)"})
    chunks: tuple[int, ...] = field(default=(1, 2, 4, 8, 16), metadata={"help": "microbatch chunk counts"})
    backends: tuple[str, ...] = field(default=("cublas", "cutlass"), metadata={"help": "GEMM backends"})
    experiments: tuple[str, ...] = field(default=("gemm", "remote_d", "sequential", "microbatch", "tp"),
                                         metadata={"help": "which baselines"})
    reps: int = field(default=15, metadata={"help": "timed repetitions per variant (median reported)"})
    tune_rounds: int = field(default=4, metadata={"help": "timed rounds per CUTLASS tile order when tuning (0: no tuning)"})
    warmup: int = field(default=3, metadata={"help": "untimed repetitions first"})
    gate_ms: float = field(default=3.0, metadata={"help": "sleep on GPU 0 before each timed run (host enqueues)"})
    sustain_s: float = field(default=0.0, metadata={
        "help": "0: time each run alone on rested GPUs (burst clocks); > 0: repeat it back to back this long and "
                "report the median run of the second half (sustained clocks, power cap)"})
    rest_ms: float = field(default=0.0, metadata={
        "help": "host sleep before each timed run, GPUs idle, so that a long run starts on a rested GPU (the "
                "power cap engages after 27-86 ms of busy time on one H200; the spec runs' default is 250)"})
    seed: int = field(default=20261129, metadata={"help": "random seed for inputs"})
    ctapipe_variants: tuple[str, ...] = field(
        default=DEFAULT_RUN,
        metadata={"help": "CTA-pipelining variants (ctasim.variants.VARIANTS; default: the fastest measured, "
                          "its queue counterpart and the earlier best, each with a traced twin)"})


def chunk_counts(m: int, candidates: Sequence[int], row_tile: int = ROW_TILE) -> list[int]:
    """Chunk counts that cut M into equal chunks of whole row tiles."""
    return [c for c in candidates if c >= 1 and m % c == 0 and (m // c) % row_tile == 0]


def mark_best(rows: list[dict], key=("experiment", "backend", "m"), metric="median_ms") -> None:
    """Set ``best`` on the row with the smallest ``metric`` in each group (rows with an error never win)."""
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault(tuple(r.get(k) for k in key), []).append(r)
    for g in groups.values():
        ok = [r for r in g if not r.get("error") and r.get(metric) is not None and math.isfinite(r[metric])]
        for r in g:
            r["best"] = False
        if ok:
            min(ok, key=lambda r: r[metric])["best"] = True


def plan_sweep(cfg: SweepConfig) -> list[dict]:
    """Every (experiment, backend, m, chunks) case the sweep would time: the dry run prints this."""
    cases = []
    for m in cfg.ms:
        if "gemm" in cfg.experiments:
            extra = ("cutlass_default",) if "cutlass" in cfg.backends and cfg.tune_rounds > 0 else ()
            cases += [dict(experiment="gemm", backend=b, m=m, gpus=1, layers=1) for b in cfg.backends + extra]
        if "remote_d" in cfg.experiments and cfg.gpus >= 2 and "cutlass" in cfg.backends:
            cases += [dict(experiment="remote_d", backend=f"cutlass_{w}_d", m=m, gpus=2, layers=1)
                      for w in ("local", "remote")]
        if "sequential" in cfg.experiments:
            cases += [dict(experiment="sequential", backend=b, m=m, gpus=1, layers=cfg.gpus) for b in cfg.backends]
        if "microbatch" in cfg.experiments and cfg.gpus >= 2:
            for b in cfg.backends:
                cases += [dict(experiment="microbatch", backend=b, m=m, gpus=cfg.gpus, layers=cfg.gpus, chunks=c)
                          for c in chunk_counts(m, cfg.chunks)]
        if "tp" in cfg.experiments and cfg.gpus >= 2:
            cases += [dict(experiment="tp", backend=b, m=m, gpus=cfg.gpus, layers=2) for b in cfg.backends]
        if "ctapipe" in cfg.experiments and cfg.gpus >= 2:
            cases += [dict(experiment="ctapipe", backend=b, m=m, gpus=cfg.gpus, layers=cfg.gpus)
                      for b in cfg.ctapipe_variants]
    return cases


# --------------------------------------------------------------------------------------------------
# Timing of multi-stream runs


class Timed:
    """Makespan timing of work enqueued on several GPUs' streams (see the module docstring)."""

    def __init__(self, devices: Sequence[int], gate_ms: float, sustain_s: float = 0.0, rest_ms: float = 0.0):
        self.cp = require_cupy()
        self.devices = list(devices)
        self.gate_ns = int(gate_ms * 1e6)
        if sustain_s < 0:
            raise ValueError(f"sustain_s must be >= 0, got {sustain_s}")
        if rest_ms < 0:
            raise ValueError(f"rest_ms must be >= 0, got {rest_ms}")
        self.sustain_s = float(sustain_s)
        self.rest_s = float(rest_ms) * 1e-3
        cp = self.cp
        self.compute, self.copy = {}, {}
        self.more: dict[int, list] = {}  # further streams per device (stream(d, i), i >= 2), gated as the copy stream
        for d in self.devices:
            with cp.cuda.Device(d):
                # Blocking streams: they order with CuPy's default stream, where inputs are made and poisoned.
                self.compute[d] = cp.cuda.Stream()
                self.copy[d] = cp.cuda.Stream()
            self.more[d] = []

    def stream(self, device: int, i: int):
        """Stream ``i`` of ``device``: 0 its compute stream, 1 its copy stream, 2 and up further streams (made on
        first use), each gated by a run's start as the copy stream is: work that needs more than two concurrent
        streams on one device (the kernels of a ring sharing one GPU). A further stream is gated from the first
        :meth:`run` after it is made: make it before the run that uses it (``ctahw.experiment.chain_case`` does)."""
        if i < 2:
            return (self.compute, self.copy)[i][device]
        more = self.more[device]
        while len(more) < i - 1:
            with self.cp.cuda.Device(device):
                more.append(self.cp.cuda.Stream())
        return more[i - 2]

    def _streams(self, device: int) -> tuple:
        return (self.compute[device], self.copy[device], *self.more[device])

    def event(self, device: int):
        with self.cp.cuda.Device(device):
            return self.cp.cuda.Event()

    def sync(self) -> None:
        for d in self.devices:
            with self.cp.cuda.Device(d):
                self.cp.cuda.runtime.deviceSynchronize()

    def run(self, enqueue: Callable[["Timed"], Sequence]) -> tuple[float, list[tuple[str, int, float]]]:
        """Time ``enqueue(self)``, which returns the streams that finish the run and records its parts with
        :meth:`part`. Returns (makespan ms, [(kind, device, ms), ...])."""
        d0 = self.devices[0]
        s0 = self.compute[d0]
        self.sync()
        if self.rest_s > 0 and self.sustain_s == 0:  # the GPUs idle: the run starts rested
            time.sleep(self.rest_s)
        self._parts: list[tuple[str, int, object, object]] = []
        probes.call("sleep", self.gate_ns, stream=s0, device=d0)
        start, end = self.event(d0), self.event(d0)
        start.record(s0)
        for d in self.devices:
            with self.cp.cuda.Device(d):
                for s in self._streams(d):
                    if s is not s0:
                        s.wait_event(start)
        finals = enqueue(self)
        for s, dev in finals:
            if s is s0:
                continue
            ev = self.event(dev)
            with self.cp.cuda.Device(dev):
                ev.record(s)
            s0.wait_event(ev)
        end.record(s0)
        if self.sustain_s > 0:
            return self._sustain(enqueue, start, end)
        end.synchronize()
        self.sync()
        cp = self.cp
        parts = [(kind, dev, cp.cuda.get_elapsed_time(a, b)) for kind, dev, a, b in self._parts]
        return cp.cuda.get_elapsed_time(start, end), parts

    def _sustain(self, enqueue, start, end) -> tuple[float, list[tuple[str, int, float]]]:
        """:meth:`run` with ``sustain_s`` > 0: the run repeated back to back (each repeat's streams wait for the
        previous repeat's end, as the first waited for ``start``; at most two repeats queued ahead of the GPUs)
        for ``sustain_s`` of host time. Returns the median repeat of the second half (the GPUs at their
        sustained clocks) and the first repeat's parts."""
        import time

        cp, d0 = self.cp, self.devices[0]
        s0 = self.compute[d0]
        first_parts = list(self._parts)
        marks = [start, end]
        t_stop = time.perf_counter() + self.sustain_s
        while time.perf_counter() < t_stop:
            prev = marks[-1]
            for d in self.devices:
                with cp.cuda.Device(d):
                    for s in self._streams(d):
                        if s is not s0:
                            s.wait_event(prev)
            self._parts = []
            finals = enqueue(self)
            for s, dev in finals:
                if s is s0:
                    continue
                ev = self.event(dev)
                with cp.cuda.Device(dev):
                    ev.record(s)
                s0.wait_event(ev)
            e = self.event(d0)
            e.record(s0)
            marks.append(e)
            if len(marks) > 3:
                marks[-3].synchronize()  # keep the host at most two repeats ahead
        marks[-1].synchronize()
        self.sync()
        per = [cp.cuda.get_elapsed_time(a, b) for a, b in zip(marks[:-1], marks[1:])]
        tail = per[len(per) // 2:]
        parts = [(kind, dev, cp.cuda.get_elapsed_time(a, b)) for kind, dev, a, b in first_parts]
        return float(sorted(tail)[len(tail) // 2]), parts

    def part(self, kind: str, device: int, stream, fn: Callable[[], None]) -> None:
        """Run ``fn`` (which enqueues on ``stream`` of ``device``) between two events, as a part of ``kind``."""
        a, b = self.event(device), self.event(device)
        with self.cp.cuda.Device(device):
            a.record(stream)
            fn()
            b.record(stream)
        self.add_part(kind, device, a, b)

    def add_part(self, kind: str, device: int, start, end) -> None:
        """Count the time between two events of ``device`` (recorded by the caller) as a part of ``kind``."""
        self._parts.append((kind, device, start, end))


def pick_schedule(medians: dict) -> tuple:
    """The fastest schedule by median; ties go to the earlier entry (CUTLASS's default comes first)."""
    return min(medians, key=lambda c: (medians[c], list(medians).index(c)))


def tune_schedule(g: CutlassGemm, timed: Timed, a, w, d, m: int, n: int, k: int, stream, rounds: int,
                  device: int = 0) -> tuple[tuple[int, int], dict]:
    """Time every (raster, swizzle) order of ``g`` on this shape, interleaved (one untimed round first);
    returns the best and the medians. Does not change ``g.schedule``."""
    times: dict[tuple[int, int], list[float]] = {c: [] for c in SCHEDULES}
    for r in range(rounds + 1):
        for c in (SCHEDULES if r % 2 == 0 else SCHEDULES[::-1]):
            g.schedule[(m, n, k)] = c
            ms, _ = timed.run(lambda t: (g(a, w, d, m, n, k, stream), [(stream, device)])[1])
            if r:
                times[c].append(ms)
    g.schedule.pop((m, n, k), None)
    med = {c: summarize(v).median_ms for c, v in times.items()}
    return pick_schedule(med), med


PART_KINDS = ("compute", "comm", "copy")
"""compute: GEMMs; comm: collectives on the compute stream (NCCL kernels hold SMs); copy: copy-engine
transfers on a separate stream (they overlap compute and hold no SMs)."""


def tune_shape(gemms: Sequence[CutlassGemm], timed: "Timed", data: "Chain", m: int, n: int, k: int,
               rounds: int) -> dict | None:
    """Choose the CUTLASS tile order of shape (m, n, k) on ``gemms[0]``'s GPU 0 (:func:`tune_schedule`, ``rounds``
    timed rounds per order, fresh inputs from ``data``) and set it in every one of ``gemms`` (the same model on every
    GPU). None when ``rounds`` <= 0 or the shape is tuned already; else the record of the tuning."""
    g0 = gemms[0]
    if rounds <= 0 or (m, n, k) in g0.schedule:
        return None
    cp = data.cp
    a = data.rand(0, (m, k), salt=7001)
    w = data.rand(0, (n, k), 1 / math.sqrt(k), salt=7002)
    with cp.cuda.Device(0):
        d = cp.empty((m, n), dtype=cp.uint16)
    best, med = tune_schedule(g0, timed, a, w, d, m, n, k, timed.compute[0], rounds)
    for g in gemms:
        g.schedule[(m, n, k)] = best
    return dict(m=m, n=n, k=k, best=schedule_name(best), best_ms=med[best], default_ms=med[SCHEDULES[0]],
                medians={schedule_name(c): round(v, 5) for c, v in med.items()})


def breakdown(makespan_ms: float, parts: list[tuple[str, int, float]], devices: Sequence[int]) -> dict:
    """Per GPU: summed time of each part kind, and idle = makespan - compute - comm (copies overlap).
    Totals: compute, comm and idle are means over GPUs; copy is the sum over GPUs."""
    per = {d: {f"{k}_ms": 0.0 for k in PART_KINDS} for d in devices}
    for kind, dev, ms in parts:
        if kind not in PART_KINDS:
            raise ValueError(f"unknown part kind {kind!r}")
        per[dev][f"{kind}_ms"] += ms
    for d in devices:
        per[d]["idle_ms"] = makespan_ms - per[d]["compute_ms"] - per[d]["comm_ms"]
    n = len(devices)
    out = {f"{k}_ms": sum(p[f"{k}_ms"] for p in per.values()) / n for k in ("compute", "comm", "idle")}
    out["copy_ms"] = sum(p["copy_ms"] for p in per.values())
    out["per_gpu"] = {str(d): {k: round(v, 4) for k, v in p.items()} for d, p in per.items()}
    return out


def median_breakdown(bds: list[dict]) -> dict:
    """Component-wise median of breakdowns of the timed repetitions."""
    out = {k: summarize([b[k] for b in bds]).median_ms for k in ("compute_ms", "comm_ms", "copy_ms", "idle_ms")}
    per = {}
    for d in bds[0]["per_gpu"]:
        per[d] = {k: round(summarize([b["per_gpu"][d][k] for b in bds]).median_ms, 4) for k in bds[0]["per_gpu"][d]}
    out["detail"] = json.dumps({"per_gpu": per})
    return out


# --------------------------------------------------------------------------------------------------
# Data on the GPUs


class Chain:
    """Input sets and weights of an L-layer chain, placed by the caller; bf16 as uint16 CuPy arrays."""

    def __init__(self, cp, rng_seed: int):
        self.cp = cp
        self.seed = rng_seed

    def rand(self, device: int, shape, scale: float = 1.0, salt: int = 0):
        cp = self.cp
        with cp.cuda.Device(device):
            rng = cp.random.default_rng(self.seed + salt)
            return random_bf16(shape, cp, rng, scale)


# --------------------------------------------------------------------------------------------------
# The baselines


class Session:
    """The device session the shorthand's experiments run in: the GPUs (peer access between them), the timing
    harness, the GEMM backends per GPU, the inputs' random source, the CUTLASS tile orders tuned per shape, the
    plan executor's machine (whose NCCL communicators live as long as the session: :meth:`close`), the
    CTA-pipelining traces captured. Experiments are plain functions ``(session, m) -> rows`` (this module's
    :func:`gemm`, :func:`remote_d`, :func:`sequential`, :func:`microbatch`, :func:`tp`;
    :func:`ctahw.pipelined.ctapipe_rows`), registered by name in :data:`ctahw.sweep.EXPERIMENTS`."""

    def __init__(self, cfg: SweepConfig, log: Callable[[str], None] = lambda s: print(s, file=sys.stderr)):
        self.cfg, self.log = cfg, log
        self.cp = require_cupy()
        self.devices = list(range(cfg.gpus))
        require_gpus(cfg.gpus)
        if cfg.gpus > 1:
            enable_peer_access(self.devices)
        self.timed = Timed(self.devices, cfg.gate_ms, cfg.sustain_s, cfg.rest_ms)
        self.backends = {(b, d): self._backend(b, d) for b in cfg.backends for d in self.devices}
        self.l2 = self.cp.cuda.runtime.getDeviceProperties(0)["l2CacheSize"]
        self.data = Chain(self.cp, cfg.seed)
        self._exec = None  # the plan executor's machine (ctahw.executor.CudaMachine), made on first use
        self.tuning: list[dict] = []
        self.traces: dict = {}  # CTA-pipelining traces by ctasim.trace.trace_key (ctahw.pipelined)

    # -- helpers
    def _backend(self, name: str, device: int):
        """The backend ``name`` on ``device``, smoke-tested on a small GEMM; cuBLAS through CuPy falls back to
        torch's cuBLAS if CuPy's binding fails (the ``impl`` column of the results says which ran)."""
        cp = self.cp
        with cp.cuda.Device(device):
            a = cp.full((128, 256), 0x3F80, dtype=cp.uint16)  # bf16 1.0
            d = cp.empty((128, 128), dtype=cp.uint16)
            s = cp.cuda.Stream()
        try:
            g = make_backend(name, device)
            g(a, a[:128], d, 128, 128, 256, s)
            s.synchronize()
        # What "CuPy's cuBLAS binding cannot do it" looks like: no cupy_backends.cuda.libs.cublas (ImportError),
        # a binding without gemmEx or the handle getter (AttributeError), cublasGemmEx failing (GemmError, which
        # CublasGemm raises from CuPy's CUBLASError). A CUDA runtime error at the synchronize is a fault of the
        # device, not of the binding: it propagates, as does anything else.
        except (ImportError, AttributeError, GemmError) as e:
            if name != "cublas":
                raise
            self.log(f"cublas through CuPy failed ({type(e).__name__}: {e}); using torch.matmul (cuBLAS)")
            g = make_backend("torch", device)
        return g

    def tune(self, m: int, n: int, k: int) -> None:
        """Choose the CUTLASS tile order for shape (m, n, k) on GPU 0 and use it on every GPU (same model)."""
        if "cutlass" not in self.cfg.backends:
            return
        rec = tune_shape([self.backends[("cutlass", dev)] for dev in self.devices], self.timed, self.data, m, n, k,
                         self.cfg.tune_rounds)
        if rec is not None:
            self.tuning.append(rec)
            self.log(f"    tuned cutlass {m}x{n}x{k}: {rec['best']} {rec['best_ms']:.3f} ms "
                     f"(default {rec['default_ms']:.3f} ms)")

    def schedule_of(self, m: int, n: int, k: int) -> str:
        """The CUTLASS tile order tuned for shape (m, n, k), by name ('' without the CUTLASS backend)."""
        g = self.backends.get(("cutlass", 0))
        return schedule_name(g.schedule.get((m, n, k), SCHEDULES[0])) if g is not None else ""

    def close(self) -> None:
        """Destroy the NCCL communicators of the tensor-parallel cases (kept across M values until now)."""
        ex, self._exec = self._exec, None
        if ex is not None:
            ex.close()

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def free(self) -> None:
        cp = self.cp
        for d in self.devices:
            with cp.cuda.Device(d):
                cp.get_default_memory_pool().free_all_blocks()

    def machine(self):
        """The plan executor's machine on the session's GPUs (its NCCL communicators kept across M values; closed
        by :meth:`close`)."""
        from ctahw.executor import CudaMachine  # noqa: PLC0415

        if self._exec is None:
            self._exec = CudaMachine(self.cp, self.devices, [None] * len(self.devices), self.log)
        return self._exec

    def interleave(self, variants: dict[str, Callable[[int], Callable]]) -> dict[str, tuple]:
        """variants: name -> (rep index -> enqueue fn). Returns name -> (Timing, median breakdown)."""
        cfg = self.cfg
        names = list(variants)
        for i in range(cfg.warmup):
            for n in names:
                self.timed.run(variants[n](i))
        samples = {n: [] for n in names}
        bds = {n: [] for n in names}
        for i in range(cfg.reps):
            for n in (names if i % 2 == 0 else names[::-1]):
                ms, parts = self.timed.run(variants[n](cfg.warmup + i))
                samples[n].append(ms)
                bds[n].append(breakdown(ms, parts, self._devs_of(parts)))
        return {n: (summarize(samples[n]), median_breakdown(bds[n])) for n in names}

    @staticmethod
    def _devs_of(parts) -> list[int]:
        return sorted({d for _, d, _ in parts}) or [0]

    def row(self, base: dict, timing, bd: dict, flops: float, rel: float) -> dict:
        """A result row: ``base``, the timing summary, TFLOP/s, the median breakdown, the relative error and its
        verdict, the backend's implementation."""
        row = dict(base)
        row.update(timing.as_dict())
        row["tflops"] = flops / (timing.median_ms * 1e9)
        row.update(bd)
        row["rel_err"] = rel
        row["ok"] = bool(rel <= REL_TOL_BF16)
        row["error"] = ""
        if row.get("backend") in self.cfg.backends:
            row["impl"] = self.backends[(row["backend"], 0)].name
        return row


# --------------------------------------------------------------------------------------------------
# The experiments: plain functions of a session



# -- one GEMM on GPU 0, variants interleaved (shared by gemm and remote_d)
def _one_gemm(session: Session, m: int, salt: int, variants: dict[str, tuple[object, int]]) -> tuple[int, dict, dict]:
    """Time ``m x h x h`` GEMMs on GPU 0; variants: name -> (backend, GPU that holds D).
    Returns (input sets, name -> (Timing, breakdown), name -> relative error)."""
    cp, h = session.cp, session.cfg.h
    nsets = rotation_sets((m * h + h * h + m * h) * 2, session.l2)
    a = [session.data.rand(0, (m, h), salt=10 * s + salt) for s in range(nsets)]
    w = [session.data.rand(0, (h, h), 1 / math.sqrt(h), salt=10 * s + salt + 1) for s in range(nsets)]
    d = {}
    for dev in sorted({dev for _, dev in variants.values()}):
        with cp.cuda.Device(dev):
            d[dev] = [cp.empty((m, h), dtype=cp.uint16) for _ in range(nsets)]
    s0 = session.timed.compute[0]
    ref = reference_chain(cp, a[0], [w[0]])
    rels = {}
    for name, (g, dev) in variants.items():
        poison(d[dev][0])
        g(a[0], w[0], d[dev][0], m, h, h, s0)
        s0.synchronize()
        rels[name] = output_error(cp, d[dev][0], ref)
    del ref

    def variant(g, dd):
        def at(i):
            k = i % nsets
            return lambda t: (t.part("compute", 0, s0, lambda: g(a[k], w[k], dd[k], m, h, h, s0)), [(s0, 0)])[1]
        return at

    res = session.interleave({name: variant(g, d[dev]) for name, (g, dev) in variants.items()})
    return nsets, res, rels


# -- gemm: CUTLASS vs cuBLAS, one GEMM on GPU 0
def gemm(session: Session, m: int) -> list[dict]:
    h = session.cfg.h
    session.tune(m, h, h)
    impls = {b: session.backends[(b, 0)] for b in session.cfg.backends}
    if "cutlass" in impls and session.cfg.tune_rounds > 0:
        impls["cutlass_default"] = CutlassGemm(0)  # CUTLASS's own tile order, for comparison
    nsets, res, rels = _one_gemm(session, m, 1, {b: (g, 0) for b, g in impls.items()})
    rows = [session.row(dict(experiment="gemm", backend=b, m=m, k=h, n=h, gpus=1, layers=1, chunks=0, sets=nsets,
                           cutlass_schedule=(session.schedule_of(m, h, h) if b == "cutlass" else
                                             schedule_name(SCHEDULES[0]) if b == "cutlass_default" else "")),
                      *res[b], chain_flops(m, h, 1), rels[b]) for b in impls]
    if "cublas" in res:
        for r in rows:
            r["ratio_to_cublas"] = r["median_ms"] / res["cublas"][0].median_ms
    return rows


# -- remote_d: CUTLASS with D local vs D on GPU 1
def remote_d(session: Session, m: int) -> list[dict]:
    h = session.cfg.h
    session.tune(m, h, h)
    g = session.backends[("cutlass", 0)]
    nsets, res, rels = _one_gemm(session, m, 3, {"cutlass_local_d": (g, 0), "cutlass_remote_d": (g, 1)})
    rows = [session.row(dict(experiment="remote_d", backend=n, m=m, k=h, n=h, gpus=2, layers=1, chunks=0, sets=nsets,
                           cutlass_schedule=session.schedule_of(m, h, h)),
                      *res[n], chain_flops(m, h, 1), rels[n]) for n in res]
    for r in rows:
        r["ratio_to_local"] = r["median_ms"] / res["cutlass_local_d"][0].median_ms
    return rows


# -- sequential, microbatch, tp: ctasim's plan of a square chain, issued by the plan executor (ctahw.executor)
def _square(session: Session, m: int, layers: int):
    from ctasim.spec import Layer, Workload  # noqa: PLC0415

    h = session.cfg.h
    return Workload(name=f"square-h{h}", layers=tuple(Layer(m=m, k=h, n=h) for _ in range(layers)))

def _planned(session: Session, experiment: str, strategy, layers: int, m: int, salt: int) -> list[dict]:
    """Every plan of ``strategy`` on an ``layers``-layer square chain (micro-batching: one per chunk count that
    cuts M into whole row tiles), for every backend: checked once against the fp32 chain (poisoned outputs),
    then timed interleaved on rotated input sets. One row per (backend, plan)."""
    from ctahw.executor import Inputs, PlanExecutor, reference_bf16  # noqa: PLC0415
    from ctasim.spec import load_hardware  # noqa: PLC0415
    from ctasim.strategies import REGISTRY  # noqa: PLC0415

    cp, h = session.cp, session.cfg.h
    wl = _square(session, m, layers)
    mod = REGISTRY[strategy.kind]
    gpus = mod.gpus_needed(strategy, wl, len(session.devices))
    hw = load_hardware("h200-x2")  # the plans' structure only (this profile has no memory hierarchy: quick)
    why = mod.check(strategy, wl, hw, gpus)
    if why:
        raise ValueError(f"{experiment} M={m}: {why}")
    plans = mod.build(strategy, wl, hw, gpus, f"m={m}")
    nsets = rotation_sets((m * h + layers * h * h // gpus) * 2, session.l2)
    sets = [Inputs(session.data.rand(0, (m, h), salt=100 * s + salt),
                   [session.data.rand(0, (h, h), 1 / math.sqrt(h), salt=100 * s + salt + 1 + i) for i in range(layers)])
            for s in range(nsets)]
    machine = session.machine()
    exs = {p.params.get("chunks", 0): PlanExecutor(p, wl, machine, sets) for p in plans}
    for ex in exs.values():
        for shape in dict.fromkeys(s for v in ex.gemm_shapes().values() for s in v):
            session.tune(*shape)
    devs = session.devices[:gpus]

    def enqueue(b, ex, i):
        gs = [session.backends[(b, d)] for d in devs] + [None] * (len(session.devices) - gpus)

        def f(t):
            machine.gemms = gs
            machine.bind(t)
            return [(machine.stream(st), st[0]) for st in ex.issue(i)]
        return f

    ref = reference_bf16(cp, sets[0].x, sets[0].weights, wl.layers)
    cases = [(b, c) for b in session.cfg.backends for c in exs]
    rels = {}
    for b, c in cases:
        for buf in exs[c].written():
            poison(buf)
        session.timed.run(enqueue(b, exs[c], 0))
        rels[(b, c)] = max(output_error(cp, out, ref, 0) for out in exs[c].outputs().values())
    del ref
    res = session.interleave({f"{b}/{c}": (lambda b, c: lambda i: enqueue(b, exs[c], i))(b, c) for b, c in cases})
    rows = []
    for b, c in cases:
        shapes = list(dict.fromkeys(s for v in exs[c].gemm_shapes().values() for s in v))
        base = dict(experiment=experiment, backend=b, m=m, k=h, n=h, gpus=gpus, layers=layers, chunks=c,
                    sets=nsets, cutlass_schedule="; ".join(session.schedule_of(*s) for s in shapes) if b == "cutlass" else "")
        if strategy.kind == "tp":
            base.update(allreduce_bytes=m * h * 2, nccl_binding=machine.nccl_binding)
        rows.append(session.row(base, *res[f"{b}/{c}"], chain_flops(m, h, layers), rels[(b, c)]))
    return rows


# -- sequential: L layers on GPU 0
def sequential(session: Session, m: int) -> list[dict]:
    from ctasim.spec import Strategy  # noqa: PLC0415

    return _planned(session, "sequential", Strategy(kind="sequential"), session.cfg.gpus, m, 5)


# -- microbatch: layer i on GPU i, chunks handed over by peer copies
def microbatch(session: Session, m: int) -> list[dict]:
    from ctasim.spec import Strategy  # noqa: PLC0415

    chunks = tuple(chunk_counts(m, session.cfg.chunks))
    if not chunks:
        raise ValueError(f"no chunk count in {session.cfg.chunks} cuts M={m} into whole {ROW_TILE}-row tiles")
    rows = _planned(session, "microbatch", Strategy(kind="microbatch", chunks=chunks), session.cfg.gpus, m, 7)
    mark_best(rows)
    return rows


# -- tp: column- then row-parallel pair, NCCL all-reduce
def tp(session: Session, m: int) -> list[dict]:
    from ctasim.spec import Strategy  # noqa: PLC0415

    return _planned(session, "tp", Strategy(kind="tp", tp_degree=session.cfg.gpus), 2, m, 11)
