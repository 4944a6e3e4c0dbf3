"""ctahw.percta on the CPU: the producer it runs, its descriptor, stamp buffers -> the per-tile steps, its files."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ctahw import percta as P
from ctahw import runner as rn
from ctasim.calibration import percta_steps

BASE = 1_800_000_000_000_000_000  # %globaltimer reads ~1.8e18 ns: the parse must keep every ns


@pytest.mark.parametrize("variant,cluster,signal,order", [
    ("cutlass_ctapipe", "1x1", "push", "plan"), ("cutlass_ctapipe_c12", "1x2", "push", "plan"),
    ("cutlass_ctapipe_c21", "2x1", "push", "pair_rows"), ("cutlass_ctapipe_w21g4", "2x1", "count", "group4")])
def test_the_producer_is_layer_0_of_the_variants_2_gpu_plan(variant, cluster, signal, order):
    c = P.producer_case(4096, 8192, variant)
    assert (c.cluster, c.signal, c.order) == (cluster, signal, order)
    k = c.kernel
    assert k.layer == 0 and k.mode == rn.MODE_STATIC and (k.tiles_m, k.tiles_n) == (32, 32)
    assert sorted(k.order.tolist()) == list(range(k.tiles))
    pairs = k.order.reshape(-1, 2)
    if cluster == "2x1":  # a cluster's two CTAs share W: one column
        assert (pairs[:, 0] % 32 == pairs[:, 1] % 32).all()
    if cluster == "1x2":  # share A: one row
        assert (pairs[:, 0] // 32 == pairs[:, 1] // 32).all()
    assert c.pipe.capacity == k.tiles and int(c.pipe.threshold.sum()) == k.tiles


def test_a_persistent_or_unknown_variant_is_refused():
    with pytest.raises(ValueError, match="persistent"):
        P.producer_case(4096, 8192, "cutlass_ctapipe_pr")
    with pytest.raises(ValueError, match="unknown"):
        P.producer_case(4096, 8192, "nope")


@pytest.mark.parametrize("variant", ["cutlass_ctapipe", "cutlass_ctapipe_w21"])
def test_a_producer_of_another_k_reads_k_and_keeps_the_square_chains_tiles_order_and_pipe(variant):
    square = P.producer_case(16384, 3072, variant)
    long_k = P.producer_case(16384, 3072, variant, 16384)
    assert (square.k, square.k_dim, long_k.k, long_k.k_dim) == (0, 3072, 16384, 16384)
    assert P.producer_case(16384, 3072, variant, 3072).k == 0  # K = H is the square chain
    (layer0,) = [k for k in long_k.plan.kernels() if k.layer == 0]
    (sq0,) = [k for k in square.plan.kernels() if k.layer == 0]
    assert (layer0.region.k, sq0.region.k, layer0.region.n) == (16384, 3072, 3072)
    assert layer0.tile_ns > 5 * sq0.tile_ns  # the plan prices the longer K
    # what the producer writes and signals is D's (M x H), whatever its K
    assert np.array_equal(long_k.kernel.order, square.kernel.order)
    for f in ("capacity", "deps"):
        assert getattr(long_k.pipe, f) == getattr(square.pipe, f)
    for f in ("prod_dep_ptr", "prod_dep_idx", "threshold", "dep_tile_ptr", "dep_tile_idx"):
        assert np.array_equal(getattr(long_k.pipe, f), getattr(square.pipe, f))
    tiles = P.tiles_from_stamps(long_k, stamps_of(synthetic_run(long_k), long_k))
    assert len(tiles) == long_k.kernel.tiles


@pytest.mark.parametrize("m,h,k,why", [(16384, 3072, 100, "K = 100: not a positive multiple of 64"),
                                       (16384, 3072, -64, "K = -64"), (16384, 3000, 0, "H = 3000"),
                                       (1000, 3072, 0, "M = 1000")])
def test_a_k_m_or_h_the_kernel_cannot_run_is_refused(m, h, k, why):
    with pytest.raises(ValueError, match=why):
        P.producer_case(m, h, "cutlass_ctapipe", k)


def test_inputs_of_another_k_are_refused_before_any_gpu_is_asked_for():
    c = P.producer_case(16384, 3072, "cutlass_ctapipe", 8192)
    with pytest.raises(ValueError, match="x \\(16384, 3072\\) and w \\(3072, 3072\\), not the 16384 x 8192"):
        P.LocalProducer(c, np.zeros((16384, 3072), np.uint16), np.zeros((3072, 3072), np.uint16), trace=False)
    with pytest.raises(ValueError, match="not the 16384 x 8192 and 3072 x 8192"):
        P.LocalProducer(c, np.zeros((16384, 8192), np.uint16), np.zeros((8192, 3072), np.uint16), trace=True)


@pytest.mark.parametrize("argv,why", [
    (["--k", "100"], "K = 100: not a positive multiple of 64"), (["--h", "3000"], "H = 3000"),
    (["--ms", "1x"], "--ms '1x': not comma-separated integers"), (["--variants", "nope"], "unknown ctapipe variant"),
    (["--reps", "0"], "--reps 0: at least 1")])
def test_the_cli_refuses_bad_values_in_one_line_before_any_gpu_is_asked_for(tmp_path, capsys, monkeypatch, argv, why):
    monkeypatch.setattr(P, "measure_percta", lambda *a, **k: pytest.fail("the GPU was asked for"))
    with pytest.raises(SystemExit) as e:
        P.main([str(tmp_path / "out"), "--ms", "16384", "--h", "3072", "--variants", "cutlass_ctapipe", *argv])
    err = capsys.readouterr().err
    assert e.value.code == 2 and why in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()


def test_the_cli_says_in_one_line_that_there_is_no_gpu(tmp_path, capsys, monkeypatch):
    from ctahw.device import NoCupyError

    def no_gpu(*a, **k):
        raise NoCupyError("CuPy is not installed")

    monkeypatch.setattr(P, "measure_percta", no_gpu)
    assert P.main([str(tmp_path / "out"), "--ms", "16384", "--h", "3072", "--k", "8192"]) == 1
    err = capsys.readouterr().err
    assert err.strip() == "python -m ctahw.percta: CuPy is not installed"
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("variant", P.PERCTA_VARIANTS)
@pytest.mark.parametrize("trace", [False, True])
def test_the_descriptor_is_a_producers_with_everything_it_writes_given(variant, trace):
    c = P.producer_case(4096, 8192, variant)
    names = P.producer_ptr_names(c, trace)
    ptrs = {n: 0x1000 * (i + 1) for i, n in enumerate(names)}
    d = dict(zip(rn.DESC_FIELDS, rn.descriptor(c.kernel, list(c.pipes), ptrs, epoch=3, timeout_ns=P.TIMEOUT_NS)))
    assert d["mode"] == rn.MODE_STATIC and d["num_tiles"] == 1024 and d["tiles_n"] == 32 and d["epoch"] == 3
    assert d["out_capacity"] == 1024 and d["in_capacity"] == 0 and d["stall_row"] == -1
    for n in names:
        assert d[n] == ptrs[n]
    # what the launcher's check_desc refuses: a traced producer without its push / counter stamps, a pusher
    # without a tail; nothing of a consumer is given
    assert bool(d["stamps"]) == trace and bool(d["push_stamps"] and d["zero_stamps"]) == trace
    assert bool(d["out_slots"]) == bool(d["out_tail"]) == c.push
    assert not any(d[n] for n in ("in_slots", "in_head", "in_counters", "in_threshold", "in_consumer_dep"))


def stamps_of(tiles: pd.DataFrame, case) -> np.ndarray:
    """The u64 stamp buffer the kernel would write for a tile table (ns since BASE)."""
    s = np.zeros((case.kernel.tiles, rn.TILE_STAMP_WORDS), dtype=np.uint64)
    tile = (tiles.tile_m * case.kernel.tiles_n + tiles.tile_n).to_numpy()
    for j, c in enumerate(("t_start", "t_acquire", "t_mainloop_end", "t_compute_end", "t_store_end", "t_signal")):
        s[tile, j] = np.uint64(BASE) + tiles[c].to_numpy(np.int64).astype(np.uint64)
    s[tile, 6] = (tiles.sm.to_numpy(np.uint64) << np.uint64(32)) | tiles.cta.to_numpy(np.uint64)
    s[tile, 7] = np.uint64(2**64 - 1)
    return s


def synthetic_run(case, slots=132, launch=1200, mainloop=(90_000, 110_000), epilogue=(2500, 1900), store=300,
                  signal=700) -> pd.DataFrame:
    """CTA i of the producer's order on SM i % slots in wave i // slots; known steps (early, late)."""
    rows, exit_of = [], {}
    for cta, tile in enumerate(case.kernel.order.tolist()):
        wave, sm = cta // slots, cta % slots
        late = wave >= 2
        t0 = exit_of[sm] + launch - 32 if sm in exit_of else 17 * sm
        acq = t0 + 32
        ml = acq + mainloop[late] + (cta % 7) * 32 * (1 if late else 0)  # a spread, median unchanged
        ce = ml + epilogue[late]
        se = ce + store
        sg = se + signal
        exit_of[sm] = sg
        rows.append(dict(cta=cta, sm=sm, tile_m=tile // case.kernel.tiles_n, tile_n=tile % case.kernel.tiles_n,
                         t_start=t0, t_acquire=acq, t_mainloop_end=ml, t_compute_end=ce, t_store_end=se,
                         t_signal=sg))
    return pd.DataFrame(rows)


