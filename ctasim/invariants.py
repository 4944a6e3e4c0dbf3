"""Protocol invariants checked on any trace (simulated or measured) against the plan it ran.

Each check has a name and returns a list of violations; :func:`check_trace` raises
:class:`InvariantError` listing all of them.  The checks read only the trace tables and the plan's
arrays, never the engine, so a measured trace is checked exactly as a simulated one.

* ``all_done``       every tile of every kernel has finite times; every operation finished.
* ``exactly_once``   every tile of every kernel appears exactly once (no loss, no duplicate dispatch).
* ``time_order``     per tile: start <= acquire, ready <= acquire <= compute end <= store end <= signal.
* ``slot_capacity``  no SM runs more CTAs of a kernel at once than it has CTA slots.
* ``deps_visible``   no consumer tile starts before every producer tile it depends on was stored and
                     signalled (a dependency counter's inputs all visible); in the chain kernel, no tile of
                     layer l > 0 starts before its row-block of layer l - 1 was complete.
* ``counters``       each scoreboard counter receives exactly its threshold of signals, completes exactly
                     once, and completes at its last signal.
* ``queue``          work-queue slots 0..capacity-1 are published exactly once each, after their counter
                     completed (slots of different producers may become visible out of index order); each
                     is popped exactly once, after it was published, by the tile it names.

Times are compared with a tolerance of ``TOL_NS`` (measured traces are quantized to the timer tick).

These are the schedule-level checks over whole tiles. The memory-level half (which value each load may
return, fences and scopes, epochs) is :mod:`ctasim.protocol.invariants`, checked event by event on the
weak-memory model's runs; simulated and measured traces carry no per-element events for it to read.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ctasim.plan import Kernel, Plan
from ctasim.trace import TIME_COLUMNS, Trace

__all__ = ["Violation", "InvariantError", "find_violations", "check_trace", "CHECKS", "TOL_NS"]

TOL_NS = 1e-6
"""Tolerance on time comparisons for simulated traces; measured traces pass their tick as ``tol_ns``."""


@dataclass(frozen=True)
class Violation:
    check: str
    message: str

    def __str__(self) -> str:
        return f"[{self.check}] {self.message}"


class InvariantError(AssertionError):
    """A trace broke one or more protocol invariants."""

    def __init__(self, violations: list[Violation]):
        self.violations = violations
        lines = "\n  ".join(str(v) for v in violations[:20])
        more = f"\n  ... and {len(violations) - 20} more" if len(violations) > 20 else ""
        super().__init__(f"{len(violations)} invariant violation(s):\n  {lines}{more}")


def _tile_ids(rows: pd.DataFrame, k: Kernel) -> np.ndarray:
    ids = (rows["tile_m"].to_numpy() - k.row_offset) * k.tiles_n + rows["tile_n"].to_numpy()
    if k.chain_layers > 1:  # the chain kernel's tiles of every layer: layer-major ids (Kernel.source "chain")
        j, off = np.divmod(rows["layer"].to_numpy().astype(np.int64) - k.layer, k.chain_stride)
        ids = ids + np.where(off == 0, j, -1) * (k.tiles_m * k.tiles_n)  # a layer not of this kernel: outside
    return ids


def _in_grid(rows: pd.DataFrame, k: Kernel) -> np.ndarray:
    """Which rows name a tile of kernel ``k``'s grid (``exactly_once`` reports the others)."""
    ids = _tile_ids(rows, k)
    col = rows["tile_n"].to_numpy()
    return (ids >= 0) & (ids < k.tiles) & (col >= 0) & (col < k.tiles_n)


def _grid_rows(groups: dict[int, pd.DataFrame], k: Kernel) -> pd.DataFrame | None:
    """Kernel ``k``'s rows whose tile is in its grid: the checks that index per-tile arrays by tile id read only
    these, so a tile outside the grid is reported once (by ``exactly_once``), never raised."""
    rows = groups.get(k.id)
    return None if rows is None else rows[_in_grid(rows, k)]


def _by_kernel(trace: Trace) -> dict[int, pd.DataFrame]:
    return {int(k): g for k, g in trace.tiles.groupby("kernel", sort=False)}


