"""The memory model's rules, one at a time, driven by hand."""

from ctasim.protocol.memory import Memory, Thread, covers


def make():
    m = Memory(default=0)
    return m, Thread(1, 0), Thread(2, 1)


def test_fence_scope_covers():
    assert covers("sys", 0, 1, 1)
    assert covers("gpu", 0, 0, 0)
    assert not covers("gpu", 0, 1, 1)  # remote writes are not ordered by a gpu-scope fence
    assert not covers("cta", 0, 0, 0)


def test_unfenced_remote_writes_land_in_either_order():
    m, p, _ = make()
    a = m.issue(p, ("data", 1), 1)
    b = m.issue(p, ("flag", 1), 1)
    assert m.landable() == [a, b]
    m.land(b)
    assert m.value(("flag", 1)) == 1 and m.value(("data", 1)) == 0


def test_sys_fence_orders_remote_writes_gpu_fence_does_not():
    m, p, _ = make()
    a = m.issue(p, ("data", 1), 1)
    m.fence(p, "gpu")
    b = m.issue(p, ("flag", 1), 1)
    assert b in m.landable()
    m.fence(p, "sys")
    c = m.issue(p, ("flag2", 1), 1)
    assert c not in m.landable() and a in c.preds and b in c.preds


def test_same_location_writes_land_in_program_order():
    m, p, _ = make()
    a = m.issue(p, ("x", 1), 1)
    b = m.issue(p, ("x", 1), 2)
    assert m.landable() == [a]
    m.land(a)
    m.land(b)
    assert [w.value for w in m.history(("x", 1))] == [0, 1, 2]


def test_relaxed_load_may_be_stale_but_never_goes_back():
    m, p, c = make()
    for v in (1, 2):
        m.land(m.issue(p, ("x", 1), v))
    assert m.load(c, ("x", 1), pick=5) == 0  # oldest allowed
    assert m.load(c, ("x", 1), pick=0) == 2
    assert m.load(c, ("x", 1), pick=5) == 2  # read-read coherence


def test_acquire_of_a_release_raises_the_view():
    m, p, c = make()
    m.land(m.issue(p, ("data", 1), 1))
    m.land(m.issue(p, ("flag", 1), 1, release="sys"))
    assert m.load(c, ("flag", 1), acquire="sys") == 1
    assert m.readable(c, ("data", 1))[-1].value == 1  # the oldest readable is now the released data


def test_gpu_scope_acquire_does_not_synchronise_with_another_gpu():
    m, p, c = make()
    m.land(m.issue(p, ("data", 1), 1))
    m.land(m.issue(p, ("flag", 1), 1, release="sys"))
    m.load(c, ("flag", 1), acquire="gpu")
    assert m.load(c, ("data", 1), pick=9) == 0


def test_bulk_stores_need_wait_and_proxy_fence_to_be_released():
    m, p, _ = make()
    a = m.issue(p, ("data", 1), 1, proxy="async")
    assert not m.bulk_done(p)
    m.ack(a)
    assert m.bulk_done(p)
    m.fence(p, "sys")
    f1 = m.issue(p, ("flag", 1), 1)
    assert a not in f1.preds  # generic fence does not capture the async proxy
    m.proxy_fence(p)
    m.fence(p, "sys")
    f2 = m.issue(p, ("flag2", 1), 1)
    assert a in f2.preds


def test_atomics_serialise_at_the_home_memory():
    m, p, c = make()
    w1 = m.issue(p, ("ctr", 1), rmw=lambda o: o + 1)
    w2 = m.issue(c, ("ctr", 1), rmw=lambda o: o + 1)
    m.land(w2)
    m.land(w1)
    assert (w2.old, w1.old, m.value(("ctr", 1))) == (0, 1, 2)
    assert m.complete_rmw(p, w1, "sys") == 1
