"""Shared-device rings with the L2, HBM and clock shared among the kernels computing (Hardware.device_shares):
ctasim.costs.active_share's profile per count of computing shares, the spec's bounds on device_shares, the tile-time
tables a chain kernel gets per count (ctapipe.chain_tile_times), the engine picking a tile's table by the count of
shares computing at its start, and the derived profiles' added field (ctasim.profiles.derive).

The engine's checks are also run with active_share broken (the count ignored): the assertions that guard the
mechanism must then fail."""

from __future__ import annotations

import dataclasses
import tomllib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ctasim import costs, profiles
from ctasim.cases import expand, load_experiment
from ctasim.engine import clock_factor, simulate
from ctasim.predict import without_drift
from ctasim.plan import Kernel
from ctasim.spec import SpecError, hardware_from_dict, load_hardware, validate_hardware
from ctasim.strategies import build_plans
from tests.helpers import TINY

ROOT = Path(__file__).resolve().parent.parent
ACTIVE3 = "h200-x1-shared3-active"
EVEN3 = "h200-x1-shared3"
SLOTS = 44  # a share's CTA slots on the 128x256 config: 132 SMs // 3, one CTA each


# ---------------------------------------------------------------- costs.active_share


def test_one_share_computing_alone_gets_the_whole_device_and_its_clock_boost():
    hw = load_hardware(ACTIVE3)
    assert (hw.device_shares, hw.gpus, hw.max_clock_boost) == (3, 3, 1.094)
    share, boost = costs.active_share(hw, 1, SLOTS)
    assert share.l2_bytes == pytest.approx(3 * hw.l2_bytes) and share.hbm_gbps == pytest.approx(3 * hw.hbm_gbps)
    assert share.max_clock_boost == 1.0  # the device's boost is returned apart, not applied twice
    assert boost == costs.clock_boost(hw, SLOTS, 3 * SLOTS) == pytest.approx(1.094) and boost > 1.0
    # nothing else of the profile moves
    assert dataclasses.replace(share, l2_bytes=hw.l2_bytes, hbm_gbps=hw.hbm_gbps, max_clock_boost=1.094) == hw


def test_two_of_three_shares_computing_split_the_device_between_them():
    hw = load_hardware(ACTIVE3)
    share, boost = costs.active_share(hw, 2, SLOTS)
    assert share.l2_bytes == pytest.approx(1.5 * hw.l2_bytes) and share.hbm_gbps == pytest.approx(1.5 * hw.hbm_gbps)
    assert boost == costs.clock_boost(hw, 2 * SLOTS, 3 * SLOTS)
    # below the ceiling the boost is the cube root of the idle share: a profile with a high ceiling shows it
    high = dataclasses.replace(hw, max_clock_boost=2.0)
    assert costs.active_share(high, 2, SLOTS)[1] == pytest.approx(1.5 ** (1 / 3))
    assert costs.active_share(high, 1, SLOTS)[1] == pytest.approx(3 ** (1 / 3))


@pytest.mark.parametrize("active", [3, 4])
def test_every_share_computing_scales_nothing_and_has_no_boost(active):
    hw = load_hardware(ACTIVE3)
    share, boost = costs.active_share(hw, active, SLOTS)
    assert boost == 1.0
    assert share == dataclasses.replace(hw, max_clock_boost=1.0)


@pytest.mark.parametrize("name", [EVEN3, "h200-x1-calibrated"])
@pytest.mark.parametrize("active", [1, 2, 3])
def test_a_profile_that_is_no_share_is_returned_as_it_is(name, active):
    hw = load_hardware(name)
    assert hw.device_shares == 0
    share, boost = costs.active_share(hw, active, SLOTS)
    assert share is hw and boost == 1.0


@pytest.mark.parametrize("active", [0, -1])
def test_no_share_computing_is_an_error(active):
    with pytest.raises(ValueError, match="active shares must be >= 1"):
        costs.active_share(load_hardware(ACTIVE3), active, SLOTS)


