"""The one-CTA-per-tile producer on one GPU, traced: the per-tile steps of variant (a) measured without a second GPU.

Variant (a) of the CTA-pipelined kernel (``kernels/ctapipe_sm90_bf16.cu``, ``_cluster.cu``: one CTA per output tile,
a non-persistent grid, the CTA's tile from a static order) has per-tile costs the simulator holds in its ``ctapipe-*``
kernel configs: the epilogue nothing overlaps (``tile_fixed_ns``), the CTA turnover of a static grid
(``cta_launch_ns``), the store and signal steps. Until this probe they were fitted on 2-GPU per-CTA traces only
(``ctasim.validation.ctapipe``). Here the producer kernel of a 2-GPU plan runs alone on GPU 0:

* **what runs**: the producer (layer 0) of the plan ``ctahw.pipelined.variant_plan`` builds for a 2-layer M x H x H
  chain (or, with ``--k``, one whose first layer reads K != H input features: an M x K input and an H x K weight) and a
  variant (:data:`PERCTA_VARIANTS`: clusters 1x1, 1x2, 2x1 with queue pushes, and 2x1 over groups of 4
  row-blocks with a counting-only signal), the kernel, descriptor and tile order ``ctahw run ctapipe`` launches;
* **what is different**: its output D, the pipe's scoreboard counters, queue slots and tail, and the stamp buffers
  are all in GPU 0's memory, and the consumer is never launched. The producer never waits (a static order), so
  nothing spins; its signal is the protocol's (proxy fence, ``atom.acq_rel.sys`` on each counter, the pushes the
  completing update makes: ``atom.relaxed.sys`` on the tail, ``fence.acq_rel.sys``, ``st.relaxed.sys`` of the slots;
  or a ``red.release.sys`` for a waiting consumer), on local memory. Epochs advance as in ``ctahw.runner``: after
  ``e`` runs every counter must hold ``e x threshold`` and the tail ``e x capacity`` (checked);
* **correctness**: each kernel (untraced and traced) once on fresh random inputs with D poisoned (bf16 NaN), against
  the fp32 reference; every timed run's D is poisoned before it, and the last one's checked against its inputs'
  reference;
* **timing and traces**: per repetition one untraced and one traced run, each behind a rest (:data:`REST_MS`, the
  burst regime) and the 3 ms gate of ``ctahw.baselines.Timed``, alternating which goes first, input sets rotated;
  every traced run's tiles give the steps (:func:`ctasim.calibration.percta_steps`), medians over the runs per case
  (:func:`ctasim.calibration.percta_medians`).

``python -m ctahw.percta OUT`` runs it and writes ``percta-runs.csv``, ``percta.csv`` and
``percta-tiles-<M>-<variant>.csv.gz`` (the traced run of median span per case) there; ``ctahw calibrate`` calls :func:`measure_percta`.

Left out: the remote store and a consumer (the steps of a 2-GPU run add the NVLink store and the sys-scope atomics'
round trips: these are the local floor), the persistent kernels (variant (b)), other tile shapes, a first layer whose
N differs from the second's K (``--k`` changes the first layer's K only).
"""

from __future__ import annotations

import ctypes
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping, Sequence

import numpy as np

from ctahw import runner as rn

__all__ = ["PERCTA_MS", "PERCTA_H", "PERCTA_VARIANTS", "REPS", "REST_MS", "K_STEP", "TIMEOUT_NS", "ProducerCase",
           "producer_case", "producer_ptr_names", "tiles_from_stamps", "LocalProducer", "measure_percta",
           "write_percta", "percta_notes"]

PERCTA_MS = (4096, 16384)
"""M of the probe's M x 8192 x 8192 producers: 8 and 31 waves of the 132-CTA grid."""
PERCTA_H = 8192
PERCTA_VARIANTS = ("cutlass_ctapipe", "cutlass_ctapipe_c12", "cutlass_ctapipe_c21", "cutlass_ctapipe_w21g4")
"""The variants whose producer runs (``ctasim.variants.VARIANTS``): clusters 1x1 (row order), 1x2 (row order), 2x1
(row-block pairs), each pushing to a queue; and 2x1 over groups of 4 row-blocks counting for a waiting consumer."""
REPS = 5
"""Untraced and traced runs per case (``--quick``: 1 each)."""
REST_MS = 250.0
"""Host sleep with the GPU idle before each timed run (the burst regime, as ``ctahw run``)."""
K_STEP = 64
"""The producer mainloop's k-step (``kernels/ctapipe_gemm.cuh``'s ``TileShape`` 128 x 256 x 64): a K not a multiple
of it is refused."""
TIMEOUT_NS = 1_000_000_000
"""The descriptor's spin bound; the producer of a static order has no spin to bound, the launcher wants one."""


