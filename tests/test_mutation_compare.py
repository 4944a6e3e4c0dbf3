"""ctasim.validation.traces on hand-made traces: every figure of a comparison worked out by hand (what
`python bench/mutation.py compare` showed no test asserted: the summary row, the frames' rows and columns, the
edges of the gates, consumers found from the traces alone, a layer missing from one trace)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ctasim.validation.traces import Comparison, GATES, compare, consumer_kernels, gates, slots_of, spearman
from ctasim.plan import Kernel, Plan
from ctasim.trace import EVENT_COLUMNS, OP_COLUMNS, TILE_COLUMNS, Trace


def _tile(kernel, layer, gpu, cta, tm, acq, end, store, slot=-1, ready=None, start=None, tn=0):
    start = acq if start is None else start
    return {"source": "x", "gpu": gpu, "kernel": kernel, "layer": layer, "cta": cta, "sm": cta, "tile_m": tm,
            "tile_n": tn, "t_start": start, "t_acquire": acq, "t_ready": start if ready is None else ready,
            "t_compute_end": end, "t_store_end": store, "t_signal": store, "slot": slot}


def _trace(rows, meta=None) -> Trace:
    tiles = pd.DataFrame(rows, columns=list(TILE_COLUMNS))
    return Trace(tiles, pd.DataFrame(columns=list(EVENT_COLUMNS)), pd.DataFrame(columns=list(OP_COLUMNS)),
                 dict(meta or {}))


# Three layers, kernel i = layer i on GPU i. Kernel 0 a static producer (slot -1, t_ready = t_start), kernels 1 and 2
# queue consumers (kernel 2: one tile, popped from slot 0). The measured run has one more tile of kernel 0 (2, 0).
MEAS = [
    _tile(0, 0, 0, 0, 0, 100, 300, 310), _tile(0, 0, 0, 1, 1, 100, 300, 310), _tile(0, 0, 0, 0, 2, 100, 300, 310),
    _tile(1, 1, 1, 0, 0, 250, 450, 460, slot=0), _tile(1, 1, 1, 1, 1, 300, 500, 510, slot=1),
    _tile(2, 2, 2, 0, 0, 600, 800, 900, slot=0),
]
SIM = [
    _tile(0, 0, 0, 0, 0, 0, 200, 210), _tile(0, 0, 0, 1, 1, 0, 220, 230),
    _tile(1, 1, 1, 0, 0, 150, 350, 360, slot=1), _tile(1, 1, 1, 1, 1, 130, 330, 340, slot=0),
    _tile(2, 2, 2, 0, 0, 400, 600, 700, slot=0),
]


def test_compare_of_hand_made_traces():
    meas, sim = _trace(MEAS), _trace(SIM, {"strategy": "ctapipe", "case": "m=256"})
    c = compare(meas, sim)
    assert (c.makespan_meas_ns, c.makespan_sim_ns, c.matched, c.unmatched) == (900.0, 700.0, 5, 1)
    # origins: measured 100, simulated 0; tiles in (kernel, layer, tile_m, tile_n) order
    assert c.start_err_ns.tolist() == [0.0, 0.0, 0.0, -70.0, -100.0]
    assert c.end_err_ns.tolist() == [0.0, 20.0, 0.0, -70.0, -100.0]
    assert c.first_tile_delay.to_dict("records") == [
        {"layer": 1, "meas_ns": 150.0, "sim_ns": 130.0, "error_ns": -20.0},
        {"layer": 2, "meas_ns": 350.0, "sim_ns": 270.0, "error_ns": -80.0}]
    deq = c.dequeue.to_dict("records")
    assert [{k: v for k, v in r.items() if k != "spearman"} for r in deq] == [
        {"kernel": 1, "layer": 1, "source": "queue", "tiles": 2}, {"kernel": 2, "layer": 2, "source": "queue", "tiles": 1}]
    assert [r["spearman"] for r in deq] == pytest.approx([-1.0, 1.0])
    # slots from the simulated trace's CTAs: 2, 2, 1
    assert c.busy.to_dict("records") == pytest.approx([
        {"gpu": 0, "meas": 600 / 1800, "sim": 420 / 1400}, {"gpu": 1, "meas": 400 / 1800, "sim": 400 / 1400},
        {"gpu": 2, "meas": 200 / 900, "sim": 200 / 700}])
    # L0-L1 overlap 250..300 measured, 130..220 simulated; L1 ends before L2 begins in both
    assert c.overlap.to_dict("records") == [
        {"layers": "L0-L1", "meas": 50 / 900, "sim": 90 / 700}, {"layers": "L1-L2", "meas": 0.0, "sim": 0.0}]
    assert c.meta == {"strategy": "ctapipe", "case": "m=256"}
    assert compare(meas, _trace(SIM)).meta == {"strategy": "", "case": ""}
    # |start err| = 0 0 0 70 100, |end err| = 0 0 20 70 100: p95 at 3.8 of 4 -> 70 + 0.8 x 30
    assert c.summary() == pytest.approx({
        "makespan_meas_us": 0.9, "makespan_sim_us": 0.7, "makespan_error": -200 / 900,
        "tiles_matched": 5, "tiles_unmatched": 1,
        "start_median_ns": 0.0, "start_p95_ns": 94.0, "start_median_frac": 0.0, "start_p95_frac": 94 / 900,
        "end_median_ns": 20.0, "end_p95_ns": 94.0, "end_median_frac": 20 / 900, "end_p95_frac": 94 / 900,
        "dequeue_spearman": -1.0, "start_order_spearman": -1.0, "consumer_source": "queue",
        "first_tile_delay_L1_meas_ns": 150.0, "first_tile_delay_L1_sim_ns": 130.0,
        "first_tile_delay_L2_meas_ns": 350.0, "first_tile_delay_L2_sim_ns": 270.0,
        "busy_gpu0_meas": 600 / 1800, "busy_gpu0_sim": 420 / 1400, "busy_gpu1_meas": 400 / 1800,
        "busy_gpu1_sim": 400 / 1400, "busy_gpu2_meas": 200 / 900, "busy_gpu2_sim": 200 / 700,
        "overlap_L0-L1_meas": 50 / 900, "overlap_L0-L1_sim": 90 / 700, "overlap_L1-L2_meas": 0.0,
        "overlap_L1-L2_sim": 0.0})


def test_a_layer_the_simulation_lacks_has_no_delay_nor_overlap():
    meas, sim = _trace(MEAS), _trace(SIM[:4])  # no layer 2 simulated
    c = compare(meas, sim)
    assert c.first_tile_delay["layer"].tolist() == [1]
    assert c.overlap["layers"].tolist() == ["L0-L1"]
    assert c.unmatched == 2 and c.dequeue["kernel"].tolist() == [1]
    # and one the measurement lacks (a dropped layer 1): no L1 delay, no overlap with it
    c2 = compare(_trace([r for r in MEAS if r["layer"] != 1]), _trace(SIM))
    assert c2.first_tile_delay.empty and c2.overlap.empty


def test_one_layer_gives_empty_frames_with_their_columns_and_a_summary():
    meas, sim = _trace(MEAS[:2]), _trace(SIM[:2])
    c = compare(meas, sim)
    assert list(c.first_tile_delay.columns) == ["layer", "meas_ns", "sim_ns", "error_ns"] and c.first_tile_delay.empty
    assert list(c.dequeue.columns) == ["kernel", "layer", "source", "tiles", "spearman"] and c.dequeue.empty
    assert list(c.overlap.columns) == ["layers", "meas", "sim"] and c.overlap.empty
    row = c.summary()
    assert np.isnan(row["dequeue_spearman"]) and row["consumer_source"] == ""
    assert row["start_order_spearman"] == 1.0 and c.dequeue_spearman == 1.0


def test_no_gpu_and_no_matched_tile():
    empty = _trace([])
    c = compare(empty, empty)
    assert list(c.busy.columns) == ["gpu", "meas", "sim"] and c.busy.empty
    assert c.matched == 0 and np.isnan(c.start_median_ns) and np.isnan(c.end_p95_ns)
    other = _trace([_tile(0, 0, 0, 0, 5, 0, 10, 10)])
    c2 = compare(other, _trace(SIM[:1]))
    assert (c2.matched, c2.unmatched) == (0, 2)
    assert np.isnan(c2.start_median_ns) and np.isnan(c2.start_p95_ns) and np.isnan(c2.end_median_ns)


def test_an_unknown_alignment_is_named():
    with pytest.raises(ValueError) as e:
        compare(_trace(MEAS), _trace(SIM), align="last_tile")
    assert str(e.value) == "unknown alignment 'last_tile' (first_tile or none)"


def test_plan_consumers_and_slots_override_the_traces():
    plan = Plan("ctapipe", "c", 2)
    plan.add(Kernel, name="p", gpu=0, slots=8, outbound=0)
    plan.add(Kernel, name="p2", gpu=0, slots=4)
    plan.add(Kernel, name="c", gpu=1, slots=4, inbound=0, source="wait")
    # kernel 2's tiles show no wait (t_ready = t_start, slot -1): only the plan says it consumes
    meas = _trace([_tile(0, 0, 0, 0, 0, 0, 100, 100), _tile(2, 1, 1, 0, 0, 50, 150, 150),
                   _tile(2, 1, 1, 0, 1, 60, 160, 200)])
    sim = _trace([_tile(0, 0, 0, 0, 0, 0, 100, 100), _tile(2, 1, 1, 0, 0, 70, 170, 170),
                  _tile(2, 1, 1, 0, 1, 50, 150, 200)])
    assert slots_of(sim, plan) == {0: 8, 1: 4}
    assert slots_of(sim) == {0: 1, 1: 1}
    assert consumer_kernels(meas, sim, plan) == {2: "wait"} and consumer_kernels(meas, sim) == {}
    c = compare(meas, sim, plan)
    assert c.dequeue[["kernel", "layer", "source", "tiles"]].values.tolist() == [[2, 1, "wait", 2]]
    assert c.dequeue["spearman"].tolist() == pytest.approx([-1.0])
    assert c.busy.to_dict("records") == pytest.approx([
        {"gpu": 0, "meas": 100 / (8 * 200), "sim": 100 / (8 * 200)},
        {"gpu": 1, "meas": 200 / (4 * 200), "sim": 200 / (4 * 200)}])
    row = compare(meas, sim).summary()
    assert row["busy_gpu0_meas"] == pytest.approx(0.5) and row["consumer_source"] == ""


def test_consumers_from_the_traces_queue_and_wait():
    # kernel 1 pops (slot 0 only), kernel 2 waits (slot -1, t_ready after t_start), kernel 0 neither
    rows = [_tile(0, 0, 0, 0, 0, 0, 10, 10), _tile(1, 1, 1, 0, 0, 20, 30, 30, slot=0),
            _tile(2, 2, 2, 0, 0, 40, 50, 50, ready=35, start=30)]
    t = _trace(rows)
    assert consumer_kernels(t, t) == {1: "queue", 2: "wait"}
    c = compare(t, t)
    assert c.dequeue["source"].tolist() == ["queue", "wait"]
    assert c.summary()["consumer_source"] == "queue+wait"


def _comparison(meas=1000.0, sim=1060.0, start=20.0, end=20.0, rho=0.9):
    return Comparison(meas, sim, np.array([start]), np.array([end]), 1, 0,
                      pd.DataFrame(columns=["layer", "meas_ns", "sim_ns", "error_ns"]),
                      pd.DataFrame([{"kernel": 1, "layer": 1, "source": "queue", "tiles": 1, "spearman": rho}]),
                      pd.DataFrame(columns=["gpu", "meas", "sim"]), pd.DataFrame(columns=["layers", "meas", "sim"]))


def test_gates_pass_at_their_bounds_and_fail_past_them():
    assert GATES == {"makespan_abs_error": 0.06, "start_median_frac": 0.02, "end_median_frac": 0.02,
                     "dequeue_spearman_min": 0.9}
    g = gates(_comparison())
    assert g == {"makespan_abs_error": (True, pytest.approx(0.06), 0.06),
                 "start_median_frac": (True, 0.02, 0.02), "end_median_frac": (True, 0.02, 0.02),
                 "dequeue_spearman_min": (True, 0.9, 0.9)}
    bad = gates(_comparison(sim=1061.0, start=21.0, end=21.0, rho=0.89))
    assert [v[0] for v in bad.values()] == [False] * 4
    assert bad["start_median_frac"][1] == pytest.approx(0.021) and bad["end_median_frac"][1] == pytest.approx(0.021)
    assert gates(_comparison(sim=940.0))["makespan_abs_error"][:2] == (True, pytest.approx(0.06))
    assert gates(_comparison(rho=0.5), {"dequeue_spearman_min": 0.5})["dequeue_spearman_min"] == (True, 0.5, 0.5)


def test_spearman_edges():
    assert spearman([5, 5, 5], [1, 2, 3]) == 1.0  # a constant first sequence
    assert spearman([1, 2], [2, 1]) == pytest.approx(-1.0)  # two items are enough
    assert spearman([1], [1]) == 1.0
    assert spearman([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(0.8)
