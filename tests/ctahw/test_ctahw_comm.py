"""ctahw.comm on the CPU: the all-reduce helper's lifetime and its CuPy -> ctypes fallback, with fake bindings."""

from __future__ import annotations

import types

import pytest

from ctahw import comm


class FakeComm:
    def __init__(self, dev, log):
        self.dev, self.log = dev, log

    def destroy(self):
        self.log.append(("destroy", self.dev))

    def allReduce(self, *args):
        self.log.append(("allReduce", self.dev))


class FakeCupyNcclError(RuntimeError):
    """Stands for cupy_backends.cuda.libs.nccl.NcclError."""


def fake_cupy_nccl(monkeypatch, init_all):
    """Install a fake ``cupy.cuda.nccl`` (and ``cupy.cuda``, ``cupy``) whose ``initAll`` is ``init_all``."""
    nccl = types.ModuleType("cupy.cuda.nccl")
    nccl.available = True
    nccl.NcclError = FakeCupyNcclError
    nccl.NcclCommunicator = types.SimpleNamespace(initAll=init_all)
    nccl.groupStart = lambda: None
    nccl.groupEnd = lambda: None
    cuda = types.ModuleType("cupy.cuda")
    cuda.nccl = nccl
    cupy = types.ModuleType("cupy")
    cupy.cuda = cuda
    for name, mod in (("cupy", cupy), ("cupy.cuda", cuda), ("cupy.cuda.nccl", nccl)):
        monkeypatch.setitem(__import__("sys").modules, name, mod)
    monkeypatch.setattr(comm, "require_cupy", lambda: cupy)
    monkeypatch.setenv("NCCL_NVLS_ENABLE", "0")
    return nccl


class FakeCtypesNccl:
    """Stands for comm._CtypesNccl: records init_all and destroy."""

    instances: list = []

    def __init__(self):
        self.log = []
        FakeCtypesNccl.instances.append(self)

    def init_all(self, devices):
        self.log.append(("init_all", list(devices)))
        return [1000 + d for d in devices]

    def destroy(self, c):
        self.log.append(("destroy", c))


@pytest.fixture
def ctypes_fake(monkeypatch):
    FakeCtypesNccl.instances = []
    monkeypatch.setattr(comm, "_CtypesNccl", FakeCtypesNccl)
    return FakeCtypesNccl.instances


def test_close_destroys_every_cupy_communicator_once(monkeypatch, ctypes_fake):
    log = []
    fake_cupy_nccl(monkeypatch, lambda devs: [FakeComm(d, log) for d in devs])
    with comm.AllReduce([0, 1]) as ar:
        assert ar.binding == "cupy" and not ctypes_fake
        assert log == []
    assert log == [("destroy", 0), ("destroy", 1)]
    ar.close()  # idempotent
    assert log == [("destroy", 0), ("destroy", 1)]
    with pytest.raises(comm.NcclError, match="after close"):
        ar([], 0, [])


def test_close_runs_when_the_with_block_raises(monkeypatch, ctypes_fake):
    log = []
    fake_cupy_nccl(monkeypatch, lambda devs: [FakeComm(d, log) for d in devs])
    with pytest.raises(KeyError):
        with comm.AllReduce([0, 1]):
            raise KeyError("boom")
    assert sorted(log) == [("destroy", 0), ("destroy", 1)]


def test_ctypes_fallback_says_why_and_its_close_calls_ncclCommDestroy(monkeypatch, ctypes_fake):
    def init_all(devs):
        raise FakeCupyNcclError("NCCL_ERROR_SYSTEM_ERROR: unhandled system error")

    fake_cupy_nccl(monkeypatch, init_all)
    said = []
    ar = comm.AllReduce([0, 1], log=said.append)
    assert ar.binding.startswith("ctypes (cupy: FakeCupyNcclError: NCCL_ERROR_SYSTEM_ERROR")
    assert len(said) == 1 and "FakeCupyNcclError" in said[0] and "ctypes" in said[0]
    ct = ctypes_fake[0]
    ar.close()
    assert ct.log == [("init_all", [0, 1]), ("destroy", 1000), ("destroy", 1001)]


def test_unavailable_cupy_nccl_falls_back(monkeypatch, ctypes_fake):
    nccl = fake_cupy_nccl(monkeypatch, lambda devs: pytest.fail("initAll of an unavailable binding"))
    nccl.available = False
    said = []
    ar = comm.AllReduce([0, 1], log=said.append)
    assert "available is False" in ar.binding and said
    ar.close()
    assert ctypes_fake[0].log[-2:] == [("destroy", 1000), ("destroy", 1001)]


def test_an_unrelated_error_inside_cupy_is_not_swallowed_by_the_fallback(monkeypatch, ctypes_fake):
    def init_all(devs):
        raise TypeError("a bug, not a missing binding")

    fake_cupy_nccl(monkeypatch, init_all)
    with pytest.raises(TypeError, match="a bug"):
        comm.AllReduce([0, 1], log=lambda s: None)
    assert not ctypes_fake  # ctypes was not tried


def test_a_failing_destroy_still_destroys_the_others_and_is_raised(monkeypatch, ctypes_fake):
    log = []

    class Bad(FakeComm):
        def destroy(self):
            raise FakeCupyNcclError("NCCL_ERROR_INTERNAL_ERROR")

    fake_cupy_nccl(monkeypatch, lambda devs: [Bad(devs[0], log), FakeComm(devs[1], log)])
    ar = comm.AllReduce([0, 1])
    with pytest.raises(comm.NcclError, match="1 of 2"):
        ar.close()
    assert log == [("destroy", 1)]
    ar.close()  # nothing left to destroy


class _FakeFn:
    def __init__(self, name, calls, rc=0):
        self.name, self.calls, self.rc = name, calls, rc

    def __call__(self, *args):
        self.calls.append((self.name, *args))
        return self.rc


class _FakeLibNccl:
    def __init__(self, path):
        self.calls = []
        for n in ("ncclCommInitAll", "ncclAllReduce", "ncclGroupStart", "ncclGroupEnd"):
            setattr(self, n, _FakeFn(n, self.calls))
        self.ncclCommDestroy = _FakeFn("ncclCommDestroy", self.calls)
        self.ncclGetErrorString = lambda rc: b"invalid argument"


def test_ctypes_binding_destroys_with_ncclCommDestroy(monkeypatch):
    monkeypatch.setattr(comm.ctypes, "CDLL", _FakeLibNccl)
    ct = comm._CtypesNccl()
    ct.destroy(1234)
    assert ct.lib.calls == [("ncclCommDestroy", 1234)]
    ct.lib.ncclCommDestroy.rc = 4
    with pytest.raises(comm.NcclError, match="ncclCommDestroy: invalid argument"):
        ct.destroy(1234)
