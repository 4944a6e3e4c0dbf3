"""Plans: what runs where, in which order, waiting on what.

A :class:`Plan` is the executable description shared by the simulator and the hardware runner: a list of
operations (GEMM kernels, copy-engine transfers, collectives, memory-bound row-wise kernels), each with
the operations it waits for and the launch delay that follows each wait, plus :class:`Pipe` objects that
connect a producer kernel to a consumer kernel on another GPU through a scoreboard and a work-queue.

Dependency arrays are numpy arrays in CSR form, so that ``ctahw`` can upload exactly the arrays the
simulator used:

* ``prod_dep_ptr / prod_dep_idx``: producer tile -> scoreboard counters (dependency ids) it decrements;
* ``threshold[dep]``: how many producer tiles a counter waits for;
* ``dep_tile_ptr / dep_tile_idx``: counter -> consumer tiles that become ready when it reaches zero,
  in the order they are pushed into the work-queue;
* ``consumer_dep[tile]``: the counter a consumer tile waits on.

Tiles are numbered row-major inside a kernel: ``tile = row_block * tiles_n + col``.

Left out: anything about time (that is the engine's job) and any GPU object.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ctasim.spec import Layer

__all__ = ["Op", "Region", "Kernel", "Transfer", "Collective", "MemoryPass", "Pipe", "Plan", "raster_order", "row_block_pipe", "push_order",
           "ORDERS", "pair_rows_order", "grouped_rows_order", "named_order", "with_order", "chain_order", "chain_group_used",
           "CHAIN_ROW_GROUP"]


@dataclass
class Op:
    """Base of every operation: an id (index into ``Plan.ops``), a name, and what it waits for.

    ``deps`` holds ``(op_id, delay_ns)`` pairs: the op may start ``delay_ns`` after ``op_id`` finished;
    it starts at the latest of these times, or at ``start_ns`` if it has no deps.
    """

    id: int
    name: str
    deps: tuple[tuple[int, float], ...] = ()
    start_ns: float = 0.0


@dataclass(frozen=True)
class Region:
    """The part of a layer's data an operation works on: rows ``row0 .. row0 + m`` of the layer's M, output columns
    ``n0 .. n0 + n`` of its N (GEMM columns, before a gated epilogue halves them), and, for a GEMM, the slice
    ``k0 .. k0 + k`` of its K that it sums over (a tensor-parallel row slice: a partial sum).

    The engine never reads it; it says what an executor on GPUs computes, moves or reduces (``ctahw.executor``)."""

    row0: int
    m: int
    n0: int
    n: int
    k0: int = 0
    k: int = 0

    @classmethod
    def of(cls, layer: Layer, row0: int = 0, n0: int = 0, k0: int = 0) -> "Region":
        """The region of ``layer`` (a chunk or slice of a workload layer, :func:`ctasim.strategies.common.split_layer`)
        placed at ``row0`` / ``n0`` / ``k0`` of the whole layer."""
        return cls(row0, layer.m, n0, layer.n, k0, layer.k)


@dataclass
class Kernel(Op):
    """A grid of GEMM tiles on one GPU.

    ``order`` is the static tile order (producer raster order, or the order a ``static`` consumer waits
    in).  ``tile_times``, where set, gives each entry of ``order`` its own time instead of ``tile_ns`` (a plain GEMM
    timed by the memory hierarchy: each tile its wave's time); a ``queue`` kernel's are per queue slot, in claim
    order (the tile popped n-th takes ``tile_times[n]``).  ``fixed_ns`` is the per-launch fixed time (``KernelConfig.kernel_fixed_ns``): CTAs start that
    long after the kernel begins.  ``source`` says how a CTA obtains its next tile: ``"static"`` (from ``order``, no waiting),
    ``"queue"`` (pop a ready tile id from the inbound work-queue), ``"wait"`` (take the next tile of
    ``order`` and wait until its scoreboard counter is complete) or ``"chain"`` (the chain kernel: the tiles of
    ``chain_layers`` equal-shaped layers ``layer, layer + chain_stride, ...``, ids ``j * tiles_m * tiles_n +
    row_block * tiles_n + col`` for its j-th layer, taken by persistent CTAs in ``order`` (a topological order,
    :func:`chain_order`) by tickets; a tile of layer l > 0 waits until row-block ``row_block`` of layer l - 1 is
    complete, a counter of the run that every chain kernel of the plan shares: with ``chain_stride`` G > 1 the
    kernels of a ring placement, layer l on GPU l mod G, their outputs stored into the next GPU's memory).
    """

    gpu: int = 0
    layer: int = 0
    tiles_m: int = 0
    tiles_n: int = 0
    row_offset: int = 0
    tile_ns: float = 0.0
    fixed_ns: float = 0.0
    slots: int = 1
    slots_per_sm: int = 1
    persistent: bool = True
    cta_launch_ns: float = 0.0
    wave_slowdown: float = 0.0  # KernelConfig.wave_slowdown: tile time x (1 + s * min(1, wave / waves))
    wave_slowdown_waves: float = 1.0
    signal_ns: float = 0.0  # KernelConfig.signal_ns: store arrival to counter update (0: fence + atomic)
    signal_hold_ns: float = 0.0  # a producer CTA keeps its slot this long after its store arrived
    tile_cv: float = 0.0  # KernelConfig.tile_cv: relative spread of a tile's time within a wave
    kernel: str = ""  # the kernel variant (KernelConfig.kernel) whose figures these are
    order: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    tile_times: np.ndarray = field(default_factory=lambda: np.zeros(0))  # per entry of order / queue slot (else tile_ns)
    # a chain kernel on one share of a device (Hardware.device_shares): per count a of computing shares (a - 1), each
    # entry's time over its tile_times time (1 at a = the share count); the engine multiplies its duration by it
    tile_scale_by_active: tuple = ()
    schedule: str = ""  # the CUTLASS tile order the memory hierarchy picked (ctasim.costs.tuned_gemm), or ''
    source: str = "static"
    inbound: int = -1  # Pipe id this kernel consumes from, or -1
    outbound: int = -1  # Pipe id this kernel produces into, or -1
    chain_layers: int = 1  # source "chain": layers layer, layer + chain_stride, ... (chain_layers of them)
    chain_stride: int = 1  # source "chain": the layers' step (the GPUs of a ring placement; 1: one GPU)
    chain_signal_ns: float = 0.0  # source "chain": Hardware.local_signal_ns
    chain_static: bool = False  # source "chain": CTA w runs order[w], order[w + slots], ... (else tickets)
    # source "chain", per local layer: its output goes to another GPU's kernel (remote store, then signal there)
    chain_remote: tuple = ()
    chain_store_ns: float = 0.0  # remote store: compute end to arrival (per-SM store rate, link latency)
    chain_remote_signal_ns: float = 0.0  # arrival to the remote counter's update
    chain_remote_hold_ns: float = 0.0  # the CTA keeps its slot this long after the store arrived
    region: Region | None = None  # what of layer ``layer`` this kernel computes (one layer's worth for "chain")

    @property
    def tiles(self) -> int:
        return self.tiles_m * self.tiles_n * self.chain_layers


@dataclass
class Transfer(Op):
    """A copy-engine transfer of ``nbytes`` from GPU ``src`` to GPU ``dst`` (no SMs used)."""

    src: int = 0
    dst: int = 0
    nbytes: float = 0.0
    layer: int = -1  # whose output it carries (the rows of ``region``, every stored column), -1: not said
    region: Region | None = None


@dataclass
class Collective(Op):
    """A collective (``kind`` = allreduce or allgather) of ``nbytes`` per GPU over ``gpus``, taking ``ns``."""

    kind: str = "allreduce"
    gpus: tuple[int, ...] = ()
    nbytes: float = 0.0
    ns: float = 0.0
    layer: int = -1  # whose output it reduces or gathers, -1: not said


@dataclass
class MemoryPass(Op):
    """A memory-bound kernel on one GPU, taking ``ns``: a layer's row-wise op (``what = "rowwise"``: LayerNorm,
    RMSNorm) or its epilogue ops in a kernel of their own (``what = "epilogue"``), over ``region`` of the layer."""

    gpu: int = 0
    ns: float = 0.0
    layer: int = -1
    what: str = ""  # "rowwise" or "epilogue" ('' : not said)
    region: Region | None = None


@dataclass
class Pipe:
    """The CTA-pipelining link from ``producer`` (kernel id, on ``src_gpu``) to ``consumer`` (on ``dst_gpu``).

    Scoreboard counters and the work-queue live in the consumer GPU's memory.  Each producer tile,
    after its remote store is complete and fenced, decrements every counter in its ``prod_dep`` row;
    the update that brings a counter to zero pushes that counter's consumer tiles into the queue.
    ``store_bytes`` is what one producer tile writes across the link; ``ready_delay_ns`` is work done
    between a counter reaching zero and the push (a row-wise op over the completed row-block).
    """

    id: int
    producer: int
    consumer: int
    src_gpu: int
    dst_gpu: int
    store_bytes: float
    prod_dep_ptr: np.ndarray
    prod_dep_idx: np.ndarray
    threshold: np.ndarray
    dep_tile_ptr: np.ndarray
    dep_tile_idx: np.ndarray
    consumer_dep: np.ndarray
    ready_delay_ns: float = 0.0

    @property
    def deps(self) -> int:
        return len(self.threshold)

    @property
    def capacity(self) -> int:
        """Work-queue slots per epoch: every consumer tile is pushed exactly once."""
        return len(self.consumer_dep)


@dataclass
class Plan:
    """Everything one strategy runs for one case."""

    strategy: str
    case: str
    gpus: int
    ops: list[Op] = field(default_factory=list)
    pipes: list[Pipe] = field(default_factory=list)
    params: dict = field(default_factory=dict)

    def add(self, op_cls, **kw) -> Op:
        op = op_cls(id=len(self.ops), **kw)
        self.ops.append(op)
        return op

    def kernels(self) -> list[Kernel]:
        return [op for op in self.ops if isinstance(op, Kernel)]

    @property
    def total_tiles(self) -> int:
        return sum(k.tiles for k in self.kernels())


def raster_order(tiles_m: int, tiles_n: int, raster: str) -> np.ndarray:
    """Tile ids (row-major numbering) in the order a producer walks them.

    ``row``: a row-block's tiles one after another (row-blocks complete early);
    ``column``: down the M dimension first (CUTLASS's raster along M; a row-block completes only near the end).
    """
    ids = np.arange(tiles_m * tiles_n, dtype=np.int64).reshape(tiles_m, tiles_n)
    if raster == "row":
        return ids.ravel()
    if raster == "column":
        return ids.T.ravel()
    raise ValueError(f"unknown raster order {raster!r}")


def row_block_pipe(
    pipe_id: int,
    producer: "Kernel",
    consumer: "Kernel",
    prod_layer: Layer,
    cons_layer: Layer,
    store_bytes: float,
    ready_delay_ns: float = 0.0,
    counter_rows: int = 0,
) -> Pipe:
    """The dependency arrays of a GEMM chain: a consumer tile needs every producer tile of its rows.

    One counter covers ``counter_rows`` rows of the consumer (0: one consumer row-block, ``tm_c`` rows), i.e.
    ``g = counter_rows / tm_c`` consumer row-blocks; it waits for every producer tile (any column) whose
    rows overlap that range.  A counter's consumer tiles are pushed column by column, the ``g`` row-blocks'
    tiles of one column together: ``(r0, 0), (r1, 0), (r0, 1), (r1, 1), ...`` (with ``g = 1``: column
    order).  Works for different producer and consumer tile heights.
    """
    tm_p, tm_c = prod_layer.tile_m, cons_layer.tile_m
    pm, pn = producer.tiles_m, producer.tiles_n
    cm, cn = consumer.tiles_m, consumer.tiles_n
    if pm * tm_p != cm * tm_c:
        raise ValueError(f"producer rows {pm * tm_p} != consumer rows {cm * tm_c}")
    g = 1 if counter_rows == 0 else counter_rows // tm_c
    if counter_rows and (counter_rows % tm_c or cm % g):
        raise ValueError(f"counter_rows={counter_rows} must be a multiple of the consumer's tile_m={tm_c} "
                         f"that divides its {cm * tm_c} rows")
    if g > 1:
        tm_c = tm_c * g
        cm = cm // g
    # Row-block ranges a producer row-block overlaps.
    first = (np.arange(pm) * tm_p) // tm_c
    last = ((np.arange(pm) + 1) * tm_p - 1) // tm_c
    counts_per_prow = last - first + 1
    # CSR producer tile -> deps (every column of a producer row-block shares its row's deps).
    per_tile = np.repeat(counts_per_prow, pn)
    ptr = np.zeros(pm * pn + 1, dtype=np.int64)
    np.cumsum(per_tile, out=ptr[1:])
    idx = np.concatenate([np.tile(np.arange(first[r], last[r] + 1, dtype=np.int64), pn) for r in range(pm)])
    threshold = np.bincount(idx, minlength=cm).astype(np.int64)
    dep_tile_ptr = np.arange(cm + 1, dtype=np.int64) * (cn * g)
    # Counter d's tiles: consumer row-blocks d*g .. d*g+g-1, column by column.
    ids = np.arange(cm * g * cn, dtype=np.int64).reshape(cm, g, cn)
    dep_tile_idx = ids.transpose(0, 2, 1).ravel()
    consumer_dep = np.repeat(np.arange(cm, dtype=np.int64), g * cn)
    return Pipe(
        id=pipe_id,
        producer=producer.id,
        consumer=consumer.id,
        src_gpu=producer.gpu,
        dst_gpu=consumer.gpu,
        store_bytes=store_bytes,
        prod_dep_ptr=ptr,
        prod_dep_idx=idx,
        threshold=threshold,
        dep_tile_ptr=dep_tile_ptr,
        dep_tile_idx=dep_tile_idx,
        consumer_dep=consumer_dep,
        ready_delay_ns=ready_delay_ns,
    )


# ------------------------------------------------------------------------------------------------ tile orders
def push_order(pipe: Pipe, producer_order: np.ndarray) -> np.ndarray:
    """The consumer tiles of ``pipe`` in the order its work-queue receives them when the producer's tiles complete in
    ``producer_order``: counters by the position of their last producer tile (ties: counter order), each counter's
    tiles in its push order (``dep_tile_idx``). What a queue consumer pops, n-th tile n-th, while the producer keeps
    its order (stores that overtake one another are left out)."""
    producer_order = np.asarray(producer_order, dtype=np.int64)
    n = len(pipe.prod_dep_ptr) - 1
    if sorted(producer_order.tolist()) != list(range(n)):
        raise ValueError(f"producer_order must hold each of the pipe's {n} producer tiles once")
    pos = np.empty(n, dtype=np.int64)
    pos[producer_order] = np.arange(n)
    tile_of = np.repeat(np.arange(n), np.diff(pipe.prod_dep_ptr))
    last = np.full(pipe.deps, -1, dtype=np.int64)
    np.maximum.at(last, pipe.prod_dep_idx, pos[tile_of])
    deps = np.argsort(last, kind="stable")
    ptr = pipe.dep_tile_ptr
    return np.concatenate([pipe.dep_tile_idx[ptr[d]:ptr[d + 1]] for d in deps]).astype(np.int64)


def pair_rows_order(tiles_m: int, tiles_n: int) -> np.ndarray:
    """Producer order for 2x1 clusters: row-blocks in pairs, a pair's two tiles of one column together
    ((0,0),(1,0),(0,1),(1,1),...,(2,0),(3,0),...): two row-blocks complete at once, as early as in row order
    for a grid wider than 2 x tiles_n CTAs."""
    if tiles_m % 2:
        raise ValueError("pair_rows_order needs an even number of row-blocks")
    ids = np.arange(tiles_m * tiles_n, dtype=np.int64).reshape(tiles_m // 2, 2, tiles_n)
    return ids.transpose(0, 2, 1).ravel()


def grouped_rows_order(tiles_m: int, tiles_n: int, group: int, tail_rows: int = 0, tail_group: int = 2,
                       head_rows: int = 0) -> np.ndarray:
    """Tile order over groups of ``group`` row-blocks (even): a group's tiles column by column, the group's
    row-blocks of one column together ((0,0),(1,0),...,(g-1,0),(0,1),...). ``group`` = 2 is
    :func:`pair_rows_order`. Consecutive pairs share a column (2x1 clusters); a wave then reads ~tiles/group
    columns of the weights instead of all of them (L2 reuse), and a group's row-blocks complete together, later
    than in row order. The first ``head_rows`` and the last ``tail_rows`` row-blocks go in groups of
    ``tail_group`` instead (a taper: the consumer starts as early as with pairs, and its work left after the
    producer's last tile is one small group, not one large one)."""
    body = tiles_m - head_rows - tail_rows
    for g, rows in ((tail_group, head_rows), (group, body), (tail_group, tail_rows)):
        if rows < 0 or rows and (g < 2 or g % 2 or rows % g):
            raise ValueError(f"grouped_rows_order needs an even group dividing the {tiles_m} row-blocks "
                             f"(head {head_rows} + {body} + tail {tail_rows}), got {group} / {tail_group}")
    ids = np.arange(tiles_m * tiles_n, dtype=np.int64).reshape(tiles_m, tiles_n)
    parts = []
    for g, lo, hi in ((tail_group, 0, head_rows), (group, head_rows, head_rows + body),
                      (tail_group, head_rows + body, tiles_m)):
        if hi > lo:
            parts.append(ids[lo:hi].reshape((hi - lo) // g, g, tiles_n).transpose(0, 2, 1).ravel())
    return np.concatenate(parts)


ORDERS = {"pair_rows": (2, 0, 0), "group4": (4, 0, 0), "group8": (8, 0, 0), "group8_taper": (8, 0, 8),
          "group8_taper2": (8, 8, 8)}
"""Orders a variant may ask for by name: (row-block group, first row-blocks in pairs, last row-blocks in pairs)
(:func:`grouped_rows_order`); head and tail shrink to fit grids with few row-blocks (at most a quarter each)."""


def named_order(name: str, tiles_m: int, tiles_n: int) -> np.ndarray:
    """The order :data:`ORDERS` calls ``name`` for a ``tiles_m`` x ``tiles_n`` grid."""
    group, head, tail = ORDERS[name]
    fit = (tiles_m // 4) // group * group
    head, tail = min(head, fit), min(tail, fit)
    return grouped_rows_order(tiles_m, tiles_n, group, tail, head_rows=head)


CHAIN_ROW_GROUP = 8
"""Row-blocks per group in the chain kernel's order within a layer (:func:`chain_order`): CUTLASS's swizzle 8, the
best tile order of the plain GEMM on 24 of 27 shapes (bench/results/hw/2026-12-01-gemm-shapes)."""


def chain_group_used(tiles_m: int, group: int = CHAIN_ROW_GROUP) -> int:
    """The row-block group :func:`chain_order` uses for ``group``: the largest even count <= ``group`` that divides
    ``tiles_m``; 0 for row order (none does, or ``group`` < 2)."""
    return next((g for g in range(min(group, tiles_m), 1, -1) if g % 2 == 0 and tiles_m % g == 0), 0)


def chain_order(layers: int, tiles_m: int, tiles_n: int, group: int = CHAIN_ROW_GROUP) -> np.ndarray:
    """The chain kernel's ticket order: layer after layer (a topological order: a tile of layer l needs only
    tiles of layer l - 1); within a layer, groups of ``group`` row-blocks column by column
    (:func:`grouped_rows_order`; the largest even group <= ``group`` dividing ``tiles_m``, else row order).
    Tile ids ``l * tiles_m * tiles_n + row_block * tiles_n + col``."""
    g = chain_group_used(tiles_m, group)
    one = grouped_rows_order(tiles_m, tiles_n, g) if g else np.arange(tiles_m * tiles_n, dtype=np.int64)
    per = tiles_m * tiles_n
    return np.concatenate([one + l * per for l in range(layers)]).astype(np.int64)


def with_order(plan: Plan, op: int, order: np.ndarray) -> Plan:
    """A copy of ``plan`` whose kernel ``op`` walks ``order`` (a permutation of its tiles); everything else
    shared. The simulator, the runner and the checker then all see the same plan."""
    import copy

    new = copy.copy(plan)
    new.ops = list(plan.ops)
    k = copy.copy(plan.ops[op])
    order = np.asarray(order, dtype=np.int64)
    if sorted(order.tolist()) != list(range(k.tiles)):
        raise ValueError(f"order for {k.name!r} is not a permutation of its {k.tiles} tiles")
    k.order = order
    new.ops[op] = k
    new.params = dict(plan.params, **{f"order_op{op}": "custom"})
    return new
