"""The memory model's rules, one at a time, driven by hand."""

from ctasim.protocol.memory import Memory, Thread, in_scope, morally_strong


def make():
    m = Memory(default=0)
    return m, Thread(1, 0, cta=10, cluster=10), Thread(2, 1, cta=20, cluster=20)


def test_scopes_are_sets_of_threads():
    a, b, c, d = Thread(1, 0, cta=1, cluster=5), Thread(2, 0, cta=1, cluster=5), Thread(3, 0, cta=2, cluster=5), \
        Thread(4, 1, cta=3, cluster=6)
    assert in_scope("cta", a, b) and not in_scope("cta", a, c)
    assert in_scope("cluster", a, c) and not in_scope("cluster", a, d)
    assert in_scope("gpu", a, c) and not in_scope("gpu", a, d) and in_scope("sys", a, d)


def test_morally_strong_needs_both_scopes_and_strength():
    a, b = Thread(1, 0), Thread(2, 1)
    assert morally_strong(a, "sys", b, "sys")
    assert not morally_strong(a, "sys", b, "gpu")  # b's scope does not include a
    assert not morally_strong(a, "gpu", b, "sys")
    assert not morally_strong(a, None, b, "sys")  # weak
    assert morally_strong(a, None, a, None)  # program order


def test_writes_of_a_thread_land_in_any_order_except_one_location():
    m, p, _ = make()
    a = m.issue(p, ("data", 1), 1)
    b = m.issue(p, ("flag", 1), 1)
    c = m.issue(p, ("data", 1), 2)
    assert m.landable() == [a, b]  # c waits for a (coherence), b does not wait for a
    m.land(b)
    assert m.value(("flag", 1)) == 1 and m.value(("data", 1)) == 0


def test_strong_load_never_goes_back_weak_load_may():
    m, p, c = make()
    for v in (1, 2):
        m.land(m.issue(p, ("x", 1), v))
    assert m.load(c, ("x", 1), pick=5, scope=None).value == 0
    assert m.load(c, ("x", 1), pick=0, scope=None).value == 2  # weak: the floor stays
    assert m.load(c, ("x", 1), pick=5, scope=None).value == 0
    assert m.load(c, ("x", 1), pick=0).value == 2  # strong: raises the floor
    assert m.load(c, ("x", 1), pick=5).value == 2


def test_acquire_of_a_release_joins_the_view_even_of_a_pending_write():
    m, p, c = make()
    m.issue(p, ("data", 1), 1, scope=None)  # still pending
    f = m.issue(p, ("flag", 1), 1, release="sys")
    m.land(f)
    m.load(c, ("flag", 1), acquire=True)
    assert m.readable(c, ("data", 1)) == []  # must wait for the released write to land
    m.land(m.landable()[0])
    assert [w.value for w in m.readable(c, ("data", 1))] == [1]


def test_gpu_scope_acquire_does_not_synchronise_with_another_gpu():
    m, p, c = make()
    m.land(m.issue(p, ("data", 1), 1))
    m.land(m.issue(p, ("flag", 1), 1, release="sys"))
    m.load(c, ("flag", 1), scope="gpu", acquire=True)
    assert m.load(c, ("data", 1), pick=9).value == 0


def test_release_operation_is_not_a_lasting_fence():
    m, p, c = make()
    m.land(m.issue(p, ("data", 1), 1, scope=None))
    m.land(m.issue(p, ("z", 1), 1, release="sys"))
    m.land(m.issue(p, ("flag", 1), 1))  # relaxed, after the release of z
    m.load(c, ("flag", 1), acquire=True)
    assert m.load(c, ("data", 1), pick=9).value == 0


