"""Small specs for tests: a 4-SM GPU with round numbers, so that schedules can be written down by hand."""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
import shutil
import tempfile
from pathlib import Path

from ctasim.spec import Hardware, KernelConfig, Layer, Workload, hardware_from_dict


def chain_stamps(trace, k, base: int = 10**18):
    """Chain kernel ``k``'s stamp words (``ctahw.chain``, local tile ids) for a simulated trace: what the GPU would
    have written, its clock at ``base`` ns when the trace starts (in integers: a double holds %globaltimer's
    nanoseconds only to 128 ns)."""
    import numpy as np

    from ctahw.runner import TILE_STAMP_WORDS

    per = k.tiles_m * k.tiles_n
    t = trace.tiles[trace.tiles.kernel == k.id]
    j = (t.layer - k.layer) // k.chain_stride
    g = (j * per + t.tile_m * k.tiles_n + t.tile_n).to_numpy()
    s = np.zeros((k.tiles, TILE_STAMP_WORDS), dtype=np.uint64)
    for w, c in enumerate(["t_start", "t_acquire", "t_compute_end", "t_compute_end", "t_store_end", "t_signal"]):
        s[g, w] = np.uint64(base) + t[c].to_numpy().round().astype(np.uint64)
    s[g, 6] = (t.sm.to_numpy().astype(np.uint64) << np.uint64(32)) | t.cta.to_numpy().astype(np.uint64)
    s[g, 7] = np.uint64(base) + t.t_ready.to_numpy().round().astype(np.uint64)
    return s


class FakeCudaDevice:
    """Stands in for ``cupy.cuda.Device(d)`` in CPU tests of ``ctahw``: a context manager that does nothing."""

    def __init__(self, device: int):
        self.device = device

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

TINY = {
    "name": "tiny", "gpu": "toy", "gpus": 8, "sm_count": 4, "hbm_gbps": 1000.0, "topology": "direct",
    "link_gbps": 100.0, "copy_engine_gbps": 100.0, "link_latency_ns": 10.0, "remote_atomic_ns": 5.0,
    "fence_sys_ns": 20.0, "poll_ns": 8.0, "launch_ns": 100.0, "kernel_gap_ns": 10.0, "event_wait_ns": 30.0,
    "allreduce_bus_gbps": 50.0, "allreduce_latency_ns": 7.0, "epilogue_store_overlap": 0.0, "sm_remote_store_gbps": 1000.0,
    "measured": False, "source": "test",
    # 1000 ns per 128x128 tile at K=128: 2*128*128*128 / (tflops*1e3) = 1000  ->  tflops = 4.194304
    "kernel_config": [{"tile_m": 128, "tile_n": 128, "tile_k": 64, "cta_slots_per_sm": 1,
                       "sm_tflops": 2 * 128 * 128 * 128 / 1e6, "tile_fixed_ns": 0.0}],
}


def tiny_hw(**changes) -> Hardware:
    hw = hardware_from_dict(dict(TINY))
    return dataclasses.replace(hw, **changes) if changes else hw


def chain(layers: int = 2, m: int = 512, k: int = 128, n: int = 256, **layer_kw) -> Workload:
    layer = Layer(m=m, k=k, n=n, tile_m=128, tile_n=128, **layer_kw)
    first = layer
    rest = dataclasses.replace(layer, k=n)
    return Workload("test-chain", "bf16", (first,) + (rest,) * (layers - 1))


def finish_times(transfers, link_factory=None):
    """Run ``(start_ns, work_ns, cap)`` transfers on one fair link (``ctasim.machine.FairLink``, or what
    ``link_factory(env)`` makes); their end times, in input order, and the link."""
    import simpy  # noqa: PLC0415

    from ctasim.machine import FairLink  # noqa: PLC0415

    env = simpy.Environment()
    link = (link_factory or FairLink)(env)
    ends = [None] * len(transfers)

    def one(i, start, work, cap):
        yield env.timeout(start)
        yield link.submit(work, cap)
        ends[i] = env.now

    for i, tr in enumerate(transfers):
        env.process(one(i, *tr))
    env.run()
    return ends, link


BENCH = Path(__file__).resolve().parent.parent / "bench"

GZ_FAST = {"method": "gzip", "compresslevel": 1}
"""``to_csv(PATH.csv.gz, compression=GZ_FAST)``: a made-up call's per-tile table gzipped at level 1, in about a third
of the time of pandas' default level 9 (the suite's made-up calls write thousands). The file decompresses to the same
text, and its readers (``pd.read_csv``, which infers gzip from the suffix) read it as any other gzip file."""


