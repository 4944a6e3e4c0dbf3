"""Trace files and the Chrome/Perfetto export."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from ctasim.engine import simulate
from ctasim.spec import Strategy
from ctasim.strategies import build_plans
from ctasim.trace import EVENT_COLUMNS, OP_COLUMNS, TILE_COLUMNS, Trace
from tests.helpers import chain, tiny_hw


@pytest.fixture(scope="module")
def trace():
    hw = tiny_hw()
    plan = build_plans(Strategy("ctapipe"), chain(2, m=512, k=128, n=256), hw, 2, "t")[0]
    return simulate(plan, hw)


def test_schema(trace):
    assert tuple(trace.tiles.columns) == TILE_COLUMNS
    assert tuple(trace.events.columns) == EVENT_COLUMNS
    assert tuple(trace.ops.columns) == OP_COLUMNS
    assert (trace.tiles.source == "sim").all()
    assert set(trace.events["kind"]) == {"zero", "push"}


@pytest.mark.parametrize("fmt", ["csv"])
def test_save_and_load_round_trip(trace, tmp_path, fmt):
    paths = trace.save(tmp_path / "run", fmt=fmt)
    assert [p.name for p in paths] == ["run.tiles.csv", "run.events.csv", "run.ops.csv", "run.meta.json"]
    back = Trace.load(tmp_path / "run")
    pd.testing.assert_frame_equal(back.tiles, trace.tiles, check_dtype=False)
    pd.testing.assert_series_equal(back.events["t_ns"], trace.events["t_ns"])
    assert back.meta == trace.meta
    assert back.makespan_ns == trace.makespan_ns


def test_load_reports_a_missing_table(tmp_path):
    with pytest.raises(FileNotFoundError, match="tiles"):
        Trace.load(tmp_path / "nothing")


def test_chrome_export_has_every_tile_on_its_gpu_and_sm(trace, tmp_path):
    doc = json.loads(trace.write_chrome(tmp_path / "t.json").read_text())
    tiles = [e for e in doc["traceEvents"] if e.get("cat") == "tile"]
    assert len(tiles) == len(trace.tiles)
    first = trace.tiles.iloc[0]
    ev = next(e for e in tiles if e["ts"] == pytest.approx(first.t_acquire / 1e3) and e["pid"] == first.gpu)
    assert ev["tid"] == first.sm and ev["dur"] == pytest.approx((first.t_compute_end - first.t_acquire) / 1e3)
    assert {e["args"]["name"] for e in doc["traceEvents"] if e["ph"] == "M"} == {"GPU 0", "GPU 1"}
    stores = [e for e in doc["traceEvents"] if e.get("cat") == "store"]
    assert len(stores) == int((trace.tiles.t_store_end > trace.tiles.t_compute_end).sum()) > 0


def test_busy_fraction(trace):
    busy = trace.busy_fraction({0: 4, 1: 4})
    t = trace.tiles
    expect = (t[t.gpu == 1].t_compute_end - t[t.gpu == 1].t_acquire).sum() / (4 * trace.makespan_ns)
    assert busy[1] == pytest.approx(expect) and 0 < busy[1] < 1