def test_fence_sc_gpu_is_no_acquire_of_another_gpus_release():
    m, p, c = make()
    m.land(m.issue(p, ("data", 1), 1, scope=None))
    m.fence(p, "sys")
    m.land(m.issue(p, ("flag", 1), 1))
    m.load(c, ("flag", 1))  # relaxed poll
    m.fence(c, "gpu", sc=True)
    assert m.load(c, ("data", 1), pick=9).value == 0
    m.fence(c, "sys")  # the acquire pattern with a sys fence does synchronise
    assert m.load(c, ("data", 1), pick=9).value == 1


def test_atomics_of_scopes_that_exclude_each_other_may_lose_an_update():
    m, p, c = make()
    w1 = m.issue(p, ("ctr", 1), rmw=lambda o: o + 1, scope="gpu")
    w2 = m.issue(c, ("ctr", 1), rmw=lambda o: o + 1, scope="gpu")
    m.land(w1)
    assert len(m.atomic_choices(w2)) == 2
    m.land(w2, pick=1)
    assert m.value(("ctr", 1)) == 1  # lost update
    s1 = m.issue(p, ("k", 1), rmw=lambda o: o + 1)
    s2 = m.issue(c, ("k", 1), rmw=lambda o: o + 1)
    m.land(s1)
    assert m.atomic_choices(s2) == [s1]  # sys atomics: no choice


def test_bulk_stores_need_wait_and_proxy_fence_to_be_released():
    m, p, c = make()
    a = m.issue(p, ("data", 1), 1, proxy="async", scope=None)
    assert not m.bulk_done(p)
    m.ack(a)
    assert m.bulk_done(p)
    m.land(a)
    m.fence(p, "sys")
    f1 = m.issue(p, ("flag", 1), 1)
    m.proxy_fence(p)
    m.fence(p, "sys")
    f2 = m.issue(p, ("flag2", 1), 1)
    m.land(f1)
    m.land(f2)
    m.load(c, ("flag", 1), acquire=True)
    assert m.load(c, ("data", 1), pick=9, scope=None).value == 0
    m.load(c, ("flag2", 1), acquire=True)
    assert m.load(c, ("data", 1), pick=9, scope=None).value == 1


def test_proxy_fence_views_cross_synchronisation_only_within_a_cta():
    m = Memory(default=0)
    p, a, b = Thread(1, 0), Thread(2, 1, cta=7, cluster=9), Thread(3, 1, cta=8, cluster=9)
    m.land(m.issue(p, ("data", 1), 1, scope=None))
    m.land(m.issue(p, ("flag", 1), 1, release="sys"))
    m.load(a, ("flag", 1), acquire=True)
    m.proxy_fence(a)
    m.land(m.issue(a, ("go", 1), 1, release="cluster"))
    m.load(b, ("go", 1), scope="cluster", acquire=True)
    assert m.load(b, ("data", 1), pick=9, scope=None).value == 1  # generic view: synchronised
    assert m.load(b, ("data", 1), pick=9, scope=None, proxy="async").value == 0  # a's proxy fence is not b's


def test_wait_group_n_leaves_the_newest_committed_groups_pending():
    """cp.async.bulk.wait_group N: every committed group but the N newest complete; 0: every bulk store, committed or
    not."""
    m, p, _ = make()
    a = m.issue(p, ("d", 1, 0), 1, proxy="async", scope=None)
    m.bulk_commit(p)  # group 0: a
    b = m.issue(p, ("d", 1, 1), 1, proxy="async", scope=None)
    m.bulk_commit(p)  # group 1: b
    c = m.issue(p, ("d", 1, 2), 1, proxy="async", scope=None)  # the open group 2: c
    assert (a.group, b.group, c.group) == (0, 1, 2)
    assert m.bulk_done(p, 2) and not m.bulk_done(p, 1)  # two newest committed groups (0, 1) may stay pending
    m.ack(a)
    assert m.bulk_done(p, 1) and not m.bulk_done(p, 0)
    m.ack(b)
    assert m.bulk_done(p, 1) and not m.bulk_done(p, 0)  # c is not committed: only wait_group 0 waits for it
    m.ack(c)
    assert m.bulk_done(p, 0)
