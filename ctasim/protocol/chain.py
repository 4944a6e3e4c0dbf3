"""The chain kernel's protocol (ctahw/kernels/ctapipe_sm90_bf16_chain.cu): producer and consumer CTAs on one GPU.

The chain kernel runs every layer of a square chain in one persistent kernel: layer ``l`` reads ``X[l]`` (written
by layer ``l-1``) and writes ``X[l+1]``; tile ``(l, m, n)`` of layer ``l > 0`` needs the whole row-block ``m`` of
``X[l]`` (every column tile of layer ``l-1``'s row ``m``).  One counter per (layer, row-block) counts the tiles of
that row-block stored; it is monotone over epochs (epoch ``e`` = 0, 1, ... waits for ``(e + 1) * tiles_n``).
Everything is on one GPU, so the protocol uses GPU scope.  Two designs:

* **tickets** (``design="tickets"``, kernel design 0, ``ChainScheduler``).  A CTA's threads here are the four
  warps that take part (a thread stands for the warp's acting lane):

  - ``LD`` (thread 0, the mainloop load warp): in the scheduler's constructor it takes the CTA's first tile
    (``take``: ``atomicAdd`` on the ticket, then for a tile of layer > 0 ``ld.acquire.gpu`` of the counter until
    it reaches the target, then ``fence.proxy.async``), writes it to a global word and meets every thread at
    ``__syncthreads`` (the model hands the id over with the barrier).  Per tile: releases the throttle (the
    scheduler may take the next ticket), issues the TMA loads of its inputs (async proxy), hands the tile to the
    MMA warps (the mainloop pipeline's full barrier: release / acquire at CTA scope), then takes the next tile from
    the scheduler pipeline (mbarrier wait: acquire at CTA scope) and runs ``fence.proxy.async`` itself
    (``ChainScheduler::fetch_next_work``).
  - ``SCH`` (the scheduler warp's elected lane): per tile, waits for the throttle, runs ``take`` for the next
    ticket and publishes the tile in the shared-memory pipeline (the kernel: a volatile store of the data word,
    then the full barrier's arrive, a release at CTA scope; the model: one release store of the tile id).
  - ``ST`` (an epilogue thread that issues the tile's TMA stores) and ``LE`` (thread 128, the signalling thread):
    per tile, wait for the mainloop's data, ``ST`` stores the output tile (``cp.async.bulk``), ``wait_group 0``,
    ``fence.proxy.async``; both meet at ``bar.sync 13``; ``LE`` adds 1 to the row-block's counter with
    ``red.release.gpu`` (``ChainScheduler::finish``).

  Each CTA takes exactly one ticket past the end and leaves; epoch ``e`` owns the tickets ``[e * (tiles + grid),
  (e + 1) * (tiles + grid))``.  Tickets follow ``order`` (a topological order of the tiles): the walks draw a random
  one.  Fewer resident slots than CTAs are allowed (the ticket rule needs no co-residency).

* **static** (``design="static"``, kernel designs 1 and 2, ``ChainStaticScheduler``): CTA ``i`` runs ``order[i]``,
  ``order[i + grid]``, ...; no scheduler warp.  The load warp waits for a tile's inputs itself
  (``wait_inputs``): lane 0 (``P``) polls with ``ld.acquire.gpu`` until the counter equals the target, the warp
  meets at ``__syncwarp`` (``bar.warp.sync``), then every lane runs ``fence.proxy.async``; the TMA loads are issued
  by another lane of the warp (``TL``: the model does not rely on the issuing lane being lane 0).  ``ST`` / ``LE``
  as above.  Every CTA must be resident at once (the launcher sizes the grid by occupancy): the walks use as many
  slots as CTAs; ``static-not-resident`` shows that fewer deadlock.

A signal warp (``signal_by = "warp"``, a design not built in the kernel): after the storers' ``wait_group 0``, fence
and the barrier, the signalling thread hands the tile to a fifth thread (``SIG``, a warp that does no math) through a
shared-memory pipeline (release / acquire at CTA scope), and ``SIG`` adds to the counter: ``chain-tickets-signal-warp``
and its ring form pass; a relaxed hand-off, a hand-off before the storers' barrier, or ``.gpu`` scopes on a ring are
caught.

A deferred signal (``defer_signal``, a design not built in the kernel): each tile's bulk stores one committed group,
its signal at the next tile's end after ``wait_group 1``, flushed before waiting for a tile not yet published
(``chain-tickets-deferred``); the mutants never flush (deadlock) or wait with ``wait_group 2`` (a rare one, with a
recorded witness, :data:`RARE_WITNESSES`, and caught by walks with lazy bulk stores).

Placement: ``ChainVariant.gpus = 1`` is the kernel (every CTA on one GPU).  ``gpus = 2`` runs the same programs
with layer ``l`` on GPU ``l * 2 // layers`` (one kernel per GPU, its own ticket counter and order, a kernel of
epoch ``e`` on GPU ``p`` after GPU ``p + 1``'s of epoch ``e - 1``): with ``.gpu`` scopes it must fail (``*-2gpu``),
with ``.sys`` scopes it passes (``*-2gpu-sys``).  ``placement = "ring"`` puts layer ``l`` on GPU ``l mod 2``
(ctahw's ring, ``sys_scope = 1``; every kernel of epoch ``e`` after every kernel of epoch ``e - 1``):
``chain-tickets-ring`` (``.gpu``) must fail, ``chain-tickets-ring-sys`` passes.

Events for the checker (:mod:`ctasim.protocol.invariants`, wait-consumer mode): the checker's "gpu" is the layer;
the TMA-issuing thread emits ``Dispatch`` / ``InputRead`` / ``Complete`` for tiles of layer > 0; counter landings
become ``CounterUpdate`` (the last layer's counters too, which nothing reads).

Leaves out: the MMA and the tile values (a tile's value is a tag), K-loops, W (not produced in the chain), the
2x1 cluster of design 2 (its CTAs wait, fence and load their own A operand as in 1x1; the cluster only multicasts
W), the error and timeout paths (unbounded spins here: a deadlock is a state nothing can change), mbarrier
phases and stage reuse (each hand-over has its own location; the throttle keeps the scheduler at most one tile
ahead, so a two-stage pipeline never fills; the signal warp's pipeline has no such bound, and its slots' reuse is
left out too), and ``stall_row`` / ``protocol = 0``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace

from .invariants import Checker, CounterUpdate, Complete, Dispatch, InputRead, data_value
from .memory import Memory
from .ops import Atom, Bar, BulkCommit, BulkSt, BulkWait, Ld, Poll, ProxyFence, St
from .system import DrainPolicy, DrainResult, Kernel, System

__all__ = ["ChainVariant", "ChainSetup", "ChainRun", "ChainSpace", "CHAIN_CORRECT", "CHAIN_VARIANTS",
           "CHAIN_MUTANTS", "CHAIN_PASSING", "CHAIN_SPACES", "CHAIN_DEFERRED", "CHAIN_RARE_MUTANTS", "RARE_WITNESSES",
           "topological_order"]

SIGNAL_BARRIER = 13  # kSignalBarrier (ctahw/kernels/ctapipe_gemm.cuh)


@dataclass(frozen=True)
class ChainVariant:
    """Knobs of the chain kernel's protocol; the defaults are the kernel's (each mutant changes one, from the kernel or
    from the design it breaks: the signal warp's mutants from ``chain-tickets-signal-warp``)."""

    name: str = "chain-tickets"
    bug: str = ""
    design: str = "tickets"
    """``tickets`` (scheduler warp, atomic tickets) or ``static`` (CTA i runs order[i], order[i + grid], ...)."""
    counter_scope: str = "gpu"
    """Scope of the counter's ``red.release`` (``cta``: a mutant; ``sys``: the two-GPU placement that works)."""
    poll_acquire: str | None = "gpu"
    """Acquire scope of the counter poll (None: ``ld.relaxed.gpu``)."""
    take_fence: bool = True
    """tickets: ``fence.proxy.async`` in ``take`` after the poll (the thread that acquired)."""
    load_fence: bool = True
    """tickets: the load warp's ``fence.proxy.async`` after a tile reached it through the scheduler pipeline;
    static: every lane's ``fence.proxy.async`` at the end of ``wait_inputs``."""
    syncwarp: bool = True
    """static: ``__syncwarp`` between lane 0's poll and the lanes' fences (else the TMA lane goes on at once)."""
    signal_waits_for_storers: bool = True
    """The 256 epilogue threads' ``bar.sync`` between the storing threads' ``wait_group 0`` + ``fence.proxy.async``
    and the signalling thread's ``red.release`` (False: the signalling thread skips it and signals at once)."""
    gpus: int = 1
    """Placement: 1 (the kernel), or 2 (one kernel per GPU, its layers by ``placement``)."""
    placement: str = "blocked"
    """With ``gpus`` = 2: ``blocked`` (layer l on GPU l * 2 // layers) or ``ring`` (layer l on GPU l mod 2, the
    kernels' ring: every kernel of epoch e after every kernel of epoch e - 1, as ctahw.chain.ChainRunner orders
    them)."""
    resident: bool = True
    """static: every CTA resident at once (False: one slot fewer than CTAs where there are two or more)."""
    defer_signal: str = ""
    """tickets, a design not built in the kernel (docs/hardware.md, "hiding a ring tile's NVLink stores"): ``""``
    signals each tile at its end (the kernel); ``"flush"`` commits each tile's bulk stores as one group and signals it
    at the next tile's end, after ``wait_group defer_pending`` (every group but the current tile's complete), except
    when the next tile is not yet published when a tile ends -- then the tile's signal is flushed (``wait_group 0``)
    before waiting for it (never block while holding a signal; the storing thread decides and hands the decision
    to the signalling thread); ``"always"`` never flushes before waiting (a mutant: it can deadlock)."""
    defer_pending: int = 1
    """``"flush"`` / ``"always"``: the N of the deferred signal's ``cp.async.bulk.wait_group N`` (1: the tile just
    stored may stay pending; 2: a mutant that signals a tile whose stores may not have completed)."""
    signal_by: str = ""
    """tickets, a design not built in the kernel (docs/hardware.md, "hiding a ring tile's NVLink stores"): ``""``
    the signalling MMA thread adds to the counter itself (the kernel); ``"warp"`` it hands the tile, after the
    storers' ``wait_group 0`` + fence and the barrier, to a warp that does no math (``SIG``: a shared-memory pipeline,
    release / acquire at CTA scope), which adds to the counter (release at ``counter_scope``)."""
    handoff_release: str | None = "cta"
    """``signal_by = "warp"``: the release scope of the hand-off store (None: a relaxed store, a mutant)."""


CHAIN_CORRECT = ChainVariant()
CHAIN_STATIC = ChainVariant(name="chain-static", design="static")

CHAIN_MUTANTS: dict[str, ChainVariant] = {
    v.name: v
    for v in (
        # (a) the counter's scope
        replace(CHAIN_CORRECT, name="chain-tickets-cta-scope-red", counter_scope="cta",
                bug="tickets: the counter update is red.release.cta instead of .gpu"),
        replace(CHAIN_STATIC, name="chain-static-cta-scope-red", counter_scope="cta",
                bug="static: the counter update is red.release.cta instead of .gpu"),
        # (b) the poll
        replace(CHAIN_CORRECT, name="chain-tickets-relaxed-poll", poll_acquire=None,
                bug="tickets: take() polls the counter with ld.relaxed.gpu instead of ld.acquire.gpu"),
        replace(CHAIN_STATIC, name="chain-static-relaxed-poll", poll_acquire=None,
                bug="static: wait_inputs polls the counter with ld.relaxed.gpu instead of ld.acquire.gpu"),
        # (c) the proxy fences
        replace(CHAIN_CORRECT, name="chain-tickets-no-proxy-fence", take_fence=False, load_fence=False,
                bug="tickets: no fence.proxy.async at all (neither in take() nor in the load warp)"),
        replace(CHAIN_CORRECT, name="chain-tickets-no-take-fence", take_fence=False,
                bug="tickets: no fence.proxy.async in take() (the CTA's first tile has no other)"),
        replace(CHAIN_STATIC, name="chain-static-no-load-fence", load_fence=False,
                bug="static: no fence.proxy.async in the load warp after wait_inputs' poll"),
        replace(CHAIN_STATIC, name="chain-static-no-syncwarp", syncwarp=False,
                bug="static: the TMA lane fences and loads without __syncwarp after lane 0's poll"),
        # (d) signalling before the storing threads completed their stores
        replace(CHAIN_CORRECT, name="chain-tickets-signal-before-storers", signal_waits_for_storers=False,
                bug="tickets: red.release.gpu without waiting at bar.sync for the storing threads' wait_group 0"),
        replace(CHAIN_STATIC, name="chain-static-signal-before-storers", signal_waits_for_storers=False,
                bug="static: red.release.gpu without waiting at bar.sync for the storing threads' wait_group 0"),
        # (e) the same program with producer and consumer layers on two GPUs
        replace(CHAIN_CORRECT, name="chain-tickets-2gpu", gpus=2,
                bug="tickets, layers on two GPUs: .gpu scopes between producer and consumer GPUs"),
        replace(CHAIN_STATIC, name="chain-static-2gpu", gpus=2,
                bug="static, layers on two GPUs: .gpu scopes between producer and consumer GPUs"),
        replace(CHAIN_CORRECT, name="chain-tickets-ring", gpus=2, placement="ring",
                bug="tickets, layers round-robin on two GPUs (a ring): .gpu scopes between the GPUs"),
        # the static design's co-residency rule
        replace(CHAIN_STATIC, name="chain-static-not-resident", resident=False,
                bug="static: fewer resident slots than CTAs (the launcher refuses such a grid: -2004)"),
        # (f) a deferred signal (not built in the kernel): waiting for the next tile while holding a signal
        replace(CHAIN_CORRECT, name="chain-tickets-deferred-no-flush", defer_signal="always",
                bug="tickets, deferred signal: the MMA threads wait for the next tile while holding a signal"),
        # (g) a signal warp (not built in the kernel): the hand-off that orders the stores before its release
        replace(CHAIN_CORRECT, name="chain-tickets-signal-warp-relaxed-handoff", signal_by="warp",
                handoff_release=None,
                bug="tickets, signal warp: the MMA threads hand the tile over with a relaxed store (no release)"),
        replace(CHAIN_CORRECT, name="chain-tickets-signal-warp-before-storers", signal_by="warp",
                signal_waits_for_storers=False,
                bug="tickets, signal warp: the tile handed over without waiting at bar.sync for the storers"),
        replace(CHAIN_CORRECT, name="chain-tickets-ring-signal-warp", gpus=2, placement="ring", signal_by="warp",
                bug="tickets, signal warp on a ring: .gpu scopes between the GPUs"),
    )
}
"""The chain kernel's seeded bugs; each must end at a violated invariant."""

CHAIN_PASSING: dict[str, ChainVariant] = {
    v.name: v
    for v in (
        CHAIN_CORRECT,
        CHAIN_STATIC,
        replace(CHAIN_CORRECT, name="chain-tickets-2gpu-sys", gpus=2, counter_scope="sys", poll_acquire="sys",
                bug="tickets, layers on two GPUs with red.release.sys / ld.acquire.sys"),
        replace(CHAIN_STATIC, name="chain-static-2gpu-sys", gpus=2, counter_scope="sys", poll_acquire="sys",
                bug="static, layers on two GPUs with red.release.sys / ld.acquire.sys"),
        replace(CHAIN_CORRECT, name="chain-tickets-ring-sys", gpus=2, placement="ring", counter_scope="sys",
                poll_acquire="sys", bug="tickets, layers round-robin on two GPUs (the ring's kernels, ABI 3) with "
                                        "red.release.sys / ld.acquire.sys"),
        replace(CHAIN_CORRECT, name="chain-tickets-no-load-warp-fence", load_fence=False,
                bug="tickets: the load warp's own fence.proxy.async dropped (take()'s fence remains)"),
        replace(CHAIN_CORRECT, name="chain-tickets-deferred", defer_signal="flush",
                bug="tickets, a deferred signal (not built): each tile signalled at the next one's end after "
                    "wait_group 1, flushed before waiting for a tile not yet published"),
        replace(CHAIN_CORRECT, name="chain-tickets-ring-sys-deferred", gpus=2, placement="ring", counter_scope="sys",
                poll_acquire="sys", defer_signal="flush",
                bug="the ring's kernels with the deferred signal (not built)"),
        replace(CHAIN_CORRECT, name="chain-tickets-signal-warp", signal_by="warp",
                bug="tickets, a signal warp (not built): the MMA threads hand each tile to a warp that does no math, "
                    "which adds to the counter"),
        replace(CHAIN_CORRECT, name="chain-tickets-ring-sys-signal-warp", gpus=2, placement="ring",
                counter_scope="sys", poll_acquire="sys", signal_by="warp",
                bug="the ring's kernels with a signal warp (not built)"),
    )
}
"""Variants that must pass every schedule: the two designs, the two-GPU placement with ``.sys`` scopes, and the
tickets design without the load warp's second fence (redundant under the model: the scheduler thread's fence reaches
the load warp through the pipeline's CTA-scope release / acquire, M8)."""

CHAIN_DEFERRED = CHAIN_PASSING["chain-tickets-deferred"]

CHAIN_RARE_MUTANTS: dict[str, ChainVariant] = {
    v.name: v
    for v in (
        replace(CHAIN_DEFERRED, name="chain-tickets-deferred-wait2", defer_pending=2,
                bug="tickets, deferred signal: wait_group 2 leaves the signalled tile's stores pending"),
    )
}
"""Seeded bugs uniform random walks reach about once in 30,000: the deferred signal's ``wait_group 2`` breaks only
when a tile's signal was held (the next tile already published at its end) and a consumer reads before the held
tile's stores land. Walks that keep bulk stores pending (``walk.walk(lazy_bulk=...)``) catch it in a few percent of
walks; each also has a recorded witness (:data:`RARE_WITNESSES`)."""

RARE_WITNESSES: dict[str, tuple[str, int]] = {"chain-tickets-deferred-wait2": ("chain", 1174)}
"""Mutant -> (space of :data:`CHAIN_SPACES`, walk seed) of a schedule that breaks it (found by a search of seeds
0-3,000 of ``ChainSpace()``; ``walk.replay`` runs it)."""

CHAIN_VARIANTS: dict[str, ChainVariant] = CHAIN_PASSING | CHAIN_MUTANTS | CHAIN_RARE_MUTANTS


# ------------------------------------------------------------------------------------------------ setups
def topological_order(layers: int, m: int, n: int, rng: random.Random | None = None) -> tuple[int, ...]:
    """Tile ids ``l * m * n + r * n + c`` in an order where every tile follows row-block ``r`` of layer ``l - 1``
    (random among such orders with ``rng``; layer after layer, row-major without)."""
    per = m * n
    if rng is None:
        return tuple(range(layers * per))
    done = [[0] * m for _ in range(layers)]  # tiles of (layer, row) placed
    left = list(range(layers * per))
    out = []
    while left:
        ready = [g for g in left if g // per == 0 or done[g // per - 1][(g % per) // n] == n]
        g = rng.choice(ready)
        left.remove(g)
        out.append(g)
        done[g // per][(g % per) // n] += 1
    return tuple(out)


@dataclass(frozen=True)
class ChainSetup:
    """What is run: ``layers`` of ``m_tiles x n_tiles`` tiles, ``elems`` locations per tile, ``epochs`` runs, the
    ticket / static ``order``, ``grid`` CTAs and ``slots`` resident CTAs per GPU (0: as many as CTAs)."""

    layers: int
    m_tiles: int
    n_tiles: int
    elems: int = 1
    epochs: int = 1
    grid: int = 1
    slots: int = 0
    order: tuple = ()

    def __post_init__(self) -> None:
        if not self.order:
            object.__setattr__(self, "order", topological_order(self.layers, self.m_tiles, self.n_tiles))
        if self.layers < 2 or min(self.m_tiles, self.n_tiles, self.elems, self.epochs, self.grid) < 1 \
                or sorted(self.order) != list(range(self.tiles)):
            raise ValueError(f"invalid chain setup {self}")

    @property
    def tiles(self) -> int:
        return self.layers * self.m_tiles * self.n_tiles

    def describe(self) -> str:
        return (f"chain of {self.layers} layers, m_tiles={self.m_tiles}, n_tiles={self.n_tiles}, elems={self.elems}, "
                f"epochs={self.epochs}, grid={self.grid}, slots={self.slots or self.grid}, order={list(self.order)}")


@dataclass(frozen=True)
class ChainSpace:
    """Chain setups to draw from (the walks' search space)."""

    min_layers: int = 2
    max_layers: int = 3
    max_m: int = 2
    max_n: int = 2
    max_elems: int = 2
    max_epochs: int = 2
    max_grid: int = 3
    random_order: float = 0.75
    """Probability of a random topological order (else layer after layer)."""
    fewer_slots: float = 0.3
    """Probability of fewer resident slots than CTAs (used by the tickets design only)."""

    def draw(self, rng: random.Random) -> ChainSetup:
        layers = rng.randint(self.min_layers, self.max_layers)
        m, n = rng.randint(1, self.max_m), rng.randint(1, self.max_n)
        tiles = layers * m * n
        grid = rng.randint(1, min(self.max_grid, tiles))
        slots = rng.randint(1, grid - 1) if grid > 1 and rng.random() < self.fewer_slots else 0
        order = topological_order(layers, m, n, rng if rng.random() < self.random_order else None)
        return ChainSetup(layers, m, n, rng.randint(1, self.max_elems), rng.randint(1, self.max_epochs), grid,
                          slots, order)


CHAIN_SPACES = {
    "chain": ChainSpace(),
    "chain-epochs-3": ChainSpace(max_m=1, max_elems=1, max_epochs=3),
}
"""The chain kernel's search spaces (each gets an equal share of a search's schedules)."""


# ------------------------------------------------------------------------------------------------ the programs
def initial_value(loc: tuple):
    return 0 if loc[0] in ("ctr", "ticket") else None


class ChainRun:
    """One run of the chain kernel's protocol: kernels per (GPU, epoch), the system, the trace and the checker."""

    def __init__(self, setup: ChainSetup, variant: ChainVariant = CHAIN_CORRECT, *, check: bool = True,
                 record: bool = False) -> None:
        self.setup, self.variant = setup, variant
        s = setup
        self.per = s.m_tiles * s.n_tiles
        self.trace: list = []
        self.roles: dict[str, list] | None = {} if record else None
        self.checker = (Checker(s.m_tiles, (s.n_tiles,) * s.layers, s.elems, s.epochs, queue=False)
                        if check else None)
        self.mem = Memory(initial=initial_value, on_land=self._on_land)
        gpus = variant.gpus
        self.gpu_of_layer = [l % gpus if variant.placement == "ring" else l * gpus // s.layers
                             for l in range(s.layers)]
        self.orders = {p: tuple(g for g in s.order if self.gpu_of_layer[g // self.per] == p) for p in range(gpus)}
        kernels: dict[tuple[int, int], Kernel] = {}
        slots = {}
        for p in range(gpus):
            grid = min(s.grid, len(self.orders[p]))
            if variant.design == "static":
                slots[p] = grid if variant.resident else max(1, grid - 1)
            else:
                slots[p] = min(s.slots, grid) if s.slots else grid
            for e in range(s.epochs):
                kernels[p, e] = Kernel(p, e, grid, self._program, name=f"chain.gpu{p}.e{e}")
        for (p, e), k in kernels.items():
            if e > 0 and variant.placement == "ring":
                k.after.extend(kernels[q, e - 1] for q in range(gpus) if q != p)
            elif e > 0 and p + 1 < gpus:
                k.after.append(kernels[p + 1, e - 1])
        self.system = System(list(kernels.values()), slots, self.mem, emit=self.emit)

    def emit(self, event) -> None:
        self.trace.append(event)
        if self.checker is not None:
            self.checker.observe(event)

    def _on_land(self, w) -> None:
        if w.loc[0] == "ctr":
            self.emit(CounterUpdate(w.loc[1], w.loc[2], w.thread.tag.epoch, w.value, w.rmw is not None))

    def finish(self, policy: DrainPolicy = DrainPolicy(), log=None) -> DrainResult:
        from .invariants import End

        result = self.system.drain(policy, log=log)
        self.emit(End(result.finished, result.reason))
        return result

    # -------------------------------------------------------------------------------------------- roles
    def _role(self, name: str, gen):
        """Run helper ``gen`` and, when recording, note the operations it issued under ``name``."""
        if self.roles is None:
            return (yield from gen)
        seq = []
        try:
            op = next(gen)
            while True:
                seq.append(op)
                op = gen.send((yield op))
        except StopIteration as stop:
            self.roles.setdefault(name, []).append(seq)
            return stop.value

    def _program(self, c):
        v, s = self.variant, self.setup
        p, e, emit = c.gpu, c.epoch, c.emit
        order = self.orders[p]
        per, n_tiles = self.per, s.n_tiles
        span = len(order) + c.kernel.n_ctas  # tickets per epoch: every CTA takes one past the end
        cid = c.cid * 4  # the checker's id of this CTA (block 0)
        role = self._role

        def layer(g):
            return g // per

        def row(g):
            return (g % per) // n_tiles

        def counter(g):  # the counter tile g waits on: row-block row(g) of layer(g) - 1, as ctr@consumer-layer
            return ("ctr", layer(g), row(g))

        def target():
            return (e + 1) * n_tiles

        def poll(g):
            yield Poll(counter(g), target(), acquire=v.poll_acquire, scope=v.poll_acquire or "gpu")

        def take():
            """``take``: a ticket, and for a tile of layer > 0 the wait on its counter (tickets design)."""
            t = yield Atom(("ticket", p), 1, scope="gpu")
            k = t - e * span
            if not 0 <= k < len(order):
                return -1
            g = order[k]
            if layer(g) > 0:
                yield from poll(g)
                if v.take_fence:
                    yield ProxyFence()
            return g

        def loads(g):
            """The TMA loads of tile g's A operand: row-block row(g) of X[layer(g)] (async proxy, weak)."""
            l = layer(g)
            tile = (row(g), g % n_tiles)
            emit(Dispatch(l, e, cid, tile))
            for j in range(n_tiles):
                for k in range(s.elems):
                    val = yield Ld(("d", l, (tile[0], j), k), proxy="async", scope=None)
                    emit(InputRead(l, e, cid, tile, (tile[0], j), k, val))
            emit(Complete(l, e, cid, tile))

        def handover_to_mma(j, g):  # the mainloop pipeline: the MMA warps wait for the tile's data
            yield St(("mma", p, c.cid, j), g, release="cta")

        def finish_storer(g):
            l = layer(g)
            tile = (row(g), g % n_tiles)
            for k in range(s.elems):
                yield BulkSt(("d", l + 1, tile, k), data_value(e, l, tile, k))
            yield BulkWait()
            yield ProxyFence()
            if v.signal_waits_for_storers:
                yield Bar(SIGNAL_BARRIER, 2)

        def finish_leader(g):
            if v.signal_waits_for_storers:
                yield Bar(SIGNAL_BARRIER, 2)
            yield from signal(g)

        def signal(g):
            yield Atom(("ctr", layer(g) + 1, row(g)), 1, release=v.counter_scope, returns=False,
                       scope=v.counter_scope)

        def handoff(j, g):
            """signal_by = "warp": the leader, after the barrier, hands tile g (or -1: no more) to the signal warp."""
            yield St(("sig", p, c.cid, j), g, release=v.handoff_release, scope="cta")

        def signal_warp():
            """signal_by = "warp": takes each tile the MMA threads hand over and adds to its row-block's counter."""
            k = 0
            while True:
                g = yield Poll(("sig", p, c.cid, k), None, acquire="cta", scope="cta", ne=True)
                if g < 0:
                    return
                yield from role("signal", signal(g))
                k += 1

        def store_tile(g):  # a deferred design's stores of tile g: one committed bulk group
            l = layer(g)
            tile = (row(g), g % n_tiles)
            for k in range(s.elems):
                yield BulkSt(("d", l + 1, tile, k), data_value(e, l, tile, k))
            yield BulkCommit()

        def signal_held(storer: bool, g, pending: int):
            """The deferred signal of tile g: the storer's wait for its groups but the ``pending`` newest, fence,
            barrier; the signalling thread's barrier and counter update."""
            if storer:
                yield BulkWait(pending)
                yield ProxyFence()
                yield Bar(SIGNAL_BARRIER, 2)
            else:
                yield from finish_leader(g)

        def mma(storer: bool):
            if v.design == "tickets":
                yield Bar(0, 4)  # the scheduler's constructor: __syncthreads
            j = 0
            held = None  # a deferred design's tile whose signal waits
            while True:
                g = yield Poll(("mma", p, c.cid, j), None, acquire="cta", scope="cta", ne=True)
                if g < 0:
                    if held is not None:
                        yield from role("finish:deferred", signal_held(storer, held, 0))
                    if v.signal_by == "warp" and not storer:
                        yield from handoff(j, -1)
                    return
                if v.signal_by == "warp":
                    if storer:
                        yield from role("finish:storer", finish_storer(g))
                    else:
                        if v.signal_waits_for_storers:
                            yield Bar(SIGNAL_BARRIER, 2)
                        yield from role("finish:handoff", handoff(j, g))
                    j += 1
                    continue
                if not v.defer_signal:
                    if storer:
                        yield from role("finish:storer", finish_storer(g))
                    else:
                        yield from role("finish:leader", finish_leader(g))
                    j += 1
                    continue
                if storer:
                    yield from role("finish:deferred", store_tile(g))
                if held is not None:
                    yield from role("finish:deferred", signal_held(storer, held, v.defer_pending))
                held = g
                if v.defer_signal == "flush":  # the next tile not yet published: signal before waiting for it
                    if storer:
                        nxt = yield Ld(("mma", p, c.cid, j + 1), scope="cta", acquire="cta")
                        flush = nxt is None
                        yield St(("defer", p, c.cid, j), 1 if flush else 0, release="cta")
                    else:
                        flush = (yield Poll(("defer", p, c.cid, j), None, acquire="cta", scope="cta", ne=True)) == 1
                    if flush:
                        yield from role("finish:deferred", signal_held(storer, held, 0))
                        held = None
                j += 1

        if v.design == "tickets":
            def load_warp():
                g = yield from role("take", take())
                first[0] = g  # the kernel's volatile global word, read by every thread after __syncthreads
                yield Bar(0, 4)
                j = 0
                while g >= 0:
                    if j > 0:
                        yield from role("fetch_load", load_fence())
                    yield St(("throttle", p, c.cid, j), 1, release="cta")
                    if layer(g) > 0:
                        yield from loads(g)
                    yield from handover_to_mma(j, g)
                    g = yield Poll(("sched", p, c.cid, j + 1), None, acquire="cta", scope="cta", ne=True)
                    j += 1
                yield from handover_to_mma(j, -1)

            def load_fence():
                if v.load_fence:
                    yield ProxyFence()

            def scheduler():
                yield Bar(0, 4)
                g = first[0]
                j = 0
                while g >= 0:
                    yield Poll(("throttle", p, c.cid, j), 1, acquire="cta", scope="cta")
                    g = yield from role("take", take())
                    # the pipeline stage: data word and full barrier's arrive in one release (the load warp's
                    # acquire reads exactly what this release publishes)
                    yield St(("sched", p, c.cid, j + 1), g, release="cta")
                    j += 1

            first = [None]
            threads = [(0, load_warp()), (0, scheduler()), (0, mma(True)), (0, mma(False))]
            return threads + [(0, signal_warp())] if v.signal_by == "warp" else threads

        seq = [order[i] for i in range(c.index, len(order), c.kernel.n_ctas)]

        def wait_inputs(lane0: bool, g):
            """``wait_inputs``: lane 0 polls; the warp meets; every lane fences the async proxy."""
            if layer(g) == 0:
                return
            if lane0:
                yield from poll(g)
            if v.syncwarp:
                yield Bar(1, 2, warp=True)
            if v.load_fence:
                yield ProxyFence()

        def poller():
            for g in seq:
                yield from role("wait_inputs", wait_inputs(True, g))

        def tma_lane():
            for j, g in enumerate(seq):
                yield from role("wait_inputs:lane", wait_inputs(False, g))
                if layer(g) > 0:
                    yield from loads(g)
                yield from handover_to_mma(j, g)
            yield from handover_to_mma(len(seq), -1)

        return [(0, poller()), (0, tma_lane()), (0, mma(True)), (0, mma(False))]


def chain_role_ops(variant: ChainVariant, setup: ChainSetup | None = None) -> dict[str, list[list]]:
    """The operations each role helper issued when the model ran ``variant`` to the end (a small setup; the
    invariants are not checked here: the walks do that)."""
    run = ChainRun(setup or ChainSetup(2, 1, 2, 1, 1, 2), variant, check=False, record=True)
    result = run.finish()
    if not result.finished:
        raise RuntimeError(f"{variant.name}: {result.reason}")
    return run.roles
