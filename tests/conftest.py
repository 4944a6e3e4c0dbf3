"""Fixtures shared by the CPU tests."""

from __future__ import annotations

import pytest

from tests.helpers import load_bench


@pytest.fixture(scope="session")
def bench_module():
    """``bench_module("clock_kernels")``: a ``bench/`` script loaded as a module (the scripts are not a package),
    once per session (``tests.helpers.load_bench``)."""
    return load_bench
