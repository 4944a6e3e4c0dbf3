"""The invariant checker passes a correct trace and fires on deliberately broken ones."""

import dataclasses

import pytest

from ctasim.protocol import Chain, Run, Setup
from ctasim.protocol.invariants import (Claim, Complete, CounterUpdate, Dispatch, End, EntryRead, InputRead,
                                        ProtocolViolation, Publish, Push, check_trace)

SETUP = Setup(Chain(1, (2, 1), 1), epochs=2, slots=(1, 1))


@pytest.fixture(scope="module")
def good():
    run = Run(SETUP)
    run.finish()
    return list(run.trace)


def check(trace):
    return check_trace(trace, 1, (2, 1), 1, 2)


def first(trace, kind, **match):
    for i, ev in enumerate(trace):
        if isinstance(ev, kind) and all(getattr(ev, k) == v for k, v in match.items()):
            return i
    raise LookupError(kind)


def broken(trace, i, **changes):
    t = list(trace)
    t[i] = dataclasses.replace(t[i], **changes)
    return t


def fires(trace, invariant):
    with pytest.raises(ProtocolViolation) as info:
        check(trace)
    assert info.value.invariant == invariant, str(info.value)


def test_correct_trace_passes(good):
    ck = check(good)
    assert ck.ended and ck.events == len(good)


def test_1_stale_input_element(good):
    fires(broken(good, first(good, InputRead), value=None), 1)


def test_1_completes_without_reading_inputs(good):
    i = first(good, InputRead)
    fires(good[:i] + good[i + 1:], 1)


def test_2_tile_dispatched_twice(good):
    i = first(good, Dispatch)
    d = good[i]
    j = first(good, EntryRead, cta=d.cta)
    dup = [Claim(d.gpu, d.epoch, 999, good[j].ticket)]
    fires(good[: i + 1] + dup + [Dispatch(d.gpu, d.epoch, 999, d.tile)], 4)  # its ticket is claimed twice
    fires(good[: i + 1] + [dataclasses.replace(d)], 2)


def test_3_push_before_threshold(good):
    i = first(good, CounterUpdate, epoch=0)
    fires(good[:i] + good[i + 1:], 3)


def test_3_counter_passes_threshold(good):
    i = first(good, CounterUpdate, epoch=0)
    fires(good[: i + 1] + [good[i]] * 2 + good[i + 1:], 3)


def test_4_entry_read_before_its_write_is_visible(good):
    fires(broken(good, first(good, EntryRead), value=None), 4)


def test_4_entry_read_before_publish(good):
    i = first(good, Publish)
    j = first(good, EntryRead)
    fires(good[:i] + good[i + 1:j + 1], 4)


def test_4_push_overflows_capacity(good):
    i = first(good, Push)
    fires(broken(good, i, ticket=good[i].ticket + 5), 4)


def test_5_deadlock(good):
    fires(good[:-1] + [End(False, "deadlock: test")], 5)


def test_5_tile_never_completes(good):
    i = first(good, Complete, epoch=1)
    fires([e for k, e in enumerate(good) if k != i], 5)


def test_6_input_from_previous_epoch(good):
    i = first(good, InputRead, epoch=1)
    ev = good[i]
    fires(broken(good, i, value=("d", 0, ev.gpu - 1, ev.src, ev.elem)), 6)


def test_6_queue_entry_from_previous_epoch(good):
    i = first(good, EntryRead, epoch=1)
    old = good[first(good, EntryRead, epoch=0)].value
    fires(broken(good, i, value=old), 6)


def test_report_table_lists_the_wait_protocol_and_every_mutant():
    from ctasim.protocol.report import render_table

    rep = dict(provenance=dict(profile="ci", settings={}, commit="x", date="d", python="3", hypothesis="h", cpus=2,
                               command="python -m ctasim.protocol.report --profile ci"),
               correct=dict(schedules=10, violations=0, searches=[1], seconds=1.0),
               wait=dict(schedules=7, violations=0, counterexample=None), mutant_seconds=1.0,
               mutants=[dict(mutant="wait-early", bug="b|c", caught=True, invariant=3, message="m|n", choices=2,
                             schedules_run=5),
                        dict(mutant="relaxed-poll", bug="z", caught=False, schedules_run=9)])
    t = render_table(rep)
    assert "Wait-consumer protocol (no queue): 7 schedules, 0 violations" in t
    assert "Mutants caught: 1 / 2" in t
    assert "| `wait-early` | b|c | yes | (3) | 2 | 5 | m\\|n |" in t and "| `relaxed-poll` | z | **no** |" in t
