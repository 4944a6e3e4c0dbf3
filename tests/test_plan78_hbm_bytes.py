"""bench/plan78_hbm_bytes.py: registered plan 78's registration (the model's and the compulsory DRAM bytes of the chain
kernel per order), its claims on made-up counts and its judge on calls it must refuse or can read (no GPU)."""

from __future__ import annotations

import pandas as pd
import pytest

from tests.helpers import load_bench


@pytest.fixture(scope="module")
def p78():
    return load_bench("plan78_hbm_bytes")


@pytest.fixture(scope="module")
def registered(p78):
    return pd.read_csv(p78.REGISTERED / "predicted.csv")


def test_the_registration_is_what_the_model_gives(p78, registered):
    pd.testing.assert_frame_equal(p78.register().reset_index(drop=True), registered, check_exact=False, rtol=0,
                                  atol=5e-5, check_dtype=False)
    assert registered.groupby("gpu").size().to_dict() == {"H100": 24, "H200": 24}
    # the order effect the model registered: past the L2, row order reads the most and groups of 8 the least
    big = registered[registered.h == 8704].pivot_table(index=["gpu", "m"], columns="group", values="model_read_gb")
    assert (big[1] > big[2]).all() and (big[2] > big[4]).all() and (big[4] > big[8]).all()
    assert (registered.model_read_gb > registered.compulsory_read_gb).all()


def counted(registered, gpu, scale=lambda r: 1.0):
    """A made-up call on ``gpu``: every case read ``scale(row)`` times the model's bytes, its stores written, its
    tiles' loads through L2, in 10 ms."""
    p = registered[registered.gpu == gpu]
    return pd.DataFrame({"gpu": gpu, "h": p.h, "m": p.m, "group": p.group,
                         "read_gb": [r.model_read_gb * scale(r) for r in p.itertuples()],
                         "write_gb": p.model_write_gb, "l2_read_gb": p.loads_gb, "duration_ns": 1e7})


def claims(p78, registered, meas):
    return p78.claims(p78.cases(registered, meas), "test").set_index("claim")


def test_the_model_own_bytes_meet_every_claim_but_the_pairs_parting(p78, registered):
    cl = claims(p78, registered, counted(registered, "H100"))
    assert cl.loc[["a", "b", "c", "e", "f"], "met"].all() and not cl.at["d", "met"]
    assert cl.at["a", "value"].startswith("0.00% over 24 cases (H100")
    h200 = claims(p78, registered, counted(registered, "H200"))
    assert h200.at["d", "met"]  # an H200's pairs within 10% of the model's


def test_pairs_that_read_more_meet_the_parting_reading_and_move_the_order_effect(p78, registered):
    parted = counted(registered, "H100", lambda r: 1.4 if (r.h, r.group) == (8704, 2) else 1.0)
    cl = claims(p78, registered, parted)
    assert cl.at["d", "met"] and cl.at["d", "value"] == "H100: counted over model 1.400, 1.400 (M = 8192, 16384)"
    r = p78.order_ratios(p78.cases(registered, parted)).set_index(["h", "m", "group"])
    assert r.loc[(8704, 8192, 2), "off"] == pytest.approx(1 / 1.4 - 1)
    assert cl.at["c", "value"] == "16 of 18 within 15%" and cl.at["c", "met"]
    one = counted(registered, "H100", lambda r: 1.4 if (r.h, r.m, r.group) == (8704, 8192, 2) else 1.2)
    assert not claims(p78, registered, one).at["d", "met"]  # 1.2 at M = 16384: neither reading's
    on_h200 = counted(registered, "H200", lambda r: 1.4 if (r.h, r.group) == (8704, 2) else 1.0)
    assert not claims(p78, registered, on_h200).at["d", "met"]


def test_the_bytes_claims_fail_with_the_compulsory_bytes_and_the_counter_check_with_doubled_sectors(p78, registered):
    meas = counted(registered, "H100")
    meas["read_gb"] = registered[registered.gpu == "H100"].compulsory_read_gb.to_numpy()
    cl = claims(p78, registered, meas)
    assert not cl.at["a", "met"] and not cl.at["b", "met"]
    twice = counted(registered, "H100").assign(l2_read_gb=lambda d: 2 * d.l2_read_gb)
    assert not claims(p78, registered, twice).at["f", "met"]
    dirty = counted(registered, "H100").assign(write_gb=lambda d: d.write_gb * 1.2)
    assert not claims(p78, registered, dirty).at["e", "met"]


def test_the_judge_refuses_a_call_without_counters_or_a_gpu_it_knows(p78, tmp_path, capsys):
    run = tmp_path / "run"
    run.mkdir()
    assert p78.main(["--judge", str(run), "--out", str(tmp_path / "o")]) == 2
    assert "no " in capsys.readouterr().err and not (tmp_path / "o").exists()
    pd.DataFrame({"h": [4096], "m": [8192], "group": [8], "dram_read_bytes": [1e9], "dram_write_bytes": [1e8],
                  "l2_read_sectors": [1e8], "duration_ns": [1e6]}).to_csv(run / "counters.csv", index=False)
    (run / "env.txt").write_text("0, NVIDIA A100-SXM4-80GB, GPU-0\n")
    assert p78.main(["--judge", str(run), "--out", str(tmp_path / "o")]) == 2
    assert "names none of H100, H200" in capsys.readouterr().err
    (run / "env.txt").write_text("0, NVIDIA H100 80GB HBM3, GPU-0\n")
    assert p78.main(["--judge", str(run), "--out", str(tmp_path / "o")]) == 2  # 23 cases never counted
    assert "no counted launch of H=4096 M=8192 group=4" in capsys.readouterr().err


@pytest.mark.parametrize("sub, run", [("", "2026-12-06-registered78-1gpu"), ("run2", "2026-12-06-registered78-1gpu-run2"),
                                      ("run3", "2026-12-06-registered78-1gpu-run3")])
def test_the_committed_calls_judge_as_committed(p78, registered, sub, run):
    """Each committed call re-judged from its counters and env.txt: the cases and claims as committed (a change of the
    sector size, the bytes per GB, the GPU read from env.txt or a claim's rule would fail here)."""
    out = p78.ROOT / "bench/results/validation-registered78" / sub
    c = p78.cases(registered, p78.measured(p78.ROOT / "bench/results/hw-h100" / run))
    pd.testing.assert_frame_equal(c.round(4), pd.read_csv(out / "cases.csv").round(4), check_dtype=False, atol=2e-4)
    cl = p78.claims(c, "x").set_index("claim")
    committed = pd.read_csv(out / "claims.csv").set_index("claim")
    assert cl["value"].tolist() == committed["value"].tolist() and cl["met"].tolist() == committed["met"].tolist()
    assert cl["met"].tolist() == [False, True, False, True, True, False]
