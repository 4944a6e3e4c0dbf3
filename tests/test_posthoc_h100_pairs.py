"""bench/posthoc_h100_pairs.py: the ticket-law settings against the pairs an H100 lost at H = 8704; the committed
table is what the script computes (one call and two variants simulated again here), the reach floor's wrapper leaves
the law as it was, and the reading docs/validation.md quotes holds (no GPU)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
COMMITTED = ROOT / "bench" / "results" / "posthoc-h100-pairs"


@pytest.fixture(scope="module")
def php(bench_module):
    return bench_module("posthoc_h100_pairs")


def test_the_committed_table_is_what_the_script_computes(php):
    """Every variant, one M of each GPU's first call, simulated again; the summary from the committed rows."""
    committed = pd.read_csv(COMMITTED / "what-if.csv")
    calls = {gpu: found[:1] for gpu, found in php.CALLS.items()}
    got = php.what_if(calls, cases=("m=8192",))
    names = {found[0].name for found in calls.values()}
    want = committed[committed.call.isin(names) & (committed.case == "m=8192")]
    key = ["gpu", "variant", "case", "order"]
    got, want = (d.sort_values(key).reset_index(drop=True) for d in (got, want))
    assert len(got) == len(want) == 2 * len(php.VARIANTS) * 3 and got[key].equals(want[key])
    assert got.predicted_ms.to_numpy() == pytest.approx(want.predicted_ms.to_numpy(), rel=1e-4)
    pd.testing.assert_frame_equal(php.summary(committed), pd.read_csv(COMMITTED / "summary.csv"), check_dtype=False,
                                  atol=0.006)


def test_the_reach_floor_is_undone_after_its_block(php):
    from ctasim import l2

    plain = l2._survival_rereads
    with php.reach_floor(0.06):
        assert l2._survival_rereads is not plain
    assert l2._survival_rereads is plain
    with pytest.raises(RuntimeError):
        with php.reach_floor(0.06):
            raise RuntimeError("inside")
    assert l2._survival_rereads is plain


def test_no_setting_prices_the_h100_pairs_and_keeps_its_groups():
    s = pd.read_csv(COMMITTED / "summary.csv").set_index(["gpu", "variant"])
    h100 = s.loc["H100"]
    # every setting 19% or more off on the H100's pairs; the one that reaches them thrashes its groups too
    assert (h100["intragpu-g2"] > 19).all()
    assert h100.loc["reach floor 0.06", "intragpu"] > 30 and h100.loc["profile", "intragpu"] < 3
    # the H200's pairs, which kept their reuse, within 2% under the profile
    assert s.loc[("H200", "profile"), "intragpu-g2"] < 2
