"""Run a ctasim CTA-pipelining plan on GPUs: the plan's arrays uploaded as they are, per-CTA traces back.

CPU side (no GPU needed, tested in tests/ctahw):

* :func:`plan_arrays` turns a :class:`~ctasim.plan.Plan` into per-kernel and per-pipe int32 arrays -- exactly
  the plan's ``order`` and the pipes' CSR arrays (``prod_dep_ptr/idx``, ``threshold``, ``dep_tile_ptr/idx``),
  checked for what the kernel supports.
* :func:`descriptor` builds the int64 descriptor the launcher reads: field order :data:`DESC_FIELDS`, read from
  the X-macro ``CTAPIPE_DESC_FIELDS`` of ``kernels/ctapipe.cuh`` that also generates the C++ ``Params`` and
  ``from_desc``; a loaded library's own names must match it (:func:`check_desc_names`), and a name the descriptor
  sets that the list lacks is an error.
* :func:`parse_error` turns a kernel's error buffer into a :class:`ProtocolError` (or None).
* :func:`parse_trace` turns stamp buffers into a :class:`ctasim.trace.Trace` on GPU 0's timeline.
* :func:`clock_offsets` estimates each GPU's ``%globaltimer`` offset from ping-pong stamps.
* :func:`epilogue_codes` maps each kernel's fused epilogue ops (by layer) to the launcher's op code, derived from
  ``ctahw.gemm.EPILOGUE_OPS_FUSED`` (:data:`EPILOGUE_NAMES`; a loaded library's own list must match it name by name,
  :func:`check_epilogue_names`), and checks the residual operand (:func:`check_residuals`).

GPU side: :class:`CtaPipeRunner` allocates inputs, weights, the scoreboards and work-queues in the consumer
GPUs' memory, launches every layer's kernel on its own GPU and stream, and reads errors and traces back. A layer
with a fused epilogue op (gelu, silu, relu; residual: D = A @ W^T + C) runs variant (a)'s kernel built with CUTLASS's
fusion operation for it (``ctahw_ctapipe_gemm_epi``); protocol, scheduler and mainloop are the same for every op.
Epochs: counters, tails and heads are never reset between runs; run ``e`` (1, 2, ...) passes epoch ``e``.
"""

from __future__ import annotations

from pathlib import Path

from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from ctasim.plan import Kernel, Plan
from ctasim.trace import EVENT_COLUMNS, OP_COLUMNS, TILE_COLUMNS, Trace

__all__ = [
    "DESC_FIELDS",
    "desc_fields_from_source",
    "check_desc_names",
    "check_ring_words",
    "check_ring_depth",
    "TILE_STAMP_WORDS",
    "ERROR_WORDS",
    "ERROR_CODES",
    "KERNEL_TILE",
    "CLUSTERS",
    "PERSISTENT_LIBRARY",
    "library_of",
    "check_persistent",
    "ProtocolError",
    "check_cluster",
    "KernelArrays",
    "PipeArrays",
    "plan_arrays",
    "descriptor",
    "parse_error",
    "parse_trace",
    "clock_offsets",
    "EPILOGUE_NAMES",
    "epilogue_names_of",
    "check_epilogue_names",
    "C_OPERAND_OPS",
    "epilogue_codes",
    "check_residual",
    "check_residuals",
    "CtaPipeRunner",
]

def desc_fields_from_source(text: str, macro: str) -> tuple[str, ...]:
    """The field names of the X-macro ``macro`` (``#define MACRO(X) X(name, ...) ...``) in a kernel source, in order:
    the one definition of a launcher's descriptor layout."""
    import re

    m = re.search(rf"#define {macro}\(X\)(.*?)\n\s*\n", text, re.S)
    if m is None:
        raise ValueError(f"kernel source has no {macro} list")
    names = tuple(re.findall(r"\bX\((\w+),", m.group(1)))
    if not names:
        raise ValueError(f"{macro} lists no fields")
    return names


def _first_difference(want: tuple[str, ...], got: tuple[str, ...]) -> tuple[int, str, str]:
    """The first position where two name lists differ, and what each has there (``nothing (the list ends)``)."""
    i = next((i for i, (a, b) in enumerate(zip(want, got)) if a != b), min(len(want), len(got)))
    return (i, repr(want[i]) if i < len(want) else "nothing (the list ends)",
            repr(got[i]) if i < len(got) else "nothing (the list ends)")


def check_desc_names(lib_names: bytes, fields: tuple[str, ...], what: str) -> None:
    """RuntimeError unless a loaded library's comma-separated descriptor names equal ``fields``, naming the first
    position where they differ (a field renamed, moved, added or dropped on one side only)."""
    names = tuple(n for n in lib_names.decode().split(",") if n)
    if names == fields:
        return
    i, src, got = _first_difference(fields, names)
    raise RuntimeError(f"{what} descriptor fields differ between the kernel source and the built library: field {i} "
                       f"is {src} in the source but {got} in the library ({len(fields)} vs {len(names)} fields); "
                       "rebuild it (ctahw build)")


DESC_FIELDS = desc_fields_from_source((Path(__file__).resolve().parent / "kernels" / "ctapipe.cuh").read_text(),
                                      "CTAPIPE_DESC_FIELDS")
"""Fields of the launcher's int64 descriptor, in order (pointers as integers, 0 for none): read from the
``CTAPIPE_DESC_FIELDS`` list of kernels/ctapipe.cuh, the one definition."""

TILE_STAMP_WORDS = 8
"""u64 words per tile in a stamp buffer: start, acquire, mainloop end, epilogue issued, store end, signal,
(smid << 32 | blockIdx.x), slot (as int64; -1 for a static tile)."""

ERROR_WORDS = 8
"""int32 words of a kernel's error buffer: count, code, cta, index, seen lo, seen hi, epoch, spare."""

ERROR_CODES = {
    1: "pop timeout: the consumer CTA's work-queue slot was never published",
    2: "head overflow: more pops than queue capacity in this epoch",
    3: "slot from a later epoch (runs not ordered on the host)",
    4: "counter overrun: more signals than the threshold in this epoch",
    5: "tail overflow: more pushes than queue capacity in this epoch",
    6: "a producer tile completed more counters than the kernel can push at once (8)",
    7: "a cluster popped two tiles that cannot share its multicast operand",
    8: "wait timeout: the consumer CTA's inbound counter never completed",
    9: "ticket outside this epoch's range (runs not ordered on the host, or the ticket counter not reset)",
}

