"""Cases: the concrete (workload, GPU count) points an experiment's sweep expands into."""

from __future__ import annotations

import dataclasses
import itertools
from dataclasses import dataclass

from ctasim.spec import Experiment, Workload

__all__ = ["Case", "expand"]


@dataclass(frozen=True)
class Case:
    label: str
    workload: Workload
    gpus: int
    axes: tuple[tuple[str, int], ...] = ()


def _apply(wl: Workload, axis: str, value: int) -> Workload:
    if axis == "m":
        return dataclasses.replace(wl, layers=tuple(dataclasses.replace(l, m=value) for l in wl.layers))
    if axis == "layers":
        return dataclasses.replace(wl, layers=(wl.layers[0],) * value)
    raise ValueError(f"unknown sweep axis {axis!r}")


def expand(exp: Experiment) -> list[Case]:
    """Cross product of the sweep axes, in the order given; one case if there is no sweep."""
    axes = [a for a, _ in exp.sweep]
    cases = []
    for values in itertools.product(*[v for _, v in exp.sweep]):
        wl = exp.workload
        gpus = exp.gpus or exp.hardware.gpus
        for axis, value in zip(axes, values):
            wl = _apply(wl, axis, value)
            if axis == "layers" and not exp.gpus:
                gpus = value
        label = ",".join(f"{a}={v}" for a, v in zip(axes, values)) or exp.workload.name
        cases.append(Case(label, wl, gpus, tuple(zip(axes, values))))
    return cases
