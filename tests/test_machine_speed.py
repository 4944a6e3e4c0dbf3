"""bench/machine_speed.py: its statistics on hand-checked inputs, and its committed tables are what it computes from
the committed measurements (about 2 s)."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "results" / "machine-speed"


@pytest.fixture(scope="module")
def ms(bench_module):
    return bench_module("machine_speed")


def test_kendall_w_spearman_slope_on_hand_checked_inputs(ms):
    assert ms.kendall_w([[1, 2, 3, 4], [10, 20, 30, 40], [0.1, 0.2, 0.3, 0.4]]) == pytest.approx(1.0)
    assert ms.kendall_w([[1, 2, 3], [3, 2, 1]]) == pytest.approx(0.0)
    # 3 raters x 3 objects, rank sums 4, 5, 9: S = 4 + 1 + 9 = 14, W = 12 * 14 / (3**2 * (3**3 - 3)) = 7/9
    assert ms.kendall_w([[1, 2, 3], [1, 2, 3], [2, 1, 3]]) == pytest.approx(7 / 9)
    assert ms.spread_pct([2.0, 3.0, 2.5]) == pytest.approx(50.0)
    assert ms.slope([0, 1, 2], [1, 3, 5]) == pytest.approx(2.0)
    # scipy.stats.spearmanr([1, 2, 3, 4, 5], [5, 6, 7, 8, 7]): rho 0.8207826816681233, p 0.08858700531354384
    rho, p, n = ms.spearman([1, 2, 3, 4, 5], [5, 6, 7, 8, 7])
    assert (rho, p, n) == (pytest.approx(0.8207826816681233, abs=1e-12), pytest.approx(0.08858700531354384,
                                                                                        abs=1e-12), 5)
    assert ms.spearman([1, 2, 3, 4], [4, 3, 2, 1])[:2] == (-1.0, 0.0)
    # NaN pairs are dropped; a constant side has no rho
    assert ms.spearman([1, 2, float("nan"), 3], [1, 2, 9, 3])[2] == 3
    assert all(math.isnan(v) for v in ms.spearman([1, 2, 3], [5, 5, 5])[:2])
    # p of rho = 0.5 at n = 12 (10 df): I_0.75(5, 1/2) = 0.0978546142578125 (scipy.special.betainc)
    assert ms.betainc(5, 0.5, 0.75) == pytest.approx(0.0978546142578125, abs=1e-12)


def test_an_env_taken_after_work_began_gives_no_idle_state(ms, tmp_path):
    """The first nvidia-smi table of env.txt is the idle state only at an idle clock: a call's later part (1980 MHz,
    the GPU warm) is no call's start, so its power and temperature are not read as idle."""
    hdr = ("index, name, uuid, serial, driver_version, clocks.current.sm [MHz], clocks.max.sm [MHz], power.draw [W], "
           "power.limit [W], temperature.gpu")
    for clock, want in (("345 MHz", (79.95, 36.0)), ("1980 MHz", None)):
        env = tmp_path / f"env-{clock.split()[0]}.txt"
        env.write_text(f"commit: x\n{hdr}\n0, NVIDIA H200, GPU-fa3bc407-a087, 165, 580.159.04, {clock}, 1980 MHz, "
                       "79.95 W, 700.00 W, 36\n")
        got = ms.read_env(env)
        assert got["gpu"] == "GPU-fa3bc407" and got["serial"] == "165" and got["power_limit_w"] == 700.0
        if want is None:
            assert math.isnan(got["idle_w"]) and math.isnan(got["idle_temp_c"])
        else:
            assert (got["idle_w"], got["idle_temp_c"]) == want


def test_the_committed_tables_are_what_the_script_computes(ms, tmp_path):
    assert ms.main(["--out", str(tmp_path)]) == 0
    for name in ("probe_shapes.csv", "trajectories.csv", "blocks.csv", "machines.csv", "correlations.csv"):
        pd.testing.assert_frame_equal(pd.read_csv(tmp_path / name), pd.read_csv(OUT / name))
    p = pd.read_csv(OUT / "probe_shapes.csv").drop_duplicates("m").set_index("m")
    # seven machines since 2026-12-04's two quick calibrations (one run per order): one ranking no longer at every
    # shape, the second quick probe the outlier
    assert (p.machines == 7).all() and (p.kendall_w.round(2) == 0.98).all()
    assert p.spread_pct.round(2).to_dict() == {2048: 2.55, 4096: 2.16, 8192: 2.27, 12288: 3.19, 16384: 3.83,
                                               32768: 3.62}
    first = pd.read_csv(OUT / "probe_shapes.csv")
    first = first[first.folder < "2026-12-03"]
    assert ms.kendall_w([g.sort_values("machine").best_s8_ms.tolist() for _, g in first.groupby("m")]) == \
        pytest.approx(1.0)  # the first five: the same ranking at every shape
    t = pd.read_csv(OUT / "trajectories.csv").drop_duplicates("context").set_index("context")
    # as docs/validation.md states them: twenty-three timed at a call's start (plans 32-36's and 43-44's power probe
    # rounds among them, plans 43 and 44 each on two machines, plans 47 and 48's four calibrations, 2026-12-04's two
    # quick calibrations), two after a plan's experiments
    assert t.loc["calibration", "context_machines"] == 23 and t.loc["after-experiments", "context_machines"] == 2
    assert round(t.loc["calibration", "context_rested_spread_pct"], 2) == 8.46
    assert round(t.loc["calibration", "context_sustained_ms_spread_pct"], 2) == 8.09
    assert round(t.loc["calibration", "context_rho_rested_sustained"], 2) == -0.23
    # the first five alone (before plans 29 and 30): nearer when sustained
    five = pd.read_csv(OUT / "trajectories.csv")
    five = five[(five.context == "calibration") & ~five.folder.str.contains("registered") & (five.folder < "2026-12-03")]
    assert len(five) == 5 and round(ms.spread_pct(five.rested_ms), 2) == 3.22
    assert round(ms.spread_pct(five.sustained_ms), 2) == 1.66
    b = pd.read_csv(OUT / "blocks.csv").set_index("scope")
    assert b.loc["pooled", "cases"] == 453 and round(b.loc["pooled", "spearman"], 3) == 0.801
    assert round(b.loc["pooled", "abs_dev_pct"], 2) == 1.53 and round(b.loc["pooled", "slope"], 2) == 0.93
    assert round(b.loc["pooled", "abs_dev_less_ref16384_pct"], 2) == 0.85
    c = pd.read_csv(OUT / "correlations.csv").set_index(["y", "x"])
    assert len(pd.read_csv(OUT / "machines.csv")) == 31  # one row a machine: plan 54's second call is a repeat
    assert round(c.loc[("ref16384_ms", "ref4096_ms"), "rho"], 3) == 0.771
    assert round(c.loc[("ref16384_ms", "idle_w"), "rho"], 3) == 0.219
    assert c.loc[("ref16384_ms", "refw_sm_med"), "note"] == "constant"
