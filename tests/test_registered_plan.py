"""bench/registered_plan.py's command line, for every plan script built on it (found by reading bench/*.py): a
registration is never overwritten."""

from __future__ import annotations

import pytest

from tests.helpers import BENCH, load_bench

PLANS = sorted(p.stem for p in BENCH.glob("plan*.py") if "registered_plan.main(" in p.read_text())


def test_the_plans_on_the_shared_command_line_are_found():
    assert {"plan55_order_tiles", "plan56_gradual", "plan57_l2_hot", "plan58_gap_law"} <= set(PLANS)


@pytest.mark.parametrize("name", PLANS)
def test_a_registration_is_never_overwritten(name, capsys):
    plan = load_bench(name)
    before = (plan.REGISTERED / "predicted.csv").read_bytes()
    assert plan.main(["--register"]) == 2
    assert "never overwritten" in capsys.readouterr().err
    assert (plan.REGISTERED / "predicted.csv").read_bytes() == before
