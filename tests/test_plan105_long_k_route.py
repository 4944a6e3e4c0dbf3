"""bench/plan105_long_k_route.py: registered plan 105's registration (the H100 profile and its two one-line twins,
the drift's tile law and the exposed HBM share at the HBM3 rate, on long-K GEMMs alone), its claims on made-up calls,
and calls it must refuse (no GPU)."""

from __future__ import annotations

import pandas as pd
import pytest

from tests.helpers import load_bench
from tests.test_plan97_small_gemms import call, judged


@pytest.fixture(scope="module")
def p105():
    return load_bench("plan105_long_k_route")


@pytest.fixture(scope="module")
def registered(p105):
    return pd.read_csv(p105.REGISTRATION / "predicted.csv")


def test_the_registration_is_what_the_profiles_give_and_each_twin_changes_one_line(p105, registered, tmp_path):
    for t, (name, start, line) in p105.TWINS.items():
        text = (p105.REGISTRATION / f"{name}.toml").read_text()
        assert text == p105.twin_text(t) and line in text
        base = (p105.SPECS_DIR / "hardware" / "h100-x1-datasheet.toml").read_text().splitlines()
        diff = [(a, b) for a, b in zip(base, text.splitlines()) if a != b]
        assert len(diff) == 2 and diff[0][1] == f'name = "{name}"' and diff[1][1] == line  # the name and one line
    now = p105.register(tmp_path / "reg").round(4)
    pd.testing.assert_frame_equal(now, registered, check_exact=False, rtol=0, atol=2e-4, check_dtype=False)
    assert len(p105.SHAPES) == 10 and len(registered) == 10 * 8
    hws = p105.profiles()
    assert hws["tile"].config(128, 256).drift_k_ref == 0 and hws["hbm3"].l2_hbm_exposed_gbps == 0
    # what the claims rest on: both twins price every shape slower than the model, the tile law most on wide N
    b = registered.groupby(["m", "n", "k"])[["model_ms", "tile_ms", "hbm3_ms"]].min()
    assert (b.tile_ms > b.model_ms).all() and (b.hbm3_ms > b.model_ms).all()
    wide = b[[p105.kind_of(n, k) == "wide" for _, n, k in b.index]]
    assert (wide.tile_ms > wide.hbm3_ms).all()


def test_a_call_at_the_hbm3_twins_times_meets_a_b_c(p105, registered, tmp_path):
    _, cl = judged(p105, call(p105, tmp_path / "run", registered, "hbm3"), tmp_path)
    assert cl.met.tolist()[:3] == [True, True, True], cl


def test_a_call_at_the_tile_twins_times_misses_c(p105, registered, tmp_path):
    b, cl = judged(p105, call(p105, tmp_path / "run", registered, "tile"), tmp_path)
    assert cl.loc["b", "met"] and not cl.loc["c", "met"], cl
    assert b.tile_pct.abs().max() < 0.05


def test_a_call_at_the_models_times_misses_a_and_b(p105, registered, tmp_path):
    _, cl = judged(p105, call(p105, tmp_path / "run", registered, "model"), tmp_path)
    assert not cl.loc["a", "met"] and not cl.loc["b", "met"], cl


@pytest.mark.parametrize("make, message", [
    (lambda p, run, reg: call(p, run, reg, gpu="H200"), "names no H100"),
    (lambda p, run, reg: call(p, run, reg, drop=(32768, 8192, 32768)), "the call timed no 32768x8192x32768"),
])
def test_a_call_it_cannot_judge_is_refused_in_one_line(p105, registered, tmp_path, capsys, make, message):
    run = make(p105, tmp_path / "run", registered)
    out = tmp_path / "judged"
    assert p105.main(["--judge", str(run), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("plan105_long_k_route: ") and message in err and "\n" not in err, err
    assert not out.exists()


@pytest.mark.parametrize("twin", ["tile", "hbm3"])
def test_a_registration_whose_twin_was_edited_is_refused(p105, registered, tmp_path, twin):
    reg = tmp_path / "reg"
    p105.register(reg)
    name = p105.TWINS[twin][0]
    (reg / f"{name}.toml").write_text(p105.twin_text(twin) + "# edited\n")
    runs = pd.read_csv(call(p105, tmp_path / "run", registered, "model") / "gemm_shapes.csv")
    with pytest.raises(ValueError, match=f"is not h100-x1-datasheet with plan 105's {twin} line as committed"):
        p105.judge(runs, reg)


def test_the_committed_h100_call_judges_as_committed(p105, tmp_path):
    """Plan 105's call (bench/results/hw-h100/2026-12-07-registered105-1gpu, GPU-e8a691c8) judged again gives the
    committed tables, no claim met; docs/validation.md's plan 105 section quotes its claims and best orders."""
    from tests.test_plan85_grouped_kept import _doc_section

    out = tmp_path / "judged"
    run = p105.ROOT / "bench/results/hw-h100/2026-12-07-registered105-1gpu"
    assert p105.main(["--judge", str(run), "--out", str(out)]) == 0
    for name in ("orders.csv", "best.csv", "claims.csv"):
        assert (out / name).read_text() == (p105.RESULTS / name).read_text(), name
    cl = pd.read_csv(out / "claims.csv").set_index("claim")
    assert not cl.met.any()
    doc = " ".join(_doc_section(p105, 105).split())
    for claim in "abc":
        assert f"| {claim} | {cl.loc[claim, 'value']} | no |" in doc, claim
    assert f"| d (read) | {cl.loc['d', 'value']} | no |" in doc
    b = pd.read_csv(out / "best.csv")
    assert len(b) == 10 and (b.model_pct > 0).all()  # alone, the profile priced every one slow, not fast
    for _, r in b.iterrows():
        row = (f"| {r.m} x {r.n} x {r.k} | {r.kind} | {r.best_order} | {r.best_ms:.2f} | {r.model_pct:+.2f} | "
               f"{r.tile_pct:+.2f} | {r.hbm3_pct:+.2f} | {r.naive_pct:+.2f} |")
        assert row in doc, row
