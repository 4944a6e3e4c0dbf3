"""Litmus tests from the PTX ISA, NVIDIA's mixed-proxy artifact and derived ones: the model's verdict on each."""

import pytest

from ctasim.protocol.litmus import INEXPRESSIBLE, LITMUS, outcomes, verdict


@pytest.mark.parametrize("name", list(LITMUS))
def test_model_agrees_with_the_official_verdict(name):
    t = LITMUS[name]
    got, outs, runs = verdict(t)
    assert runs > 0 and outs
    assert got == t.expected, f"{name} ({t.source}: {t.verdict}): the model says {got}; outcomes {outs}"


def test_every_test_names_its_source_and_verdict():
    for t in LITMUS.values():
        assert t.source and t.verdict and t.check[0] in ("forbid", "permit"), t.name
    official = [t for t in LITMUS.values() if not t.source.startswith("derived")]
    assert len(official) >= 15
    assert [t.name for t in LITMUS.values() if t.model] == ["MP-Release_acquire_pattern"]
    assert INEXPRESSIBLE


@pytest.mark.parametrize("name", ["PTX-MP", "PTX-SB", "PTX-LB", "MP-SB_rmw", "MP-2gpu+fence.gpu", "MP-ISA2",
                                  "PTX-Atomicity-2"])
def test_partial_order_reduction_keeps_every_outcome(name):
    key = lambda outs: sorted(tuple(sorted(o.items(), key=str)) for o in outs)  # noqa: E731
    reduced, n_reduced = outcomes(LITMUS[name])
    full, n_full = outcomes(LITMUS[name], reduce=False)
    assert key(reduced) == key(full)
    assert n_reduced <= n_full