def test_stamps_parse_into_the_steps_the_kernel_stamped():
    c = P.producer_case(4096, 8192, "cutlass_ctapipe_c21")
    want = synthetic_run(c)
    tiles = P.tiles_from_stamps(c, stamps_of(want, c))
    assert len(tiles) == 1024 and (tiles.slot == -1).all()
    got = tiles.sort_values("cta").reset_index(drop=True)
    for col in ("cta", "sm", "tile_m", "tile_n"):
        np.testing.assert_array_equal(got[col].to_numpy(), want[col].to_numpy())
    for col in ("t_acquire", "t_mainloop_end", "t_signal"):  # relative to the first CTA start, every ns kept
        np.testing.assert_array_equal(got[col].to_numpy(), want[col].to_numpy() - want.t_start.min())
    s = percta_steps(tiles, 132)
    assert s["waves"] == 8 and s["mainloop_early_ns"] == 90_000
    assert s["mainloop_late_ns"] == pytest.approx(110_000 + 3 * 32, abs=32)
    assert (s["epilogue_ns"], s["store_ns"], s["signal_ns"], s["held_ns"]) == (1900, 300, 700, 1000)
    assert s["turnover_ns"] == 1200 and s["turnover_pairs"] == 1024 - 132


def test_the_files_and_the_profile_notes(tmp_path):
    c = P.producer_case(4096, 8192, "cutlass_ctapipe")
    tiles = P.tiles_from_stamps(c, stamps_of(synthetic_run(c), c))
    st = percta_steps(tiles, 132)
    run = dict(m=4096, variant=c.variant, cluster="1x1", signal="push", order="plan", run=0, plain_ms=1.0,
               trace_ms=1.01, **st)
    case = dict(run, runs=1, kept_run=0)
    paths = P.write_percta(tmp_path, {"runs": [run], "cases": [case], "tiles": {(4096, c.variant): tiles}})
    assert [p.name for p in paths] == ["percta-runs.csv", "percta.csv", "percta-tiles-4096-cutlass_ctapipe.csv.gz"]
    back = pd.read_csv(paths[2])
    assert list(back.columns) == list(P.PERCTA_TILE_COLUMNS)
    assert back.t_signal.dtype == np.int64
    assert percta_steps(back, 132) == st  # the written table gives the same steps
    assert pd.read_csv(paths[1]).epilogue_ns.iloc[0] == st["epilogue_ns"]
    (note,) = P.percta_notes([case])
    assert "cutlass_ctapipe (cluster 1x1, push) at M = 4096" in note
    assert f"exposed epilogue {st['epilogue_ns']:.0f} ns (tile_fixed_ns)" in note
    assert f"CTA turnover {st['turnover_ns']:.0f} ns (cta_launch_ns)" in note


