"""ctahw.baselines: the parts that decide what runs and how results are read (CPU only)."""

from __future__ import annotations

import pytest

from ctahw.baselines import (SweepConfig, breakdown, chain_flops, chunk_counts, mark_best, pick_schedule,
                             plan_sweep)
from ctahw.gemm import SCHEDULES, schedule_name
from tests.helpers import FakeCudaDevice


def test_chunk_counts_keep_whole_row_tiles():
    assert chunk_counts(1024, (1, 2, 4, 8, 16)) == [1, 2, 4, 8]
    assert chunk_counts(16384, (1, 2, 4, 8, 16)) == [1, 2, 4, 8, 16]
    assert chunk_counts(384, (1, 2, 3, 4)) == [1, 3]


def test_mark_best_per_backend_and_m_ignoring_errors():
    rows = [dict(experiment="microbatch", backend="cublas", m=1024, chunks=c, median_ms=t, error="")
            for c, t in ((1, 2.0), (2, 1.5), (4, 1.7))]
    rows.append(dict(experiment="microbatch", backend="cublas", m=1024, chunks=8, median_ms=0.1, error="boom"))
    rows.append(dict(experiment="microbatch", backend="cutlass", m=1024, chunks=1, median_ms=9.0, error=""))
    mark_best(rows)
    assert [r["chunks"] for r in rows if r["best"]] == [2, 1]


def test_plan_covers_the_issue_sweep():
    cases = plan_sweep(SweepConfig())
    ms = {c["m"] for c in cases}
    assert ms == {1024, 2048, 4096, 8192, 16384}
    kinds = {c["experiment"] for c in cases}
    assert kinds == {"gemm", "remote_d", "sequential", "microbatch", "tp"}
    mb = [c for c in cases if c["experiment"] == "microbatch" and c["m"] == 1024 and c["backend"] == "cublas"]
    assert [c["chunks"] for c in mb] == [1, 2, 4, 8]
    one = plan_sweep(SweepConfig(gpus=1))
    assert {c["experiment"] for c in one} == {"gemm", "sequential"}


def test_breakdown_of_a_two_gpu_run():
    # GPU 0: two GEMMs, a collective on its compute stream, a copy-engine transfer beside them; GPU 1: one GEMM
    parts = [("compute", 0, 1.0), ("compute", 0, 1.0), ("comm", 0, 0.5), ("copy", 0, 0.75), ("compute", 1, 2.0)]
    bd = breakdown(3.0, parts, [0, 1])
    assert bd["per_gpu"]["0"] == {"compute_ms": 2.0, "comm_ms": 0.5, "copy_ms": 0.75, "idle_ms": 0.5}
    assert bd["per_gpu"]["1"] == {"compute_ms": 2.0, "comm_ms": 0.0, "copy_ms": 0.0, "idle_ms": 1.0}
    # compute, comm, idle: means over GPUs; copy: the copy engines' total
    assert (bd["compute_ms"], bd["comm_ms"], bd["copy_ms"], bd["idle_ms"]) == (2.0, 0.25, 0.75, 0.75)
    with pytest.raises(ValueError):
        breakdown(1.0, [("launch", 0, 1.0)], [0])


def test_chain_flops():
    assert chain_flops(16384, 8192, 2) == 2 * 2 * 16384 * 8192 * 8192


def test_pick_schedule_takes_the_fastest_and_ties_go_to_the_default():
    med = {c: 3.0 for c in SCHEDULES}
    assert pick_schedule(med) == SCHEDULES[0] == (0, 1)
    med[(2, 8)] = 2.9
    assert pick_schedule(med) == (2, 8)
    assert schedule_name((2, 8)) == "along_n/swizzle8"
    assert len(SCHEDULES) == 12


def test_plan_times_cutlass_default_order_beside_the_tuned_one():
    gemm = [c["backend"] for c in plan_sweep(SweepConfig(ms=(1024,))) if c["experiment"] == "gemm"]
    assert gemm == ["cublas", "cutlass", "cutlass_default"]
    untuned = plan_sweep(SweepConfig(ms=(1024,), tune_rounds=0))
    assert [c["backend"] for c in untuned if c["experiment"] == "gemm"] == ["cublas", "cutlass"]


# -- lifetimes and fallbacks (fake CuPy, fake backends)


def _fake_cp():
    import types

    import numpy as np

    stream = types.SimpleNamespace(synchronize=lambda: None, ptr=0)
    cuda = types.SimpleNamespace(Device=FakeCudaDevice, Stream=lambda: stream)
    return types.SimpleNamespace(cuda=cuda, uint16=np.uint16, full=np.full, empty=np.empty)


def _bare_sweep(log):
    from ctahw.baselines import Session

    sw = Session.__new__(Session)  # no GPU: only what the tested methods read
    sw.cp, sw.log, sw._exec = _fake_cp(), log, None
    return sw


def _failing_cublas(exc):
    def gemm(*args):
        raise exc
    return gemm


