"""bench/plan97_small_gemms.py: registered plan 97's registration (the H100 datasheet profile and its drift-free twin
on plan 96's GEMMs alone), its claims on made-up calls, and calls it must refuse (no GPU)."""

from __future__ import annotations

import pandas as pd
import pytest

from tests.helpers import load_bench
from tests.test_plan83_alone_edge import ENV


@pytest.fixture(scope="module")
def p97():
    return load_bench("plan97_small_gemms")


@pytest.fixture(scope="module")
def registered(p97):
    return pd.read_csv(p97.REGISTRATION / "predicted.csv")


def test_the_registration_is_what_the_profiles_give(p97, registered, tmp_path):
    assert (p97.REGISTRATION / f"{p97.TWIN}.toml").read_text() == p97.twin_text()
    now = p97.register(tmp_path / "reg").round(4)
    pd.testing.assert_frame_equal(now, registered, check_exact=False, rtol=0, atol=2e-4, check_dtype=False)
    assert len(p97.SHAPES) == 16 and len(registered) == 16 * 8
    # the drift's share the claims rest on: large on the gate-and-up GEMMs, small elsewhere
    b = registered.groupby(["m", "n", "k"])[["model_ms", "nodrift_ms"]].min()
    share = (b.model_ms / b.nodrift_ms - 1) * 100
    up = [s for s in p97.SHAPES if p97.role(s[1], s[2]) == "up"]
    assert share.loc[up].min() > 4 and share.drop(index=up).max() < 2.5


def call(plan, run, registered, source="model", scale=1.0, gpu="H100", drop=None):
    """A made-up call of a GEMM-order plan (97, 98): every shape at every order timed at the registration's ``source``
    time times ``scale`` (``drop``: a shape left out), under an ``env.txt`` naming ``gpu``."""
    run.mkdir(parents=True)
    (run / "env.txt").write_text("index, name, uuid, serial, driver_version, clocks.current.sm [MHz]\n"
                                 + ENV[gpu] + "\n")
    r = registered if drop is None else registered[~((registered.m == drop[0]) & (registered.n == drop[1]) &
                                                     (registered.k == drop[2]))]
    pd.DataFrame({"m": r.m, "n": r.n, "k": r.k, "backend": "cutlass", "order": r.order,
                  "median_ms": r[f"{source}_ms"] * scale}).to_csv(run / "gemm_shapes.csv", index=False)
    return run


def judged(plan, run, tmp_path):
    """``plan``'s judge on ``run`` into ``tmp_path/judged``: its best.csv and claims.csv."""
    out = tmp_path / "judged"
    assert plan.main(["--judge", str(run), "--out", str(out)]) == 0
    return pd.read_csv(out / "best.csv"), pd.read_csv(out / "claims.csv").set_index("claim")


def test_a_call_at_the_drift_free_times_meets_every_claim(p97, registered, tmp_path):
    b, cl = judged(p97, call(p97, tmp_path / "run", registered, "nodrift"), tmp_path)
    assert cl.met.all(), cl
    assert (b[b.role == "up"].model_pct > 4).all() and b.nodrift_pct.abs().max() < 0.05  # 4-decimal ms


def test_a_call_at_the_models_times_misses_a_and_c(p97, registered, tmp_path):
    _, cl = judged(p97, call(p97, tmp_path / "run", registered, "model"), tmp_path)
    assert cl.met.tolist() == [False, True, False, True]


def test_a_call_four_percent_slower_than_the_drift_free_twin_misses_d(p97, registered, tmp_path):
    _, cl = judged(p97, call(p97, tmp_path / "run", registered, "nodrift", 1.04), tmp_path)
    assert not cl.loc["d", "met"] and cl.loc["d", "value"].startswith("3.84%")  # 4% less the 4-decimal rounding


@pytest.mark.parametrize("make, message", [
    (lambda p97, run, reg: call(p97, run, reg, gpu="H200"), "names no H100"),
    (lambda p97, run, reg: call(p97, run, reg, drop=(65536, 1024, 4096)), "the call timed no 65536x1024x4096"),
])
def test_a_call_it_cannot_judge_is_refused_in_one_line(p97, registered, tmp_path, capsys, make, message):
    run = make(p97, tmp_path / "run", registered)
    out = tmp_path / "judged"
    assert p97.main(["--judge", str(run), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("plan97_small_gemms: ") and message in err and "\n" not in err, err
    assert not out.exists()


def test_the_committed_h100_call_judges_as_committed_and_the_docs_quote_it(p97, tmp_path):
    """The call (bench/results/hw-h100/2026-12-07-registered97-1gpu, GPU-8c9a6fca) judged again gives the committed
    tables, every claim met; docs/validation.md's plan 97 table and claims are what it gives."""
    from tests.test_plan85_grouped_kept import _doc_section

    out = tmp_path / "judged"
    run = p97.ROOT / "bench/results/hw-h100/2026-12-07-registered97-1gpu"
    assert p97.main(["--judge", str(run), "--out", str(out)]) == 0
    for name in ("orders.csv", "best.csv", "claims.csv"):
        assert (out / name).read_text() == (p97.RESULTS / name).read_text(), name
    cl = pd.read_csv(out / "claims.csv").set_index("claim")
    assert cl.met.all()
    doc = " ".join(_doc_section(p97, 97).split())
    for claim in "abcd":
        assert f"| {cl.loc[claim, 'value']} | yes |" in doc, claim
    for r in pd.read_csv(out / "best.csv").itertuples():
        row = (f"| {r.m} x {r.n} x {r.k} | {r.role} | {r.best_order} | {r.best_ms:.3f} | {r.model_pct:+.1f} | "
               f"{r.nodrift_pct:+.1f} | {r.naive_pct:+.1f} |")
        assert row in doc, row
