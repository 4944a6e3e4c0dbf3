"""The L2 survival probe's CPU side: splitting hits from misses, the curve a profile reads, the committed run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ctahw import l2probe
from ctasim.spec import load_hardware

ROOT = Path(__file__).resolve().parents[2]
RUN = ROOT / "bench/results/hw/2026-12-04-l2-survival-1gpu/target-2mib"


def _loads(rng, near, far, n):
    """Latencies of n loads, 3/4 around ``near`` cycles and 1/4 around ``far`` (the two L2 partitions)."""
    k = n * 3 // 4
    return np.concatenate([rng.normal(near, 15, k), rng.normal(far, 20, n - k)]).round()


def test_the_cut_separates_hits_from_misses_with_two_partitions_each():
    rng = np.random.default_rng(1)
    hot, cold = _loads(rng, 290, 460, 4000), _loads(rng, 560, 710, 4000)
    cut = l2probe.hit_threshold(hot, cold)
    assert 470 < cut < 550  # above the far partition's hits, below the near one's HBM reads
    assert l2probe.survival(hot, cut) > 0.97 and l2probe.survival(cold, cut) < 0.03
    half = np.concatenate([hot[:2000], cold[:2000]])
    assert l2probe.survival(half, cut) == pytest.approx(0.5, abs=0.03)


def test_the_cut_is_one_of_the_best_not_between_two_of_them():
    # two equally good cuts apart (100 and 400, one load misplaced each): the cut lands after the first, at 150, not
    # at the midpoint of the pair, where two loads would be misplaced
    hot, cold = np.array([100.0] * 100 + [400.0]), np.array([200.0] + [500.0] * 100)
    assert l2probe.hit_threshold(hot, cold) == 150.0
    # a run of equally good cuts: halfway from its last to the next latency
    assert l2probe.hit_threshold(np.array([1.0, 2.0, 3.0]), np.array([7.0, 8.0])) == 5.0


def test_latencies_that_cannot_be_told_apart_are_refused():
    rng = np.random.default_rng(2)
    with pytest.raises(ValueError, match="overlap"):
        l2probe.hit_threshold(rng.normal(500, 50, 1000), rng.normal(510, 50, 1000))
    with pytest.raises(ValueError, match="needs hot and cold"):
        l2probe.hit_threshold(np.array([]), np.array([600.0]))


def _rows(points, cold=0.02, touches=1):
    rows = [{"kind": "cold", "touches": 0, "b_l2": 0.0, "survival": cold}]
    rows += [{"kind": "trial", "touches": touches, "b_l2": b, "survival": s} for b, s in points]
    return rows


def test_the_curve_is_scaled_between_hot_and_cold_and_never_rises():
    pts = [(0.0, 0.98), (0.0, 0.99), (0.5, 0.985), (0.5, 0.995), (0.625, 0.5), (1.0, 0.01), (2.0, 0.03)]
    c = l2probe.survival_curve(_rows(pts) + _rows([(0.0, 0.5)], touches=2)[1:])
    assert [b for b, _ in c] == [0.0, 0.5, 0.625, 1.0, 2.0]
    assert c[0][1] == 1.0 and c[1][1] == 1.0  # 0.99 median over a 0.985 hot median: clipped, then not above
    assert c[2][1] == pytest.approx((0.5 - 0.02) / (0.985 - 0.02))
    assert c[3][1] == 0.0 and c[4][1] == 0.0  # below cold: clipped; 0.03 after 0.0: the running minimum
    with pytest.raises(ValueError, match="too close"):
        l2probe.survival_curve(_rows([(0.0, 0.3)], cold=0.1))
    with pytest.raises(ValueError, match="no hot trials"):
        l2probe.survival_curve(_rows([(0.5, 0.9)]))


def test_the_latency_table_gives_back_every_load():
    raw = {"cold-r0": np.array([700, 530, 530, 702], dtype=np.uint32), "t1-b0-r0": np.array([290, 460, 291])}
    back = l2probe.latencies(l2probe.latency_table(raw))
    assert set(back) == set(raw) and all(np.array_equal(np.sort(raw[k]), back[k]) for k in raw)


def test_the_profile_curve_is_the_committed_probe_run():
    """h200-x1-calibrated's l2_survival_* are survival_curve of the committed probe's rows, rounded to 3 places, and
    those rows' survival is what the committed latencies give at the run's cut."""
    rows = pd.read_csv(RUN / "l2-survival.csv")
    curve = l2probe.survival_curve(rows.to_dict("records"), touches=1)
    hw = load_hardware("h200-x1-calibrated")
    assert hw.l2_survival_taken == tuple(b for b, _ in curve)
    assert hw.l2_survival_share == tuple(round(s, 3) for _, s in curve)
    lat = l2probe.latencies(pd.read_csv(RUN / "l2-survival-latency.csv.gz"))
    key = {(r.kind, r.touches, r.b_l2, r.rep): r for r in rows.itertuples()}
    for (kind, t, b, rep), r in list(key.items())[::20]:
        name = f"cold-r{rep}" if kind == "cold" else f"t{t}-b{b:g}-r{rep}"
        assert l2probe.survival(lat[name], r.threshold_cycles) == pytest.approx(r.survival)
    hot = np.concatenate([v for k, v in lat.items() if k.startswith("t") and "-b0-" in k])
    cold = np.concatenate([v for k, v in lat.items() if k.startswith("cold")])
    assert l2probe.hit_threshold(hot, cold) == rows["threshold_cycles"].iloc[0]


def test_the_probe_script_without_a_gpu_says_so_in_one_line(tmp_path):
    p = subprocess.run([sys.executable, str(ROOT / "bench/hw/l2_survival_probe.py"), str(tmp_path / "o")],
                       capture_output=True, text=True, cwd=ROOT, timeout=120)
    if p.returncode == 0:
        pytest.skip("a GPU is here: the probe ran")
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1 and "Traceback" not in p.stderr
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("hot_bytes, rounds", [(-16, 8), (24, 8), (1 << 20, 0), (1 << 20, 65)])
def test_a_hot_set_that_cannot_run_is_refused_before_any_gpu_work(hot_bytes, rounds):
    with pytest.raises(ValueError, match="hot_bytes|hot_rounds"):
        l2probe.measure(hot_bytes=hot_bytes, hot_rounds=rounds)
    l2probe.check_hot(0, 8)
    l2probe.check_hot(15 << 20, 1)


H100_PROBES = sorted((ROOT / "bench/results/hw-h100/2026-12-05-l2-survival-1gpu").glob("GPU-*/l2"))


@pytest.mark.parametrize("run", H100_PROBES, ids=lambda p: p.parent.name)
def test_the_h100_probes_measure_the_datasheet_profiles_survival_curve(run):
    """Each H100's committed curve is survival_curve of its committed trials, and h100-x1-datasheet's curve (the
    H200's, in L2 sizes, with the H100's L2) is within 0.07 of it at every point (the two H200 probes differ by as
    much): what the probe's README and docs/hardware.md say."""
    rows = pd.read_csv(run / "l2-survival.csv")
    curve = l2probe.survival_curve(rows.to_dict("records"), touches=1)
    committed = pd.read_csv(run / "l2-survival-curve.csv").query("touches == 1")
    assert [b for b, _ in curve] == committed["b_l2"].tolist()
    assert [s for _, s in curve] == pytest.approx(committed["survival"].tolist(), abs=1e-9)
    hw = load_hardware("h100-x1-datasheet")
    meta = json.loads((run / "l2-survival.json").read_text())
    assert meta["l2_bytes"] == hw.l2_bytes == 50 * 2**20
    assert hw.l2_survival_taken == tuple(b for b, _ in curve)
    gap = max(abs(p - s) for p, (_, s) in zip(hw.l2_survival_share, curve))
    assert gap <= 0.07, f"{run.parent.name}: the profile's curve is {gap:.3f} from the H100's"


def test_there_are_two_committed_h100_probes():
    assert [p.parent.name for p in H100_PROBES] == ["GPU-53a9632f", "GPU-5742337a"]