def check_all_done(trace: Trace, plan: Plan, tol: float) -> list[Violation]:
    out = []
    t = trace.tiles
    bad = ~np.isfinite(t[list(TIME_COLUMNS)].to_numpy()).all(axis=1)
    if bad.any():
        out.append(Violation("all_done", f"{int(bad.sum())} tile(s) with unfinished times"))
    counts = t.groupby("kernel").size()
    for k in plan.kernels():
        n = int(counts.get(k.id, 0))
        if n < k.tiles:
            out.append(Violation("all_done", f"kernel {k.name!r}: {n} of {k.tiles} tiles ran"))
    ops_end = trace.ops.set_index("op")["t_end"] if len(trace.ops) else pd.Series(dtype=float)
    for op in plan.ops:
        if op.id in ops_end.index and not np.isfinite(ops_end[op.id]):
            out.append(Violation("all_done", f"operation {op.name!r} never finished"))
    return out


def check_exactly_once(trace: Trace, plan: Plan, tol: float) -> list[Violation]:
    out = []
    groups = _by_kernel(trace)
    for k in plan.kernels():
        rows = groups.get(k.id)
        if rows is None:
            continue
        ids = _tile_ids(rows, k)
        valid = _in_grid(rows, k)
        if not valid.all():
            out.append(Violation("exactly_once", f"kernel {k.name!r}: {int((~valid).sum())} tile(s) outside its grid"))
        counts = np.bincount(ids[valid], minlength=k.tiles)
        dup = np.flatnonzero(counts > 1)
        if len(dup):
            out.append(Violation("exactly_once", f"kernel {k.name!r}: tile(s) {dup[:5].tolist()} dispatched "
                                                 f"{counts[dup[:5]].tolist()} times"))
        missing = np.flatnonzero(counts == 0)
        if len(missing) and len(rows) >= k.tiles:
            out.append(Violation("exactly_once", f"kernel {k.name!r}: tile(s) {missing[:5].tolist()} never ran"))
    return out


def check_time_order(trace: Trace, plan: Plan, tol: float) -> list[Violation]:
    t = trace.tiles
    pairs = [("t_start", "t_acquire"), ("t_ready", "t_acquire"), ("t_acquire", "t_compute_end"),
             ("t_compute_end", "t_store_end"), ("t_store_end", "t_signal")]
    out = []
    for a, b in pairs:
        bad = (t[a] > t[b] + tol).to_numpy()
        if bad.any():
            r = t[bad].iloc[0]
            out.append(Violation("time_order", f"{int(bad.sum())} tile(s) with {a} > {b}, e.g. GPU {r.gpu} tile "
                                               f"({r.tile_m},{r.tile_n}): {r[a]:.1f} > {r[b]:.1f}"))
    return out


def check_slot_capacity(trace: Trace, plan: Plan, tol: float) -> list[Violation]:
    out = []
    groups = _by_kernel(trace)
    for k in plan.kernels():
        rows = groups.get(k.id)
        if rows is None or not len(rows):
            continue
        sm = rows["sm"].to_numpy()
        starts, ends = rows["t_acquire"].to_numpy(), rows["t_compute_end"].to_numpy() - tol
        times = np.concatenate([starts, ends])
        delta = np.concatenate([np.ones_like(starts), -np.ones_like(ends)])
        sms = np.concatenate([sm, sm])
        order = np.lexsort((delta, times, sms))  # by SM, then time, ends before starts at equal times
        sms_o, delta_o = sms[order], delta[order]
        # Running count of CTAs per SM: a global cumulative sum minus its value where each SM's run begins.
        cs = np.cumsum(delta_o)
        first = np.r_[True, sms_o[1:] != sms_o[:-1]]
        seg_start = np.maximum.accumulate(np.where(first, np.arange(len(cs)), 0))
        running = cs - (cs[seg_start] - delta_o[seg_start])
        worst = int(running.max())
        if worst > k.slots_per_sm:
            at = sms_o[int(np.argmax(running))]
            out.append(Violation("slot_capacity", f"kernel {k.name!r}: SM {at} ran {worst} CTAs at once "
                                                  f"(has {k.slots_per_sm} slot(s))"))
    return out


def _signal_max_per_dep(pipe, prod_rows: pd.DataFrame, k: Kernel):
    """Per dependency: latest producer signal, and the number of producer tiles that signalled it."""
    ids = _tile_ids(prod_rows, k)
    sig = prod_rows["t_signal"].to_numpy()
    counts = np.diff(pipe.prod_dep_ptr)[ids]
    deps = np.concatenate([pipe.prod_dep_idx[pipe.prod_dep_ptr[i]:pipe.prod_dep_ptr[i + 1]] for i in ids]) \
        if len(ids) else np.zeros(0, dtype=np.int64)
    sig_rep = np.repeat(sig, counts)
    latest = np.full(pipe.deps, -np.inf)
    with np.errstate(invalid="ignore"):  # an unfinished tile (NaN) is reported by all_done
        np.maximum.at(latest, deps, sig_rep)
    n = np.bincount(deps, minlength=pipe.deps)
    return latest, n