CLUSTERS = {"1x1": 0, "2x1": 1, "1x2": 2}
"""Cluster shapes of the ctapipe kernel and their launcher codes: 1x1 (ctapipe_sm90_bf16), 2x1 (two CTAs of one
column share W by multicast) and 1x2 (two CTAs of one row share A) (ctapipe_sm90_bf16_cluster)."""

LIBRARY_OF_CLUSTER = {0: "ctapipe_sm90_bf16", 1: "ctapipe_sm90_bf16_cluster", 2: "ctapipe_sm90_bf16_cluster"}

PERSISTENT_LIBRARY = "ctapipe_sm90_bf16_persistent"
"""Variant (b): the persistent warp-specialized kernel (at most one CTA per SM, next tile's pop and loads
overlapping the current tile's MMA and epilogue). Clusters 1x1 (static or queue) and 2x1 (static only)."""

PERSISTENT_CLUSTERS = {"1x1": 0, "2x1": 1}

PERSISTENT_DESIGNS = {"smem": 0, "ring": 4}
"""Two tile broadcasts in the persistent kernel, added to the cluster code: "smem" -- CUTLASS's
dynamic-persistent path, a scheduler warp takes each next tile and publishes it through a shared-memory
pipeline; "ring" -- CUTLASS's static-persistent path, the mainloop load warp pops and publishes through a
per-CTA ring of u64 words in global memory (after cta_tile's 2 * tiles words: RING_WORDS more)."""

RING_WORDS = 4 * 1024
"""int32 words reserved after cta_tile for the ring design (2 u64 entries per CTA, up to 1024 CTAs)."""


