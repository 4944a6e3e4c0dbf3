"""bench/plan70_round0.py: registered plan 70's registration, its claims on made-up tables (each claim broken in
turn), its judge on plan 68's committed H100 calls (post-hoc) and the calls it must refuse (no GPU)."""

from __future__ import annotations

import shutil

import pandas as pd
import pytest

from tests.helpers import assert_registration_reproduced, load_bench

H100_CALLS = ("2026-12-05-registered67-68-1gpu", "2026-12-05-registered67-68-1gpu-run2")
"""Plan 68's two committed H100 calls (one traced run of every case of both experiments)."""


@pytest.fixture(scope="module")
def p70():
    return load_bench("plan70_round0")


@pytest.fixture(scope="module")
def registered(p70):
    return pd.read_csv(p70.REGISTERED / "predicted.csv")


def test_the_registration_is_the_models_round0_ratios(p70, registered):
    assert len(registered) == 2 * 2 * 2 * 3  # GPUs x experiments x M x orders
    assert_registration_reproduced(p70.register(), registered, ("gpu", "profile", "experiment", "case", "order"),
                                   ("model", "round_over_l2"))
    # the model makes no round-0 penalty where the round fits, and every first round here fits both L2s
    assert registered["model"].between(0.99, 1.01).all() and (registered["round_over_l2"] < 1).all()


def _table(registered, gpu="H100", measured=1.01, changes=()):
    """A :func:`cases` table of the registration's ``gpu`` rows, every measured ratio ``measured`` but ``changes``:
    (experiment suffix, case, order, measured)."""
    m = registered[registered["gpu"] == gpu][["gpu", "experiment", "case", "order"]].assign(measured=measured)
    for suffix, case, order, value in changes:
        at = m["experiment"].str.endswith(suffix) & (m["case"] == case) & (m["order"] == order)
        assert at.sum() == 1
        m.loc[at, "measured"] = value
    return m


def _claims(p70, registered, **kw):
    return p70.claims(p70.cases(registered, _table(registered, **kw)), "test").set_index("claim")["met"]


def test_flat_rounds_meet_every_claim(p70, registered):
    assert _claims(p70, registered).all()


ROW_CASES = [(s, c) for s in ("h4096", "h4608") for c in ("m=8192", "m=16384")]
GROUP_CASES = [(s, c, o) for s, c in ROW_CASES for o in ("intragpu-g4", "intragpu-g2")]


def test_a_row_order_step_breaks_a_alone(p70, registered):
    met = _claims(p70, registered, changes=[("h4608", "m=8192", "intragpu-row", 1.05)])
    assert not met["a"] and met["b"] and met["c"] and met["d"]
    # the same step in pairs is not row order's
    assert _claims(p70, registered, changes=[("h4608", "m=8192", "intragpu-g2", 1.08)])[["a", "b"]].all()


def test_row_orders_step_everywhere_breaks_a_and_b_not_c(p70, registered):
    met = _claims(p70, registered, changes=[(s, c, "intragpu-row", 1.2) for s, c in ROW_CASES])
    assert not met["a"] and not met["b"] and met["c"]  # the other orders' median is theirs alone


def test_b_and_c_are_medians_at_most_the_level(p70, registered):
    # row order at the level in every case: its median 1.03 meets (b); one case over it does not move the median
    at = [(s, c, "intragpu-row", 1.03) for s, c in ROW_CASES]
    assert _claims(p70, registered, changes=at)["b"]
    assert _claims(p70, registered, changes=at[:3] + [(*ROW_CASES[3], "intragpu-row", 1.049)])["b"]
    assert not _claims(p70, registered, changes=at[:2] + [(s, c, "intragpu-row", 1.035) for s, c in ROW_CASES[2:]])["b"]
    # groups of 4 and pairs: five of eight over the level move the median over it, three do not
    over = [(s, c, o, 1.04) for s, c, o in GROUP_CASES]
    assert not _claims(p70, registered, changes=over[:5])["c"]
    met = _claims(p70, registered, changes=over[:3])
    assert met["c"] and met["b"]


def test_a_raised_level_breaks_b_c_and_d(p70, registered):
    met = _claims(p70, registered, measured=1.035)
    assert met["a"] and not met["b"] and not met["c"] and not met["d"]


