"""bench/plan108_reference_units.py: registered plan 108's registration (plan 106's prices, unchanged), its claims on
made-up calls (GEMMs alone on a new unit, scaled by the calibration GEMM timed beside them), and calls it must refuse
(no GPU)."""

from __future__ import annotations

import pandas as pd
import pytest

from tests.helpers import load_bench
from tests.test_plan97_small_gemms import call as probe_call


@pytest.fixture(scope="module")
def p108():
    return load_bench("plan108_reference_units")


@pytest.fixture(scope="module")
def registered(p108):
    return pd.read_csv(p108.REGISTRATION / "predicted.csv")


def made_up(p108, run, registered, scale=1.0, fast=1.0, gpu="H100", drop_shape=None):
    """A made-up call of plan 106's probe on a unit ``scale`` slower than the profile prices (every order), the down
    GEMMs of FAST a further ``fast`` slower (so the profile prices them fast against the reference)."""
    reg = registered.copy()
    down = [tuple(s) in p108.FAST for s in reg[["m", "n", "k"]].values.tolist()]
    reg.loc[down, "model_ms"] = reg.loc[down, "model_ms"] * fast
    return probe_call(p108, run, reg, "model", scale, gpu, drop_shape)


def judged(p108, run, tmp_path):
    out = tmp_path / "judged"
    assert p108.main(["--judge", str(run), "--out", str(out)]) == 0
    return pd.read_csv(out / "best.csv"), pd.read_csv(out / "claims.csv").set_index("claim")


def test_the_registration_is_plan_106s_prices_unchanged(p108):
    p106 = load_bench("plan106_harness_or_unit")
    assert (p108.REGISTRATION / "predicted.csv").read_bytes() == (p106.REGISTRATION / "predicted.csv").read_bytes()
    assert p108.SHAPES == p106.SHAPES and set(p108.FAST) < set(p108.OTHERS) and len(p108.OTHERS) == 6


def test_a_fast_unit_whose_down_gemms_run_slower_still_meets_every_claim(p108, registered, tmp_path):
    b, cl = judged(p108, made_up(p108, tmp_path / "run", registered, scale=1 / 1.05, fast=1.02), tmp_path)
    assert cl.met.tolist()[:3] == [True, True, True], cl
    assert cl.loc["a", "value"].endswith("reference +5.00%)")
    # scaled, the three down GEMMs are the profile's -2% and the others exact
    s = b.set_index(["m", "n", "k"]).model_scaled_pct
    assert all(abs(s[x] + 100 * (1 - 1 / 1.02)) < 0.01 for x in p108.FAST)


def test_down_gemms_priced_right_miss_c(p108, registered, tmp_path):
    _, cl = judged(p108, made_up(p108, tmp_path / "run", registered, scale=1 / 1.05), tmp_path)
    assert cl.met.tolist()[:3] == [True, True, False], cl


def test_a_unit_whose_shapes_differ_from_the_reference_misses_a_and_b(p108, registered, tmp_path):
    # the reference at the profile's speed, the down GEMMs 6% faster: scaling cannot help, and the MAPE is 3%
    _, cl = judged(p108, made_up(p108, tmp_path / "run", registered, fast=1 / 1.06), tmp_path)
    assert cl.met.tolist()[:3] == [False, True, False], cl
    _, cl = judged(p108, made_up(p108, tmp_path / "run2", registered, scale=1 / 1.05, fast=1 / 1.06), tmp_path / "2")
    assert cl.met.tolist()[:2] == [False, True], cl  # off by 5%, scaling helps although (a) misses


@pytest.mark.parametrize("kw, message", [
    (dict(gpu="H200"), "names no H100"),
    (dict(drop_shape=(16384, 8192, 8192)), "the call timed no 16384x8192x8192"),
])
def test_a_call_it_cannot_judge_is_refused_in_one_line(p108, registered, tmp_path, capsys, kw, message):
    run = made_up(p108, tmp_path / "run", registered, **kw)
    out = tmp_path / "judged"
    assert p108.main(["--judge", str(run), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("plan108_reference_units: ") and message in err and "\n" not in err, err
    assert not out.exists()


def test_a_call_on_a_unit_that_timed_these_shapes_is_a_repeat(p108, tmp_path, capsys):
    """Plan 106's committed call (GPU-d182769f) is refused: the rules were read from that unit."""
    run = p108.ROOT / "bench/results/hw-h100/2026-12-08-registered106-1gpu"
    assert p108.main(["--judge", str(run), "--out", str(tmp_path / "judged")]) == 2
    assert "names GPU-d182769f, a unit that timed these shapes" in capsys.readouterr().err


def test_the_committed_h100_call_judges_as_committed(p108, tmp_path):
    """Plan 108's call (bench/results/hw-h100/2026-12-08-registered108-1gpu, GPU-b3068619) judged again gives the
    committed tables, (b) and (c) met and (a) missed; docs/validation.md's plan 108 section quotes its claims and its
    best orders."""
    import re

    from tests.test_plan85_grouped_kept import _doc_section

    out = tmp_path / "judged"
    run = p108.ROOT / "bench/results/hw-h100/2026-12-08-registered108-1gpu"
    assert p108.main(["--judge", str(run), "--out", str(out)]) == 0
    for name in ("orders.csv", "best.csv", "claims.csv"):
        assert (out / name).read_text() == (p108.RESULTS / name).read_text(), name
    cl = pd.read_csv(out / "claims.csv").set_index("claim")
    assert cl.met.tolist() == [False, True, True, False]
    doc = " ".join(_doc_section(p108, 108).split())
    for claim in "abc":
        assert f"| {claim} | {cl.loc[claim, 'value']} | {'yes' if cl.loc[claim, 'met'] else 'no'} |" in doc, claim
    assert f"| d (read) | {cl.loc['d', 'value']} | no |" in doc
    for _, r in pd.read_csv(out / "best.csv").iterrows():
        row = (f"| {r.m} x {r.n} x {r.k} | {r.best_order} | {r.best_ms:.3f} | {r.model_pct:+.2f} | "
               f"{r.model_scaled_pct:+.2f} | {r.naive_pct:+.2f} | {r.naive_scaled_pct:+.2f} |").replace("-", "−")
        assert re.sub(r"−0\.00", "+0.00", row) in doc, row