def check_deps_visible(trace: Trace, plan: Plan, tol: float) -> list[Violation]:
    out = []
    groups = _by_kernel(trace)
    for pipe in plan.pipes:
        prod, cons = plan.ops[pipe.producer], plan.ops[pipe.consumer]
        prows, crows = _grid_rows(groups, prod), _grid_rows(groups, cons)
        if prows is None or crows is None:
            continue
        latest, _ = _signal_max_per_dep(pipe, prows, prod)
        cids = _tile_ids(crows, cons)
        need = latest[pipe.consumer_dep[cids]]
        early = crows["t_acquire"].to_numpy() + tol < need
        if early.any():
            i = int(np.flatnonzero(early)[0])
            r = crows.iloc[i]
            out.append(Violation("deps_visible", f"pipe {pipe.id}: {int(early.sum())} consumer tile(s) started before "
                                                 f"their inputs were visible, e.g. tile ({r.tile_m},{r.tile_n}) at "
                                                 f"{r.t_acquire:.1f} ns, inputs complete at {need[i]:.1f} ns"))
    return out + check_chain_deps(trace, plan, tol)


def check_chain_deps(trace: Trace, plan: Plan, tol: float) -> list[Violation]:
    """The chain kernels (``Kernel.source = "chain"``; one, or one per GPU of a ring placement): a tile of layer
    l > 0, row-block r, starts only after every tile of row-block r of layer l - 1 signalled, whichever chain kernel
    ran it."""
    out = []
    groups = _by_kernel(trace)
    chains = [(k, rows) for k in plan.kernels() if k.source == "chain"
              for rows in [_grid_rows(groups, k)] if rows is not None and len(rows)]
    if not chains:
        return out
    tiles_m = chains[0][0].tiles_m
    # each layer's column tiles (a ring of one layer per GPU: its own), what its row-block's count must reach
    width_of = {k.layer + j * k.chain_stride: k.tiles_n for k, _ in chains for j in range(k.chain_layers)}
    width = np.zeros(max(width_of) + 2, dtype=np.int64)
    width[list(width_of)] = list(width_of.values())
    all_rows = pd.concat([rows for _, rows in chains])
    layer = all_rows["layer"].to_numpy().astype(np.int64)
    row = all_rows["tile_m"].to_numpy().astype(np.int64) - chains[0][0].row_offset
    own = layer * tiles_m + row
    size = int(own.max()) + 1
    latest = np.full(size, -np.inf)
    with np.errstate(invalid="ignore"):
        np.maximum.at(latest, own, all_rows["t_signal"].to_numpy())
    n = np.bincount(own, minlength=size)
    # the layers the chain kernels run: a tile waits on the layer before only where one of them runs it
    ran = {k.layer + j * k.chain_stride for k, _ in chains for j in range(k.chain_layers)}
    for k, rows in chains:
        layer = rows["layer"].to_numpy().astype(np.int64)
        own = layer * tiles_m + rows["tile_m"].to_numpy().astype(np.int64) - k.row_offset
        before = np.maximum(own - tiles_m, 0)
        waits = np.isin(layer - 1, list(ran))
        need = np.where(waits, latest[before], -np.inf)
        want = width[np.clip(layer - 1, 0, len(width) - 1)]
        short = np.where(waits, n[before] < want, False)
        early = (rows["t_acquire"].to_numpy() + tol < need) | short
        if early.any():
            i = int(np.flatnonzero(early)[0])
            r = rows.iloc[i]
            out.append(Violation("deps_visible", f"kernel {k.name!r}: {int(early.sum())} tile(s) started before "
                                                 f"their row-block of the layer before was complete, e.g. layer "
                                                 f"{int(r.layer)} tile ({r.tile_m},{r.tile_n}) at {r.t_acquire:.1f} "
                                                 f"ns, inputs complete at {need[i]:.1f} ns"))
    return out