def test_d_needs_more_than_half_of_the_cases_near_the_model(p70, registered):
    far = [(s, c, o, 1.045) for s, c, o in GROUP_CASES]
    assert not _claims(p70, registered, changes=far[:6])["d"]  # 6 of 12 near: not more than half
    assert _claims(p70, registered, changes=far[:5])["d"]


def test_d_measures_the_distance_to_the_registered_model_not_to_1(p70, registered):
    moved = registered.assign(model=1.05)
    assert _claims(p70, moved, measured=1.05)["d"]  # every case on the model, none near 1
    assert _claims(p70, moved, measured=1.08)["d"]  # exactly NEAR away: near
    assert not _claims(p70, moved, measured=1.0)["d"]


def test_the_judge_reads_the_calls_gpu_and_its_traces(p70, registered):
    run = p70.ROOT / "bench/results/hw-h100" / H100_CALLS[0]
    c = p70.cases(registered, p70.measured(run))
    assert len(c) == 12 and set(c["gpu"]) == {"H100"} and set(c["profile"]) == {"h100-x1-datasheet"}
    row = c[c["order"] == "intragpu-row"].set_index(["experiment", "case"])["measured"]
    assert row[("reg68-chain-reuse-h4608", "m=8192")] == pytest.approx(1.028, abs=5e-4)
    assert (c["error"] == c["model"] - c["measured"]).all()


@pytest.mark.parametrize("call", H100_CALLS)
def test_plan_68s_h100_calls_meet_every_claim_post_hoc(p70, call, tmp_path):
    assert p70.main(["--judge", str(p70.ROOT / "bench/results/hw-h100" / call), "--out", str(tmp_path)]) == 0
    cl = pd.read_csv(tmp_path / "claims.csv").set_index("claim")
    assert cl["met"].all() and cl["provenance"].str.startswith("post-hoc").all()


def _fake_call(p70, tmp_path, gpu_line):
    src = p70.ROOT / "bench/results/hw-h100" / H100_CALLS[0]
    run = tmp_path / "run"
    for e in p70.EXPERIMENTS:
        shutil.copytree(src / e, run / e)
    (run / "env.txt").write_text(gpu_line)
    return run


def test_the_judge_refuses_another_gpu_a_missing_env_and_a_missing_bundle(p70, tmp_path, capsys):
    out = tmp_path / "out"
    run = _fake_call(p70, tmp_path, "0, NVIDIA A100-SXM4-80GB, GPU-00000000-0000, 1, 580, 1410 MHz, 1410 MHz,\n")
    assert p70.main(["--judge", str(run), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "A100" in err and err.count("\n") == 1 and not out.exists()
    (run / "env.txt").unlink()
    assert p70.main(["--judge", str(run), "--out", str(out)]) == 2
    assert "env.txt" in capsys.readouterr().err and not out.exists()
    (run / "env.txt").write_text("0, NVIDIA H200, GPU-00000000-0000, 1, 580, 1980 MHz, 1980 MHz,\n")
    (run / p70.EXPERIMENTS[1] / "ctapipe_traces.trace.npz").unlink()
    assert p70.main(["--judge", str(run), "--out", str(out)]) == 2
    assert "ctapipe_traces.trace.npz" in capsys.readouterr().err and not out.exists()


def test_the_judge_takes_an_h200_call_against_the_h200_profile(p70, registered, tmp_path):
    run = _fake_call(p70, tmp_path, "0, NVIDIA H200, GPU-00000000-0000, 1, 580, 1980 MHz, 1980 MHz,\n")
    c = p70.cases(registered, p70.measured(run))
    assert set(c["profile"]) == {"h200-x1-calibrated"} and len(c) == 12
    with pytest.raises(p70.JudgeError, match="no H200"):
        p70.cases(registered[registered["gpu"] == "H100"], p70.measured(run))


def test_the_committed_judgement_of_plan_69s_h100_call_is_what_the_judge_gives(p70, tmp_path):
    run = p70.ROOT / "bench/results/hw-h100/2026-12-06-registered69-1gpu"
    assert p70.main(["--judge", str(run), "--out", str(tmp_path)]) == 0
    for name in ("cases.csv", "claims.csv"):
        pd.testing.assert_frame_equal(pd.read_csv(tmp_path / name),
                                      pd.read_csv(p70.ROOT / "bench/results/validation-registered70" / name))
    cl = pd.read_csv(tmp_path / "claims.csv")
    assert cl["met"].all() and cl["provenance"].str.startswith("registered").all()
