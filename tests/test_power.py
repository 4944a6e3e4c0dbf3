"""ctasim.power: the sustained slowdown under a power limit and the exponent taken from one kernel."""

import math

import pytest

from ctasim.power import gamma_from, sustained_slowdown


def test_slowdown_is_where_the_dynamic_draw_meets_the_limit():
    # 900 W above a 150 W floor under a 700 W limit, gamma 2: the clock falls to sqrt(550 / 900) of the timed one
    s = sustained_slowdown(900.0, 150.0, 700.0, 2.0)
    assert s == pytest.approx(math.sqrt(900 / 550))
    assert 150.0 + 900.0 * (1 / s) ** 2.0 == pytest.approx(700.0)


def test_a_kernel_under_the_limit_is_not_slowed_and_less_draw_slows_less():
    assert sustained_slowdown(400.0, 150.0, 700.0, 2.0) == 1.0
    assert sustained_slowdown(700.0, 150.0, 700.0, 2.0) < sustained_slowdown(900.0, 150.0, 700.0, 2.0)
    assert sustained_slowdown(900.0, 150.0, 700.0, 3.0) < sustained_slowdown(900.0, 150.0, 700.0, 1.5)


def test_gamma_from_inverts_the_slowdown():
    for gamma in (1.2, 2.0, 3.1):
        s = sustained_slowdown(1000.0, 170.0, 700.0, gamma)
        assert gamma_from(1000.0, 170.0, 700.0, s) == pytest.approx(gamma)


@pytest.mark.parametrize("args, match", [
    ((900.0, 150.0, 700.0, 1.0), "says nothing"),
    ((500.0, 150.0, 700.0, 1.1), "fits under the limit"),
    ((900.0, 700.0, 700.0, 1.1), "not under the limit"),
    ((0.0, 150.0, 700.0, 1.1), "positive"),
])
def test_gamma_from_refuses_what_says_nothing_of_it(args, match):
    with pytest.raises(ValueError, match=match):
        gamma_from(*args)


def test_slowdown_refuses_a_bad_exponent():
    with pytest.raises(ValueError, match="gamma"):
        sustained_slowdown(900.0, 150.0, 700.0, 0.0)
