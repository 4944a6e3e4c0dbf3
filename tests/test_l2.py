"""ctasim.l2: CUTLASS's launch order reproduced, and L2 reuse of operand panels in launch order."""

from collections import OrderedDict
import time

import numpy as np
import pytest

from ctasim import l2
from ctasim.l2 import cutlass_sm90_grid_ctas, cutlass_sm90_order, cutlass_sm90_raster, gemm_ns, wave_ns, wave_traffic
from ctasim.plan import grouped_rows_order, raster_order


def tiles(order, tiles_n):
    return [(-1, -1) if t < 0 else (int(t) // tiles_n, int(t) % tiles_n) for t in order]


# ----------------------------------------------------------------------------------------- CUTLASS's order
def test_along_n_swizzle1_walks_cluster_row_pairs_across_the_columns():
    assert tiles(cutlass_sm90_order(4, 3, "along_n", 1), 3) == [
        (0, 0), (1, 0), (0, 1), (1, 1), (0, 2), (1, 2), (2, 0), (3, 0), (2, 1), (3, 1), (2, 2), (3, 2)]


def test_along_m_swizzle2_walks_bands_of_two_columns_down_the_rows():
    assert tiles(cutlass_sm90_order(4, 4, "along_m", 2), 4) == [
        (0, 0), (1, 0), (0, 1), (1, 1), (2, 0), (3, 0), (2, 1), (3, 1),
        (0, 2), (1, 2), (0, 3), (1, 3), (2, 2), (3, 2), (2, 3), (3, 3)]


@pytest.mark.parametrize("swizzle", [1, 2, 4, 8])
def test_along_n_is_groups_of_2x_swizzle_row_blocks(swizzle):
    assert np.array_equal(cutlass_sm90_order(32, 16, "along_n", swizzle), grouped_rows_order(32, 16, 2 * swizzle))


def test_along_m_swizzle1_is_column_raster():
    assert np.array_equal(cutlass_sm90_order(8, 5, "along_m", 1), raster_order(8, 5, "column"))


def test_heuristic_walks_along_m_only_when_the_grid_is_wider_than_tall():
    assert cutlass_sm90_raster(16, 32, "heuristic", 1) == "along_m"   # M = 2048, N = 8192
    assert cutlass_sm90_raster(32, 32, "heuristic", 1) == "along_n"   # a tie goes along N
    assert cutlass_sm90_raster(128, 32, "heuristic", 8) == "along_n"
    assert np.array_equal(cutlass_sm90_order(16, 32, "heuristic", 4), cutlass_sm90_order(16, 32, "along_m", 4))


def test_swizzle_shrinks_when_the_short_side_is_too_short():
    # 4 row-blocks (< 6): swizzle 8 is used as 4 (log 2), so along N it walks groups of 8 row-blocks padded to 8.
    assert l2.cutlass_sm90_log_swizzle(4, 40, 8) == 2
    assert l2.cutlass_sm90_log_swizzle(2, 40, 8) == 1
    assert l2.cutlass_sm90_log_swizzle(1, 40, 8) == 0
    assert np.array_equal(cutlass_sm90_order(4, 40, "along_m", 8), cutlass_sm90_order(4, 40, "along_m", 4))


def test_padding_slots_are_marked_and_each_tile_runs_once():
    o = cutlass_sm90_order(3, 3, "along_n", 2)  # rows padded to 4 (2x1 clusters x swizzle 2), columns to 4
    assert tiles(o, 3)[:4] == [(0, 0), (1, 0), (2, 0), (-1, -1)]
    assert o.size == 16 and sorted(o[o >= 0].tolist()) == list(range(9))


def test_grid_is_132_ctas_of_2x1_clusters_truncated_by_small_problems():
    assert cutlass_sm90_grid_ctas(128, 32, "along_n", 8) == 132
    assert cutlass_sm90_grid_ctas(128, 32, "along_m", 1) == 132
    assert cutlass_sm90_grid_ctas(2, 3, "along_n", 1) == 6


# ------------------------------------------------------------------------------------------------ reuse
def unit(order, tm, tn, slots, cap):
    """Tiles of 1 x 1 with K = 1 and 1-byte elements: every panel is 1 byte; no stores."""
    return wave_traffic(order, tm, tn, 1, 1, 1, 1, slots, cap, store_elem_bytes=0)


def test_partial_hit_interpolates_over_the_k_slices():
    # slots 1: wave 0 (0,0), wave 1 (1,1), wave 2 (1,0), wave 3 (0,1). Worked by hand, capacity 3.5 bytes:
    # wave 2: A1 hits (distance 2), W0 from wave 0 has distance 4 - s -> hits for s >= 0.5;
    # wave 3: A0 distance 4 (miss), W1 from wave 1 has distance 3 + s -> hits for s <= 0.5.
    tr = unit([0, 3, 2, 1], 2, 2, 1, 3.5)
    assert tr.a_hbm.tolist() == [1, 1, 0, 1]
    assert tr.w_hbm.tolist() == [1, 1, 0.5, 0.5]
    assert tr.footprint.tolist() == [2, 2, 2, 2]


def test_panels_that_fit_come_from_hbm_once():
    tm, tn = 8, 6
    tr = wave_traffic(raster_order(tm, tn, "row"), tm * 128, tn * 256, 1024, 128, 256, 2, 12, 60 * 2**20,
                      store_elem_bytes=0)
    total_panels = (tm * 128 + tn * 256) * 1024 * 2
    assert tr.hbm.sum() == pytest.approx(total_panels)
    assert tr.w_hbm[1:].sum() == 0  # every W column was read in wave 0


def test_first_wave_is_cold_and_a_zero_cache_rereads_every_footprint():
    o = cutlass_sm90_order(16, 8, "along_n", 2)
    big = wave_traffic(o, 2048, 2048, 4096, 128, 256, 2, 20, 1e12, store_elem_bytes=0)
    none = wave_traffic(o, 2048, 2048, 4096, 128, 256, 2, 20, 0.0, store_elem_bytes=0)
    assert big.hbm[0] == none.hbm[0] == big.footprint[0]
    assert np.allclose(none.hbm, none.footprint)


def test_stores_are_the_output_tiles_of_the_wave():
    tr = wave_traffic(raster_order(3, 2, "row"), 300, 400, 64, 128, 256, 2, 4, 0.0)
    # rows 128, 128, 44; columns 256, 144: wave 0 = row-blocks 0, 1; wave 1 = row-block 2.
    assert tr.store.tolist() == [2 * (128 * 256 + 128 * 144) * 2, (44 * 256 + 44 * 144) * 2]
    assert tr.tiles.tolist() == [4, 2]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_hbm_bytes_never_grow_with_the_l2(seed):
    rng = np.random.default_rng(seed)
    o = rng.permutation(10 * 7)
    caps = np.linspace(0, 20, 41)
    totals = [unit(o, 10, 7, 4, c).hbm.sum() for c in caps]
    assert np.all(np.diff(totals) <= 1e-9)
    assert totals[0] == unit(o, 10, 7, 4, 0).footprint.sum() and totals[-1] == 17  # every panel once


def lru_oracle(order, tm, tn, slots, cap, slices=200):
    """Independent oracle: an LRU cache of k-slices (1/slices of a 1-byte panel each); in wave v, slice s of
    every panel the wave uses is touched at time v + s/slices (the wave's tiles in step). Misses per wave."""
    cache, used, miss = OrderedDict(), 0.0, []
    waves = [order[i:i + slots] for i in range(0, len(order), slots)]
    for tiles_ in waves:
        panels = sorted({("a", t // tn) for t in tiles_} | {("w", t % tn) for t in tiles_})
        m = 0.0
        for s in range(slices):
            for p in panels:
                key = (p, s)
                if key in cache:
                    cache.move_to_end(key)
                    continue
                m += 1.0 / slices
                cache[key] = True
                used += 1.0 / slices
                while used > cap + 1e-12:
                    cache.popitem(last=False)
                    used -= 1.0 / slices
        miss.append(m)
    return np.array(miss)


@pytest.mark.parametrize("seed,cap", [(0, 3.0), (1, 5.5), (2, 8.0), (3, 4.25)])
def test_reuse_distance_model_agrees_with_a_slice_level_lru(seed, cap):
    rng = np.random.default_rng(seed)
    tm, tn, slots = 6, 5, 4
    o = rng.permutation(tm * tn)
    model = unit(o, tm, tn, slots, cap).hbm
    oracle = lru_oracle(o, tm, tn, slots, cap)
    # The oracle's panels of one wave are touched one after another within a time step: a distance error of up
    # to one slice per panel of the wave.
    assert np.allclose(model, oracle, atol=0.06)


def test_wave_time_is_the_larger_of_math_and_hbm_plus_the_exposed_share():
    tr = l2.WaveTraffic(a_hbm=np.array([1000.0, 0.0]), w_hbm=np.array([0.0, 0.0]), footprint=np.zeros(2),
                        store=np.array([0.0, 100.0]), tiles=np.array([1, 1]))
    assert wave_ns(tr, 50.0, 10.0).tolist() == [100.0, 50.0]
    assert wave_ns(tr, 50.0, 10.0, exposed=0.5).tolist() == [100.0, 55.0]
    assert gemm_ns(tr, 50.0, 10.0, exposed=0.5, fixed_ns=7.0) == 162.0
    # the exposed share charged at its own rate (Hardware.l2_hbm_exposed_gbps): 0 or None is hbm_gbps; at twice the
    # rate the exposed part halves and the roofline's HBM time stays at hbm_gbps
    assert wave_ns(tr, 50.0, 10.0, exposed=0.5, exposed_gbps=0.0).tolist() == [100.0, 55.0]
    assert wave_ns(tr, 50.0, 10.0, exposed=0.5, exposed_gbps=20.0).tolist() == [100.0, 52.5]
    assert wave_ns(tr, 90.0, 10.0, exposed=0.5, exposed_gbps=20.0).tolist() == [115.0, 92.5]


def test_bad_orders_raise():
    with pytest.raises(ValueError, match="tile ids once"):
        wave_traffic([0, 0, 1, 2], 2, 2, 1, 1, 1, 1, 2, 1.0)
    with pytest.raises(ValueError, match="swizzle"):
        cutlass_sm90_order(4, 4, "along_n", 3)
    with pytest.raises(ValueError, match="raster"):
        cutlass_sm90_order(4, 4, "diagonal", 1)


def test_both_distinct_byte_methods_agree_with_brute_force():
    rng = np.random.default_rng(5)
    tm, tn, slots = 12, 7, 5
    o = rng.permutation(tm * tn)
    W = -(-o.size // slots)
    wave = np.arange(o.size) // slots
    used = np.zeros((tm + tn, W), bool)
    used[o // tn, wave] = True
    used[tm + o % tn, wave] = True
    q, w = np.nonzero(used)
    size = rng.random(tm + tn) + 0.5
    first = np.r_[True, q[1:] != q[:-1]]
    prev = np.where(first, -1, np.r_[-1, w[:-1]])
    a, b = np.triu_indices(W)
    brute = np.array([size[used[:, i:j + 1].any(1)].sum() for i, j in zip(a, b)])
    for method in ("window", "table"):
        assert np.allclose(l2._distinct_bytes(prev, w, size[q], W, a, b, method), brute)


def test_100k_tiles_give_one_traffic_entry_per_wave_of_the_grid():
    o = cutlass_sm90_order(782, 128, "along_m", 1)
    for form in l2.DRIFT_FORMS:
        tr = wave_traffic(o, 782 * 128, 128 * 256, 8192, 128, 256, 2, 132, 60 * 2**20, drift=0.0078, drift_form=form)
        assert tr.waves == 759 and tr.tiles.sum() == 782 * 128 and (tr.drift_hbm >= 0).all()


@pytest.mark.bench
@pytest.mark.parametrize("form", l2.DRIFT_FORMS)
def test_100k_tiles_in_well_under_a_second(form):
    """A benchmark (pytest -m bench), not a default test: wall time depends on the machine and its load."""
    o = cutlass_sm90_order(782, 128, "along_m", 1)
    kw = dict(drift=0.0078, drift_form=form)
    wave_traffic(o, 782 * 128, 128 * 256, 8192, 128, 256, 2, 132, 60 * 2**20, **kw)
    t = time.perf_counter()
    tr = wave_traffic(o, 782 * 128, 128 * 256, 8192, 128, 256, 2, 132, 60 * 2**20, **kw)
    assert time.perf_counter() - t < 0.5 and tr.waves == 759


def test_expected_range_of_normal_draws():
    r = l2.expected_range(np.array([0, 1, 2, 8, 66]))
    assert r[0] == r[1] == 0.0
    assert r[2] == pytest.approx(1.128, rel=0.06) and r[3] == pytest.approx(2.847, rel=0.01)
    assert r[4] == pytest.approx(4.70, rel=0.02)


def test_drift_rereads_start_when_the_held_bytes_pass_the_capacity():
    # one panel of 100 bytes shared by 2 tiles in each of 5 waves: held(v) = 100 * drift * v * range(2)
    waves = np.arange(5)
    sharers = [(waves, np.full(5, 2.0), np.full(5, 100.0))]
    rng2 = float(l2.expected_range(np.array([2]))[0])
    got = l2.drift_rereads(sharers, 5, 1.0, capacity=250.0)
    held = 100.0 * waves * rng2
    want = np.where(held > 250.0, (1 - 250.0 / np.maximum(held, 1.0)) * 100.0, 0.0)
    assert np.allclose(got, want) and got[0] == 0.0 and got[1] == 0.0 and got[-1] > 0
    assert not l2.drift_rereads(sharers, 5, 0.0, capacity=250.0).any()  # lockstep: nothing read again
    # a panel read by one tile is never read again
    assert not l2.drift_rereads([(waves, np.ones(5), np.full(5, 100.0))], 5, 5.0, capacity=1.0).any()


def test_wave_traffic_with_drift_adds_rereads_and_counts_w_sharers_in_clusters():
    o = cutlass_sm90_order(256, 32, "along_m", 8)
    base = wave_traffic(o, 256 * 128, 32 * 256, 8192, 128, 256, 2, 132, 60 * 2**20)
    d1 = wave_traffic(o, 256 * 128, 32 * 256, 8192, 128, 256, 2, 132, 60 * 2**20, drift=0.0078, cluster_m=1)
    d2 = wave_traffic(o, 256 * 128, 32 * 256, 8192, 128, 256, 2, 132, 60 * 2**20, drift=0.0078, cluster_m=2)
    assert base.drift_hbm is None and np.allclose(d1.hbm - d1.drift_hbm, base.hbm)
    assert d1.drift_hbm.sum() > d2.drift_hbm.sum() > 0  # multicast: a cluster reads W once
    assert d2.drift_hbm[0] == 0.0 and d2.drift_hbm[-2] > d2.drift_hbm[len(d2.drift_hbm) // 2]  # -1: 8 tiles


def test_the_ticket_state_hold_takes_the_least_missing_consistent_state():
    from ctasim import costs
    from ctasim.plan import raster_order
    from ctasim.spec import Layer, load_hardware

    hw = load_hardware("h200-x2-mechanism").with_ticket_law("threshold")  # the states are the threshold law's
    layer = Layer(16384, 8192, 8192, 128, 256)
    order = raster_order(layer.tiles_m, layer.tiles_n, "row")
    kw = dict(kernel="ctapipe", drift=0.0, ticket_spread=0.0524)
    thrash = costs.order_waves(layer, hw, 2, order, 132, **kw)
    hold = costs.order_waves(layer, hw, 2, order, 132, ticket_state="hold", **kw)
    lock = costs.order_waves(layer, hw, 2, order, 132, kernel="ctapipe", drift=0.0, ticket_spread=0.0)
    # at H = 8192 both states are consistent once the spread has grown: thrash takes the misses, hold keeps the reuse
    assert thrash[20] > 1.3 * lock[20] and hold[20] == pytest.approx(lock[20])
    assert (hold <= thrash + 1e-9).all()
    # where the all-hit state is inconsistent, hold collapses too (H = 12288, late waves)
    big = Layer(16384, 12288, 12288, 128, 256)
    o2 = raster_order(big.tiles_m, big.tiles_n, "row")
    h2 = costs.order_waves(big, hw, 2, o2, 132, ticket_state="hold", **kw)
    t2 = costs.order_waves(big, hw, 2, o2, 132, **kw)
    assert h2[30] == pytest.approx(t2[30]) and h2[5] < t2[5]
    with pytest.raises(ValueError, match="state must be one of"):
        costs.order_waves(layer, hw, 2, order, 132, ticket_state="maybe", **kw)
    # the config's ticket_state is the default: a profile with "hold" times the waves as the argument does
    held = hw.with_tickets(ticket_state="hold")
    np.testing.assert_array_equal(costs.order_waves(layer, held, 2, order, 132, **kw), hold)
    np.testing.assert_array_equal(costs.order_waves(layer, held, 2, order, 132, ticket_state="thrash", **kw), thrash)


def test_a_profiles_ticket_state_is_checked_and_is_the_threshold_laws_only():
    from ctasim.spec import SpecError, load_hardware, validate_hardware

    hw = load_hardware("h200-x1-calibrated")
    assert {c.ticket_state for c in hw.kernel_configs} == {"thrash"}
    validate_hardware(hw.with_ticket_law("threshold").with_tickets(ticket_state="hold"), "x")
    with pytest.raises(SpecError, match="ticket_state: must be one of thrash, hold, got 'maybe'"):
        validate_hardware(hw.with_ticket_law("threshold").with_tickets(ticket_state="maybe"), "x")
    with pytest.raises(SpecError, match="the 'threshold' ticket law's choice, not 'survival'"):
        validate_hardware(hw.with_tickets(ticket_state="hold"), "x")


def test_the_share_law_misses_held_over_held_plus_free_capacity_and_takes_a_capacity_per_wave():
    waves = np.arange(5)
    sharers = [(waves, np.full(5, 2.0), np.full(5, 100.0))]
    held = 100.0 * waves * float(l2.expected_range(np.array([2]))[0])
    cap = np.array([250.0, 250.0, 0.0, 100.0, 1e9])
    got = l2.drift_rereads(sharers, 5, 1.0, capacity=cap, law="share")
    want = np.where(held > 0, held / (held + cap), 0.0) * 100.0
    assert np.allclose(got, want) and got[0] == 0.0 and got[1] > 0  # no threshold: wave 1 already misses some
    assert got[2] == pytest.approx(100.0)  # no capacity left: every later sharer misses
    with pytest.raises(ValueError, match="law must be"):
        l2.drift_rereads(sharers, 5, 1.0, capacity=1.0, law="hard")
    for bad in (-1.0, np.ones(4)):  # a negative capacity or one of the wrong length is refused, not broadcast
        with pytest.raises(ValueError, match="capacity must be bytes >= 0"):
            l2.drift_rereads(sharers, 5, 1.0, capacity=bad, law="share")


def test_the_carried_form_leaves_panels_read_by_every_wave_alone():
    """Along M in groups of 8 columns, the W panels of a group are read by every wave: drift cannot part their
    sharers. The carried form charges only the A panels (each row's 8 tiles in one wave), the wave form both; over
    many rounds the wave form tends to every later sharer missing, the carried form levels off below it."""
    o = cutlass_sm90_order(1024, 32, "along_m", 8)  # 131072 x 8192: 249 rounds
    kw = dict(m=1024 * 128, n=32 * 256, k=8192, tile_m=128, tile_n=256, elem_bytes=2, slots=132,
              l2_bytes=60 * 2**20, drift=0.0078, cluster_m=2)
    wave = wave_traffic(o, **kw)
    carried = wave_traffic(o, **kw, drift_form="carried")
    assert carried.drift_hbm.sum() < wave.drift_hbm.sum()
    late = slice(200, 240)
    # the A re-reads bound the carried form: 7 more reads of 18 rows' 2 MiB panels a wave at most
    a_panel = 128 * 8192 * 2
    assert carried.drift_hbm[late].max() < 7 * 18 * a_panel < wave.drift_hbm[late].max()
    assert carried.drift_hbm[5] > 0 == wave.drift_hbm[5]  # the share law starts with the drift, no threshold
    with pytest.raises(ValueError, match="drift_form must be one of"):
        wave_traffic(o, **kw, drift_form="per-wave")


def test_the_carried_form_takes_the_carried_panels_cached_bytes_off_the_capacity():
    """Two row-blocks, two column tiles, two slots: wave 0 reads A0, W0, W1; wave 1 reads A1 (two sharers) and W0, W1
    again (carried, and with this L2 every byte of them hits). Wave 1's drift re-reads: A1's later sharer misses the
    share held / (held + free) with free = capacity - the carried panels' cached bytes."""
    m, n, k, tm, tn, eb = 256, 512, 64, 128, 256, 2
    size_a, size_w = tm * k * eb, tn * k * eb
    cap = 3.0 * size_w  # W0 and W1 both fit between their two uses; 1 x size_w of it is left free
    drift = 0.5
    tr = wave_traffic([0, 1, 2, 3], m, n, k, tm, tn, eb, 2, cap, drift=drift, drift_form="carried")
    assert tr.w_hbm[1] == 0.0  # the carried W panels hit in wave 1
    held = drift * 1 * size_a * float(l2.expected_range(np.array([2]))[0])
    free = cap - 2 * size_w
    assert tr.drift_hbm[1] == pytest.approx(held / (held + free) * size_a)
    assert tr.drift_hbm[0] == 0.0  # wave 0: no spread yet


def test_the_interleaved_form_exempts_a_carried_panel_by_the_share_of_its_reads_the_l2_outlasts():
    """The example above in the form "interleaved": the carried W panels are exempt by 1 - exp(-n tau) with n their
    sharers in the wave (one each) and tau = capacity / the wave's HBM bytes; the rest of their bytes joins A1's."""
    m, n, k, tm, tn, eb = 256, 512, 64, 128, 256, 2
    size_a, size_w = tm * k * eb, tn * k * eb
    cap, drift = 3.0 * size_w, 0.5
    kw = dict(drift=drift, cluster_m=1)
    tr = wave_traffic([0, 1, 2, 3], m, n, k, tm, tn, eb, 2, cap, **kw, drift_form="interleaved")
    carried = wave_traffic([0, 1, 2, 3], m, n, k, tm, tn, eb, 2, cap, **kw, drift_form="carried")
    base = tr.a_hbm[1] + tr.w_hbm[1] + tr.store[1]  # A1 missed, W0 and W1 hit, the stores
    share = np.exp(-1.0 * cap / base)  # each W panel: one sharer in wave 1
    r2 = float(l2.expected_range(np.array([2]))[0])
    assert 0 < share < 1
    held = drift * size_a * r2  # a W panel with one sharer has a range of 0: nothing of it held, nothing re-read
    free = cap - 2 * size_w
    assert tr.drift_hbm[1] == pytest.approx(held / (held + free) * size_a) == pytest.approx(carried.drift_hbm[1])
    # with two sharers a W panel (two row-blocks a wave, cluster_m = 1) its unexempt share is held and re-read
    m2 = 512
    o = list(range(8))  # 4 row-blocks x 2 column tiles, 4 slots: wave 0 rows 0-1, wave 1 rows 2-3; W carried
    tr = wave_traffic(o, m2, n, k, tm, tn, eb, 4, cap, **kw, drift_form="interleaved")
    carried = wave_traffic(o, m2, n, k, tm, tn, eb, 4, cap, **kw, drift_form="carried")
    base = tr.a_hbm[1] + tr.w_hbm[1] + tr.store[1]
    share = np.exp(-2.0 * cap / base)
    held_a = drift * 2 * size_a * r2  # rows 2 and 3, two sharers each
    held_w = drift * 2 * size_w * share * r2
    free = max(cap - 2 * size_w * (1.0 - tr.w_hbm[1] / (2 * size_w)), 0.0)
    held = held_a + held_w
    again = 2 * size_a + 2 * size_w * share
    assert tr.drift_hbm[1] == pytest.approx(held / (held + free) * again)
    assert tr.drift_hbm[1] > carried.drift_hbm[1] > 0


def test_the_interleaved_form_counts_a_w_panels_sharers_in_clusters():
    """8 row-blocks x 2 column tiles on 8 slots with 2x1 clusters: wave 1 (rows 4-7) reads each carried W panel from
    4 tiles, 2 clusters (multicast), so n = 2 in the exemption and in the range, and A's 4 panels 2 sharers each."""
    m, n, k, tm, tn, eb = 1024, 512, 64, 128, 256, 2
    size_a, size_w = tm * k * eb, tn * k * eb
    cap, drift = 3.0 * size_w, 0.5
    tr = wave_traffic(list(range(16)), m, n, k, tm, tn, eb, 8, cap, drift=drift, cluster_m=2, drift_form="interleaved")
    base = tr.a_hbm[1] + tr.w_hbm[1] + tr.store[1]
    share = np.exp(-2.0 * cap / base)  # two cluster sharers a tile time
    r2 = float(l2.expected_range(np.array([2]))[0])
    held = drift * (4 * size_a * r2 + 2 * size_w * share * r2)
    again = 4 * size_a + 2 * size_w * share
    free = max(cap - (2 * size_w - tr.w_hbm[1]), 0.0)  # the carried W panels' cached bytes off the capacity
    assert tr.drift_hbm[1] == pytest.approx(held / (held + free) * again)


def test_the_interleaved_form_picks_along_m_for_a_long_k_narrow_n_gemm():
    """32768 x 5120 x 27648 (a down projection): measured along_m/swizzle4 fastest, along_n/swizzle4 1.5% slower
    (bench/results/hw/2026-12-02-block-gemm-orders); the carried form picks along N and prices it 2.8% under the
    best measured order, the interleaved form picks along M. A square GEMM keeps its high-reuse order's time."""
    from ctasim import costs
    from ctasim.spec import Layer, load_hardware

    hw, carried = load_hardware("h200-x1-calibrated"), load_hardware("h200-x1-calibrated-carried")
    down = Layer(m=32768, n=5120, k=27648)
    assert costs.tuned_gemm(down, hw, 2).schedule == "along_m/swizzle4"
    assert costs.tuned_gemm(down, carried, 2).schedule.startswith("along_n")
    assert costs.tuned_gemm(down, hw, 2).total_ns / 1e6 == pytest.approx(11.80, rel=0.01)  # measured 11.8027 ms
    square = Layer(m=32768, n=8192, k=8192)
    assert costs.tuned_gemm(square, hw, 2).total_ns == pytest.approx(costs.tuned_gemm(square, carried, 2).total_ns,
                                                                      rel=0.01)


# ----------------------------------------------------------------------------------------- reuse by survival
CURVE = ((0.0, 0.375, 0.5, 0.625, 0.75, 1.0), (1.0, 0.998, 0.91, 0.478, 0.026, 0.0))


@pytest.mark.parametrize("lo, hi", [(0.0, 0.2), (0.3, 0.55), (0.45, 0.9), (0.6, 0.61), (0.2, 2.5), (1.2, 3.0)])
def test_survival_mean_is_the_curves_mean_over_the_interval(lo, hi):
    x = np.linspace(lo, hi, 200001)
    numeric = np.trapezoid(l2.survival_share(x, CURVE), x) / (hi - lo)
    assert float(l2.survival_mean(lo, hi, CURVE)) == pytest.approx(numeric, abs=1e-7)


def test_survival_mean_holds_the_last_share_beyond_the_curve():
    curve = ((0.0, 0.5, 1.0), (1.0, 0.6, 0.2))
    assert float(l2.survival_mean(1.5, 3.5, curve)) == pytest.approx(0.2)
    x = np.linspace(0.8, 2.0, 200001)
    assert float(l2.survival_mean(0.8, 2.0, curve)) == pytest.approx(
        np.trapezoid(l2.survival_share(x, curve), x) / 1.2, abs=1e-7)


def test_survival_mean_of_an_empty_interval_is_the_curve_there_and_bad_intervals_are_refused():
    assert float(l2.survival_mean(0.55, 0.55, CURVE)) == pytest.approx(float(l2.survival_share(0.55, CURVE)))
    with pytest.raises(ValueError, match="0 <= lo <= hi"):
        l2.survival_mean(0.6, 0.5, CURVE)


def test_a_step_survival_curve_at_the_whole_l2_prices_reuse_as_the_lru():
    """A line kept whole until the whole L2 came in and gone after is the LRU: both laws then give the same
    traffic (the survival law through survival_mean, the LRU through the crossing slice)."""
    cap = 60 * 2**20
    step = ((0.0, 1.0, 1.0 + 1e-9), (1.0, 1.0, 0.0))
    for order in (raster_order(64, 32, "row"), grouped_rows_order(64, 32, 8), cutlass_sm90_order(64, 32, "along_m", 2)):
        kw = dict(m=64 * 128, n=32 * 256, k=4096, tile_m=128, tile_n=256, elem_bytes=2, slots=132, l2_bytes=cap)
        lru = wave_traffic(order, **kw)
        surv = wave_traffic(order, **kw, reuse_law="survival", survival=step)
        np.testing.assert_allclose(surv.hbm, lru.hbm, rtol=1e-6)


def test_reuse_by_the_measured_curve_misses_where_the_lru_hits_past_0_4_of_the_l2():
    """W of 40 MiB (0.67 of a 60 MiB L2) read again every wave in row order: the LRU keeps it, the curve loses most
    of it, and never keeps more than the LRU."""
    cap = 60 * 2**20
    kw = dict(m=64 * 128, n=20 * 256, k=4096, tile_m=128, tile_n=256, elem_bytes=2, slots=132, l2_bytes=cap)
    order = raster_order(64, 20, "row")
    lru = wave_traffic(order, **kw)
    surv = wave_traffic(order, **kw, reuse_law="survival", survival=CURVE)
    assert surv.w_hbm[2:].sum() > 2 * lru.w_hbm[2:].sum() and (surv.hbm >= lru.hbm - 1e-6).all()


def test_a_reuse_law_it_does_not_know_or_without_a_curve_is_refused():
    o = raster_order(4, 4, "row")
    with pytest.raises(ValueError, match="reuse_law must be one of"):
        wave_traffic(o, 512, 1024, 64, 128, 256, 2, 4, 1e6, reuse_law="fifo")
    with pytest.raises(ValueError, match="needs the L2 survival curve"):
        wave_traffic(o, 512, 1024, 64, 128, 256, 2, 4, 1e6, reuse_law="survival")


def test_the_absolute_drift_law_keeps_the_drift_time_a_round_whatever_k():
    """``KernelConfig.drift_k_ref``: 0 leaves ``cta_drift`` tile times at every K; > 0 scales it by ``drift_k_ref /
    K`` (the same time a round as at K = drift_k_ref), so at that K the two laws agree, at four times it the absolute
    law charges the plain GEMM a quarter of the drift, and with no drift it changes nothing."""
    import dataclasses

    from ctasim import costs
    from ctasim.spec import Layer, load_hardware

    hw = load_hardware("h200-x1-calibrated")  # the tile law (drift_k_ref 0)
    cfg = hw.config(128, 256)
    assert cfg.drift_k_ref == 0 and cfg.cta_drift > 0
    absolute = dataclasses.replace(hw, kernel_configs=tuple(
        dataclasses.replace(c, drift_k_ref=8192.0) if c is cfg else c for c in hw.kernel_configs))
    for k, share in ((8192, 1.0), (32768, 0.25)):
        lay = Layer(m=16384, n=8192, k=k)
        order, slots, tile_law = costs.cutlass_waves(lay, hw, 2, "along_m", 8)
        _, _, abs_law = costs.cutlass_waves(lay, absolute, 2, "along_m", 8)
        want = costs.order_waves(lay, hw, 2, order, slots, drift=cfg.cta_drift * share)
        assert np.allclose(abs_law, want) and (share < 1) == (abs_law.sum() < tile_law.sum())
    assert costs.plain_drift(dataclasses.replace(cfg, cta_drift=0.0, drift_k_ref=8192.0), 32768) == 0.0


@pytest.mark.parametrize("k, absolute_share, capped_share", [(2048, 4.0, 1.0), (8192, 1.0, 1.0), (32768, 0.25, 0.25)])
def test_the_capped_drift_law_is_the_absolute_one_above_its_k_and_the_tile_law_below(k, absolute_share, capped_share):
    """``KernelConfig.drift_k_law = "capped"`` (registered plan 98): ``cta_drift x min(1, drift_k_ref / K)`` tile times
    a round, where the absolute law charges a short K more drift in tile times than at ``drift_k_ref``."""
    import dataclasses

    from ctasim import costs
    from ctasim.spec import Layer, load_hardware

    from ctasim.profiles import before_h100_capped

    hw = before_h100_capped(load_hardware("h100-x1-datasheet"))  # the absolute law at drift_k_ref 8192 (plan 97's)
    cfg = hw.config(128, 256)
    assert cfg.drift_k_ref == 8192 and cfg.drift_k_law == "absolute"
    capped_cfg = dataclasses.replace(cfg, drift_k_law="capped")
    assert costs.plain_drift(cfg, k) == pytest.approx(cfg.cta_drift * absolute_share)
    assert costs.plain_drift(capped_cfg, k) == pytest.approx(cfg.cta_drift * capped_share)
    capped = dataclasses.replace(hw, kernel_configs=tuple(capped_cfg if c is cfg else c for c in hw.kernel_configs))
    lay = Layer(m=16384, n=16384, k=k)
    a = costs.tuned_gemm(lay, hw, 2).total_ns
    c = costs.tuned_gemm(lay, capped, 2).total_ns
    assert (c < a) == (absolute_share > capped_share) and (c == a) == (absolute_share == capped_share)


def _fields(t):
    return [t.a_hbm, t.w_hbm, t.footprint, t.store, t.tiles, t.drift_hbm, t.ticket_hbm]


def _same(a, b):
    return all((x is None and y is None) or (x is not None and y is not None and np.array_equal(x, y))
               for x, y in zip(_fields(a), _fields(b)))


def test_wave_traffic_is_kept_per_argument_set_and_read_only():
    """A repeated call returns the kept result (its arrays read-only, so no caller can change what the next one gets);
    every argument that moves the result is part of the key: each changed alone after the base call gives what the
    uncached computation gives, not the kept base result."""
    from ctasim.spec import load_hardware

    hw = load_hardware("h200-x1-calibrated")
    surv = (hw.l2_survival_taken, hw.l2_survival_share)
    order = raster_order(64, 32, "row")
    base = dict(order=order, m=8192, n=8192, k=4096, tile_m=128, tile_n=256, elem_bytes=2, slots=132,
                l2_bytes=100e6)
    l2._TRAFFIC.clear()
    first = wave_traffic(**base)
    assert wave_traffic(**base) is first and wave_traffic(**dict(base, order=order.copy())) is first
    with pytest.raises(ValueError):
        first.w_hbm[0] = 1.0
    changes = [dict(order=grouped_rows_order(64, 32, 8)), dict(k=2048), dict(l2_bytes=20e6), dict(l2_efficiency=0.3),
               dict(store_elem_bytes=0), dict(drift=0.02), dict(ticket_spread=0.1),
               dict(ticket_spread=0.1, ticket_state="hold"), dict(ticket_spread=0.1, ticket_law="partition"),
               dict(ticket_spread=0.1, ticket_law="survival", survival=surv),
               dict(ticket_spread=0.1, ticket_law="survival", survival=surv, ticket_gap_cv=0.7),
               dict(ticket_spread=0.1, ticket_law="survival", survival=surv, ticket_touched=1.3),
               dict(drift=0.02, drift_form="carried"), dict(drift=0.02, cluster_m=2),
               dict(reuse_law="survival", survival=surv), dict(slots=66), dict(elem_bytes=1)]
    for change in changes:
        args = dict(base, **change)
        direct = l2._wave_traffic(*[args.get(p, q.default) for p, q in
                                    __import__("inspect").signature(wave_traffic).parameters.items()])
        assert not _same(direct, first), change  # the change moves the result
        assert _same(wave_traffic(**args), direct), change
    assert len(l2._TRAFFIC) == len(changes) + 1


def test_a_patched_law_is_not_served_from_before(monkeypatch):
    """bench/posthoc_ticket_law.py prices the partition law with another factor by setting ``l2.PARTITIONS``: the
    kept result of the same arguments under the module's own factor is not what it gets."""
    order = raster_order(64, 32, "row")
    args = dict(order=order, m=8192, n=8192, k=4096, tile_m=128, tile_n=256, elem_bytes=2, slots=132, l2_bytes=100e6,
                ticket_spread=0.1, ticket_law="partition")
    before = wave_traffic(**args)
    monkeypatch.setattr(l2, "PARTITIONS", 1.5)
    after = wave_traffic(**args)
    assert not np.array_equal(after.ticket_hbm, before.ticket_hbm)
    monkeypatch.undo()
    assert wave_traffic(**args) is before


def test_an_l2_to_sm_read_rate_bounds_a_wave_by_its_clusters_reads():
    """``Hardware.l2_sm_read_gbps``: 0 (every profile) changes nothing; set, a wave takes at least its tiles' L2
    reads at it, a 1x2 cluster's A and a 2x1 cluster's W read once for its two CTAs; a wave its math or HBM bounds
    longer is not moved; a negative rate is refused."""
    import dataclasses

    from ctasim import costs
    from ctasim.plan import raster_order
    from ctasim.spec import Layer, SpecError, load_hardware, validate_hardware

    hw = load_hardware("h100-x8-mechanism")
    assert hw.l2_sm_read_gbps == 0.0
    layer = Layer(16384, 5632, 5632, 128, 256)
    order = raster_order(layer.tiles_m, layer.tiles_n, "row")
    base = costs.order_waves(layer, hw, 2, order, 132, kernel="ctapipe")
    assert costs.l2_sm_reads(layer, 2) == (128 + 256) * 5632 * 2
    assert costs.l2_sm_reads(layer, 2, cluster_n=2) == (64 + 256) * 5632 * 2
    assert costs.l2_sm_reads(layer, 2, cluster_m=2) == (128 + 128) * 5632 * 2
    rate = 8700.0
    bounded = dataclasses.replace(hw, l2_sm_read_gbps=rate)
    for cm, cn in ((1, 1), (1, 2), (2, 1)):
        w = costs.order_waves(layer, bounded, 2, order, 132, kernel="ctapipe", cluster_m=cm, cluster_n=cn)
        floor = 132 * costs.l2_sm_reads(layer, 2, cm, cn) / rate
        assert np.allclose(w[:-1], np.maximum(base[:-1], floor))  # the full waves
        assert (w >= base).all()
    one = costs.order_waves(layer, bounded, 2, order, 132, kernel="ctapipe", cluster_m=1, cluster_n=1)
    assert one[0] > base[0] * 1.05  # 571 MB at 8.7 TB/s: 65.6 us over the math's 61.4
    two = costs.order_waves(layer, bounded, 2, order, 132, kernel="ctapipe", cluster_m=2, cluster_n=1)
    assert np.allclose(two, base)  # 381 MB: under the math
    slow = dataclasses.replace(hw, l2_sm_read_gbps=1.0)
    assert costs.order_waves(layer, slow, 2, order, 132, kernel="ctapipe")[0] > 1e5
    with pytest.raises(SpecError, match="l2_sm_read_gbps"):
        validate_hardware(dataclasses.replace(hw, l2_sm_read_gbps=-1.0), "test")
