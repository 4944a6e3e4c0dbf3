"""The CTA-pipelining protocol as programs of PTX-level operations, and its seeded-bug variants (mutants).

Producer side (a CTA of layer ``g`` that owns output tile ``(r, c)``), writing into GPU ``g+1``::

    store the tile's elements into g+1's input buffer   st.relaxed (generic) or cp.async.bulk (TMA, async proxy)
    [TMA only] cp.async.bulk.wait_group 0 ; fence.proxy.async
    fence.acq_rel.sys                                   release: the tile before the signal, across GPUs
    old = atom.add.relaxed.sys [ctr@g+1[r]], 1          monotone counter, never reset
    if old + 1 == (epoch + 1) * threshold:              this CTA completed row-block r of this epoch
        fence.acq_rel.sys                               acquire: the other producers' tiles (release sequence)
        base = atom.add.relaxed.sys [tail@g+1], k       reserve k queue slots (k ready consumer tiles)
        for each ready tile j:  st.relaxed [entry@g+1[s]], (ticket, tile) ; st.release.sys [seq@g+1[s]], ticket+1

Consumer side (a CTA of layer ``g >= 1``; each CTA runs one tile, ``slots`` of them resident at a time)::

    ticket = atom.add.relaxed.sys [head@g], 1           claim; slot s = ticket mod capacity
    spin ld.acquire.sys [seq@g[s]] until == ticket + 1  epoch-tagged publish word: no reset between launches
    tile = ld.relaxed [entry@g[s]]
    [TMA loads only] fence.proxy.async                  generic acquire -> async-proxy loads
    read every element of the tile's row-block of inputs, compute, then (middle GPUs) produce as above.

The wait consumer (``Variant.consumer = "wait"``, ctahw's kernel mode 2) has no work-queue: consumer CTA ``i``
takes tile ``i`` of a fixed order and spins ``ld.acquire.sys [ctr@g[r]] until == (epoch + 1) * threshold``; its
producers count with ``red.release.sys.add [ctr@g+1[r]], 1`` (after the same stores and proxy fence) and push
nothing.

Epochs: kernel ``(g, e)`` starts after kernel ``(g, e-1)`` (stream order) and after kernel ``(g+1, e-1)`` (an event:
the downstream GPU has read its inputs and queue slots, so they may be overwritten).  That is the only barrier;
counters, head, tail and publish words keep counting across epochs.

Threads.  Each CTA runs two threads (a warp each in the kernels): the *scheduler / signalling* thread ``S`` and
the *worker* ``W`` (TMA loads, GEMM, tile stores).  On a consumer GPU ``S`` acquires the tile and hands it to
``W`` through the CTA barrier ``bar.sync 1, 2`` (after its ``fence.proxy.async``); ``W`` reads the tile id from
shared memory (a weak location) and loads its inputs.  On the producer side ``W`` stores the tile, completes and
proxy-fences its bulk stores and meets ``S`` at ``bar.sync 2, 2``; then ``S`` signals.  With ``Setup.cluster = 2``
a consumer GPU runs clusters of two CTAs: the leader's ``S`` claims two tickets (or waits for both tiles), fences,
and the four threads meet at the cluster barrier; the partner CTA's ``W`` runs its own ``fence.proxy.async``
before its TMA loads (the leader's does not act on another CTA's async proxy).

The kernel form (``Variant.form = "kernel"``, :data:`KERNEL`) follows ctahw/kernels/ctapipe.cuh instruction for
instruction: ``fence.proxy.async`` then ``atom.acq_rel.sys.add`` on the counter; the completing update reserves
slots with ``atom.relaxed.sys.add [tail]``, then ``fence.acq_rel.sys`` and one ``st.relaxed.sys`` per slot of a
word ``(epoch, tile)``; the consumer claims with ``atom.add [head]`` (relaxed, gpu scope), polls the slot word with
``ld.acquire.sys`` until it carries its epoch, then ``fence.proxy.async``.  :mod:`ctasim.protocol.kernelops`
compares its operations, role by role, with the header.

Leaves out: the GEMM itself (a tile's value is a tag naming epoch, layer, tile and element), the last layer's
output, K-loops, queue capacity smaller than one epoch's tiles, and persistent CTAs that pop more than once.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from .grid import Chain
from .invariants import Claim, Complete, Dispatch, EntryRead, InputRead, Push, data_value
from .ops import Atom, Bar, BulkSt, BulkWait, ClusterSync, Fence, Ld, Poll, ProxyFence, St

__all__ = ["Variant", "CORRECT", "MUTANTS", "WAIT", "WAIT_MUTANTS", "KERNEL", "KERNEL_WAIT", "NEW_MUTANTS",
           "BENIGN", "NOT_BUGS_UNDER_PTX", "cta_program"]


@dataclass(frozen=True)
class Variant:
    """Knobs of the protocol; the defaults are the correct protocol, each mutant changes exactly one."""

    name: str = "correct"
    bug: str = ""
    signal_fence: str | None = "sys"
    """Scope of the ``fence.acq_rel`` between the tile store and the scoreboard atomic (None: no fence)."""
    poll_acquire: str | None = "sys"
    """Acquire scope of the consumer's poll (None: relaxed poll; ``"fence.sc.gpu"``: a relaxed poll followed by
    ``fence.sc.gpu``, i.e. ``__threadfence()``)."""
    push_offset: int = 0
    """Push when the counter reaches ``threshold + push_offset``."""
    publish_before_entry: bool = False
    """Write the publish word before the queue entry."""
    reset_counters: bool = False
    """CTA 0 of every later epoch zeroes its GPU's counters and thresholds are per epoch (no barrier)."""
    proxy_fence_after_bulk: bool = True
    """``fence.proxy.async`` after the TMA stores' wait_group, before the release fence."""
    proxy_fence_before_bulk_loads: bool = True
    """``fence.proxy.async`` after the acquire, before the consumer's TMA loads of its inputs."""
    counter_scope: str = "sys"
    """Scope of the counter atomic itself (the wait consumer's reduction after a ``fence.acq_rel.<signal_fence>``
    when it differs from ``signal_fence``)."""
    signal_waits_for_storers: bool = True
    """The signalling thread meets the storing thread at ``bar.sync 2`` before it signals."""
    worker_waits_for_handover: bool = True
    """The TMA (worker) thread meets the acquiring thread at the CTA / cluster barrier before it loads (else it
    spins on the shared tile word with weak loads)."""
    partner_proxy_fence: bool = True
    """In a cluster of two, the partner CTA's worker runs ``fence.proxy.async`` before its TMA loads."""
    form: str = "model"
    """``model``: the protocol as docs/protocol.md writes it; ``kernel``: the instruction sequence of ctapipe.cuh."""
    consumer: str = "queue"
    """``queue``: consumers pop pushed tiles; ``wait``: a fixed tile order, each CTA waits on its tile's counter
    (the producer's counter update is then ``red.release.<signal_fence>``, nothing is pushed)."""


