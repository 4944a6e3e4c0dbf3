"""bench/posthoc_alone_spread.py: the start-time spread and the wave-by-wave climb of the producers alone on plans 85
and 86's H100 calls (post-hoc), and what docs/validation.md reads off the table."""

from __future__ import annotations

import pandas as pd
import pytest

from tests.helpers import load_bench

PAIRS, GROUPED = "cutlass_ctapipe_w21", ("cutlass_ctapipe_w21g4", "cutlass_ctapipe_w21g8")


@pytest.fixture(scope="module")
def ps():
    return load_bench("posthoc_alone_spread")


def test_the_committed_table_is_what_the_script_gives(ps, tmp_path):
    assert ps.main(["--out", str(tmp_path)]) == 0
    assert (tmp_path / "spread.csv").read_text() == (ps.OUT / "spread.csv").read_text()


def test_the_pairs_spread_least_and_climb_most_as_the_docs_say(ps):
    d = pd.read_csv(ps.OUT / "spread.csv")
    by = d.set_index(["call", "h", "variant"])
    keys = sorted({(c, h) for c, h in zip(d.call, d.h)})
    assert len(keys) == 8
    assert all(by.loc[(c, h, PAIRS), "span_rate"] < min(by.loc[(c, h, g), "span_rate"] for g in GROUPED)
               for c, h in keys)
    most = [by.loc[(c, h, PAIRS), "climb_pct"] > max(by.loc[(c, h, g), "climb_pct"] for g in GROUPED) for c, h in keys]
    assert sum(most) == 7 and not most[keys.index(("plan 86", 6144))]

    def span(kind, col):
        x = d[d.variant.isin(kind)][col]
        return f"{x.min():.3f}-{x.max():.3f}"

    doc = " ".join((ps.ROOT / "docs/validation.md").read_text().split())
    assert f"grows {span([PAIRS], 'span_rate')} median mainloops" in doc
    row = span(["cutlass_ctapipe"], "span_rate")
    assert f"the grouped producers' {span(GROUPED, 'span_rate')}, row order's {row}" in doc
    p, g = d[d.variant == PAIRS].climb_pct, d[d.variant.isin(GROUPED)].climb_pct
    assert f"+{p.min():.1f} to +{p.max():.1f}%, the grouped producers' +{g.min():.1f} to +{g.max():.1f}%" in doc


def test_a_moved_trace_moves_the_table(ps, tmp_path, monkeypatch):
    """The figures come from the traces: a copy of one call whose pairs' later tiles run 20% longer climbs 20% more."""
    import shutil

    import numpy as np

    folder, hs = ps.CALLS["plan 86"]
    root = tmp_path / "root"
    shutil.copytree(ps.ROOT / folder, root / folder)
    f = root / folder / "OUT_H7168" / f"percta-tiles-16384-{PAIRS}.csv.gz"
    t = pd.read_csv(f).sort_values("cta")
    late = np.arange(len(t)) // 132 >= ps.WINDOW
    span = (t.t_compute_end - t.t_acquire).to_numpy()
    t.loc[late, "t_compute_end"] = t.loc[late, "t_acquire"] + (span[late] * 1.2).astype(np.int64)
    t.to_csv(f, index=False)
    monkeypatch.setattr(ps, "ROOT", root)
    monkeypatch.setattr(ps, "CALLS", {"plan 86": (folder, (7168,))})
    d = ps.spread().set_index("variant")
    base = pd.read_csv(ps.OUT / "spread.csv").set_index(["call", "h", "variant"]).loc[("plan 86", 7168)]
    assert d.loc[PAIRS, "climb_pct"] == pytest.approx((1 + base.loc[PAIRS, "climb_pct"] / 100) * 1.2 * 100 - 100,
                                                      rel=0.02)
    assert d.loc[GROUPED[0], "climb_pct"] == pytest.approx(base.loc[GROUPED[0], "climb_pct"], abs=1e-3)
