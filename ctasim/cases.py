"""Cases: the concrete (workload, GPU count) points an experiment's sweep expands into, and the loading of an
experiment with the checks that need them (every case tiles on the profile, every strategy fits its GPUs), so
that nothing runs half-way.

Left out: what a case costs to simulate (the engine's business).
"""

from __future__ import annotations

import dataclasses
import itertools
from dataclasses import dataclass

from ctasim.spec import Experiment, Workload, require, read_experiment, validate_layer
from ctasim.strategies import check_placement

__all__ = ["Case", "expand", "check_experiment", "load_experiment", "estimate_ctas", "MAX_CTAS"]

MAX_CTAS = 4_000_000
"""Default ceiling on the CTAs an experiment may simulate (``--max-ctas`` overrides it): about half a minute of
simulation and a few hundred MiB of trace at the engine's 120-190K CTAs per second."""


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


def estimate_ctas(exp: Experiment) -> int:
    """CTAs the experiment simulates, from the spec alone (before any plan is built): per case and strategy the
    tiles of every layer, once per micro-batching chunk count (each is a plan of its own)."""
    total = 0
    for case in expand(exp):
        tiles = sum(-(-l.m // l.tile_m) * -(-l.n // l.tile_n) for l in case.workload.layers)
        for s in exp.strategies:
            total += tiles * (max(1, len(s.chunks)) if s.kind in ("microbatch", "hybrid") else 1)
    return total


def check_experiment(exp: Experiment, where: str) -> Experiment:
    """``exp`` if every case tiles on its profile and every strategy fits the case's GPUs; else SpecError."""
    require(exp.hardware.device_shares < 2 or exp.shared_device, where, "experiment.hardware",
            f"{exp.hardware.name!r} is one of {exp.hardware.device_shares} shares of one device (device_shares): it "
            "describes a ring whose kernels share that device, an experiment with shared_device = true")
    for case in expand(exp):
        for i, layer in enumerate(case.workload.layers):
            validate_layer(layer, where, f"case {case.label}: workload.layer[{i}].")
            cfg = exp.hardware.config(layer.tile_m, layer.tile_n, where)
            require(layer.k % cfg.tile_k == 0, where, f"case {case.label}: workload.layer[{i}].k",
                     f"K={layer.k} is not a multiple of the kernel's tile_k={cfg.tile_k} (profile "
                     f"{exp.hardware.name!r}, {layer.tile_m}x{layer.tile_n})")
        for s in exp.strategies:
            problem = check_placement(s, case.workload, exp.hardware, case.gpus)
            require(problem is None, where, f"experiment.strategy ({s.label})", f"case {case.label}: {problem}")
            if exp.shared_device:
                _check_shared(exp, case, s, where)
    return exp


def _check_shared(exp: Experiment, case: Case, s, where: str) -> None:
    """A shared device's profile describes one share of a device split between a fixed number of kernels
    (:data:`ctasim.profiles.SHARED`): each ring must have exactly that many (ctahw splits the SMs by the ring's)."""
    from ctasim.profiles import SHARED  # noqa: PLC0415
    from ctasim.strategies.ctapipe import ring_gpus  # noqa: PLC0415

    n = SHARED.get(exp.hardware.name)
    require(n is not None, where, "experiment.hardware",
            f"a shared device needs a profile of one share ({', '.join(SHARED)}), not {exp.hardware.name!r}")
    require(ring_gpus(s, case.workload) == n, where, f"experiment.strategy ({s.label})",
            f"case {case.label}: a ring of {ring_gpus(s, case.workload)} kernels, but {exp.hardware.name!r} is one "
            f"share of a device split between {n}")


def load_experiment(ref) -> Experiment:
    """The experiment of a name (specs/experiments/) or TOML path, every field and every case checked."""
    exp, where = read_experiment(ref)
    return check_experiment(exp, where)