CORRECT = Variant()

MUTANTS: dict[str, Variant] = {
    v.name: v
    for v in (
        replace(CORRECT, name="no-signal-fence", signal_fence=None,
                bug="fence removed between tile store and scoreboard signal"),
        replace(CORRECT, name="gpu-scope-fence", signal_fence="gpu",
                bug="fence.acq_rel.gpu where .sys is needed before the signal"),
        replace(CORRECT, name="relaxed-poll", poll_acquire=None,
                bug="consumer polls the publish word with a relaxed load"),
        replace(CORRECT, name="push-off-by-one", push_offset=-1,
                bug="push when the counter reaches threshold - 1"),
        replace(CORRECT, name="publish-before-entry", publish_before_entry=True,
                bug="queue publish word written before the slot's entry"),
        replace(CORRECT, name="reset-counters", reset_counters=True,
                bug="counters reset at the start of each epoch without a barrier"),
        replace(CORRECT, name="no-proxy-fence", proxy_fence_after_bulk=False,
                bug="no fence.proxy.async after the TMA (bulk) tile stores"),
        replace(CORRECT, name="no-proxy-fence-loads", proxy_fence_before_bulk_loads=False,
                bug="no fence.proxy.async between the acquire and the consumer's TMA loads"),
    )
}
"""The seeded-bug variants; the first seven are the ones issue 3 asks for."""

WAIT = replace(CORRECT, name="wait", consumer="wait")
"""The correct protocol with wait consumers (no work-queue)."""

KERNEL = replace(CORRECT, name="kernel", form="kernel")
"""The queue protocol in the kernels' instruction sequence (ctahw/kernels/ctapipe.cuh)."""

KERNEL_WAIT = replace(WAIT, name="kernel-wait", form="kernel")
"""The wait protocol in the kernels' instruction sequence."""