@functools.cache
def load_bench(name: str):
    """``load_bench("clock_kernels")``, ``load_bench("hw/copy_wait_report")``: a ``bench/`` script loaded as a module
    (the scripts are not a package), once per process; ``tests/conftest.py``'s ``bench_module`` fixture is the same."""
    spec = importlib.util.spec_from_file_location(name.replace("/", "."), BENCH / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def registered_run(experiments, reference: str, tmp: Path, twin: str = "", scale: float = 1.0) -> Path:
    """A made-up run folder of a registered plan (``tmp/EXP/results.csv``) whose every case measures what the
    registration ``EXP + twin`` predicted ("" the plain registration's; the reference GEMM always its own), times
    ``scale``: a machine that runs exactly as one predictor says, ``scale`` slower."""
    import pandas as pd  # noqa: PLC0415

    for exp in experiments:
        reg = exp if exp == reference else f"{exp}{twin}"
        p = pd.read_csv(BENCH / "predictions" / reg / "predictions.csv")
        m = p[p["source"] == "model"].assign(source="hw")
        m["makespan_ms"] *= scale
        (tmp / exp).mkdir(parents=True)
        m.to_csv(tmp / exp / "results.csv", index=False)
    return tmp


def h200_calls_as(calls: dict, run: Path, gpu: str, files=("results.csv",)) -> Path:
    """A made-up call folder ``run`` of the committed H200 calls' timings: per experiment of ``calls`` (experiment ->
    the call folder under bench/results/hw that ran it) its ``files`` where the call has them, and an ``env.txt`` (plan
    59's call's) whose GPU is named ``gpu``: the H100 plans' judges read it as an H100's call, or refuse it."""
    import shutil  # noqa: PLC0415

    hw = BENCH / "results" / "hw"
    for exp, call in calls.items():
        (run / exp).mkdir(parents=True)
        for f in files:
            if (hw / call / exp / f).is_file():
                shutil.copy(hw / call / exp / f, run / exp / f)
    env = (hw / "2026-12-05-registered59-1gpu" / "env.txt").read_text()
    (run / "env.txt").write_text(env.replace("NVIDIA H200", gpu))
    return run


def assert_same_tables(got: Path, want: Path, names) -> None:
    """Each ``NAME.csv`` of ``names`` in folder ``got`` equals the one in ``want`` (a judge's output against its
    committed judgement)."""
    import pandas as pd  # noqa: PLC0415

    for name in names:
        pd.testing.assert_frame_equal(pd.read_csv(got / f"{name}.csv"), pd.read_csv(want / f"{name}.csv"))


def assert_registration_reproduced(got, registered, keys, columns) -> None:
    """A plan's ``register()`` output ``got`` is its committed ``predicted.csv`` (``registered``): the same ``keys``
    columns row by row, the figure ``columns`` within 1e-4 (relative, and absolute near zero)."""
    import numpy as np  # noqa: PLC0415
    import pandas as pd  # noqa: PLC0415

    assert len(got) == len(registered)
    pd.testing.assert_frame_equal(got[list(keys)], registered[list(keys)])
    for col in columns:
        np.testing.assert_allclose(got[col].to_numpy(float), registered[col].to_numpy(float), rtol=1e-4, atol=1e-4)


def assert_predict_model_rows(rows, predictions: Path) -> None:
    """Each of ``rows`` (experiment, case, order, makespan_ms) is its experiment's ``ctasim predict`` registration's
    model row of that case and strategy (``predictions/EXP/predictions.csv``), less the timing harness: within 2 us."""
    import pandas as pd  # noqa: PLC0415
    import pytest  # noqa: PLC0415

    for exp, g in rows.groupby("experiment", sort=False):
        r = pd.read_csv(predictions / exp / "predictions.csv")
        r = r[r["source"] == "model"].set_index(["case", "strategy"])["makespan_ms"]
        for row in g.itertuples():
            assert row.makespan_ms == pytest.approx(r[(row.case, row.order)], abs=0.002), row


_MADE_UP_CALLS: dict = {}


def kept_made_up_call(build):
    """``build(plan, registered, run, **kw)``, a test's writer of a made-up device call into folder ``run``, kept per
    argument set: the first call with a plan, a registration and keywords writes the call once into a scratch folder
    of this process, and every call copies that folder to ``run`` (a test may damage its copy; the kept one is never
    handed out). The key is the builder, the plan, the registration's columns and contents and the keywords' text (a
    keyword numpy prints in part is not a key: that call is written afresh), so a test that passes a changed
    registration gets its own call."""
    import pandas as pd

    @functools.wraps(build)
    def kept(plan, registered, run, **kw):
        words = repr(sorted(kw.items(), key=lambda x: x[0]))
        if "..." in words:  # an argument numpy prints in part: not a key
            return build(plan, registered, run, **kw)
        key = (build.__module__, build.__qualname__, plan.__name__, tuple(registered.columns),
               int(pd.util.hash_pandas_object(registered, index=False).sum()), words)
        src = _MADE_UP_CALLS.get(key)
        if src is None:
            src = Path(tempfile.mkdtemp(prefix="made-up-call-")) / "run"
            build(plan, registered, src, **kw)
            _MADE_UP_CALLS[key] = src
        shutil.copytree(src, run, dirs_exist_ok=True)
        return run

    return kept
