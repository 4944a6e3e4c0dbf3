"""Fixtures shared by the CPU tests."""

from __future__ import annotations

import pytest

from tests.helpers import load_bench


@pytest.fixture(scope="session")
def bench_module():
    """``bench_module("clock_kernels")``: a ``bench/`` script loaded as a module (the scripts are not a package),
    once per session (``tests.helpers.load_bench``)."""
    return load_bench


def pytest_collection_modifyitems(config, items):
    """``bench`` tests (timings: their result depends on the machine and its load) run only when ``-m`` names them,
    as pyproject.toml's marker says."""
    if "bench" in (config.getoption("markexpr") or ""):
        return
    keep = [i for i in items if i.get_closest_marker("bench") is None]
    if len(keep) != len(items):
        config.hook.pytest_deselected(items=[i for i in items if i.get_closest_marker("bench") is not None])
        items[:] = keep