NEW_MUTANTS: dict[str, Variant] = {
    v.name: v
    for v in (
        replace(CORRECT, name="poll-fence-sc-gpu", poll_acquire="fence.sc.gpu",
                bug="consumer polls relaxed, then fence.sc.gpu (__threadfence) instead of an acquire.sys"),
        replace(WAIT, name="wait-gpu-scope-counter", counter_scope="gpu",
                bug="wait consumer: fence.acq_rel.sys, then the counter reduction at .gpu scope (red.relaxed.gpu)"),
        replace(CORRECT, name="signal-before-storers", signal_waits_for_storers=False,
                bug="the signalling thread releases before the storing thread has met it at bar.sync"),
        replace(CORRECT, name="tma-before-handover", worker_waits_for_handover=False,
                bug="the TMA thread reads the tile id and loads before the acquiring thread's barrier"),
        replace(CORRECT, name="cluster-partner-no-proxy-fence", partner_proxy_fence=False,
                bug="cluster of 2: the partner CTA's TMA loads with no fence.proxy.async of its own"),
        replace(KERNEL, name="kernel-poll-fence-sc-gpu", poll_acquire="fence.sc.gpu",
                bug="kernel form: slot word polled relaxed, then fence.sc.gpu"),
    )
}
"""The seeded bugs of issue 14: scopes of both operations, hand-overs inside a CTA and a cluster."""

BENIGN: dict[str, Variant] = {
    v.name: v
    for v in (
        replace(CORRECT, name="gpu-scope-counter", counter_scope="gpu",
                bug="queue protocol: counter atomics at .gpu scope (every update of a counter comes from one GPU)"),
    )
}
"""Changes that look like bugs but that PTX allows in this protocol; the property tests check they pass."""


WAIT_MUTANTS: dict[str, Variant] = {
    v.name: v
    for v in (
        replace(WAIT, name="wait-relaxed-red", signal_fence=None,
                bug="wait consumer: the producer's counter reduction is relaxed (red.relaxed, no release)"),
        replace(WAIT, name="wait-gpu-scope-red", signal_fence="gpu",
                bug="wait consumer: red.release.gpu where .sys is needed"),
        replace(WAIT, name="wait-relaxed-poll", poll_acquire=None,
                bug="wait consumer polls its counter with a relaxed load"),
        replace(WAIT, name="wait-early", push_offset=-1,
                bug="wait consumer starts when its counter reaches threshold - 1"),
        replace(WAIT, name="wait-no-proxy-fence-loads", proxy_fence_before_bulk_loads=False,
                bug="wait consumer: no fence.proxy.async between the acquire and the TMA loads"),
    )
}
"""Seeded bugs of the wait consumer; each differs from :data:`WAIT` in one knob."""




def _ids(c, blocks: int) -> list[int]:
    """Checker ids of the unit's CTAs (one per block)."""
    return [c.cid * 4 + b for b in range(blocks)]