def test_order_waves_divides_the_compute_by_the_boost():
    """A compute-bound order (HBM far faster than the math): every wave takes 1 / boost of its time."""
    exp = load_experiment("reg42-ring-shared-l3")
    k, layer = _kernels(_plan(exp, "ring-g4"))[0], expand(exp)[0].workload.layers[0]
    hw = dataclasses.replace(exp.hardware, hbm_gbps=1e9)
    plain = costs.order_waves(layer, hw, 2, k.order, k.slots)
    boosted = costs.order_waves(layer, hw, 2, k.order, k.slots, boost=1.25)
    np.testing.assert_allclose(boosted, plain / 1.25, rtol=1e-6)  # t_hbm: not quite 0


# ---------------------------------------------------------------- spec bounds


@pytest.mark.parametrize("shares", [1, 2, 4, -1])
def test_device_shares_other_than_zero_or_the_gpus_are_refused(shares):
    """A share count other than the profile's GPU count would let the engine split one share's L2 and HBM by a count
    of kernels that is not the device's."""
    hw = load_hardware(ACTIVE3)  # gpus = 3
    with pytest.raises(SpecError) as e:
        validate_hardware(dataclasses.replace(hw, device_shares=shares), "x.toml")
    assert e.value.field_name == "hardware.device_shares"
    assert f"got {shares}" in str(e.value) and "gpus (3" in str(e.value)


@pytest.mark.parametrize("shares", [0, 3])
def test_device_shares_of_zero_or_the_gpus_are_accepted(shares):
    validate_hardware(dataclasses.replace(load_hardware(ACTIVE3), device_shares=shares), "x.toml")


def test_a_profile_file_with_another_share_count_is_refused_as_it_loads():
    assert hardware_from_dict(dict(TINY, device_shares=8), "hw.toml").device_shares == 8  # TINY: 8 GPUs
    with pytest.raises(SpecError, match=r"^hw\.toml: hardware\.device_shares: must be 0 or the profile's gpus .* got 9$"):
        hardware_from_dict(dict(TINY, device_shares=9), "hw.toml")
    for bad in (1, 4):
        with pytest.raises(SpecError, match=rf"hardware\.device_shares: .* got {bad}$"):
            hardware_from_dict(dict(TINY, device_shares=bad), "hw.toml")


def test_a_shared_profile_outside_a_shared_device_experiment_is_refused(exp3):
    """The sharing rule describes kernels on one device: an experiment that does not run them so is refused."""
    from ctasim.cases import check_experiment  # noqa: PLC0415

    check_experiment(exp3, "x.toml")
    with pytest.raises(SpecError, match="shared_device = true") as e:
        check_experiment(dataclasses.replace(exp3, shared_device=False), "x.toml")
    assert e.value.field_name == "experiment.hardware"


# ---------------------------------------------------------------- tables and the engine


def _plan(exp, strategy: str):
    case = expand(exp)[0]
    (s,) = [s for s in exp.strategies if s.label == strategy]
    (plan,) = build_plans(s, case.workload, exp.hardware, case.gpus, case.label)
    return plan


def _kernels(plan) -> list[Kernel]:
    return [op for op in plan.ops if isinstance(op, Kernel)]


def _with_hw(exp, name: str):
    return dataclasses.replace(exp, hardware=load_hardware(name))


@pytest.fixture(scope="module")
def exp3():
    return load_experiment("reg42-ring-shared-l3")


def test_a_shared_kernel_gets_a_table_per_count_of_computing_shares(exp3):
    """The table at every share computing is the even split's (the same profile but for the boost, which is off at
    a = N); a share computing alone or with one other runs each entry faster, alone fastest."""
    active, even = _kernels(_plan(exp3, "ring-g4")), _kernels(_plan(_with_hw(exp3, EVEN3), "ring-g4"))
    for k, e in zip(active, even, strict=True):
        assert e.tile_scale_by_active == ()
        np.testing.assert_allclose(k.tile_times, e.tile_times, rtol=1e-12)
        s1, s2, s3 = (np.asarray(s) for s in k.tile_scale_by_active)
        assert s1.shape == s2.shape == s3.shape == k.tile_times.shape
        assert (s3 == 1.0).all()
        assert (s1 < s2).all() and (s2 < 1.0).all() and s1.max() < 1 / 1.094 + 1e-9  # at least the clock boost