def test_cublas_binding_failure_falls_back_to_torch_and_says_why(monkeypatch):
    from ctahw import baselines
    from ctahw.gemm import GemmError

    torch_backend = object()
    made = []

    def make_backend(name, device):
        made.append(name)
        return torch_backend if name == "torch" else _failing_cublas(GemmError("cublasGemmEx: NOT_SUPPORTED"))

    monkeypatch.setattr(baselines, "make_backend", make_backend)
    said = []
    assert _bare_sweep(said.append)._backend("cublas", 0) is torch_backend
    assert made == ["cublas", "torch"] and "GemmError" in said[0] and "torch" in said[0]

    def no_binding(name, device):  # cupy_backends.cuda.libs.cublas missing: the constructor fails
        if name == "cublas":
            raise ImportError("no cupy_backends")
        return torch_backend

    monkeypatch.setattr(baselines, "make_backend", no_binding)
    assert _bare_sweep(said.append)._backend("cublas", 0) is torch_backend


def test_an_unrelated_error_in_the_cublas_smoke_test_propagates(monkeypatch):
    from ctahw import baselines

    monkeypatch.setattr(baselines, "make_backend",
                        lambda name, device: _failing_cublas(TypeError("a bug")) if name == "cublas" else object())
    with pytest.raises(TypeError, match="a bug"):
        _bare_sweep(lambda s: None)._backend("cublas", 0)


def test_sweep_close_destroys_the_allreduce_once():
    """The session's executor machine holds the NCCL communicators; leaving the session closes them, once."""
    from ctahw.executor import CudaMachine

    closed = []
    sw = _bare_sweep(lambda s: None)
    sw._exec = CudaMachine(None, [0, 1], [None, None])
    sw._exec._allreduce = type("AR", (), {"close": lambda self: closed.append(1), "binding": "cupy"})()
    assert sw._exec.nccl_binding == "cupy"
    with sw:
        pass
    assert closed == [1] and sw._exec is None
    sw.close()
    assert closed == [1]


def test_run_sweep_closes_the_session_even_when_it_is_interrupted(monkeypatch):
    """The sweep runs the registered experiment functions on its session and closes it however it ends."""
    from ctahw import sweep

    events = []

    class FakeSession:
        def __init__(self, cfg, log):
            self.tuning, self.traces = [], []

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            events.append("closed")

        def close(self):
            events.append("closed")

        def free(self):
            pass

    def gemm(session, m):
        assert isinstance(session, FakeSession)
        events.append(("gemm", m))
        if m == 2048:
            raise KeyboardInterrupt  # not an error row: it ends the sweep
        return []

    monkeypatch.setattr(sweep, "Session", FakeSession)
    monkeypatch.setitem(sweep.EXPERIMENTS, "gemm", sweep.Experiment(gemm, 1, "fake"))
    cfg = SweepConfig(ms=(1024, 2048, 4096), gpus=1, experiments=("gemm",))
    with pytest.raises(KeyboardInterrupt):
        sweep.run_sweep(cfg, log=lambda s: None)
    assert events == [("gemm", 1024), ("gemm", 2048), "closed"]
    events.clear()
    assert sweep.run_sweep(SweepConfig(ms=(1024,), gpus=1, experiments=("gemm",)), log=lambda s: None) == []
    assert events == [("gemm", 1024), "closed"]


# -- sustained timing (fake CuPy whose events read a fake GPU clock)


class _Clock:
    """A fake GPU: every enqueued repeat advances the clock by the next duration (ms)."""

    def __init__(self, durations):
        self.t, self.durations, self.i = 0.0, list(durations), 0

    def advance(self):
        self.t += self.durations[min(self.i, len(self.durations) - 1)]
        self.i += 1


def _sustain_cp(clock):
    import types

    class Event:
        def __init__(self):
            self.t = None

        def record(self, stream=None):
            self.t = clock.t

        def synchronize(self):
            pass

    class Stream:
        ptr = 0

        def wait_event(self, ev):
            pass

    cuda = types.SimpleNamespace(Device=FakeCudaDevice, Stream=Stream, Event=Event,
                                 get_elapsed_time=lambda a, b: b.t - a.t,
                                 runtime=types.SimpleNamespace(deviceSynchronize=lambda: None))
    return types.SimpleNamespace(cuda=cuda)


def test_sustained_timing_reports_the_median_repeat_of_the_second_half(monkeypatch):
    """Repeats slow down as the clock drops (1.0 ms while rested, then 1.5 ms): the sustained figure is a
    late repeat's time, the burst figure the first run's."""
    import time

    from ctahw import baselines

    clock = _Clock([1.0] * 4 + [1.5] * 10_000)
    monkeypatch.setattr(baselines, "require_cupy", lambda: _sustain_cp(clock))
    monkeypatch.setattr(baselines.probes, "call", lambda *a, **k: None)

    def enqueue(t):
        time.sleep(0.002)  # host time passes; the fake GPU runs one repeat
        clock.advance()
        return [(t.compute[0], 0)]

    burst, _ = baselines.Timed([0], gate_ms=1.0).run(enqueue)
    assert burst == pytest.approx(1.0)
    clock.__init__([1.0] * 4 + [1.5] * 10_000)
    sustained, _ = baselines.Timed([0], gate_ms=1.0, sustain_s=0.1).run(enqueue)
    assert sustained == pytest.approx(1.5)
    assert clock.i > 10  # it did repeat for the host time asked
    with pytest.raises(ValueError, match="sustain_s"):
        baselines.Timed([0], gate_ms=1.0, sustain_s=-1.0)
