"""Litmus tests on the memory model: every schedule enumerated, allowed outcomes reached, forbidden ones never."""

import pytest

from ctasim.protocol.litmus import LITMUS, outcomes


@pytest.mark.parametrize("name", list(LITMUS))
def test_litmus_outcomes(name):
    t = LITMUS[name]
    found, runs = outcomes(t)
    assert runs > 0
    assert not (found & t.forbidden), f"{name}: forbidden outcome(s) {sorted(found & t.forbidden)} reachable"
    assert t.allowed <= found, f"{name}: allowed outcome(s) {sorted(t.allowed - found)} never reached"


@pytest.mark.parametrize("name", ["MP+fence.sys", "MP-nofence", "MP+fence.gpu", "MP-tma-noproxy", "SB+fence.sc",
                                  "CoRR", "atomic-add"])
def test_partial_order_reduction_keeps_every_outcome(name):
    reduced, n_reduced = outcomes(LITMUS[name])
    full, n_full = outcomes(LITMUS[name], reduce=False)
    assert reduced == full
    assert n_reduced <= n_full


def test_fence_scope_decides_message_passing_across_gpus():
    """The headline of docs/protocol.md: only a sys-scope release makes remote data visible before the flag."""
    assert (1, 0) in outcomes(LITMUS["MP+fence.gpu"])[0]
    assert (1, 0) not in outcomes(LITMUS["MP+fence.sys"])[0]
    assert (1, 0) not in outcomes(LITMUS["MP+fence.gpu-same-gpu"])[0]
