"""GPU test of the protocol stress (ctahw.stress): on one GPU the shipped protocol with random delays never reads
stale data, the gross bug that must (the detector's positive control: no wait at all) does, and the traced run sees
consumers spinning on their counters in a chain of less than a wave per layer (marked `hw`; needs nvcc or the builds
in the kernel cache)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.hw


def test_clean_build_reads_no_stale_data_and_the_control_does(cp, tmp_path):
    from ctahw.stress import StressCase, stress

    case = StressCase(512, 2048, 16, delays_ns=(2000,), runs=30)
    rows = {r["build"]: r for r in stress(["clean", "no-wait"], [case], root=tmp_path, log=lambda s: None)}
    clean, control = rows["clean"], rows["no-wait"]
    assert clean["errors"] == 0 and clean["runs_stale"] == 0, clean
    assert control["errors"] == 0, control
    assert control["runs_stale"] > 0, f"the detector saw no stale read without a wait in {case.runs} runs: {control}"
    assert 0 < clean["contended"] <= clean["handoffs"], clean


def test_queue_clean_build_reads_no_stale_data_and_the_control_does(cp, tmp_path):
    from ctahw.stress import QueueCase, stress_queue

    case = QueueCase(1024, 1024, delays_ns=(20000,), runs=30)
    rows = {r["build"]: r for r in stress_queue(["queue-clean", "queue-push-first"], [case], root=tmp_path,
                                                log=lambda s: None)}
    clean, control = rows["queue-clean"], rows["queue-push-first"]
    assert clean["errors"] == 0 and clean["runs_stale"] == 0, clean
    assert control["errors"] == 0, control
    assert control["runs_stale"] > 0, f"the detector saw no stale read of the first-update push in {case.runs} runs"
