"""The committed protocol-stress measurements (bench/results/hw/2026-12-04-protocol-stress*) hold what
docs/protocol.md section 10 and their READMEs quote: per build, stale runs in the chains where consumers spin and in
those where they do not, and the contended hand-offs behind the "1.24 million" (no GPU); the static design's run
(no stale run in any build, 412,800 contended hand-offs each)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

RESULTS = Path(__file__).resolve().parents[2] / "bench" / "results" / "hw"
ORDERING_CHAIN = ["chain-tickets-relaxed-poll", "chain-tickets-cta-scope-red", "chain-tickets-no-proxy-fence",
                  "chain-tickets-signal-before-storers", "wait-group-read", "no-bulk-wait"]
ORDERING_QUEUE = ["relaxed-poll", "no-signal-fence", "no-proxy-fence-loads", "push-no-release"]


def _csv(folder: str) -> pd.DataFrame:
    path = RESULTS / folder / "stress" / "stress.csv"
    if not path.is_file():
        pytest.skip(f"{path} is not in this checkout")
    return pd.read_csv(path)


def test_chain_stress_says_what_the_docs_quote():
    d = _csv("2026-12-04-protocol-stress")
    assert (d["errors"] == 0).all() and (d["hung"] == 0).all() and (d["runs"] == 300).all()
    small = d["contended"] > 0
    assert set(d.loc[small, "case"]) == {"1024x4096x8", "512x2048x16"}
    assert (d.loc[small, "contended"] == d.loc[small, "handoffs"]).all()  # every consumer tile spun
    stale = d.groupby(["build", small])["runs_stale"].sum()
    assert stale[("no-wait", True)] == 1800 and stale[("no-wait", False)] == 0
    assert stale[("short-wait", True)] == 282 and stale[("short-wait", False)] == 0
    assert d[(d["build"] == "short-wait") & (d["delay_ns"] == 0)]["runs_stale"].sum() == 0
    for b in ["clean"] + ORDERING_CHAIN:
        assert d[d["build"] == b]["runs_stale"].sum() == 0, b
    per_build = (d.loc[small, "contended"] * d.loc[small, "runs"]).groupby(d.loc[small, "build"]).sum()
    assert (per_build == 1_238_400).all()
    react = d.loc[small, "react_ns_min"]
    assert react.min() == 192 and react.max() == 352


@pytest.mark.parametrize("folder, push_first, off_by_one", [
    ("2026-12-04-protocol-stress-queue", (248, 251, 240), (192, 124, 27)),
    ("2026-12-04-protocol-stress-queue-run2", (238, 233, 239), (183, 154, 24)),
])
def test_queue_stress_says_what_the_docs_quote(folder, push_first, off_by_one):
    d = _csv(folder)
    assert (d["errors"] == 0).all() and (d["hung"] == 0).all() and (d["runs"] == 300).all()
    late = d["delay_ns"] == 20000
    assert d[~late]["runs_stale"].sum() == 0  # nothing at 0 or 2 us delays
    for build, want in (("queue-push-first", push_first), ("push-off-by-one", off_by_one)):
        got = d[late & (d["build"] == build)].set_index("case").loc[
            ["1024x1024x2-queue", "1024x2048x2-queue", "512x4096x2-queue"], "runs_stale"]
        assert tuple(got) == want, build
    for b in ["queue-clean"] + ORDERING_QUEUE:
        assert d[d["build"] == b]["runs_stale"].sum() == 0, b


def test_static_stress_says_what_the_docs_quote():
    d = _csv("2026-12-04-protocol-stress-static")
    assert set(d["build"]) == {"static-clean", "chain-static-no-syncwarp", "chain-static-no-load-fence"}
    assert (d["design"] == "static").all() and (d["delay_ns"] == 0).all()
    assert (d["errors"] == 0).all() and (d["hung"] == 0).all() and (d["runs"] == 300).all()
    assert d["runs_stale"].sum() == 0 and d["cells_stale"].sum() == 0
    small = d["contended"] > 0
    assert set(d.loc[small, "case"]) == {"1024x4096x8", "512x2048x16"}
    assert (d.loc[small, "contended"] == d.loc[small, "handoffs"]).all()
    per_build = (d.loc[small, "contended"] * d.loc[small, "runs"]).groupby(d.loc[small, "build"]).sum()
    assert (per_build == 412_800).all()
    assert d.loc[small, "react_ns_min"].min() == 224