def _stderr(s: str) -> None:
    print(s, file=sys.stderr, flush=True)


@dataclass(frozen=True)
class ProducerCase:
    """The producer of a variant's 2-GPU plan as the launcher runs it: the plan, its kernel and pipes (as
    :func:`ctahw.runner.plan_arrays` gives them), its cluster shape, whether its signal pushes (a queue consumer) or
    only counts (a waiting one), and the variant's tile order name."""

    m: int
    h: int
    variant: str
    plan: object
    kernel: rn.KernelArrays
    pipes: tuple
    cluster: str
    push: bool
    order: str
    k: int = 0
    """The producer's K (its input features); 0 means H, the square chain's."""

    @property
    def k_dim(self) -> int:
        """The producer's K: :attr:`k`, or H where it is 0."""
        return self.k or self.h

    @property
    def pipe(self) -> rn.PipeArrays:
        return self.pipes[self.kernel.outbound]

    @property
    def signal(self) -> str:
        return "push" if self.push else "count"


def producer_case(m: int, h: int, variant: str, k: int = 0) -> ProducerCase:
    """The producer of ``variant``'s plan for a 2-layer m x h x h chain, its first layer reading ``k`` input features
    (0: ``h``; the second layer's K is ``h``, what the first writes) (no GPU needed); ValueError where ``k`` is not a
    positive multiple of 64 (the mainloop's k-step), ``m`` or ``h`` not one of the kernel's tile, where the plan's first
    layer is not a static producer with an outbound pipe or its order does not pair for its cluster."""
    import dataclasses  # noqa: PLC0415

    from ctahw.pipelined import square_chain, variant_plan, workload_plan  # noqa: PLC0415
    from ctasim.variants import VARIANTS, clusters_of  # noqa: PLC0415

    if variant not in VARIANTS:
        raise ValueError(f"unknown ctapipe variant {variant!r}")
    if m <= 0 or m % rn.KERNEL_TILE[0] or h <= 0 or h % rn.KERNEL_TILE[1]:
        raise ValueError(f"M = {m}, H = {h}: not positive multiples of the kernel's {rn.KERNEL_TILE[0]} x "
                         f"{rn.KERNEL_TILE[1]} tile")
    if k < 0 or k % K_STEP:
        raise ValueError(f"K = {k}: not a positive multiple of {K_STEP} (the mainloop's k-step)")
    v = VARIANTS[variant]
    if v.persistent:
        raise ValueError(f"{variant}: a persistent variant (the probe runs the one-CTA-per-tile kernel)")
    wl = square_chain(m, h, 2)
    if k and k != h:
        wl = dataclasses.replace(wl, layers=(dataclasses.replace(wl.layers[0], k=k), wl.layers[1]))
    plan = variant_plan(workload_plan(wl), v, wl=wl)
    kernels, pipes = rn.plan_arrays(plan)
    kern = min(kernels, key=lambda x: x.layer)
    if kern.mode != rn.MODE_STATIC or kern.outbound < 0:
        raise ValueError(f"{variant}: layer 0 is not a static producer with an outbound pipe")
    cluster = clusters_of(plan, v)[kern.op]
    rn.check_cluster(kern, pipes, cluster)
    consumer = next(x for x in kernels if x.op == pipes[kern.outbound].consumer)
    return ProducerCase(m, h, variant, plan, kern, tuple(pipes), cluster, consumer.mode != rn.MODE_WAIT, v.order,
                        0 if k == h else k)


def producer_ptr_names(case: ProducerCase, trace: bool) -> tuple[str, ...]:
    """The descriptor's pointer fields the local producer fills (the rest stay 0), as ``CtaPipeRunner`` fills a
    producer's: its order, error buffer, tile scratch and (traced) stamps; the outbound pipe's counters and arrays;
    the queue's slots, tail and push arrays where it pushes; the push and counter stamps where it is traced."""
    names = ["order", "error", "cta_tile", "out_counters", "prod_dep_ptr", "prod_dep_idx", "threshold"]
    if case.push:
        names += ["out_slots", "out_tail", "dep_tile_ptr", "dep_tile_idx"]
    if trace:
        names += ["stamps", "push_stamps", "zero_stamps"]
    return tuple(names)


