"""What the GPU tests share: CuPy on a machine with one sm_90 GPU, or the test skipped with the reason."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def cp():
    """CuPy, where one sm_90 GPU is here; every test that asks for it skips with the reason otherwise."""
    from ctahw.device import DeviceError, require_gpus

    try:
        require_gpus(1)
    except DeviceError as e:
        pytest.skip(f"needs 1 sm_90 GPU: {e}")
    import cupy

    return cupy
