"""Fixtures shared by the CPU tests."""

from __future__ import annotations

import pytest

from tests.helpers import load_bench


@pytest.fixture(scope="session")
def bench_module():
    """``bench_module("clock_kernels")``: a ``bench/`` script loaded as a module (the scripts are not a package),
    once per session (``tests.helpers.load_bench``)."""
    return load_bench


OPT_IN = ("bench", "long")
"""Markers whose tests run only when ``-m`` names them: ``bench`` (timings: their result depends on the machine and
its load) and ``long`` (the protocol's deeper searches, minutes), as pyproject.toml's markers say."""


def pytest_collection_modifyitems(config, items):
    """Deselect the tests of each :data:`OPT_IN` marker that ``-m`` does not name."""
    expr = config.getoption("markexpr") or ""
    for marker in OPT_IN:
        if marker in expr:
            continue
        drop = [i for i in items if i.get_closest_marker(marker) is not None]
        if drop:
            config.hook.pytest_deselected(items=drop)
            items[:] = [i for i in items if i.get_closest_marker(marker) is None]