def tiles_from_stamps(case: ProducerCase, stamps: np.ndarray):
    """The producer's tile table (``ctasim.trace`` columns with ``t_mainloop_end``; ns since its first CTA started)
    from its u64 stamp buffer ([tiles, ``TILE_STAMP_WORDS``] as ``kernels/ctapipe.cuh`` writes it), through
    :func:`ctahw.runner.parse_trace` on one clock (no pipes: nothing of the consumer is read)."""
    k = case.kernel
    tr = rn.parse_trace(case.plan, [k], [], {k.op: np.asarray(stamps)}, {}, {}, {k.gpu: 0.0},
                        {"m": case.m, "h": case.h, "k": case.k_dim, "variant": case.variant})
    return tr.tiles


class LocalProducer:
    """The producer of :func:`producer_case` on ``device`` with everything it writes in that GPU's memory (module
    docstring). ``x`` (m x K) and ``w`` (h x K) are bf16 bit arrays (uint16 CuPy) on ``device``; assign new ones to
    ``.x`` / ``.w`` between runs to rotate inputs. ``d`` is its output. Inputs of other shapes are a ValueError before
    any GPU is asked for."""

    def __init__(self, case: ProducerCase, x, w, *, trace: bool, timeout_ns: int = TIMEOUT_NS, device: int = 0):
        if tuple(x.shape) != (case.m, case.k_dim) or tuple(w.shape) != (case.h, case.k_dim):
            raise ValueError(f"{case.variant} producer: x {tuple(x.shape)} and w {tuple(w.shape)}, not the "
                             f"{case.m} x {case.k_dim} and {case.h} x {case.k_dim} of M = {case.m}, H = {case.h}, "
                             f"K = {case.k_dim}")

        from ctahw import build  # noqa: PLC0415
        from ctahw.device import require_cupy  # noqa: PLC0415

        self.cp = cp = require_cupy()
        self.case, self.trace, self.timeout_ns, self.device = case, bool(trace), int(timeout_ns), int(device)
        self.x, self.w = x, w
        self.lib = build.library(rn.library_of(case.cluster))
        rn.check_desc_names(self.lib.ctahw_ctapipe_desc_names(), rn.DESC_FIELDS, "ctapipe")
        k, p = case.kernel, case.pipe
        self.a: dict = {}
        with cp.cuda.Device(self.device):
            self.a["order"] = cp.asarray(k.order)
            self.a["error"] = cp.zeros(rn.ERROR_WORDS, dtype=cp.int32)
            self.a["cta_tile"] = cp.zeros(2 * k.tiles + rn.RING_WORDS, dtype=cp.int32)
            self.a["stamps"] = cp.zeros(k.tiles * rn.TILE_STAMP_WORDS, dtype=cp.uint64)
            self.a["out_counters"] = cp.zeros(p.deps, dtype=cp.uint32)
            self.a["out_slots"] = cp.zeros(p.capacity, dtype=cp.uint64)
            self.a["out_tail"] = cp.zeros(1, dtype=cp.uint32)
            for name in ("prod_dep_ptr", "prod_dep_idx", "threshold", "dep_tile_ptr", "dep_tile_idx"):
                self.a[name] = cp.asarray(getattr(p, name))
            self.a["push_stamps"] = cp.zeros(2 * p.capacity, dtype=cp.uint64)
            self.a["zero_stamps"] = cp.zeros(p.deps, dtype=cp.uint64)
            self.d = cp.empty((case.m, case.h), dtype=cp.uint16)
            cp.cuda.runtime.deviceSynchronize()
        self.epoch = 1
        buf = ctypes.create_string_buffer(512)
        rc = self.lib.ctahw_ctapipe_describe(rn.CLUSTERS[case.cluster], buf, 512)
        self.describe = buf.value.decode() if rc >= 0 else f"describe failed ({rc})"

    def descriptor(self) -> np.ndarray:
        ptrs = {n: int(self.a[n].data.ptr) for n in producer_ptr_names(self.case, self.trace)}
        return rn.descriptor(self.case.kernel, list(self.case.pipes), ptrs, epoch=self.epoch,
                             timeout_ns=self.timeout_ns)

    def launch(self, stream) -> None:
        """Enqueue one run (this epoch) on ``stream``; the epoch then advances."""
        c = self.case
        self._desc = desc = self.descriptor()  # kept until the next launch
        with self.cp.cuda.Device(self.device):
            rc = self.lib.ctahw_ctapipe_gemm(self.x.data.ptr, self.w.data.ptr, self.d.data.ptr, c.m, c.h, c.k_dim, 1.0,
                                             desc.ctypes.data_as(ctypes.c_void_p), len(rn.DESC_FIELDS),
                                             1 if self.trace else 0, rn.CLUSTERS[c.cluster], self.device, stream.ptr)
        if rc != 0:
            why = self.lib.ctahw_ctapipe_status_string(rc).decode()
            raise RuntimeError(f"{c.variant} producer: launch failed: {why}")
        self.epoch += 1

    def check(self) -> None:
        """After the runs finished: raise the kernel's first protocol error, or a RuntimeError unless every counter
        holds (runs x threshold) and the tail (runs x capacity; 0 for a counting producer)."""
        e = rn.parse_error(self.a["error"].get(), f"{self.case.variant} producer")
        if e is not None:
            raise e
        runs, p = self.epoch - 1, self.case.pipe
        counters = self.a["out_counters"].get().astype(np.int64)
        tail = int(self.a["out_tail"].get()[0])
        want_tail = runs * p.capacity if self.case.push else 0
        off = np.flatnonzero(counters != runs * p.threshold.astype(np.int64))
        if len(off) or tail != want_tail:
            bad = int(off[0]) if len(off) else -1
            raise RuntimeError(f"{self.case.variant} producer after {runs} runs: counter {bad} "
                               f"{counters[bad] if bad >= 0 else '-'} (want {runs} x threshold), tail {tail} "
                               f"(want {want_tail})")

    def tiles(self):
        """The last traced run's tile table (:func:`tiles_from_stamps`); the stamps are zeroed after reading, and a
        tile without all six time stamps is a RuntimeError (a CTA that skipped its tile, or stamps of an older run)."""
        if not self.trace:
            raise RuntimeError("an untraced producer has no stamps")
        s = self.a["stamps"].get().reshape(self.case.kernel.tiles, rn.TILE_STAMP_WORDS)
        with self.cp.cuda.Device(self.device):
            self.a["stamps"].fill(0)
        missing = np.flatnonzero((s[:, :6] == 0).any(axis=1))
        if len(missing):
            raise RuntimeError(f"{self.case.variant} producer: {len(missing)} tile(s) without stamps "
                               f"(first: tile {int(missing[0])})")
        return tiles_from_stamps(self.case, s)