@pytest.mark.parametrize("strategy", ["ring-g1", "ring-g2", "ring-g4", "ring-g8"])
def test_a_ring_that_shares_among_the_computing_kernels_is_faster_than_the_even_split(exp3, strategy):
    active = simulate(_plan(exp3, strategy), exp3.hardware).makespan_ns
    even3 = _with_hw(exp3, EVEN3)
    even = simulate(_plan(even3, strategy), even3.hardware).makespan_ns
    assert active < 0.99 * even
    # every kernel on the a = N table is the even split exactly
    ones = _plan(exp3, strategy)
    _set_ones(ones)
    assert simulate(ones, exp3.hardware).makespan_ns == pytest.approx(even, rel=1e-12)


@pytest.mark.parametrize("experiment", ["reg42-ring-shared-l2", "reg42-ring-shared-l3", "reg42-ring-shared-l4"])
def test_the_registered_predictions_are_faster_than_their_even_twins(experiment):
    def model(folder):
        p = pd.read_csv(ROOT / "bench/predictions" / folder / "predictions.csv")
        return p[p["source"] == "model"].set_index(["case", "strategy"])["makespan_ms"]

    active, even = model(experiment), model(experiment + "-even")
    assert len(active) >= 4 and set(active.index) == set(even.index)
    assert (active < even).all()


def _set_ones(plan) -> None:
    for k in _kernels(plan):
        k.tile_scale_by_active = tuple(np.ones_like(s) for s in k.tile_scale_by_active)


def _durations(trace) -> pd.DataFrame:
    t = trace.tiles
    return t.assign(d=t["t_compute_end"] - t["t_acquire"])


def _fill_and_full(trace) -> tuple[pd.Series, pd.Series]:
    """Kernel 0's tile times (compute end - acquire) while it computes alone (acquired before kernel 1's first tile
    is) and once every kernel has started (acquired after the last kernel's first tile)."""
    t = _durations(trace)
    first = t.groupby("kernel")["t_acquire"].min()
    k0 = t[t["kernel"] == 0]
    fill = k0[k0["t_acquire"] < first.drop(0).min()]["d"]
    full = k0[k0["t_acquire"] > first.max()]["d"]
    assert len(fill) >= 100 and len(full) >= 1000  # a ring-g4 fill: 176 tiles, then 1740
    return fill, full


def _assert_fill_is_faster(trace) -> None:
    fill, full = _fill_and_full(trace)
    assert fill.mean() < 0.9 * full.mean() and fill.max() < full.min()


def _assert_fill_is_not_faster(trace) -> None:
    fill, full = _fill_and_full(trace)
    assert fill.mean() == pytest.approx(full.mean(), rel=0.01)


def _lockstep(exp):
    """``exp`` with no ticket spread (``ctasim.predict.without_drift``): the tickets' later sharers never miss, so no
    wave is slower than the one before but for the sharing of the device (the partition ticket law charges them from
    the first round on)."""
    return dataclasses.replace(exp, hardware=without_drift(exp.hardware))


def test_tiles_computed_alone_are_shorter_than_with_every_kernel_computing(exp3):
    exp3 = _lockstep(exp3)
    _assert_fill_is_faster(simulate(_plan(exp3, "ring-g4"), exp3.hardware))
    ones = _plan(exp3, "ring-g4")
    _set_ones(ones)  # the mechanism neutral: the fill is as long as the rest
    _assert_fill_is_not_faster(simulate(ones, exp3.hardware))
    even3 = _lockstep(_with_hw(exp3, EVEN3))
    _assert_fill_is_not_faster(simulate(_plan(even3, "ring-g4"), even3.hardware))
    with pytest.raises(AssertionError):
        _assert_fill_is_faster(simulate(ones, exp3.hardware))


def _active_at_start(t: pd.DataFrame) -> np.ndarray:
    """Per tile, 1 + the other kernels computing as it is acquired, read off the trace: a kernel computes at t while
    a tile of it acquired before t has its compute end after t."""
    out = np.ones(len(t), dtype=int)
    for o, g in t.groupby("kernel"):
        g = g.sort_values("t_acquire")
        acq, busy = g["t_acquire"].to_numpy(), np.maximum.accumulate(g["t_compute_end"].to_numpy())
        idx = np.searchsorted(acq, t["t_acquire"].to_numpy(), side="left") - 1
        until = np.where(idx >= 0, busy[np.maximum(idx, 0)], -np.inf)
        out += ((until > t["t_acquire"].to_numpy()) & (t["kernel"].to_numpy() != o)).astype(int)
    return out


