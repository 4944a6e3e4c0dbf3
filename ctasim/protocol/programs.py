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

Leaves out: the GEMM itself (a tile's value is a tag naming epoch, layer, tile and element), the last layer's
output, K-loops, queue capacity smaller than one epoch's tiles, and persistent CTAs that pop more than once.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from .grid import Chain
from .invariants import Claim, Complete, Dispatch, EntryRead, InputRead, Push, data_value
from .ops import Atom, BulkSt, BulkWait, Fence, Ld, Poll, ProxyFence, St

__all__ = ["Variant", "CORRECT", "MUTANTS", "WAIT", "WAIT_MUTANTS", "cta_program"]


@dataclass(frozen=True)
class Variant:
    """Knobs of the protocol; the defaults are the correct protocol, each mutant changes exactly one."""

    name: str = "correct"
    bug: str = ""
    signal_fence: str | None = "sys"
    """Scope of the ``fence.acq_rel`` between the tile store and the scoreboard atomic (None: no fence)."""
    poll_acquire: str | None = "sys"
    """Acquire scope of the consumer's poll of the publish word (None: relaxed poll)."""
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


def cta_program(c, chain: Chain, variant: Variant, store_proxy: str, load_proxy: str):
    """The generator CTA ``c`` (a :class:`~ctasim.protocol.system.Cta`) runs; events go to ``c.emit``."""
    g, e, emit = c.gpu, c.epoch, c.emit
    last = chain.gpus - 1
    if g == 0:
        tile = chain.tiles(0)[c.index]  # static raster order: nothing to wait for
    else:
        if variant.consumer == "wait":
            tile = chain.tiles(g)[c.index]  # fixed order; wait until the tile's counter is complete
            target = (e + 1) * chain.row_threshold(g) + variant.push_offset
            yield Poll(("ctr", g, tile[0]), target, acquire=variant.poll_acquire)
        else:
            if variant.reset_counters and e > 0 and c.index == 0:
                for r in range(chain.m_tiles):
                    yield St(("ctr", g, r), 0)
            cap = chain.queue_capacity(g)
            ticket = yield Atom(("head", g), 1)
            emit(Claim(g, e, c.cid, ticket))
            slot = ticket % cap
            yield Poll(("seq", g, slot), ticket + 1, acquire=variant.poll_acquire)
            entry = yield Ld(("entry", g, slot))
            emit(EntryRead(g, e, c.cid, ticket, entry))
            if not (isinstance(entry, tuple) and len(entry) == 2):
                return  # garbage entry: the checker has reported it; nothing sensible to run
            tile = entry[1]
        emit(Dispatch(g, e, c.cid, tile))
        if load_proxy == "async" and variant.proxy_fence_before_bulk_loads:
            yield ProxyFence()
        for src in chain.deps(g, tile):
            for k in range(chain.elems):
                v = yield Ld(("d", g, src, k), proxy=load_proxy)
                emit(InputRead(g, e, c.cid, tile, src, k, v))
        emit(Complete(g, e, c.cid, tile))
        if g == last:
            return
    # produce: write the tile into the next GPU, signal its scoreboard, push what became ready
    nxt, r = g + 1, tile[0]
    for k in range(chain.elems):
        loc, val = ("d", nxt, tile, k), data_value(e, g, tile, k)
        yield BulkSt(loc, val) if store_proxy == "async" else St(loc, val)
    if store_proxy == "async":
        yield BulkWait()
        if variant.proxy_fence_after_bulk:
            yield ProxyFence()
    if variant.consumer == "wait":  # red.release.<scope>.add: count, nothing comes back, nothing to push
        yield Atom(("ctr", nxt, r), 1, release=variant.signal_fence, returns=False)
        return
    if variant.signal_fence is not None:
        yield Fence(variant.signal_fence)
    threshold = chain.row_threshold(nxt)
    target = threshold if variant.reset_counters else (e + 1) * threshold
    old = yield Atom(("ctr", nxt, r), 1)
    if old + 1 != target + variant.push_offset:
        return
    yield Fence("sys")
    ready = chain.ready_tiles(nxt, r)
    base = yield Atom(("tail", nxt), len(ready))
    cap = chain.queue_capacity(nxt)
    for j, t in enumerate(ready):
        ticket = base + j
        slot = ticket % cap
        emit(Push(nxt, e, c.cid, r, ticket, t))
        entry = St(("entry", nxt, slot), (ticket, t))
        publish = St(("seq", nxt, slot), ticket + 1, release="sys")
        for op in ((publish, entry) if variant.publish_before_entry else (entry, publish)):
            yield op
