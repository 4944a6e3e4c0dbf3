"""bench/posthoc_tile_steps.py: the per-tile medians on a made-up trace, and the committed tables (what a chain-kernel
tile costs after its mainloop, against K and against the plain GEMM) are what the script writes (no GPU)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from tests.helpers import load_bench

OUT = Path(__file__).resolve().parent.parent / "bench/results/posthoc-tile-steps"


@pytest.fixture(scope="module")
def pts():
    return load_bench("posthoc_tile_steps")


def test_steps_reads_the_mainloop_the_ctas_step_and_what_follows(pts):
    """Two CTAs, four tiles each, mainloops of 10, 20, 10 and 20 us: after each, 1.5 us of epilogue, 0.2 of store,
    0.3 of release, the next tile acquired 1 us after the release -> 3 us from a mainloop end to the next acquire,
    whatever the mainloops; steps of 23, 13, 23 us. A difference of the medians (step 23 less mainloop 15) would say
    8."""
    rows = []
    for cta in (0, 1):
        t = 500.0 * cta
        for ml in (10e3, 20e3, 10e3, 20e3):
            rows.append(dict(cta=cta, t_acquire=t, t_mainloop_end=t + ml, t_compute_end=t + ml + 1.5e3,
                             t_store_end=t + ml + 1.7e3, t_signal=t + ml + 2e3))
            t += ml + 3e3
    s = pts.steps(pd.DataFrame(rows))
    assert s["tiles"] == 8 and s["mainloop_us"] == pytest.approx(15.0) and s["step_us"] == pytest.approx(23.0)
    assert s["after_us"] == pytest.approx(3.0) and s["epilogue_us"] == pytest.approx(1.5)
    assert (s["store_us"], s["release_us"]) == pytest.approx((0.2, 0.3))
    no_signal = pts.steps(pd.DataFrame(rows).drop(columns="t_signal"))
    assert pd.isna(no_signal["release_us"]) and no_signal["after_us"] == pytest.approx(3.0)


def test_the_committed_tables_are_what_the_script_writes_and_say_what_the_docs_quote(pts, tmp_path):
    assert pts.main(["--out", str(tmp_path)]) == 0
    got = {n: pd.read_csv(tmp_path / f"{n}.csv") for n in ("runs", "by-k", "gemm")}
    for name, t in got.items():
        pd.testing.assert_frame_equal(t, pd.read_csv(OUT / f"{name}.csv"), obj=name)
    runs, k, gemm = got["runs"], got["by-k"], got["gemm"]
    # after its mainloop a chain-kernel tile costs 2.5 us whatever K (4096-14336; plan 68's H = 4096 and 4608 on
    # 2026-12-06 the smallest): epilogue 1.65-1.73, store 0.16, release 0.48 (0.50-0.51 on plan 68's two)
    assert len(runs) == 141 and round(runs["after_us"].median(), 2) == 2.5
    assert runs["after_us"].between(2.43, 2.6).all() and k["after_us"].between(2.46, 2.56).all()
    assert (k["k"].min(), k["k"].max()) == (4096, 14336)
    assert k["epilogue_us"].between(1.64, 1.73).all() and (k["store_us"] == 0.16).all()
    plan68 = k["experiment"].str.startswith("reg68-")
    assert (k.loc[~plan68, "release_us"] == 0.48).all() and sorted(k.loc[plan68, "release_us"]) == [0.496, 0.512]
    # the plain GEMM pays a little more after its mainloop at K = 8192, M = 8192 (2.62-2.69 us), more at larger shapes
    small = gemm[(gemm["m"] == 8192) & (gemm["k"] == 8192)]
    assert small["after_us"].between(2.62, 2.69).all() and (gemm["after_us"] >= 2.62).all()
    assert gemm["release_us"].isna().all()


def test_no_matching_run_is_refused_in_one_line(pts, tmp_path, capsys):
    assert pts.main(["--runs", "nothing-*", "--out", str(tmp_path / "o")]) == 2
    assert "no traced chain-kernel run matches" in capsys.readouterr().err and not (tmp_path / "o").exists()