def test_calibrate_writes_the_steps_into_the_profiles_header_not_its_fields(tmp_path):
    from ctahw import calibrate as cal
    from ctasim.spec import load_hardware
    from tests.ctahw.test_ctahw_calibrate import FAKE_RESULT, PROV

    case = dict(m=16384, variant="cutlass_ctapipe", cluster="1x1", signal="push", runs=5, epilogue_ns=1888.0,
                turnover_ns=1120.0, mainloop_early_ns=86000.0, mainloop_late_ns=101000.0, store_ns=250.0,
                signal_ns=600.0, held_ns=850.0)
    res = dict(FAKE_RESULT, sm_remote_store_gbps=7.0, sm_remote_store_note="fit", percta=[case])
    text = cal.write_profile(res, "h200-x2", tmp_path / "p.toml", "p", PROV)
    plain = cal.write_profile(dict(res, percta=[]), "h200-x2", tmp_path / "q.toml", "q", PROV)
    (line,) = [l for l in text.splitlines() if "one-CTA-per-tile" in l]
    assert line.startswith("# Measured, not written into a kernel config: one-CTA-per-tile producer cutlass_ctapipe")
    assert "exposed epilogue 1888 ns (tile_fixed_ns), CTA turnover 1120 ns (cta_launch_ns)" in line
    assert "one-CTA-per-tile" not in plain
    assert load_hardware(tmp_path / "p.toml").kernel_configs == load_hardware(tmp_path / "q.toml").kernel_configs