def _median_index(values: Sequence[float]) -> int:
    order = sorted(range(len(values)), key=lambda i: values[i])
    return order[(len(values) - 1) // 2]


def measure_percta(ms: Sequence[int] = PERCTA_MS, variants: Sequence[str] = PERCTA_VARIANTS, *, h: int = PERCTA_H,
                   k: int = 0, reps: int = REPS, rest_ms: float = REST_MS, seed: int = 20261203,
                   log: Callable[[str], None] = _stderr) -> dict:
    """The probe on GPU 0 (module docstring); the producers read ``k`` input features (0: ``h``). Returns ``{"runs":
    [one row per traced run: m, k, variant, cluster,
    signal, order, run, plain_ms, trace_ms, the percta_steps fields], "cases": [one row per (m, variant): the
    medians of percta_medians, plain_ms, trace_ms (medians), rel_err_plain, rel_err_trace, rel_err_last, describe,
    slots, tiles], "tiles": {(m, variant): the kept traced run's tile table}}``. Raises on a wrong output, a protocol
    error or counts that are off."""
    if reps < 1:
        raise ValueError(f"reps must be >= 1, got {reps}")
    cases = {(m, v): producer_case(m, h, v, k) for m in ms for v in variants}  # a bad plan fails before the GPU runs
    kd = k or h
    import pandas as pd  # noqa: PLC0415

    from ctahw.baselines import Chain, Timed  # noqa: PLC0415
    from ctahw.device import REL_TOL_BF16, output_error, poison, reference_chain  # noqa: PLC0415
    from ctahw.device import require_gpus, rotation_sets  # noqa: PLC0415
    from ctasim.calibration import percta_medians, percta_steps  # noqa: PLC0415

    found = require_gpus(1)
    slots = found[0].sm_count  # one 128x256 CTA per SM (cta_slots_per_sm = 1)
    timed = Timed([0], gate_ms=3.0, rest_ms=rest_ms)
    cp, s0 = timed.cp, timed.compute[0]
    data = Chain(cp, seed)
    runs, rows, kept = [], [], {}
    for m in ms:
        nsets = rotation_sets((m * kd + h * kd) * 2, found[0].l2_bytes)
        xs = [data.rand(0, (m, kd), salt=10 * s + 1) for s in range(nsets)]
        ws = [data.rand(0, (h, kd), 1 / math.sqrt(kd), salt=10 * s + 2) for s in range(nsets)]
        refs = {0: reference_chain(cp, xs[0], [ws[0]])}
        for v in variants:
            case = cases[(m, v)]
            prods = {tr: LocalProducer(case, xs[0], ws[0], trace=tr) for tr in (False, True)}
            err = {}
            for tr, p in prods.items():  # correctness first: fresh inputs, D poisoned
                poison(p.d)
                p.launch(s0)
                s0.synchronize()
                p.check()
                if tr:
                    p.tiles()  # every tile stamped; the stamps zeroed for the timed runs
                err[tr] = output_error(cp, p.d, refs[0])
                if not err[tr] <= REL_TOL_BF16:
                    raise RuntimeError(f"M={m} {v} ({'traced' if tr else 'untraced'}): rel. error {err[tr]:.3g} > "
                                       f"{REL_TOL_BF16} against the fp32 reference")
            times = {False: [], True: []}
            steps, tables = [], []
            for i in range(reps):
                s = (i + 1) % nsets
                for tr in ((False, True) if i % 2 == 0 else (True, False)):
                    p = prods[tr]
                    p.x, p.w = xs[s], ws[s]
                    poison(p.d)
                    ms_, _ = timed.run(lambda t, p=p: (t.part("compute", 0, s0, lambda: p.launch(s0)), [(s0, 0)])[1])
                    times[tr].append(ms_)
                    if tr:
                        t = p.tiles()
                        tables.append(t)
                        steps.append(percta_steps(t, slots, f"M={m} {v} run {i}"))
            last = reps % nsets  # the input set of the last repetition (i = reps - 1)
            if last not in refs:
                refs[last] = reference_chain(cp, xs[last], [ws[last]])
            err_last = max(output_error(cp, p.d, refs[last]) for p in prods.values())
            for p in prods.values():
                p.check()
            if not err_last <= REL_TOL_BF16:
                raise RuntimeError(f"M={m} {v}: the last timed run's output has rel. error {err_last:.3g}")
            info = dict(m=m, k=kd, variant=v, cluster=case.cluster, signal=case.signal, order=case.order)
            for i, st in enumerate(steps):
                runs.append({**info, "run": i, "plain_ms": times[False][i], "trace_ms": times[True][i], **st})
            med = percta_medians(pd.DataFrame(runs[-len(steps):])).iloc[0].to_dict()
            keep = _median_index([st["span_ns"] for st in steps])
            kept[(m, v)] = tables[keep]
            rows.append({**info, "runs": len(steps), "kept_run": keep,
                         **{c: med[c] for c in med if c not in ("m", "variant", "runs")},
                         "plain_ms": float(np.median(times[False])), "trace_ms": float(np.median(times[True])),
                         "rel_err_plain": err[False], "rel_err_trace": err[True], "rel_err_last": err_last,
                         "slots": slots, "tiles": case.kernel.tiles, "describe": prods[True].describe})
            r = rows[-1]
            log(f"M={m:>5} {v:<22} {case.cluster} {case.signal:<5} mainloop {r['mainloop_early_ns'] / 1e3:6.1f} / "
                f"{r['mainloop_late_ns'] / 1e3:6.1f} us, epilogue {r['epilogue_ns']:5.0f} ns, turnover "
                f"{r['turnover_ns']:5.0f} ns, store {r['store_ns']:4.0f} ns, signal {r['signal_ns']:4.0f} ns, held "
                f"{r['held_ns']:5.0f} ns; {r['plain_ms']:.4f} ms (traced {r['trace_ms']:.4f}); err {err[True]:.2e}")
            del prods
            cp.get_default_memory_pool().free_all_blocks()
        del xs, ws, refs
        cp.get_default_memory_pool().free_all_blocks()
    return {"runs": runs, "cases": rows, "tiles": kept}


PERCTA_TILE_COLUMNS = ("cta", "sm", "tile_m", "tile_n", "t_start", "t_acquire", "t_mainloop_end", "t_compute_end",
                       "t_store_end", "t_signal")
"""The columns of a written tile table (``percta-tiles-<M>-<variant>.csv.gz``; whole ns since the first CTA started)."""


def write_percta(out: Path, res: Mapping) -> list[Path]:
    """``percta-runs.csv``, ``percta.csv`` and one ``percta-tiles-<M>-<variant>.csv.gz`` per case into folder
    ``out``."""
    import pandas as pd  # noqa: PLC0415

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / "percta-runs.csv", out / "percta.csv"]
    pd.DataFrame(list(res["runs"])).to_csv(paths[0], index=False)
    pd.DataFrame(list(res["cases"])).to_csv(paths[1], index=False)
    for (m, v), t in res.get("tiles", {}).items():
        p = out / f"percta-tiles-{m}-{v}.csv.gz"
        t = t[list(PERCTA_TILE_COLUMNS)].copy()
        for c in PERCTA_TILE_COLUMNS[4:]:
            t[c] = np.round(t[c]).astype(np.int64)
        t.to_csv(p, index=False, compression={"method": "gzip", "mtime": 0})
        paths.append(p)
    return paths


