"""The instructions a protocol program may execute, named after their PTX spellings.

A program is a Python generator: it ``yield``s one of these operations and receives the operation's result
(the value loaded, the old value of an atomic, ``None`` otherwise).  The memory semantics of each operation are
in :mod:`ctasim.protocol.memory`; which thread may execute which operation when is in
:mod:`ctasim.protocol.system`.

Every access has a ``scope`` (``cta``, ``cluster``, ``gpu``, ``sys``: a strong access) or ``scope=None`` (a weak
access: ``ld`` / ``st`` without qualifier, ``ld.weak``).  Shared memory is a location like any other whose only
accessors are the threads of one CTA (the model needs no separate state space for it).

Leaves out: vector widths, predicates, ``ld.volatile`` / ``.mmio`` (relaxed.sys here), ``st.async``, mbarrier
phases (``bar.sync`` and the cluster barrier stand for the CTA- and cluster-scope hand-overs), and the source side
of bulk copies.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["St", "BulkSt", "BulkWait", "ProxyFence", "Fence", "Ld", "Poll", "Atom", "Bar", "ClusterSync", "Op",
           "fmt_loc", "sem"]


def fmt_loc(loc: tuple) -> str:
    """``('ctr', 1, 0)`` -> ``ctr@gpu1[0]``."""
    rest = ",".join(str(x) for x in loc[2:])
    return f"{loc[0]}@gpu{loc[1]}[{rest}]"


def sem(scope: str | None, release: str | None = None, acquire: str | None = None) -> str:
    """The PTX semantics-and-scope qualifiers: ``weak``, ``relaxed.gpu``, ``release.sys``, ``acq_rel.sys``..."""
    if release and acquire:
        return f"acq_rel.{release}"
    if release:
        return f"release.{release}"
    if acquire:
        return f"acquire.{acquire}"
    return "weak" if scope is None else f"relaxed.{scope}"


@dataclass(frozen=True, slots=True)
class St:
    """``st.weak`` (``scope=None``), ``st.relaxed.<scope>`` or, with ``release``, ``st.release.<release>``."""

    loc: tuple
    value: object
    release: str | None = None
    scope: str | None = "sys"

    @property
    def op_scope(self) -> str | None:
        return self.release or self.scope

    def ptx(self) -> str:
        return f"st.{sem(self.scope, self.release)} [{fmt_loc(self.loc)}], {self.value!r}"


@dataclass(frozen=True, slots=True)
class BulkSt:
    """``cp.async.bulk.global.shared::cta`` (a TMA store) of one element: an async-proxy (weak) write."""

    loc: tuple
    value: object

    def ptx(self) -> str:
        return f"cp.async.bulk [{fmt_loc(self.loc)}], {self.value!r}"


@dataclass(frozen=True, slots=True)
class BulkCommit:
    """``cp.async.bulk.commit_group``: close this thread's open bulk async-group (the bulk stores issued since the last
    commit)."""

    def ptx(self) -> str:
        return "cp.async.bulk.commit_group"


@dataclass(frozen=True, slots=True)
class BulkWait:
    """``cp.async.bulk.wait_group N``: wait until at most ``pending`` of this thread's most recent committed bulk
    async-groups are incomplete. ``pending = 0`` waits for every bulk store of the thread, committed or not (the
    programs that never commit use only this form)."""

    pending: int = 0

    def ptx(self) -> str:
        return f"cp.async.bulk.wait_group {self.pending}"


@dataclass(frozen=True, slots=True)
class ProxyFence:
    """``fence.proxy.async``: order async-proxy accesses with generic-proxy ones (within the thread's CTA)."""

    def ptx(self) -> str:
        return "fence.proxy.async"


@dataclass(frozen=True, slots=True)
class Fence:
    """``fence.acq_rel.<scope>`` or, with ``sc``, ``fence.sc.<scope>`` (``__threadfence`` is ``fence.sc.gpu``,
    ``__threadfence_system`` ``fence.sc.sys``)."""

    scope: str
    sc: bool = False

    def ptx(self) -> str:
        return f"fence.{'sc' if self.sc else 'acq_rel'}.{self.scope}"


@dataclass(frozen=True, slots=True)
class Ld:
    """``ld.weak`` (``scope=None``), ``ld.relaxed.<scope>`` or ``ld.acquire.<acquire>``; ``proxy='async'`` is a
    bulk (TMA) load.  ``dep=False``: no later operation depends on the value (the load may be deferred past later
    operations: load buffering)."""

    loc: tuple
    acquire: str | None = None
    proxy: str = "generic"
    scope: str | None = "sys"
    dep: bool = True

    @property
    def op_scope(self) -> str | None:
        return self.acquire or self.scope

    def ptx(self) -> str:
        if self.proxy == "async":
            return f"cp.async.bulk.shared::cta.global <- [{fmt_loc(self.loc)}]"
        return f"ld.{sem(self.scope, acquire=self.acquire)} [{fmt_loc(self.loc)}]"


@dataclass(frozen=True, slots=True)
class Poll:
    """A spin loop ``do v = ld.<sem> [loc]; while (v != expect)`` (``ne``: ``while (v == expect)``); one step is
    one iteration."""

    loc: tuple
    expect: object
    acquire: str | None = None
    scope: str | None = "sys"
    ne: bool = False
    match: str = "eq"  # "tag": done when the value is a tuple whose first item is ``expect``

    @property
    def op_scope(self) -> str | None:
        return self.acquire or self.scope

    def done(self, v) -> bool:
        if self.match == "tag":
            return isinstance(v, tuple) and v[0] == self.expect
        return (v != self.expect) if self.ne else (v == self.expect)

    def ptx(self) -> str:
        return f"spin ld.{sem(self.scope, acquire=self.acquire)} [{fmt_loc(self.loc)}] until " \
               f"{'!=' if self.ne else '=='} {self.expect!r}"


@dataclass(frozen=True, slots=True)
class Atom:
    """``atom.add.<sem>.<scope>`` (returns the old value; the thread waits for it) or, with ``returns=False``,
    ``red.add``.  ``release`` / ``acquire`` give the scopes of its two halves (None: relaxed at ``scope``)."""

    loc: tuple
    add: int
    release: str | None = None
    acquire: str | None = None
    returns: bool = True
    scope: str = "sys"

    @property
    def op_scope(self) -> str:
        return self.release or self.acquire or self.scope

    def ptx(self) -> str:
        return f"{'atom' if self.returns else 'red'}.add.{sem(self.scope, self.release, self.acquire)} " \
               f"[{fmt_loc(self.loc)}], {self.add}"


@dataclass(frozen=True, slots=True)
class Bar:
    """``bar.sync id, count``: the CTA's ``count`` threads meet; arrival releases, completion acquires (CTA scope).
    ``warp=True``: ``bar.warp.sync`` (``__syncwarp``), the same meeting among ``count`` lanes of one warp (the PTX ISA
    gives it memory ordering among the participating threads)."""

    bid: int
    count: int
    warp: bool = False

    def ptx(self) -> str:
        return "bar.warp.sync" if self.warp else f"bar.sync {self.bid}, {self.count}"


@dataclass(frozen=True, slots=True)
class ClusterSync:
    """``barrier.cluster.arrive`` (release) + ``barrier.cluster.wait`` (acquire): every thread of the cluster."""

    def ptx(self) -> str:
        return "barrier.cluster.arrive.release; barrier.cluster.wait.acquire"


Op = St | BulkSt | BulkWait | ProxyFence | Fence | Ld | Poll | Atom | Bar | ClusterSync
