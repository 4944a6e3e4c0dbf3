"""ctahw.tile_orders without a GPU: the traced plans are CUTLASS's orders, bad arguments are refused before the GPU."""

from __future__ import annotations

import numpy as np
import pytest

from ctahw import tile_orders as T
from ctasim.l2 import cutlass_sm90_order
from tests.helpers import load_bench


@pytest.mark.parametrize("m,h", T.TRACE_SHAPES)
def test_each_traced_plan_runs_cutlass_s_own_order_in_2x1_pairs(m, h):
    from ctahw.chain import check_pairs

    for raster, swizzle in T.TRACE_ORDERS:
        (k,) = T.trace_plan(m, h, raster, swizzle).kernels()
        assert (k.tiles_m, k.tiles_n) == (m // 128, h // 256) and k.chain_static
        assert np.array_equal(k.order, cutlass_sm90_order(k.tiles_m, k.tiles_n, raster, swizzle, (2, 1)))
        assert np.array_equal(np.sort(k.order), np.arange(k.tiles))
        check_pairs(k.order, k.tiles_m, k.tiles_n)  # the static2x1 design's clusters share a W panel


def test_a_grid_cutlass_pads_is_refused():
    with pytest.raises(ValueError, match="CUTLASS pads this grid"):
        T.trace_plan(128 * 3, 256 * 3, "along_n", 8)


def test_the_gap_traces_run_the_chain_kernel_in_pairs_and_the_ticket_traces_in_its_default_order():
    """ctahw calibrate's gap traces (ticket_gap_cv) are the tickets design in pairs of row-blocks, its ticket traces
    (ticket_spread) the default groups of 8, each under its own name; the same orders the chain kernel's experiments
    run as intragpu-g2 and intragpu."""
    from ctasim.plan import chain_order

    for m, layers, h in T.GAP_SHAPES:
        pairs = T.ticket_plan(m, layers, h, chain_group=T.GAP_GROUP)
        (k,) = pairs.kernels()
        assert pairs.params["order"] == "chain_group2" and pairs.params["tile_source"] == "tickets"
        assert np.array_equal(k.order, chain_order(layers, m // 128, h // 256, 2))
        assert T.ticket_trace_name(m, layers, h, T.GAP_GROUP) == f"{m}x{h}x{layers}-tickets-g2"
    assert T.GAP_GROUP == 2 and set(T.GAP_SHAPES) <= set(T.TICKET_SHAPES)
    assert T.ticket_plan(*T.TICKET_SHAPES[0]).params["order"] == "chain_group8"
    assert T.ticket_trace_name(*T.TICKET_SHAPES[0]) == "8192x8192x2-tickets"  # the committed traces' names


def test_trace_tickets_builds_its_plans_in_the_order_asked_before_the_gpu(monkeypatch):
    """trace_tickets hands chain_group to every plan it builds, before it touches a GPU (a bad shape is refused there
    too): the gap traces are pairs only if this holds, and no fake of trace_tickets can show it."""
    seen = []

    class Stop(Exception):
        pass

    def plan(m, layers, h, chain_group=0):
        seen.append((m, layers, h, chain_group))
        if len(seen) == len(T.GAP_SHAPES):
            raise Stop
        return None

    monkeypatch.setattr(T, "ticket_plan", plan)
    with pytest.raises(Stop):
        T.trace_tickets(T.GAP_SHAPES, chain_group=T.GAP_GROUP)
    assert seen == [(*s, T.GAP_GROUP) for s in T.GAP_SHAPES]


def test_the_probes_refuse_a_repetition_count_below_one_before_the_gpu():
    with pytest.raises(ValueError, match="reps must be >= 1"):
        T.time_orders([(2048, 8192, 8192)], reps=0)
    with pytest.raises(ValueError, match="reps must be >= 1"):
        T.trace_orders(reps=0)
    assert T.trace_name(8192, 8192, "along_m", 8) == "8192x8192-along_m-swizzle8"


def test_written_traces_are_what_bench_order_drift_reads(tmp_path):
    import pandas as pd

    from ctasim.calibration import trace_drift

    rounds, ctas = 8, 4
    c, r = np.meshgrid(np.arange(ctas), np.arange(rounds), indexing="ij")
    start = r * 1000.0 * (1 + 0.01 * c)
    tiles = pd.DataFrame({"cta": c.ravel(), "sm": c.ravel(), "tile_m": r.ravel(), "tile_n": c.ravel(),
                          "t_acquire": start.ravel(), "t_mainloop_end": start.ravel() + 900.4,
                          "t_compute_end": start.ravel() + 950.0, "t_store_end": start.ravel() + 990.0})
    T.write_traces(tmp_path / "t", [{"m": 1, "order": "along_m/swizzle1"}], {"1x1-along_m-swizzle1": tiles})
    back = pd.read_csv(tmp_path / "t" / "tiles-1x1-along_m-swizzle1.csv.gz")
    # a trace without t_signal and layer (this hand-made one) is written without them
    assert list(back.columns) == [c for c in T.TRACE_COLUMNS if c not in ("t_signal", "layer")]
    assert back.t_mainloop_end.iloc[0] == 900.0
    assert trace_drift(back)["start_sd_per_round"] == pytest.approx(trace_drift(tiles)["start_sd_per_round"], rel=1e-3)
    assert pd.read_csv(tmp_path / "t" / "timing.csv").order.tolist() == ["along_m/swizzle1"]


@pytest.mark.parametrize("args,message", [
    (["--shapes", "32768x"], "--shapes: '32768x' is not MxH"),
    (["--shapes", "0x8192"], "--shapes: '0x8192' is not MxH"),
    (["--orders", "along_k/8"], "--orders: 'along_k/8' is not RASTER/SWIZZLE"),
    (["--orders", "along_m/3"], "--orders: 'along_m/3' is not RASTER/SWIZZLE"),
    (["--shapes", "384x768", "--orders", "along_n/8"], "CUTLASS pads this grid"),
    (["--reps", "0"], "--reps must be >= 1"),
    (["--shapes="], "--shapes: '' is not MxH"),
    (["--orders", "along_m/8,along_m/8"], "--orders: 'along_m/8' twice"),
    (["--rest-ms", "-5"], "--rest-ms must be >= 0"),
])
def test_the_order_trace_probe_refuses_bad_arguments_in_one_line_and_writes_nothing(tmp_path, args, message):
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    out = tmp_path / "out"
    r = subprocess.run([sys.executable, str(root / "bench/hw/order_trace_probe.py"), str(out), *args],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and message in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert not out.exists()


def test_the_order_trace_probe_parses_shapes_and_orders():
    probe = load_bench("hw/order_trace_probe")
    assert probe.parse_shapes("131072x8192, 65536x16384") == [(131072, 8192), (65536, 16384)]
    assert probe.parse_orders("along_m/8,along_n/1") == [("along_m", 8), ("along_n", 1)]


def test_the_gemm_shape_probe_refuses_bad_shapes_in_one_line_and_parses_good_ones(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "bench/hw/gemm_shape_probe.py"
    for args, words in ((["--shapes", "32768x40960"], "--shapes: '32768x40960' is not MxNxK"),
                        (["--shapes="], "--shapes: '' is not MxNxK"),
                        (["--shapes", "1x2x3,1x2x3"], "--shapes: '1x2x3' twice"),
                        (["--rest-ms", "-1"], "--rest-ms must be >= 0"),
                        (["--reps", "0"], "--reps must be >= 1")):
        r = subprocess.run([sys.executable, str(path), str(tmp_path / "o.csv"), *args], capture_output=True,
                           text=True, timeout=120)
        assert r.returncode == 2 and words in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert not (tmp_path / "o.csv").exists()
    probe = load_bench("hw/gemm_shape_probe")
    assert probe.parse_shapes("32768x40960x7168, 4096x8192x8192") == [(32768, 40960, 7168), (4096, 8192, 8192)]


def test_the_probes_parse_gemm_shapes_one_way():
    """ctahw.gemm.parse_mnk: the shape grammar the shape probe and the clock trajectory's --kernels share."""
    from ctahw.gemm import parse_mnk

    assert parse_mnk(" 16384x8192x28672", "--x") == (16384, 8192, 28672)
    for bad in ("16384x8192", "0x1x1", "ax1x1", "1x1x1x1", ""):
        with pytest.raises(ValueError, match="--x: .* is not MxNxK"):
            parse_mnk(bad, "--x")
    traj = load_bench("hw/clock_trajectory")
    assert traj.parse_kernels("sq=16384x8192x8192,relu=16384x8192x8192+relu_input") == {
        "sq": (16384, 8192, 8192, ()), "relu": (16384, 8192, 8192, ("relu_input",))}
    with pytest.raises(ValueError, match="--kernels: 'sq=16384x8192': '16384x8192' is not MxNxK"):
        traj.parse_kernels("sq=16384x8192")
    with pytest.raises(ValueError, match="twice"):
        traj.parse_kernels("a=1x1x64,a=1x1x64")


def test_the_ticket_trace_runbook_measures_the_gap_spread_from_what_trace_tickets_keeps(tmp_path, monkeypatch):
    """bench/hw/run_ticket_traces.sh's Python, run with trace_tickets standing in for the GPU: the chain kernel's
    traced tiles (a committed run's groups of 8 and pairs) cut to the columns trace_tickets keeps give the gap spread
    the same traces give whole; a trace_tickets that dropped ``layer`` would fail here, not on the device."""
    import os
    import re

    import pandas as pd

    from ctasim.calibration import gap_cv, ticket_spread
    from ctasim.trace import load_traces

    bundle = T.Path(__file__).resolve().parents[2] / \
        "bench/results/hw/2026-12-04-registered52-1gpu/reg52-chain-faster-h7680/ctapipe_traces.trace.npz"
    whole = {}
    for tr in load_traces(bundle).values():
        whole.setdefault(tr.meta["strategy"], tr.tiles)

    def fake(shapes=T.TICKET_SHAPES, chain_group=0, **_):
        tiles = whole["intragpu-g2" if chain_group == 2 else "intragpu"]
        return ([{"m": m, "layers": l, "h": h, "chain_group": chain_group, "grid": 132} for m, l, h in shapes],
                {T.ticket_trace_name(m, l, h, chain_group): T.trace_columns(tiles) for m, l, h in shapes})

    monkeypatch.setattr(T, "trace_tickets", fake)
    monkeypatch.setitem(os.environ, "R", str(tmp_path))
    script = (T.Path(__file__).resolve().parents[2] / "bench/hw/run_ticket_traces.sh").read_text()
    exec(re.search(r"<<'PY'[^\n]*\n(.*?)\nPY\n", script, re.S).group(1), {})  # noqa: S102 - the runbook's own code
    gaps = pd.read_csv(tmp_path / "probes" / "ticket-gaps.csv")
    spread, _ = ticket_spread([whole["intragpu"]] * len(T.TICKET_SHAPES), 132)
    want, _ = gap_cv([whole["intragpu-g2"]], spread, 132)
    assert len(gaps) == len(T.GAP_SHAPES) and gaps["gap_cv"].tolist() == pytest.approx([want] * len(T.GAP_SHAPES))
    assert 0.3 < want < 1.5 and (tmp_path / "probes" / "tiles-8192x8192x2-tickets-g2.csv.gz").is_file()