def _assert_each_tile_takes_its_counts_table(exp, strategy: str, trace) -> dict[int, int]:
    """Each tile's time in ``trace`` over its time with every kernel on the a = N table is its entry (slot) of the
    table (from an honest plan of ``strategy``) of the count computing as it starts, times the ratio of the burst
    clock's factors at the two starts (the profile's clock curve steps at 5 ms); returns the tiles per count."""
    plan, ones = _plan(exp, strategy), _plan(exp, strategy)
    _set_ones(ones)
    a, b = _durations(trace), _durations(simulate(ones, exp.hardware))
    a = a.merge(b[["kernel", "slot", "d", "t_acquire"]], on=["kernel", "slot"], suffixes=("", "_n"), validate="1:1")
    assert len(a) == len(trace.tiles) == len(b)
    a["active"] = _active_at_start(a)
    scales = {k.id: np.asarray(k.tile_scale_by_active) for k in _kernels(plan)}
    want = np.array([scales[k][n - 1, s] for k, n, s in zip(a["kernel"], a["active"], a["slot"])])
    clock = [clock_factor(exp.hardware, "burst", t) / clock_factor(exp.hardware, "burst", t_n)
             for t, t_n in zip(a["t_acquire"], a["t_acquire_n"])]
    np.testing.assert_allclose(a["d"] / a["d_n"], want * np.asarray(clock), rtol=1e-9)
    return a["active"].value_counts().to_dict()


@pytest.mark.parametrize("strategy", ["ring-g2", "ring-g8"])
def test_each_tile_takes_the_table_of_the_kernels_computing_as_it_starts(exp3, strategy):
    """Every tile of every kernel, against an independent count read off the trace: all three counts occur."""
    counts = _assert_each_tile_takes_its_counts_table(exp3, strategy, simulate(_plan(exp3, strategy), exp3.hardware))
    assert set(counts) == {1, 2, 3} and counts[3] > counts[1] > 0


def test_the_engine_checks_fail_when_active_share_ignores_the_count(exp3, monkeypatch):
    """active_share broken: every count gets the a = N profile (no more L2/HBM, no boost). The fill is then as slow as
    the rest, and the tile-by-tile check, given the honest tables, sees tiles off their count's table."""
    exp3 = _lockstep(exp3)
    real = costs.active_share
    monkeypatch.setattr(costs, "active_share", lambda hw, active, slots: real(hw, hw.device_shares, slots))
    broken = _plan(exp3, "ring-g4")
    assert all((np.asarray(k.tile_scale_by_active) == 1.0).all() for k in _kernels(broken))
    trace = simulate(broken, exp3.hardware)
    with pytest.raises(AssertionError):
        _assert_fill_is_faster(trace)
    _assert_fill_is_not_faster(trace)
    monkeypatch.undo()
    with pytest.raises(AssertionError):
        _assert_each_tile_takes_its_counts_table(exp3, "ring-g4", trace)  # the broken run's times, honest tables
    _assert_each_tile_takes_its_counts_table(exp3, "ring-g4", simulate(_plan(exp3, "ring-g4"), exp3.hardware))


# ---------------------------------------------------------------- profiles.derive: the added field


BASE = """# a base
[hardware]
name = "base"
gpus = 4
sm_count = 8

[[hardware.kernel_config]]
tile_m = 128
"""


def _specs(tmp_path, text: str) -> Path:
    (tmp_path / "hardware").mkdir()
    (tmp_path / "hardware" / "base.toml").write_text(text)
    return tmp_path


def test_an_added_field_goes_last_in_the_hardware_table(tmp_path):
    d = profiles.Derivation(base="base", fields={"gpus": ("2", "fewer")}, header=("# derived",),
                            added={"device_shares": ("2", "two shares"), "max_clock_boost": ("1.5", "")})
    text = profiles.derive("x", d, _specs(tmp_path, BASE))
    data = tomllib.loads(text)
    assert data["hardware"]["device_shares"] == 2 and data["hardware"]["max_clock_boost"] == 1.5
    assert data["hardware"]["gpus"] == 2 and data["hardware"]["name"] == "x"
    assert "device_shares" not in data["hardware"]["kernel_config"][0]
    assert "device_shares = 2  # two shares\nmax_clock_boost = 1.5\n\n[[hardware.kernel_config]]" in text
    assert text.startswith("# derived\n")


