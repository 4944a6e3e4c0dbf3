"""The instructions a protocol program may execute, named after their PTX spellings.

A program is a Python generator: it ``yield``s one of these operations and receives the operation's result
(the value loaded, the old value of an atomic, ``None`` otherwise).  The memory semantics of each operation are
in :mod:`ctasim.protocol.memory`; which thread may execute which operation when is in
:mod:`ctasim.protocol.system`.

Leaves out: vector widths, predicates, address spaces other than global memory, ``ld.volatile``, mbarriers and
``st.async``.  ``weak`` and ``relaxed`` accesses are the same operation here.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["St", "BulkSt", "BulkWait", "ProxyFence", "Fence", "Ld", "Poll", "Atom", "Op", "fmt_loc"]


def fmt_loc(loc: tuple) -> str:
    """``('ctr', 1, 0)`` -> ``ctr@gpu1[0]``."""
    rest = ",".join(str(x) for x in loc[2:])
    return f"{loc[0]}@gpu{loc[1]}[{rest}]"


@dataclass(frozen=True, slots=True)
class St:
    """``st.relaxed.sys [loc], value`` or, with ``release``, ``st.release.<scope>``."""

    loc: tuple
    value: object
    release: str | None = None

    def ptx(self) -> str:
        sem = f"release.{self.release}" if self.release else "relaxed.sys"
        return f"st.{sem} [{fmt_loc(self.loc)}], {self.value!r}"


@dataclass(frozen=True, slots=True)
class BulkSt:
    """``cp.async.bulk.global.shared::cta`` (a TMA store) of one element: an async-proxy write."""

    loc: tuple
    value: object

    def ptx(self) -> str:
        return f"cp.async.bulk [{fmt_loc(self.loc)}], {self.value!r}"


@dataclass(frozen=True, slots=True)
class BulkWait:
    """``cp.async.bulk.wait_group 0``: wait until this thread's bulk stores are complete."""

    def ptx(self) -> str:
        return "cp.async.bulk.wait_group 0"


@dataclass(frozen=True, slots=True)
class ProxyFence:
    """``fence.proxy.async``: order async-proxy accesses with generic-proxy ones of this thread."""

    def ptx(self) -> str:
        return "fence.proxy.async"


@dataclass(frozen=True, slots=True)
class Fence:
    """``fence.acq_rel.<scope>`` or, with ``sc``, ``fence.sc.<scope>`` (``__threadfence_system`` is sc.sys)."""

    scope: str
    sc: bool = False

    def ptx(self) -> str:
        return f"fence.{'sc' if self.sc else 'acq_rel'}.{self.scope}"


@dataclass(frozen=True, slots=True)
class Ld:
    """``ld.relaxed.sys`` or ``ld.acquire.<scope>``; ``proxy='async'`` is a bulk (TMA) load."""

    loc: tuple
    acquire: str | None = None
    proxy: str = "generic"

    def ptx(self) -> str:
        if self.proxy == "async":
            return f"cp.async.bulk.shared::cta.global <- [{fmt_loc(self.loc)}]"
        sem = f"acquire.{self.acquire}" if self.acquire else "relaxed.sys"
        return f"ld.{sem} [{fmt_loc(self.loc)}]"


@dataclass(frozen=True, slots=True)
class Poll:
    """A spin loop ``do v = ld.<sem> [loc]; while (v != expect)``; one step is one iteration."""

    loc: tuple
    expect: object
    acquire: str | None = None

    def ptx(self) -> str:
        sem = f"acquire.{self.acquire}" if self.acquire else "relaxed.sys"
        return f"spin ld.{sem} [{fmt_loc(self.loc)}] until == {self.expect!r}"


@dataclass(frozen=True, slots=True)
class Atom:
    """``atom.add.<sem>.<scope>`` (returns the old value; the thread waits for it) or, with ``returns=False``,
    ``red.add`` (fire and forget).  ``release`` / ``acquire`` give the scopes of its two halves (None: relaxed)."""

    loc: tuple
    add: int
    release: str | None = None
    acquire: str | None = None
    returns: bool = True

    def ptx(self) -> str:
        if self.release and self.acquire:
            sem = f"acq_rel.{self.release}"
        elif self.release:
            sem = f"release.{self.release}"
        elif self.acquire:
            sem = f"acquire.{self.acquire}"
        else:
            sem = "relaxed.sys"
        return f"{'atom' if self.returns else 'red'}.add.{sem} [{fmt_loc(self.loc)}], {self.add}"


Op = St | BulkSt | BulkWait | ProxyFence | Fence | Ld | Poll | Atom
