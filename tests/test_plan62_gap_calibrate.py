"""bench/plan62_gap_calibrate.py: registered plan 62's registration, its claims on made-up probes (near the run's
spread, far from it, noisy), and its judge on plan 59's committed call with the probe of the same machine (post-hoc)
and on runs it must refuse (no GPU)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from tests.helpers import assert_registration_reproduced, load_bench

ROOT = Path(__file__).resolve().parent.parent
CALL = ROOT / "bench/results/hw/2026-12-05-registered59-1gpu"
PROBE = ROOT / "bench/results/hw/2026-12-05-ticket-gaps-1gpu/probes"


@pytest.fixture(scope="module")
def p62():
    return load_bench("plan62_gap_calibrate")


@pytest.fixture(scope="module")
def registered(p62):
    return pd.read_csv(p62.REGISTERED / "predicted.csv")


def test_the_registration_is_the_profiles_pooled_value_on_every_pairs_case(p62, registered):
    assert len(registered) == 2 * 2 + 2 * 3 and set(registered["order"]) == {"intragpu-g2"}
    assert_registration_reproduced(p62.register(), registered, ("experiment", "case", "order"), ("pooled_cv",))
    assert (registered["pooled_cv"] == 0.74).all()


def _cases(p62, registered, cvs, probe_traces):
    """Made-up measured rows: the cases' spreads ``cvs`` (one per registered row), the probe's traces."""
    import numpy as np

    m = registered[["experiment", "case", "order"]].assign(cv=cvs, probe_cv=float(np.median(probe_traces)))
    for mm, v in zip((8192, 16384), probe_traces):
        m[f"probe_cv_m{mm}"] = v
    return p62.cases(registered, m)


def test_a_probe_at_the_runs_spread_meets_every_claim_and_one_at_the_pooled_value_misses(p62, registered):
    cvs = [0.90, 0.92, 0.88, 0.95, 0.91, 0.89, 0.93, 0.90, 0.94, 0.92]  # a wide-spread machine, median 0.915
    near = p62.claims(_cases(p62, registered, cvs, (0.88, 0.96)), "test").set_index("claim")
    assert near["met"].all(), near
    pooled = p62.claims(_cases(p62, registered, cvs, (0.72, 0.76)), "test").set_index("claim")
    assert pooled["met"].tolist() == [False, False, True]  # 0.74 is 0.175 away; the probe no nearer than the pooled
    noisy = p62.claims(_cases(p62, registered, cvs, (0.80, 1.02)), "test").set_index("claim")
    assert noisy["met"].tolist() == [True, True, False]  # its median is right, its traces 0.22 apart
    # near 0.74 the pooled value is as good: (b) is not met by a probe 0.05 off
    level = p62.claims(_cases(p62, registered, [0.74] * 10, (0.77, 0.81)), "test").set_index("claim")
    assert level["met"].tolist() == [True, False, True]


def _call(tmp_path, experiments, probe=True):
    run = tmp_path / "run"
    run.mkdir(parents=True)
    for e in experiments:
        (run / e).symlink_to(CALL / e)
    if probe:
        (run / "gaps").mkdir()
        (run / "gaps" / "probes").symlink_to(PROBE)
    return run


def test_the_judge_on_plan_59s_call_and_its_probe(p62, tmp_path, capsys):
    """GPU-ee4f01a5's call ran the probe and the four experiments (before this plan: post-hoc); every claim holds."""
    run = _call(tmp_path, p62.EXPERIMENTS)
    out = tmp_path / "v"
    assert p62.main(["--judge", str(run), "--out", str(out)]) == 0
    c = pd.read_csv(out / "cases.csv")
    assert len(c) == 10 and c["probe_cv"].iloc[0] == 0.6255 and round(c["cv"].median(), 3) == 0.629
    cl = pd.read_csv(out / "claims.csv").set_index("claim")
    assert cl["met"].all() and cl["provenance"].str.startswith("post-hoc").all()
    assert "0.670, 0.581" in cl.loc["c", "value"]


def test_the_judge_refuses_a_call_without_the_probe_or_an_experiment(p62, tmp_path, capsys):
    no_probe = _call(tmp_path / "a", p62.EXPERIMENTS, probe=False)
    assert p62.main(["--judge", str(no_probe), "--out", str(tmp_path / "o1")]) == 2
    assert "ticket-gaps.csv" in capsys.readouterr().err and not (tmp_path / "o1").exists()
    short = _call(tmp_path / "b", p62.EXPERIMENTS[:1] + p62.WHERE_RUN)
    assert p62.main(["--judge", str(short), "--out", str(tmp_path / "o2")]) == 2
    assert "reg58-gap-law-h8448" in capsys.readouterr().err and not (tmp_path / "o2").exists()


def test_a_call_stopped_before_plan_59s_experiments_is_judged_on_plan_58s(p62, tmp_path):
    run = _call(tmp_path, p62.REQUIRED)
    out = tmp_path / "v"
    assert p62.main(["--judge", str(run), "--out", str(out)]) == 0
    c = pd.read_csv(out / "cases.csv")
    assert set(c["experiment"]) == set(p62.REQUIRED) and len(c) == 4