def ring_grid(tiles: int, sm_count: int, cluster: str) -> int:
    """The persistent kernel's grid: min(tiles, SMs), whole clusters (its scheduler's to_underlying_arguments)."""
    size = {"1x1": 1, "2x1": 2}[cluster]
    return (min(tiles, sm_count) // size) * size


def check_ring_words(lib, grid: int, name: str = "kernel") -> int:
    """The int32 words the ring design needs for ``grid`` CTAs (the library's ``ctahw_ctapipe_ring_words``;
    2 u64 per CTA where a library lacks it); ValueError if more than the RING_WORDS the runner reserves."""
    fn = getattr(lib, "ctahw_ctapipe_ring_words", None)
    need = int(fn(int(grid))) if fn is not None else 4 * int(grid)
    if need > RING_WORDS:
        raise ValueError(f"{name}: the ring design's grid of {grid} CTAs needs {need} int32 ring words, but the "
                         f"runner reserves RING_WORDS = {RING_WORDS} (enough for {RING_WORDS // 4} CTAs)")
    return need


def check_ring_depth(lib, code: int, mode: int, k: int, name: str = "kernel") -> None:
    """ValueError where the launcher would refuse kernel ``name`` for its K (the library's
    ``ctahw_ctapipe_ring_check``, the same check it runs at launch: a queue-fed ring kernel whose hand-off ring is too
    shallow for K, code -2005), with the library's reason; a library without the check (variant (a)) passes."""
    fn = getattr(lib, "ctahw_ctapipe_ring_check", None)
    rc = int(fn(int(code), int(mode), int(k))) if fn is not None else 0
    if rc:
        raise ValueError(f"{name}: K = {k} refused by the launcher ({rc}): "
                         f"{lib.ctahw_ctapipe_status_string(rc).decode()}")


def persistent_code(cluster: str, design: str) -> int:
    """The launcher's cluster code for the persistent kernel: cluster shape + design."""
    if design not in PERSISTENT_DESIGNS:
        raise ValueError(f"unknown persistent design {design!r} (one of {', '.join(PERSISTENT_DESIGNS)})")
    library_of(cluster, True)
    if design == "smem" and cluster != "1x1":
        raise ValueError("the persistent kernel's smem design runs clusters 1x1 only (2x1 hung: the cooperative "
                         "kernel's throttle pipeline releases the leader CTA's barrier from both CTAs)")
    return PERSISTENT_CLUSTERS[cluster] + PERSISTENT_DESIGNS[design]


def library_of(cluster: str, persistent: bool = False) -> str:
    """The kernel library that runs a kernel with ``cluster`` (variant (a), or (b) when ``persistent``)."""
    if persistent:
        if cluster not in PERSISTENT_CLUSTERS:
            raise ValueError(f"the persistent kernel has no cluster {cluster!r} (one of "
                             f"{', '.join(PERSISTENT_CLUSTERS)})")
        return PERSISTENT_LIBRARY
    return LIBRARY_OF_CLUSTER[CLUSTERS[cluster]]


def check_persistent(k: "KernelArrays", cluster: str) -> None:
    """Raise ValueError unless the persistent kernel can run ``k`` with ``cluster``: a queue needs 1x1 (a
    cluster would have to pop pairs and broadcast them to its partner CTA: not built)."""
    library_of(cluster, True)
    if k.mode == MODE_WAIT:
        raise ValueError(f"{k.name}: the persistent kernel has no wait consumer (variant (a) only)")
    if cluster != "1x1" and k.mode != MODE_STATIC:
        raise ValueError(f"{k.name}: the persistent kernel pops the work-queue with clusters 1x1 only "
                         f"(asked {cluster})")

KERNEL_TILE = (128, 256)
"""Output tile (rows, columns) of the ctapipe kernel (kernels/ctapipe_sm90_bf16.cu)."""

MODE_STATIC, MODE_QUEUE, MODE_WAIT = 0, 1, 2
"""How a kernel's CTAs get their tiles (ctapipe.cuh ``Params::mode``): a static order (producer), pops from the
inbound work-queue (ctasim source ``queue``), or a static order waiting on each tile's inbound counter
(ctasim source ``wait``: the no-queue consumer; its producer then updates the counters without pushing)."""
MODE_OF_SOURCE = {"static": MODE_STATIC, "queue": MODE_QUEUE, "wait": MODE_WAIT}


class ProtocolError(RuntimeError):
    """A kernel recorded a protocol error (a bounded wait timed out, a counter or queue overran)."""

    def __init__(self, kernel: str, code: int, cta: int, index: int, seen: int, epoch: int, count: int):
        self.kernel, self.code, self.cta, self.index, self.seen, self.epoch, self.count = (
            kernel, code, cta, index, seen, epoch, count)
        what = ERROR_CODES.get(code, f"unknown error code {code}")
        seen_epoch, seen_low = seen >> 32, seen & 0xFFFFFFFF
        super().__init__(f"{kernel}: {what} (CTA {cta}, counter/slot {index}, saw {seen:#x} = epoch {seen_epoch} "
                         f"value {seen_low}, expected epoch {epoch}; {count} error(s) in all)")


@dataclass(frozen=True)
class PipeArrays:
    """A plan pipe's arrays as the kernels read them (int32), and where they live."""

    id: int
    producer: int
    consumer: int
    src_gpu: int
    dst_gpu: int
    prod_dep_ptr: np.ndarray
    prod_dep_idx: np.ndarray
    threshold: np.ndarray
    dep_tile_ptr: np.ndarray
    dep_tile_idx: np.ndarray
    consumer_dep: np.ndarray

    @property
    def deps(self) -> int:
        return len(self.threshold)

    @property
    def capacity(self) -> int:
        return len(self.consumer_dep)


@dataclass(frozen=True)
class KernelArrays:
    """One plan kernel as the launcher runs it."""

    op: int
    name: str
    gpu: int
    layer: int
    tiles_m: int
    tiles_n: int
    mode: int
    order: np.ndarray
    inbound: int
    outbound: int

    @property
    def tiles(self) -> int:
        return self.tiles_m * self.tiles_n


def _i32(a, what: str) -> np.ndarray:
    a = np.asarray(a)
    if a.size and (a.min() < 0 or a.max() > np.iinfo(np.int32).max):
        raise ValueError(f"{what}: values outside int32 range")
    return np.ascontiguousarray(a, dtype=np.int32)


def plan_arrays(plan: Plan) -> tuple[list[KernelArrays], list[PipeArrays]]:
    """The plan's kernels and pipes as device-ready arrays; raises ValueError for what the kernel cannot run.

    Supported: kernels whose tiles come from a static order (``source="static"``), from the inbound
    work-queue (``"queue"``) or from a static order waiting on inbound counters (``"wait"``); one kernel per
    GPU; every other op kind is refused (a ctapipe plan of a chain without row-wise ops has only kernels).
    """
    kernels, pipes = [], []
    gpus_seen = set()
    for op in plan.ops:
        if not isinstance(op, Kernel):
            raise ValueError(f"op {op.name!r} ({type(op).__name__}): the hardware runner runs GEMM kernels only")
        if op.source not in MODE_OF_SOURCE:
            raise ValueError(f"kernel {op.name!r}: tile source {op.source!r} is not built "
                             f"({', '.join(MODE_OF_SOURCE)})")
        if op.source != "static" and op.inbound < 0:
            raise ValueError(f"kernel {op.name!r} takes tiles from its inbound pipe ({op.source}) but has none")
        if op.gpu in gpus_seen:
            raise ValueError(f"two kernels on GPU {op.gpu}: the runner places one kernel per GPU")
        gpus_seen.add(op.gpu)
        order = _i32(op.order, f"{op.name} order")
        if op.source != "queue" and sorted(order.tolist()) != list(range(op.tiles)):
            raise ValueError(f"kernel {op.name!r}: static order is not a permutation of its {op.tiles} tiles")
        kernels.append(KernelArrays(op.id, op.name, op.gpu, op.layer, op.tiles_m, op.tiles_n,
                                    MODE_OF_SOURCE[op.source], order, op.inbound, op.outbound))
    for p in plan.pipes:
        prod, cons = plan.ops[p.producer], plan.ops[p.consumer]
        pa = PipeArrays(p.id, p.producer, p.consumer, p.src_gpu, p.dst_gpu,
                        _i32(p.prod_dep_ptr, "prod_dep_ptr"), _i32(p.prod_dep_idx, "prod_dep_idx"),
                        _i32(p.threshold, "threshold"), _i32(p.dep_tile_ptr, "dep_tile_ptr"),
                        _i32(p.dep_tile_idx, "dep_tile_idx"), _i32(p.consumer_dep, "consumer_dep"))
        if len(pa.prod_dep_ptr) != prod.tiles + 1:
            raise ValueError(f"pipe {p.id}: prod_dep_ptr has {len(pa.prod_dep_ptr)} entries for {prod.tiles} tiles")
        if len(pa.dep_tile_ptr) != pa.deps + 1 or pa.capacity != cons.tiles:
            raise ValueError(f"pipe {p.id}: dependency arrays do not match the consumer's {cons.tiles} tiles")
        if sorted(pa.dep_tile_idx.tolist()) != list(range(cons.tiles)):
            raise ValueError(f"pipe {p.id}: consumer tiles are not each pushed exactly once")
        if (np.bincount(pa.prod_dep_idx, minlength=pa.deps) != pa.threshold).any():
            raise ValueError(f"pipe {p.id}: thresholds differ from the number of producer tiles per counter")
        per_tile = np.diff(pa.prod_dep_ptr)
        if per_tile.size and per_tile.max() > 8:
            raise ValueError(f"pipe {p.id}: a producer tile feeds {per_tile.max()} counters (the kernel pushes <= 8)")
        pipes.append(pa)
    return kernels, pipes


def check_cluster(k: KernelArrays, pipes: Sequence[PipeArrays], cluster: str) -> None:
    """Raise ValueError unless kernel ``k`` can run with clusters of ``cluster`` (1x1, 2x1, 1x2).

    A cluster's two CTAs must share the multicast operand: the same tile column (2x1) or row (1x2). A static
    or wait kernel gets its tiles from ``order`` in pairs (CTAs 2i, 2i+1); a queue kernel pops two consecutive slots,
    so every counter must push an even number of tiles (reservations stay pair-aligned) whose consecutive
    pairs share the operand; with row-block counters only 1x2 can do that.
    """
    if cluster not in CLUSTERS:
        raise ValueError(f"unknown cluster {cluster!r} (one of {', '.join(CLUSTERS)})")
    if cluster == "1x1":
        return
    if k.tiles % 2:
        raise ValueError(f"{k.name}: {k.tiles} tiles cannot be paired for clusters of 2")
    key = (lambda t: t % k.tiles_n) if cluster == "2x1" else (lambda t: t // k.tiles_n)
    what = "column" if cluster == "2x1" else "row"
    if k.mode in (MODE_STATIC, MODE_WAIT):
        o = k.order
        bad = np.flatnonzero(key(o[0::2]) != key(o[1::2]))
        if len(bad):
            raise ValueError(f"{k.name}: static order pairs tiles {o[2 * bad[0]]} and {o[2 * bad[0] + 1]}, "
                             f"not in one {what} (cluster {cluster})")
        return
    p = pipes[k.inbound]
    for d in range(p.deps):
        tiles = p.dep_tile_idx[p.dep_tile_ptr[d]:p.dep_tile_ptr[d + 1]]
        if len(tiles) % 2 or (key(tiles[0::2]) != key(tiles[1::2])).any():
            raise ValueError(f"{k.name}: counter {d} pushes tiles that consecutive pops cannot pair in one "
                             f"{what} (cluster {cluster})")


# --------------------------------------------------------------------------------------------------
# Fused epilogue ops (variant (a) only)


def epilogue_names_of(fused: Mapping[tuple[str, ...], int]) -> tuple[str, ...]:
    """The op names by launcher code of an ``{op sequence: code}`` table (``ctahw.gemm.EPILOGUE_OPS_FUSED``): code 0
    is the plain epilogue, named ``none``; every other code runs one op alone. ValueError unless the codes are 0, 1,
    ... each once, 0 is the empty sequence and every other sequence has one op: what the kernel's list can hold."""
    by_code: dict[int, str] = {}
    for ops, code in fused.items():
        if len(ops) > 1 or (code == 0) != (len(ops) == 0):
            raise ValueError(f"epilogue op code {code} is {ops!r}: code 0 is the plain epilogue (), every other code "
                             "one op alone")
        if code in by_code:
            raise ValueError(f"epilogue op code {code} is used twice ({by_code[code]!r} and {ops!r})")
        by_code[code] = ops[0] if ops else "none"
    if sorted(by_code) != list(range(len(by_code))):
        raise ValueError(f"epilogue op codes {sorted(by_code)} are not 0, 1, ..., {len(by_code) - 1}")
    return tuple(by_code[c] for c in range(len(by_code)))


def _fused_table() -> dict[tuple[str, ...], int]:
    from ctahw.gemm import EPILOGUE_OPS_FUSED  # noqa: PLC0415 - pure module data (no CuPy)

    return dict(EPILOGUE_OPS_FUSED)


EPILOGUE_NAMES: tuple[str, ...] = epilogue_names_of(_fused_table())
"""Names of the launcher's epilogue op codes, by code (``none``, ``gelu``, ...): derived from
``ctahw.gemm.EPILOGUE_OPS_FUSED``, the one Python table of fused ops (whose codes ``ctahw.rowwise.EPILOGUE_OP_CODES``
shares); the kernel's list is ``CTAPIPE_EPILOGUE_OPS`` in kernels/ctapipe_gemm.cuh, exported by the library as
``ctahw_ctapipe_epilogue_names`` and compared with this at load time (:func:`check_epilogue_names`)."""

C_OPERAND_OPS = frozenset({"residual"})
"""Epilogue ops that read a C operand (D = acc + C): the launcher needs C for them and refuses it for the others."""


def check_epilogue_names(lib_names: bytes, what: str, names: tuple[str, ...] = EPILOGUE_NAMES) -> None:
    """RuntimeError unless a loaded library's comma-separated epilogue op names (by code) equal ``names``, naming the
    first code where they differ: an op moved, renamed, added or dropped on one side only would otherwise run
    another epilogue than the one asked for."""
    got = tuple(n for n in lib_names.decode().split(",") if n)
    if got == names:
        return
    i, want, have = _first_difference(names, got)
    raise RuntimeError(f"{what}: epilogue op codes differ between ctahw.gemm.EPILOGUE_OPS_FUSED and the built library: "
                       f"code {i} is {want} in Python but {have} in the library ({len(names)} vs {len(got)} ops; the "
                       "library's list is CTAPIPE_EPILOGUE_OPS in kernels/ctapipe_gemm.cuh); rebuild it (ctahw build)")


def epilogue_codes(kernels: Sequence[KernelArrays], epilogues: Mapping[int, Sequence[str] | str] | None,
                   persistent: str = "") -> dict[int, int]:
    """The launcher's epilogue op code of every kernel (by op id), from ``epilogues`` (layer -> op sequence; a single
    name counts as a one-op sequence; layers not named run the plain epilogue, code 0). ValueError for a layer no
    kernel runs, an op the kernels do not fuse, or any op on variant (b) (the persistent kernels run none)."""
    epilogues = dict(epilogues or {})
    layers = {k.layer: k for k in kernels}
    extra = sorted(set(epilogues) - set(layers))
    if extra:
        raise ValueError(f"epilogues name layer {extra[0]}, but the plan's kernels run layers "
                         f"{', '.join(map(str, sorted(layers)))}")
    codes = {k.op: 0 for k in kernels}
    for layer, ops in sorted(epilogues.items()):
        ops = (ops,) if isinstance(ops, str) else tuple(ops)
        k = layers[layer]
        unknown = [o for o in ops if o not in EPILOGUE_NAMES or o == "none"]
        if unknown:
            raise ValueError(f"{k.name} (layer {layer}): unknown epilogue op {unknown[0]!r} (the CTA-pipelined kernels "
                             f"fuse: {', '.join(n for n in EPILOGUE_NAMES if n != 'none')})")
        if len(ops) > 1:
            raise ValueError(f"{k.name} (layer {layer}): epilogue {ops!r}: the CTA-pipelined kernels fuse one op alone")
        code = EPILOGUE_NAMES.index(ops[0]) if ops else 0
        if code and persistent:
            raise ValueError(f"{k.name} (layer {layer}): epilogue {ops!r} asked of variant (b), the persistent kernels "
                             f"({PERSISTENT_LIBRARY}), which run no fused epilogue op; variant (a) runs them")
        codes[k.op] = code
    return codes


def check_residual(c, m: int, n: int, gpu: int, what: str) -> None:
    """ValueError unless ``c`` is the residual a kernel's epilogue can read (``ctahw.gemm.residual_problem``: a
    C-contiguous ``m x n`` uint16 CuPy array on GPU ``gpu``, the kernel's own)."""
    from ctahw.gemm import residual_problem  # noqa: PLC0415 - pure function (no CuPy)

    why = residual_problem(c, m, n, gpu, whose=" (the kernel's)")
    if why:
        raise ValueError(f"{what}: {why}")


def check_residuals(kernels: Sequence[KernelArrays], codes: Mapping[int, int], residual, m: int,
                    dims: Sequence[int]) -> None:
    """ValueError unless ``residual`` is given exactly when some kernel's epilogue reads C, and fits every such
    kernel (:func:`check_residual`: ``m x dims[layer + 1]`` on its GPU)."""
    readers = [k for k in kernels if EPILOGUE_NAMES[codes[k.op]] in C_OPERAND_OPS]
    if residual is not None and not readers:
        named = ", ".join(f"layer {k.layer}: {EPILOGUE_NAMES[codes[k.op]]}" for k in kernels)
        raise ValueError(f"a residual was given, but no kernel's epilogue reads C ({named})")
    for k in readers:
        check_residual(residual, m, dims[k.layer + 1], k.gpu, f"{k.name} (layer {k.layer})")


def descriptor(k: KernelArrays, pipes: Sequence[PipeArrays], ptrs: Mapping[str, int], *, epoch: int,
               timeout_ns: int, stall_row: int = -1) -> np.ndarray:
    """The launcher's int64 descriptor for kernel ``k``. ``ptrs`` maps DESC_FIELDS pointer names to device
    addresses (missing: 0). Sizes come from the arrays; pointers are not checked here."""
    if epoch < 1:
        raise ValueError("epochs start at 1")
    if int(timeout_ns) <= 0:
        raise ValueError(f"timeout_ns must be positive (every spin-wait is bounded by it), got {timeout_ns}")
    if not ptrs.get("error"):
        raise ValueError("an error buffer is required: a CTA that times out reports through it")
    vals = {name: int(ptrs.get(name, 0)) for name in DESC_FIELDS}
    vals.update(mode=k.mode, num_tiles=k.tiles, tiles_n=k.tiles_n, epoch=epoch, timeout_ns=int(timeout_ns),
                stall_row=stall_row, in_capacity=0, out_capacity=0)
    unknown = [n for n in (*ptrs, *vals) if n not in DESC_FIELDS]
    if unknown:  # a field renamed in ctapipe.cuh would otherwise be left 0 without a word
        raise ValueError(f"{k.name}: {unknown[0]!r} is not a field of the launcher's descriptor "
                         f"(CTAPIPE_DESC_FIELDS in kernels/ctapipe.cuh: {', '.join(DESC_FIELDS)})")
    if k.inbound >= 0:
        vals["in_capacity"] = pipes[k.inbound].capacity
    if k.outbound >= 0:
        vals["out_capacity"] = pipes[k.outbound].capacity
    if k.mode == MODE_QUEUE and not (vals["in_slots"] and vals["in_head"]):
        raise ValueError(f"{k.name}: a queue kernel needs in_slots and in_head")
    if k.mode == MODE_WAIT and not all(vals[n] for n in ("in_counters", "in_threshold", "in_consumer_dep")):
        raise ValueError(f"{k.name}: a wait kernel needs in_counters, in_threshold and in_consumer_dep")
    if k.outbound >= 0 and not all(vals[n] for n in ("out_counters", "prod_dep_ptr", "prod_dep_idx", "threshold")):
        raise ValueError(f"{k.name}: a producer kernel needs its outbound pipe's counters and arrays")
    if k.outbound >= 0 and bool(vals["out_slots"]) != bool(vals["out_tail"] and vals["dep_tile_ptr"]
                                                           and vals["dep_tile_idx"]):
        raise ValueError(f"{k.name}: a producer that pushes needs out_slots, out_tail, dep_tile_ptr and "
                         "dep_tile_idx (all or, for a wait consumer, none)")
    return np.array([vals[n] for n in DESC_FIELDS], dtype=np.int64)


def parse_error(err: np.ndarray, kernel: str) -> ProtocolError | None:
    """The first error a kernel recorded (see kernels/ctapipe.cuh), or None."""
    e = np.asarray(err).astype(np.int64)
    if e[0] == 0:
        return None
    seen = (int(e[4]) & 0xFFFFFFFF) | ((int(e[5]) & 0xFFFFFFFF) << 32)
    return ProtocolError(kernel, int(e[1]), int(e[2]), int(e[3]), seen, int(e[6]), int(e[0]))


def clock_offsets(pingpongs: Mapping[int, tuple[Sequence[int], Sequence[int]]]) -> dict[int, dict]:
    """Per GPU g: ``%globaltimer`` of g minus that of GPU 0, from a ping-pong GPU 0 <-> g.

    ``pingpongs[g] = (initiator stamps on GPU 0, responder stamps on g)`` as the ping-pong probe writes them;
    GPU 0 gets offset 0. Uses the NTP-style estimate of :func:`ctahw.probes.pingpong_stats`.
    """
    from ctahw.probes import pingpong_stats

    out = {0: {"offset_ns": 0.0, "rtt_min_ns": 0.0, "offset_spread_ns": 0.0, "rounds": 0}}
    for g, (init, resp) in pingpongs.items():
        if g == 0:
            continue
        out[g] = pingpong_stats([int(v) for v in init], [int(v) for v in resp])
    return out


def parse_trace(plan: Plan, kernels: Sequence[KernelArrays], pipes: Sequence[PipeArrays],
                stamps: Mapping[int, np.ndarray], push_stamps: Mapping[int, np.ndarray],
                zero_stamps: Mapping[int, np.ndarray], offsets_ns: Mapping[int, float],
                meta: Mapping | None = None) -> Trace:
    """A measured :class:`Trace` from the kernels' stamp buffers.

    ``stamps[op]``: u64 [tiles, TILE_STAMP_WORDS] of kernel op ``op`` (GPU clock of that kernel);
    ``push_stamps[pipe]``: u64 [capacity, 2] (push time, slot) per consumer tile, on the producer GPU's clock;
    ``zero_stamps[pipe]``: u64 [deps], counter completion times on the producer GPU's clock;
    ``offsets_ns[g]``: GPU g's clock minus GPU 0's. Times are shifted onto GPU 0's clock and then made relative
    to the earliest tile start (so they read as ns since the run began). ``t_ready`` of a popped tile is the
    push time of that tile; of a static tile, its start; of a waiting tile (``MODE_WAIT``), its counter's
    completion. A wait consumer's producer counts with a reduction that returns nothing, so a counter's
    completion is taken as the last signal stamp of its producer tiles (``zero_stamps`` are not written). ``t_compute_end`` is the end of the epilogue's math
    (TMA stores issued); the mainloop end goes to ``meta['mainloop_end']`` columns as ``t_mainloop_end``.
    """
    # %globaltimer reads ~1.8e18 ns: as float64 that is a 256 ns grid. Subtract an integer origin (the earliest
    # raw tile start) before any conversion to float, so that every stamp keeps its 32 ns tick.
    base = min(int(np.asarray(stamps[k.op], dtype=np.uint64).reshape(k.tiles, TILE_STAMP_WORDS)[:, 0].min())
               for k in kernels)

    def since(raw) -> np.ndarray:
        return (np.asarray(raw, dtype=np.uint64).astype(np.int64) - base).astype(np.float64)

    by_op = {k.op: k for k in kernels}
    zero = {}  # pipe -> counter completion times, GPU 0's clock
    for p in pipes:
        if by_op[p.consumer].mode == MODE_WAIT:
            pk = by_op[p.producer]
            sig = since(np.asarray(stamps[pk.op], dtype=np.uint64).reshape(pk.tiles, TILE_STAMP_WORDS)[:, 5])
            sig = sig - float(offsets_ns.get(pk.gpu, 0.0))
            z = np.full(p.deps, -np.inf)
            np.maximum.at(z, p.prod_dep_idx.astype(np.int64), np.repeat(sig, np.diff(p.prod_dep_ptr)))
            zero[p.id] = z
        else:
            zero[p.id] = since(zero_stamps[p.id]) - float(offsets_ns.get(p.src_gpu, 0.0))
    rows = []
    for k in kernels:
        s = np.asarray(stamps[k.op], dtype=np.uint64).reshape(k.tiles, TILE_STAMP_WORDS)
        off = float(offsets_ns.get(k.gpu, 0.0))
        t = since(s[:, :6]) - off
        tile = np.arange(k.tiles)
        slot = s[:, 7].astype(np.int64)  # ~0 (static) reads as -1
        if k.mode == MODE_QUEUE:
            p = pipes[k.inbound]
            ps = np.asarray(push_stamps[p.id], dtype=np.uint64).reshape(p.capacity, 2)
            ready = since(ps[:, 0]) - float(offsets_ns.get(p.src_gpu, 0.0))
        elif k.mode == MODE_WAIT:
            p = pipes[k.inbound]
            ready = zero[p.id][p.consumer_dep.astype(np.int64)]
            slot = np.full(k.tiles, -1, dtype=np.int64)
        else:
            ready = t[:, 0]
            slot = np.full(k.tiles, -1, dtype=np.int64)
        rows.append(pd.DataFrame({
            "source": "hw", "gpu": k.gpu, "kernel": k.op, "layer": k.layer,
            "cta": (s[:, 6] & np.uint64(0xFFFFFFFF)).astype(np.int64),
            "sm": (s[:, 6] >> np.uint64(32)).astype(np.int64),
            "tile_m": tile // k.tiles_n, "tile_n": tile % k.tiles_n,
            "t_start": t[:, 0], "t_acquire": t[:, 1], "t_ready": ready, "t_compute_end": t[:, 3],
            "t_store_end": t[:, 4], "t_signal": t[:, 5], "slot": slot, "t_mainloop_end": t[:, 2],
        }))
    tiles = pd.concat(rows, ignore_index=True)
    ev = []
    for p in pipes:
        off = float(offsets_ns.get(p.src_gpu, 0.0))
        z = zero[p.id]
        for d in range(p.deps):
            ev.append((0, p.id, p.dst_gpu, d, -1, -1, z[d]))
        if by_op[p.consumer].mode == MODE_WAIT:
            continue  # nothing pushed
        ps = np.asarray(push_stamps[p.id], dtype=np.uint64).reshape(p.capacity, 2)
        pt = since(ps[:, 0]) - off
        dep_of = p.consumer_dep
        for tile in range(p.capacity):
            ev.append((1, p.id, p.dst_gpu, int(dep_of[tile]), int(ps[tile, 1]), tile, float(pt[tile])))
    origin = float(tiles["t_start"].min())
    for c in ("t_start", "t_acquire", "t_ready", "t_compute_end", "t_store_end", "t_signal", "t_mainloop_end"):
        tiles[c] = tiles[c] - origin
    events = Trace.events_frame(np.asarray(ev, dtype=np.float64).reshape(-1, len(EVENT_COLUMNS)))
    events["t_ns"] = events["t_ns"] - origin
    ops = []
    for k in kernels:
        r = tiles[tiles["kernel"] == k.op]
        ops.append((k.op, k.name, "kernel", k.gpu, k.gpu, 0.0, k.layer, float(r["t_start"].min()),
                    float(r[["t_store_end", "t_signal"]].max().max())))
    opdf = pd.DataFrame(ops, columns=list(OP_COLUMNS))
    tiles = tiles[list(TILE_COLUMNS) + ["t_mainloop_end"]]
    m = {"source": "hw", "origin_ns_gpu0": origin, "offsets_ns": {str(g): v for g, v in offsets_ns.items()}}
    m.update(meta or {})
    return Trace(tiles, events, opdf, m)


# --------------------------------------------------------------------------------------------------
# GPU side


@dataclass
class _Objects:
    arrays: dict = field(default_factory=dict)

    def ptr(self, name: str) -> int:
        a = self.arrays.get(name)
        return 0 if a is None else int(a.data.ptr)


class CtaPipeRunner:
    """A plan's kernels on their GPUs, with inputs and weights, run again and again (epochs).

    ``x`` (layer 0's input, on the first kernel's GPU) and ``weights[i]`` (layer i, on layer i's GPU) are bf16
    bit arrays (uint16 CuPy). Each producer writes its output straight into its consumer's input buffer on
    the consumer GPU; the last kernel writes ``self.out``. ``trace`` selects the kernel compiled with stamps.

    ``epilogues`` maps a layer to the epilogue op fused into its kernel (``("gelu",)``, ``("silu",)``, ``("relu",)``,
    ``("residual",)``; layers not named: the plain epilogue, launched as before through ``ctahw_ctapipe_gemm``);
    ``residual`` is the C operand of the residual layer (D = A @ W^T + C: an ``m x N`` uint16 CuPy array on that
    layer's GPU, read as it is at launch, e.g. the workload's input X). Checked before anything is allocated
    (:func:`epilogue_codes`, :func:`check_residuals`). Variant (b) (``persistent``) runs no epilogue op.
    ``libraries``: loaded builds to run instead of the shipped ones, by library name (:mod:`ctahw.stress`'s seeded-bug
    builds; their descriptor names are checked as the shipped ones' are).
    """

    def __init__(self, plan: Plan, m: int, dims: Sequence[int], x, weights: Sequence, *, trace: bool = False,
                 timeout_ns: int = 2_000_000_000, clusters: Mapping[int, str] | None = None,
                 persistent: bool | str = False, epilogues: Mapping[int, Sequence[str] | str] | None = None,
                 residual=None, libraries: Mapping[str, object] | None = None):
        from ctahw import build
        from ctahw.device import require_cupy

        self.cp = cp = require_cupy()
        self.plan, self.m, self.dims = plan, m, list(dims)
        self.kernels, self.pipes = plan_arrays(plan)
        self.clusters = {k.op: (clusters or {}).get(k.op, "1x1") for k in self.kernels}
        self.libs = {}
        self.persistent = ("smem" if persistent is True else persistent) or ""
        self.epilogue_codes = epilogue_codes(self.kernels, epilogues, self.persistent)
        check_residuals(self.kernels, self.epilogue_codes, residual, m, self.dims)
        self.residual = residual
        for k in self.kernels:
            check_cluster(k, self.pipes, self.clusters[k.op])
            if self.persistent:
                check_persistent(k, self.clusters[k.op])
            name = library_of(self.clusters[k.op], self.persistent)
            lib = (libraries or {}).get(name) or build.library(name)
            check_desc_names(lib.ctahw_ctapipe_desc_names(), DESC_FIELDS, "ctapipe")
            if not self.persistent:  # variant (a)'s libraries run the epilogue ops: their codes must be ours
                check_epilogue_names(lib.ctahw_ctapipe_epilogue_names(), library_of(self.clusters[k.op]))
            if self.persistent == "ring":  # the grid launched must fit the ring scratch after cta_tile
                sms = int(cp.cuda.runtime.getDeviceProperties(k.gpu)["multiProcessorCount"])
                check_ring_words(lib, ring_grid(k.tiles, sms, self.clusters[k.op]), k.name)
                check_ring_depth(lib, persistent_code(self.clusters[k.op], "ring"), k.mode, self.dims[k.layer],
                                 k.name)
            self.libs[k.op] = lib
        self.trace, self.timeout_ns = trace, int(timeout_ns)
        self.load_kernels()
        self.epoch = 1
        if len(self.kernels) != len(weights):
            raise ValueError(f"{len(self.kernels)} kernels but {len(weights)} weight matrices")
        self.x, self.weights = x, list(weights)
        self.obj: dict[int, _Objects] = {}
        self.pobj: dict[int, _Objects] = {}
        self.inputs: dict[int, object] = {}
        self.streams: dict[int, object] = {}
        for k in self.kernels:
            i = k.layer
            if k.tiles_m * KERNEL_TILE[0] != m or k.tiles_n * KERNEL_TILE[1] != self.dims[i + 1]:
                raise ValueError(f"{k.name}: plan tiles {k.tiles_m}x{k.tiles_n} do not cover {m}x{self.dims[i + 1]} "
                                 f"with the kernel's {KERNEL_TILE} tile")
        for p in self.pipes:
            o = _Objects()
            with cp.cuda.Device(p.dst_gpu):
                o.arrays["counters"] = cp.zeros(p.deps, dtype=cp.uint32)
                o.arrays["slots"] = cp.zeros(p.capacity, dtype=cp.uint64)
                o.arrays["tail"] = cp.zeros(1, dtype=cp.uint32)
                o.arrays["head"] = cp.zeros(1, dtype=cp.uint32)
                if self.consumer_waits(p):  # read by the waiting consumer, on its GPU
                    o.arrays["in_threshold"] = cp.asarray(p.threshold)
                    o.arrays["in_consumer_dep"] = cp.asarray(p.consumer_dep)
            with cp.cuda.Device(p.src_gpu):
                for name in ("prod_dep_ptr", "prod_dep_idx", "threshold", "dep_tile_ptr", "dep_tile_idx"):
                    o.arrays[name] = cp.asarray(getattr(p, name))
                o.arrays["push_stamps"] = cp.zeros(2 * p.capacity, dtype=cp.uint64)
                o.arrays["zero_stamps"] = cp.zeros(p.deps, dtype=cp.uint64)
            self.pobj[p.id] = o
        for k in self.kernels:
            o = _Objects()
            with cp.cuda.Device(k.gpu):
                o.arrays["order"] = cp.asarray(k.order)
                o.arrays["error"] = cp.zeros(ERROR_WORDS, dtype=cp.int32)
                o.arrays["cta_tile"] = cp.zeros(2 * k.tiles + RING_WORDS, dtype=cp.int32)
                o.arrays["stamps"] = cp.zeros(k.tiles * TILE_STAMP_WORDS, dtype=cp.uint64)
                self.streams[k.gpu] = cp.cuda.Stream()
                if k.inbound >= 0:
                    self.inputs[k.op] = cp.empty((m, self.dims[k.layer]), dtype=cp.uint16)
            self.obj[k.op] = o
        by_layer = sorted(self.kernels, key=lambda k: k.layer)
        self.inputs[by_layer[0].op] = x
        last = by_layer[-1]
        with cp.cuda.Device(last.gpu):
            self.out = cp.empty((m, self.dims[-1]), dtype=cp.uint16)
        self.outputs = {}
        for k in self.kernels:
            self.outputs[k.op] = self.inputs[self.pipes[k.outbound].consumer] if k.outbound >= 0 else self.out

    def load_kernels(self) -> None:
        """Load every kernel of variant (a) into its GPU's context before the first launch (``ctahw_ctapipe_load``):
        with CUDA's lazy loading a kernel is loaded at its first launch, which may wait for the kernels already
        running there -- a consumer launched first, spinning on its queue, would keep its producer on the same GPU
        from loading until its bounded wait ran out (the CUDA Programming Guide's lazy-loading hazard). Variant (b)'s
        library loads its kernels the same way (op 0 only)."""
        for k in self.kernels:
            code = (persistent_code(self.clusters[k.op], self.persistent) if self.persistent
                    else CLUSTERS[self.clusters[k.op]])
            rc = self.libs[k.op].ctahw_ctapipe_load(self.epilogue_codes[k.op], code, 1 if self.trace else 0, k.gpu)
            if rc != 0:
                raise RuntimeError(f"{k.name}: loading its kernel failed: "
                                   f"{self.libs[k.op].ctahw_ctapipe_status_string(rc).decode()}")

    def consumer_waits(self, p: PipeArrays) -> bool:
        return next(k for k in self.kernels if k.op == p.consumer).mode == MODE_WAIT

    def reset(self) -> None:
        """Zero every counter, queue, error buffer and per-CTA tile word, and start again at epoch 1 (after a
        failed run). ``cta_tile`` holds the ring design's entries, tagged (epoch, k): left as they were, a rerun
        at epoch 1 could take a stale entry of the failed run and wait forever in CUTLASS's pipeline."""
        for o in list(self.pobj.values()) + list(self.obj.values()):
            for name in ("counters", "slots", "tail", "head", "error", "cta_tile"):
                if name in o.arrays:
                    with self.cp.cuda.Device(o.arrays[name].data.device_id):
                        o.arrays[name].fill(0)
        self.sync()
        self.epoch = 1

    def sync(self) -> None:
        for g in self.streams:
            with self.cp.cuda.Device(g):
                self.cp.cuda.runtime.deviceSynchronize()

    def descriptor(self, k: KernelArrays, stall_row: int = -1) -> np.ndarray:
        o = self.obj[k.op]
        ptrs = {"order": o.ptr("order"), "error": o.ptr("error"), "stamps": o.ptr("stamps") if self.trace else 0,
                "cta_tile": o.ptr("cta_tile")}
        if k.inbound >= 0:
            pi = self.pobj[k.inbound]
            if k.mode == MODE_WAIT:
                ptrs.update(in_counters=pi.ptr("counters"), in_threshold=pi.ptr("in_threshold"),
                            in_consumer_dep=pi.ptr("in_consumer_dep"))
            else:
                ptrs.update(in_slots=pi.ptr("slots"), in_head=pi.ptr("head"))
        if k.outbound >= 0:
            po = self.pobj[k.outbound]
            ptrs.update(out_counters=po.ptr("counters"),
                        **{n: po.ptr(n) for n in ("prod_dep_ptr", "prod_dep_idx", "threshold")})
            if not self.consumer_waits(self.pipes[k.outbound]):  # no slots: the kernel counts without pushing
                ptrs.update(out_slots=po.ptr("slots"), out_tail=po.ptr("tail"),
                            **{n: po.ptr(n) for n in ("dep_tile_ptr", "dep_tile_idx")})
            if self.trace:
                ptrs.update(push_stamps=po.ptr("push_stamps"), zero_stamps=po.ptr("zero_stamps"))
        return descriptor(k, self.pipes, ptrs, epoch=self.epoch, timeout_ns=self.timeout_ns, stall_row=stall_row)

    def stream_of(self, k: KernelArrays, streams: Mapping[int, object]):
        """The stream kernel ``k`` is launched on: its GPU's (one kernel per GPU)."""
        return streams[k.gpu]

    def launch(self, streams: Mapping[int, object] | None = None, stall_row: int = -1) -> None:
        """Enqueue one run (this epoch) of every kernel on its GPU's stream; the epoch then advances.
        The caller orders runs: a producer must not start run e+1 before its consumer finished run e."""
        import ctypes

        streams = streams or self.streams
        self._descs = []
        for k in self.launch_order():
            desc = self.descriptor(k, stall_row=stall_row if k.outbound >= 0 else -1)
            self._descs.append(desc)
            a = self.inputs[k.op]
            w = self.weights[k.layer]
            d = self.outputs[k.op]
            kk, n = self.dims[k.layer], self.dims[k.layer + 1]
            lib = self.libs[k.op]
            code = (persistent_code(self.clusters[k.op], self.persistent) if self.persistent
                    else CLUSTERS[self.clusters[k.op]])
            op = self.epilogue_codes[k.op]
            with self.cp.cuda.Device(k.gpu):
                if op == 0:  # the plain epilogue: the launcher every variant had before the epilogue ops
                    rc = lib.ctahw_ctapipe_gemm(a.data.ptr, w.data.ptr, d.data.ptr, self.m, n, kk, 1.0,
                                                desc.ctypes.data_as(ctypes.c_void_p), len(DESC_FIELDS),
                                                1 if self.trace else 0, code, k.gpu,
                                                self.stream_of(k, streams).ptr)
                else:
                    c = self.residual.data.ptr if EPILOGUE_NAMES[op] in C_OPERAND_OPS else None
                    rc = lib.ctahw_ctapipe_gemm_epi(op, a.data.ptr, w.data.ptr, c, d.data.ptr, self.m, n, kk,
                                                    desc.ctypes.data_as(ctypes.c_void_p), len(DESC_FIELDS),
                                                    1 if self.trace else 0, code, k.gpu,
                                                    self.stream_of(k, streams).ptr)
            if rc != 0:
                raise RuntimeError(f"{k.name}: launch failed: {lib.ctahw_ctapipe_status_string(rc).decode()}")
        self.epoch += 1

    def launch_order(self) -> list[KernelArrays]:
        """The order :meth:`launch` enqueues the kernels in: consumers first (they wait, producers do not)."""
        return sorted(self.kernels, key=lambda k: -k.layer)

    def describe(self, k: KernelArrays) -> str:
        """The library's one line on kernel ``k`` as launched (cluster, stages, shared memory, epilogue op)."""
        import ctypes

        buf = ctypes.create_string_buffer(512)
        lib = self.libs[k.op]
        code = (persistent_code(self.clusters[k.op], self.persistent) if self.persistent
                else CLUSTERS[self.clusters[k.op]])
        op = self.epilogue_codes[k.op]
        rc = lib.ctahw_ctapipe_describe_epi(op, code, buf, 512) if op else lib.ctahw_ctapipe_describe(code, buf, 512)
        if rc < 0:
            raise RuntimeError(f"{k.name}: describe failed: {lib.ctahw_ctapipe_status_string(rc).decode()}")
        return buf.value.decode()

    def check_errors(self) -> None:
        """Raise the first ProtocolError any kernel recorded (call after the GPUs finished)."""
        for k in self.kernels:
            e = parse_error(self.obj[k.op].arrays["error"].get(), k.name)
            if e is not None:
                raise e

    def read_trace(self, offsets_ns: Mapping[int, float], meta: Mapping | None = None) -> Trace:
        if not self.trace:
            raise RuntimeError("the runner was built without tracing")
        stamps = {k.op: self.obj[k.op].arrays["stamps"].get() for k in self.kernels}
        push = {p.id: self.pobj[p.id].arrays["push_stamps"].get() for p in self.pipes}
        zero = {p.id: self.pobj[p.id].arrays["zero_stamps"].get() for p in self.pipes}
        return parse_trace(self.plan, self.kernels, self.pipes, stamps, push, zero, offsets_ns, meta)
