"""The sustained clock of a kernel under a GPU's power limit, from the power it draws at a known launch time.

What is modelled
    A kernel whose time is set by its clock runs ``t(f) = t_0 f_0 / f``. Above the draw between launches
    (``between_w``: idle SMs, HBM refresh, leakage at that temperature) it draws ``dynamic_w`` at the clock ``f_0`` it
    ran at when timed, and that dynamic power scales as ``(f / f_0) ** gamma``: energy per cycle times cycles per
    second, where the energy per cycle grows with the voltage the clock needs (``gamma`` is about 3 where voltage is
    proportional to clock, 1 at a fixed voltage). Run back to back, the kernel settles where its draw meets the
    limit, ``between_w + dynamic_w (f_s / f_0) ** gamma = limit_w``, so its sustained launch time over the timed one
    is ``(dynamic_w / (limit_w - between_w)) ** (1 / gamma)``, and 1 when it stays under the limit at ``f_0``.

    ``gamma`` is the chip's (its voltage-clock curve), one for every kernel: :func:`gamma_from` takes it from one
    kernel whose timed and sustained launches and draw are measured, :func:`sustained_slowdown` carries it to others.
    What a kernel draws (which operand bits toggle, how many bytes it moves) enters only through ``dynamic_w``, a
    measurement (``ctahw.power``), so a kernel on half-zero operands sustains a higher clock than the same kernel
    on dense ones without any per-kernel constant.

Left out
    Time that does not follow the clock (a wave bound by HBM stays as long at a lower clock, so a memory-heavy
    kernel slows less than the ratio says); leakage's growth with temperature over a sustained run (the ``between_w``
    of the timed launches is used); the power controller's transient (how fast it reaches the sustained clock: the
    clock curve of ``ctasim.engine`` is that); clock steps (the clock is taken as continuous); limits other than the
    board's power limit (thermal, current).
"""

from __future__ import annotations

import math

__all__ = ["gamma_from", "sustained_slowdown"]


def _check(dynamic_w: float, between_w: float, limit_w: float) -> float:
    head = limit_w - between_w
    if not (dynamic_w > 0 and math.isfinite(dynamic_w)):
        raise ValueError(f"power: dynamic draw {dynamic_w!r} W must be a positive number")
    if not head > 0:
        raise ValueError(f"power: the draw between launches ({between_w} W) is not under the limit ({limit_w} W)")
    return head


def sustained_slowdown(dynamic_w: float, between_w: float, limit_w: float, gamma: float) -> float:
    """A kernel's sustained launch time over its timed one: ``max(1, (dynamic_w / (limit_w - between_w)) ** (1 /
    gamma))``. ValueError for a non-positive draw or exponent, or a between-launch draw at or above the limit."""
    head = _check(dynamic_w, between_w, limit_w)
    if not (gamma > 0 and math.isfinite(gamma)):
        raise ValueError(f"power: gamma {gamma!r} must be a positive number")
    return max(1.0, (dynamic_w / head) ** (1.0 / gamma))


def gamma_from(dynamic_w: float, between_w: float, limit_w: float, slowdown: float) -> float:
    """The exponent that makes :func:`sustained_slowdown` give a measured ``slowdown`` (sustained over timed launch
    time) for a kernel of draw ``dynamic_w``. ValueError where none does: a slowdown of 1 or less, or a draw that
    fits under the limit (such a kernel is not slowed by the limit and says nothing of the exponent)."""
    head = _check(dynamic_w, between_w, limit_w)
    if not slowdown > 1:
        raise ValueError(f"power: a slowdown of {slowdown!r} says nothing of gamma (the kernel was not slowed)")
    if not dynamic_w > head:
        raise ValueError(f"power: a draw of {dynamic_w:.1f} W fits under the limit's {head:.1f} W above the "
                         f"between-launch draw, yet the kernel slowed by {slowdown:.4f}: not the power limit")
    return math.log(dynamic_w / head) / math.log(slowdown)
