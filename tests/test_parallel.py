"""Parallel runs (ctasim.parallel): local processes and a Dask cluster give exactly the serial results, in order."""

from __future__ import annotations

import time

import pandas as pd
import pytest

from ctasim.cases import load_experiment
from ctasim.cli import main
from ctasim.parallel import PARALLEL_MIN_CTAS, auto_jobs, map_ordered
from ctasim.run import run_experiment


def _slow_identity(x):
    time.sleep(0.05 * (3 - x))  # the first item finishes last
    return x * 10


def test_results_come_back_in_input_order_whatever_finishes_first():
    done = []
    assert map_ordered(_slow_identity, [0, 1, 2, 3], jobs=2, progress=done.append) == [0, 10, 20, 30]
    assert sum(done) == 4
    assert map_ordered(_slow_identity, [2, 3], jobs=1) == [20, 30]


def test_auto_jobs_is_serial_for_small_work_and_one_process_per_core_for_large():
    assert auto_jobs(runs=20, ctas=PARALLEL_MIN_CTAS - 1, cores=8) == 1
    assert auto_jobs(runs=20, ctas=PARALLEL_MIN_CTAS, cores=8) == 8
    assert auto_jobs(runs=3, ctas=10**7, cores=8) == 3
    assert auto_jobs(runs=1, ctas=10**7, cores=8) == 1


def _same(a, b):
    (da, ra), (db, rb) = a, b
    pd.testing.assert_frame_equal(da, db)
    for x, y in zip(ra, rb):
        assert x.case.label == y.case.label and x.strategy.label == y.strategy.label
        pd.testing.assert_frame_equal(x.trace.tiles, y.trace.tiles)


def test_two_local_processes_give_the_serial_table_and_traces():
    exp = load_experiment("raster")
    _same(run_experiment(exp, jitter=0.02, seed=3), run_experiment(exp, jitter=0.02, seed=3, jobs=2))


@pytest.fixture(scope="module")
def cluster():
    """One 2-worker Dask LocalCluster (worker processes) for the module's tests."""
    distributed = pytest.importorskip("distributed", reason="dask[distributed] is not installed (the test extra has it)")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as c:
        yield c


def test_a_dask_local_cluster_gives_the_serial_table_and_traces(cluster):
    exp = load_experiment("raster")
    serial = run_experiment(exp, jitter=0.02, seed=3)
    _same(serial, run_experiment(exp, jitter=0.02, seed=3, scheduler=cluster.scheduler_address))


def test_sweep_with_jobs_writes_the_serial_file(tmp_path):
    args = ["sweep", "raster", "--set", "hardware.link_gbps=100,400", "-q"]
    assert main(args + ["--jobs", "1", "--out", str(tmp_path / "one.csv")]) == 0
    assert main(args + ["--jobs", "2", "--out", str(tmp_path / "two.csv")]) == 0
    assert (tmp_path / "one.csv").read_text() == (tmp_path / "two.csv").read_text()


def test_the_cli_runs_on_a_dask_cluster_by_address(tmp_path, cluster):
    args = ["sweep", "raster", "--set", "hardware.link_gbps=100,400", "-q"]
    assert main(args + ["--jobs", "1", "--out", str(tmp_path / "one.csv")]) == 0
    assert main(args + ["--scheduler", cluster.scheduler_address, "--out", str(tmp_path / "dask.csv")]) == 0
    assert (tmp_path / "one.csv").read_text() == (tmp_path / "dask.csv").read_text()