def cta_program(c, chain: Chain, variant: Variant, store_proxy: str, load_proxy: str):
    """The threads of unit ``c`` (a :class:`~ctasim.protocol.system.Cta`): ``[(block, generator), ...]``."""
    g, e, emit = c.gpu, c.epoch, c.emit
    blocks = c.kernel.blocks
    ids = _ids(c, blocks)
    last = chain.gpus - 1
    kernel_form = variant.form == "kernel"
    tile_word = [("tile", g, c.cid, b) for b in range(blocks)]  # shared memory of block b (weak accesses)

    def handover():
        yield (Bar(1, 2) if blocks == 1 else ClusterSync())

    def acquire_fence():
        if variant.poll_acquire == "fence.sc.gpu":
            yield Fence("gpu", sc=True)

    def poll_scope():
        return variant.poll_acquire if variant.poll_acquire in ("sys", "gpu", "cta") else None

    def acquire_tiles():
        """The leader's scheduler thread: the unit's tiles, each once its inputs are complete."""
        tiles = []
        if variant.consumer == "wait":
            for b in range(blocks):
                tile = chain.tiles(g)[c.index * blocks + b]
                target = (e + 1) * chain.row_threshold(g) + variant.push_offset
                yield Poll(("ctr", g, tile[0]), target, acquire=poll_scope())
                tiles.append(tile)
        else:
            if variant.reset_counters and e > 0 and c.index == 0:
                for r in range(chain.m_tiles):
                    yield St(("ctr", g, r), 0)
            cap = chain.queue_capacity(g)
            ticket0 = yield Atom(("head", g), blocks, scope="gpu")
            for b in range(blocks):
                ticket = ticket0 + b
                emit(Claim(g, e, ids[b], ticket))
                slot = ticket % cap
                if kernel_form:
                    word = yield Poll(("slot", g, slot), e + 1, acquire=poll_scope(), match="tag")
                    entry = (ticket, word[1])
                else:
                    yield Poll(("seq", g, slot), ticket + 1, acquire=poll_scope())
                    entry = yield Ld(("entry", g, slot))
                emit(EntryRead(g, e, ids[b], ticket, entry))
                if not (isinstance(entry, tuple) and len(entry) == 2):
                    tiles.append(None)  # garbage entry: the checker has reported it
                    continue
                tiles.append(entry[1])
        yield from acquire_fence()
        if load_proxy == "async" and variant.proxy_fence_before_bulk_loads:
            yield ProxyFence()
        for b, tile in enumerate(tiles):
            if tile is not None:
                emit(Dispatch(g, e, ids[b], tile))
            acquired[b] = tile
            yield St(tile_word[b], tile, scope=None)
        return tiles

    def signal(b: int, tile):
        """The signalling thread of block ``b`` after the tile's stores: count, push what became ready."""
        nxt, r = g + 1, tile[0]
        if kernel_form:
            yield ProxyFence()
        if variant.consumer == "wait":
            if variant.counter_scope != (variant.signal_fence or variant.counter_scope):
                yield Fence(variant.signal_fence)
                yield Atom(("ctr", nxt, r), 1, returns=False, scope=variant.counter_scope)
            else:
                yield Atom(("ctr", nxt, r), 1, release=variant.signal_fence, returns=False,
                           scope=variant.counter_scope)
            return
        threshold = chain.row_threshold(nxt)
        target = threshold if variant.reset_counters else (e + 1) * threshold
        if kernel_form:
            old = yield Atom(("ctr", nxt, r), 1, release=variant.signal_fence, acquire=variant.signal_fence or "sys",
                             scope=variant.counter_scope)
        else:
            if variant.signal_fence is not None:
                yield Fence(variant.signal_fence)
            old = yield Atom(("ctr", nxt, r), 1, scope=variant.counter_scope)
        if old + 1 != target + variant.push_offset:
            return
        ready = chain.ready_tiles(nxt, r)
        cap = chain.queue_capacity(nxt)
        if kernel_form:
            base = yield Atom(("tail", nxt), len(ready))
            yield Fence("sys")
            for j, t in enumerate(ready):
                ticket = base + j
                emit(Push(nxt, e, ids[b], r, ticket, t))
                yield St(("slot", nxt, ticket % cap), (e + 1, t))
            return
        yield Fence("sys")
        base = yield Atom(("tail", nxt), len(ready))
        for j, t in enumerate(ready):
            ticket = base + j
            slot = ticket % cap
            emit(Push(nxt, e, ids[b], r, ticket, t))
            entry = St(("entry", nxt, slot), (ticket, t))
            publish = St(("seq", nxt, slot), ticket + 1, release="sys")
            for op in ((publish, entry) if variant.publish_before_entry else (entry, publish)):
                yield op

    def scheduler(b: int):
        if g == 0:
            tile = chain.tiles(0)[c.index]  # static raster order: nothing to wait for
        else:
            if b == 0:
                yield from acquire_tiles()
            yield from handover()
            if g == last:
                return
            tile = acquired.get(b)
            if tile is None:
                return
        if variant.signal_waits_for_storers:
            yield Bar(2, 2)
        yield from signal(b, tile)

    def worker(b: int):
        if g == 0:
            tile = chain.tiles(0)[c.index]
        else:
            if variant.worker_waits_for_handover:
                yield from handover()
            else:
                yield Poll(tile_word[b], None, scope=None, ne=True)
            tile = yield Ld(tile_word[b], scope=None)
            if tile is None:
                return
            if load_proxy == "async" and blocks > 1 and b > 0 and variant.partner_proxy_fence:
                yield ProxyFence()
            for src in chain.deps(g, tile):
                for k in range(chain.elems):
                    v = yield Ld(("d", g, src, k), proxy=load_proxy, scope=None)
                    emit(InputRead(g, e, ids[b], tile, src, k, v))
            emit(Complete(g, e, ids[b], tile))
            if g == last:
                return
        nxt = g + 1
        for k in range(chain.elems):
            loc, val = ("d", nxt, tile, k), data_value(e, g, tile, k)
            yield BulkSt(loc, val) if store_proxy == "async" else St(loc, val, scope=None)
        if store_proxy == "async":
            yield BulkWait()
            if variant.proxy_fence_after_bulk:
                yield ProxyFence()
        if variant.signal_waits_for_storers:
            yield Bar(2, 2)

    acquired: dict = {}  # block -> tile, as the scheduler thread knows it after the hand-over
    out = []
    for b in range(blocks):
        out.append((b, scheduler(b)))
        out.append((b, worker(b)))
    return out


NOT_BUGS_UNDER_PTX = {
    "gpu-scope-fence": "every producer of a counter runs on one GPU and the last one (the pusher) acquires with "
                       "fence.acq_rel.sys after its atomic: the .gpu release of the others synchronises with it "
                       "(both fences include both threads) and its .sys release of the publish word carries their "
                       "tiles on (causality is transitive, PTX ISA 8.9.5; litmus MP-ISA2, counter-chain-gpu-fence)",
}
"""Seeded changes of :data:`MUTANTS` that the PTX memory model allows in this protocol: kept, expected to pass."""