def test_an_added_field_of_a_last_hardware_table_is_appended(tmp_path):
    d = profiles.Derivation(base="base", fields={}, header=(), added={"device_shares": ("4", "")})
    data = tomllib.loads(profiles.derive("x", d, _specs(tmp_path, '[other]\na = 1\n\n[hardware]\nname = "b"\n')))
    assert data["hardware"] == {"name": "x", "device_shares": 4} and data["other"] == {"a": 1}


def test_a_base_without_a_hardware_table_is_an_error(tmp_path):
    d = profiles.Derivation(base="base", fields={}, header=(), added={"device_shares": ("2", "")})
    with pytest.raises(ValueError, match=r"base has no one-line \[hardware\] field"):
        profiles.derive("x", d, _specs(tmp_path, "[other]\nname = \"b\"\n"))


def test_a_derived_profile_with_an_added_field_loads_with_it(tmp_path):
    """The real derivation of h200-x1-shared3-active, written into a copy of the specs: the file loads and its
    device_shares is read back; the committed file is the same text."""
    d = profiles.DERIVED[ACTIVE3]
    assert d.added.keys() == {"device_shares"}
    text = profiles.derive(ACTIVE3, d)
    assert (ROOT / "specs/hardware" / f"{ACTIVE3}.toml").read_text() == text
    (tmp_path / "p.toml").write_text(text)
    hw = load_hardware(tmp_path / "p.toml")
    assert hw.device_shares == 3 and hw == load_hardware(ACTIVE3)
    head = text.split("[[hardware.kernel_config]]")[0]
    assert "\ndevice_shares = 3  # " in head  # in the [hardware] table, before the first kernel config


def test_a_folded_layernorm_s_epilogue_work_is_not_scaled_by_the_sharing():
    """build_ring adds the LayerNorm fold's epilogue time to a ring kernel's tile times after the per-count tables:
    the tables' ratios are rescaled so that a tile's time while fewer kernels compute drops by what its memory-bound
    part drops, not by a share of the fold's fixed work (registered plan 19's block boundary, on two shares of one
    H200)."""
    from ctasim.cases import load_experiment  # noqa: PLC0415

    base = load_experiment("reg19-fold-boundary")
    fold = load_hardware("h200-x2-calibrated")  # the measured fold costs (the one-H200 profiles carry none)
    hw = dataclasses.replace(load_hardware("h200-x1-shared2-active"),
                             norm_stats_epilogue_ns_per_element=fold.norm_stats_epilogue_ns_per_element,
                             norm_fold_epilogue_ns_per_element=fold.norm_fold_epilogue_ns_per_element)
    assert hw.norm_stats_epilogue_ns_per_element > 0 and hw.norm_fold_epilogue_ns_per_element > 0
    (ring,) = [s for s in base.strategies if s.kind == "ctapipe"]
    case = expand(dataclasses.replace(base, hardware=hw))[0]

    def kernels(h):
        (plan,) = build_plans(ring, case.workload, h, 2, case.label)
        return _kernels(plan)

    with_fold = kernels(hw)
    without = kernels(dataclasses.replace(hw, norm_stats_epilogue_ns_per_element=0.0,
                                          norm_fold_epilogue_ns_per_element=0.0))
    folded = 0
    for kf, k0 in zip(with_fold, without):
        extra = kf.tile_times - k0.tile_times
        folded += int((extra > 0).any())
        for sf, s0 in zip(kf.tile_scale_by_active, k0.tile_scale_by_active):
            # the time saved while fewer kernels compute is the same with or without the fold's work
            np.testing.assert_allclose(kf.tile_times * sf - kf.tile_times, k0.tile_times * s0 - k0.tile_times,
                                       rtol=1e-9, atol=1e-6)
    assert folded == 2  # both kernels carry fold work (statistics on one side, the fold on the other)