def check_counters(trace: Trace, plan: Plan, tol: float) -> list[Violation]:
    out = []
    groups = _by_kernel(trace)
    ev = trace.events
    for pipe in plan.pipes:
        prod = plan.ops[pipe.producer]
        prows = _grid_rows(groups, prod)
        if prows is None:
            continue
        latest, n = _signal_max_per_dep(pipe, prows, prod)
        over = np.flatnonzero(n > pipe.threshold)
        if len(over):
            out.append(Violation("counters", f"pipe {pipe.id}: counter(s) {over[:5].tolist()} signalled "
                                             f"{n[over[:5]].tolist()} times, threshold {pipe.threshold[over[:5]].tolist()} "
                                             "(counter went negative)"))
        zeros = ev[(ev["kind"] == "zero") & (ev["pipe"] == pipe.id)]
        zc = np.bincount(zeros["dep"].to_numpy(), minlength=pipe.deps)
        if (zc != 1).any():
            bad = np.flatnonzero(zc != 1)
            out.append(Violation("counters", f"pipe {pipe.id}: counter(s) {bad[:5].tolist()} completed "
                                             f"{zc[bad[:5]].tolist()} times (must be exactly once)"))
        if len(zeros):
            deps = zeros["dep"].to_numpy()
            wrong = np.abs(zeros["t_ns"].to_numpy() - latest[deps]) > tol
            if wrong.any():
                d = int(deps[np.flatnonzero(wrong)[0]])
                out.append(Violation("counters", f"pipe {pipe.id}: counter {d} completed at a time other than its "
                                                 f"last signal ({latest[d]:.1f} ns)"))
    return out


def check_queue(trace: Trace, plan: Plan, tol: float) -> list[Violation]:
    out = []
    groups = _by_kernel(trace)
    ev = trace.events
    for pipe in plan.pipes:
        cons = plan.ops[pipe.consumer]
        if cons.source != "queue":
            continue
        pushes = ev[(ev["kind"] == "push") & (ev["pipe"] == pipe.id)].sort_values("slot", kind="stable")
        slots = pushes["slot"].to_numpy()
        if len(slots) != pipe.capacity or not np.array_equal(slots, np.arange(pipe.capacity)):
            out.append(Violation("queue", f"pipe {pipe.id}: published slots are not exactly 0..{pipe.capacity - 1} "
                                          f"once each ({len(slots)} pushes, max slot {slots.max() if len(slots) else -1})"))
            continue
        # Slots may become visible out of index order: two producers that complete counters at once reserve
        # slot ranges in one order and finish publishing in either (measured on 2xH200: up to ~1 us).
        # Each consumer waits on its own slot, so only publication-before-pop matters (checked below).
        vis = pushes["t_ns"].to_numpy()
        zeros = ev[(ev["kind"] == "zero") & (ev["pipe"] == pipe.id)].groupby("dep")["t_ns"].min()
        ztime = zeros.reindex(pushes["dep"].to_numpy()).to_numpy()
        early = vis + tol < ztime
        if early.any():
            out.append(Violation("queue", f"pipe {pipe.id}: {int(early.sum())} slot(s) published before their counter "
                                          f"completed, e.g. slot {int(slots[np.flatnonzero(early)[0]])}"))
        pushed_tiles = pushes["tile"].to_numpy()
        if len(np.unique(pushed_tiles)) != len(pushed_tiles):
            out.append(Violation("queue", f"pipe {pipe.id}: a tile id was pushed twice"))
        crows = _grid_rows(groups, cons)
        if crows is None:
            continue
        cslot = crows["slot"].to_numpy()
        if (cslot < 0).any() or (cslot >= pipe.capacity).any():
            out.append(Violation("queue", f"pipe {pipe.id}: consumer tile(s) with a slot outside 0..{pipe.capacity - 1}"))
            continue
        if len(np.unique(cslot)) != len(cslot):
            out.append(Violation("queue", f"pipe {pipe.id}: a queue slot was popped by more than one CTA"))
        cids = _tile_ids(crows, cons)
        if not np.array_equal(pushed_tiles[cslot], cids):
            out.append(Violation("queue", f"pipe {pipe.id}: a consumer CTA ran a tile other than the one its slot named"))
        early = crows["t_acquire"].to_numpy() + tol < vis[cslot]
        if early.any():
            out.append(Violation("queue", f"pipe {pipe.id}: {int(early.sum())} pop(s) before the slot was published"))
    return out


CHECKS = {
    "all_done": check_all_done,
    "exactly_once": check_exactly_once,
    "time_order": check_time_order,
    "slot_capacity": check_slot_capacity,
    "deps_visible": check_deps_visible,
    "counters": check_counters,
    "queue": check_queue,
}


def find_violations(trace: Trace, plan: Plan, tol_ns: float = TOL_NS) -> list[Violation]:
    out: list[Violation] = []
    for check in CHECKS.values():
        out.extend(check(trace, plan, tol_ns))
    return out


def check_trace(trace: Trace, plan: Plan, tol_ns: float = TOL_NS) -> None:
    """Raise :class:`InvariantError` if the trace breaks any invariant."""
    violations = find_violations(trace, plan, tol_ns)
    if violations:
        raise InvariantError(violations)