def percta_notes(cases: Sequence[Mapping]) -> list[str]:
    """One line per case of :func:`measure_percta` for a profile's header: what the probe measured, in the fields'
    words (not written into any kernel config)."""
    out = []
    for r in cases:
        out.append(f"one-CTA-per-tile producer {r['variant']} (cluster {r['cluster']}, {r['signal']}) at M = {r['m']}, "
                   f"local D, {r['runs']} traced runs (ctahw.percta): exposed epilogue {r['epilogue_ns']:.0f} ns "
                   f"(tile_fixed_ns), CTA turnover {r['turnover_ns']:.0f} ns (cta_launch_ns), mainloop waves 0-1 "
                   f"{r['mainloop_early_ns']:.0f} ns / later {r['mainloop_late_ns']:.0f} ns, store complete "
                   f"{r['store_ns']:.0f} ns, local signal {r['signal_ns']:.0f} ns (signal_ns), held after compute "
                   f"{r['held_ns']:.0f} ns")
    return out


def main(argv: Sequence[str] | None = None) -> int:
    from ctasim.cliargs import OneLineParser, writable_folder  # noqa: PLC0415
    from ctasim.spec import SpecError  # noqa: PLC0415

    ap = OneLineParser(prog="python -m ctahw.percta", description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path, help="folder for percta-runs.csv, percta.csv, percta-tiles-*.csv.gz")
    ap.add_argument("--ms", default=",".join(map(str, PERCTA_MS)), help="M values, comma-separated")
    ap.add_argument("--variants", default=",".join(PERCTA_VARIANTS), help="ctapipe variants, comma-separated")
    ap.add_argument("--h", type=int, default=PERCTA_H, help="K = N of the chain's layers (a multiple of 256)")
    ap.add_argument("--k", type=int, default=0,
                    help=f"the producer's K where it is not H (a multiple of {K_STEP}; default: H)")
    ap.add_argument("--reps", type=int, default=REPS)
    ap.add_argument("--rest-ms", type=float, default=REST_MS)
    a = ap.parse_args(argv)
    try:
        ms = [int(x) for x in a.ms.split(",")]
    except ValueError:
        ap.error(f"--ms {a.ms!r}: not comma-separated integers")
    variants = a.variants.split(",")
    try:
        writable_folder(a.out, "out")
        if a.reps < 1:
            raise ValueError(f"--reps {a.reps}: at least 1")
        for m in ms:  # every case's plan before the GPU runs
            for v in variants:
                producer_case(m, a.h, v, a.k)
    except (ValueError, SpecError) as e:
        ap.error(str(e))
    from ctahw.device import DeviceError  # noqa: PLC0415

    try:
        res = measure_percta(ms, variants, h=a.h, k=a.k, reps=a.reps, rest_ms=a.rest_ms)
    except DeviceError as e:
        print(f"{ap.prog}: {e}", file=sys.stderr)
        return 1
    for p in write_percta(a.out, res):
        _stderr(f"wrote {p}")
    for line in percta_notes(res["cases"]):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
