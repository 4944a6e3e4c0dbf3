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


def test_a_trace_bundle_round_trips_every_table_and_meta(trace, tmp_path):
    from ctasim.trace import load_traces, save_traces

    other = trace.copy()
    other.meta = {"m": 2048, "variant": "x", "kept": False, "offsets": {"1": {"offset_ns": -4700.0}}}
    other.tiles["t_mainloop_end"] = other.tiles["t_compute_end"] - 5.0  # a measured-only column survives
    path = save_traces({"a": trace, "m2048:x:run1": other}, tmp_path / "t.trace.npz")
    back = load_traces(path)
    assert list(back) == ["a", "m2048:x:run1"]
    for key, want in (("a", trace), ("m2048:x:run1", other)):
        got = back[key]
        assert got.meta == json.loads(json.dumps(want.meta, default=str))
        for name in ("tiles", "events", "ops"):
            pd.testing.assert_frame_equal(getattr(got, name), getattr(want, name), check_dtype=False,
                                          check_categorical=False)
        assert got.makespan_ns == want.makespan_ns
    assert list(tmp_path.iterdir()) == [path]  # no temporary file left


def test_a_bundle_read_again_gives_fresh_copies_and_a_rewritten_one_is_read_anew(trace, tmp_path):
    import os

    from ctasim.trace import _read_bundle, load_traces, save_traces

    path = save_traces({"a": trace}, tmp_path / "t.trace.npz")
    first = load_traces(path)["a"]
    hits = _read_bundle.cache_info().hits
    first.tiles.loc[:, "t_compute_end"] = -1.0  # the caller's own copy: changing it changes nothing read later
    first.meta["changed"] = True
    again = load_traces(path)["a"]
    assert _read_bundle.cache_info().hits == hits + 1  # read from the cache
    pd.testing.assert_frame_equal(again.tiles, trace.tiles, check_dtype=False)
    assert "changed" not in again.meta
    other = trace.copy()
    other.tiles["t_compute_end"] = other.tiles["t_compute_end"] + 7.0
    st = path.stat()
    save_traces({"a": other}, path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))  # a rewrite within the clock's resolution too
    pd.testing.assert_frame_equal(load_traces(path)["a"].tiles, other.tiles, check_dtype=False)


@pytest.mark.parametrize("damage", ["missing", "foreign", "truncated", "garbage"])
def test_a_damaged_trace_bundle_is_one_clear_error(trace, tmp_path, damage):
    import numpy as np

    from ctasim.trace import TraceFileError, load_traces, save_traces

    p = tmp_path / "t.trace.npz"
    if damage == "foreign":
        np.savez(p, x=np.arange(3))
    elif damage == "truncated":
        save_traces({"a": trace}, p)
        p.write_bytes(p.read_bytes()[: p.stat().st_size // 2])
    elif damage == "garbage":
        p.write_bytes(b"\x00\x01not a zip" * 100)
    with pytest.raises(TraceFileError, match=str(p)) as e:
        load_traces(p)
    assert "\n" not in str(e.value)


def test_a_bundle_key_with_a_slash_is_refused(trace, tmp_path):
    from ctasim.trace import save_traces

    with pytest.raises(ValueError, match="no '/'"):
        save_traces({"a/b": trace}, tmp_path / "t.trace.npz")
    assert not list(tmp_path.iterdir())
