"""The kernels' protocol header issues the operations the model verifies: scope, semantics and proxy of every store,
fence, atomic and poll of ctahw/kernels/ctapipe.cuh, per role, against the kernel-form programs (KERNEL,
KERNEL_WAIT) -- from the header's inline PTX and from ``nvcc -ptx``.  Mutated copies of the header (a ``.sys``
turned into ``.gpu``, a fence dropped) must fail both checks."""

import re
import shutil
import subprocess

import pytest

from ctasim.protocol.kernelops import HEADER, compare, header_ops, program_ops, ptx_ops


@pytest.fixture(scope="module")
def model():
    return program_ops()


def mutations(text: str) -> dict[str, str]:
    """Each a copy of the header with one seeded bug; located by function name, not by line."""
    out = {}
    out["ld.acquire.sys -> .gpu"] = text.replace("ld.acquire.sys.global.u64", "ld.acquire.gpu.global.u64", 1)
    out["atom.acq_rel.sys -> .gpu"] = text.replace("atom.acq_rel.sys.global.add", "atom.acq_rel.gpu.global.add", 1)
    out["red.release.sys -> .gpu"] = text.replace("red.release.sys.global.add", "red.release.gpu.global.add", 1)
    out["st.relaxed.sys -> .gpu"] = text.replace("st.relaxed.sys.global.u64", "st.relaxed.gpu.global.u64", 1)

    def drop_in(func: str, call: str) -> str:
        m = re.search(rf"\b{func}\s*\([^)]*\)\s*\{{", text)
        depth, end = 1, m.end()
        while depth:  # the function's own body: a call found past it would seed the bug in another function
            depth += {"{": 1, "}": -1}.get(text[end], 0)
            end += 1
        i = text.index(call, m.end(), end)
        return text[:i] + text[i + len(call):]

    out["push without its fence.acq_rel.sys"] = drop_in("push", "fence_acq_rel_sys();")
    # pop_n's acquire (and the persistent kernel's claim_pop's) is acquire_slots
    out["pop_n without its fence.proxy.async"] = drop_in("acquire_slots", "fence_proxy_async_global();")
    out["signal without its fence.proxy.async"] = drop_in("signal", "fence_proxy_async_global();")
    out["complete_stores without wait_group"] = drop_in("complete_stores", "bulk_wait_all_complete();")
    for name, mutated in out.items():
        assert mutated != text, f"mutation {name} did not apply: the header changed shape"
    return out


def test_header_inline_ptx_matches_the_model(model):
    assert compare(model, header_ops()) == []


def test_every_role_of_the_model_is_checked(model):
    assert set(model) == {"pop_n", "wait_n", "complete_stores", "signal(queue)", "signal(wait)", "push"}
    assert model["signal(queue)"] == ["fence.proxy.async", "atom.add.acq_rel.sys"]
    assert model["push"] == ["atom.add.relaxed.sys", "fence.acq_rel.sys", "st.relaxed.sys"]


def test_mutated_headers_fail_the_inline_ptx_check(model):
    for name, text in mutations(HEADER.read_text()).items():
        assert compare(model, header_ops(text)), f"{name}: not detected"


@pytest.mark.nvcc
def test_nvcc_ptx_of_the_header_matches_the_model(model, tmp_path):
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc not found: the PTX half of the kernel operations check needs it")
    from concurrent.futures import ThreadPoolExecutor

    ptx = ptx_ops()
    assert compare(model, ptx, ordered=False) == []
    # the chain kernel's GPU-scope helpers, as the chain programs issue them
    assert ptx["ld_acquire_gpu_u32"] == ["ld.acquire.gpu"]
    assert ptx["red_add_release_gpu"] == ["red.add.release.gpu"]

    def check(item):
        i, (name, text) = item
        (tmp_path / str(i)).mkdir()
        copy = tmp_path / str(i) / HEADER.name
        copy.write_text(text)
        try:
            return name, compare(model, ptx_ops(copy), ordered=False)
        except subprocess.CalledProcessError as err:  # a mutation that does not compile is caught too
            return name, [err.stderr]

    with ThreadPoolExecutor(4) as pool:
        for name, problems in pool.map(check, enumerate(mutations(HEADER.read_text()).items())):
            assert problems, f"{name}: not detected in the PTX"

    # the GPU-scope helpers with a weakened scope or semantics: their PTX differs from the chain programs'
    text = HEADER.read_text()
    copy = tmp_path / "gpu" / HEADER.name
    copy.parent.mkdir()
    copy.write_text(text.replace("red.release.gpu.global.add", "red.relaxed.gpu.global.add", 1)
                    .replace("ld.acquire.gpu.global.u32", "ld.acquire.cta.global.u32", 1))
    weak = ptx_ops(copy)
    assert weak["red_add_release_gpu"] == ["red.add.relaxed.gpu"] and weak["ld_acquire_gpu_u32"] == ["ld.acquire.cta"]


# ------------------------------------------------------------------------------------------------ the chain kernel
from ctasim.protocol.kernelops import (CHAIN_KERNEL, CHAIN_ROLES, SCHEDULER_HEADER, chain_compare,  # noqa: E402
                                       chain_program_ops, chain_source_ops)


@pytest.fixture(scope="module")
def chain_model():
    return chain_program_ops()


def _block_end(text: str, i: int) -> int:
    """The index of the brace that closes the block opened at ``text[i] == '{'``."""
    from ctasim.protocol.kernelops import _block_body

    return i + 1 + len(_block_body(text, i))


def _drop_in(text: str, cls: str | None, func: str, call: str) -> str:
    """``text`` without the first ``call`` inside function ``func`` (of class ``cls``: a function of that class's own
    body, never one further down the file), located by name."""
    start, end = 0, len(text)
    if cls is not None:
        c = re.search(rf"\bclass\s+{cls}\b[^;{{]*\{{", text)
        start, end = c.end(), _block_end(text, c.end() - 1)
    m = re.compile(rf"\b{func}\s*\([^)]*\)[^{{;]*\{{").search(text, start, end)
    assert m is not None, f"no function {func} in {cls or 'the file'}"
    i = text.index(call, m.end(), _block_end(text, m.end() - 1))
    return text[:i] + text[i + len(call):]


def chain_mutations(chain: str, header: str, sched: str) -> dict[str, tuple[str, str, str]]:
    """Each a (chain kernel, header, scheduler header) triple with one seeded bug; located by function name, not by
    line."""
    out = {
        "red.release.gpu -> red.relaxed.gpu (red_add_release_gpu)":
            (chain, header.replace("red.release.gpu.global.add", "red.relaxed.gpu.global.add", 1)),
        "red.release.gpu -> red.release.cta (red_add_release_gpu)":
            (chain, header.replace("red.release.gpu.global.add", "red.release.cta.global.add", 1)),
        "ld.acquire.gpu -> ld.relaxed.gpu (ld_acquire_gpu_u32)":
            (chain, header.replace("ld.acquire.gpu.global.u32", "ld.relaxed.gpu.global.u32", 1)),
        "ld.acquire.gpu -> ld.acquire.cta (ld_acquire_gpu_u32)":
            (chain, header.replace("ld.acquire.gpu.global.u32", "ld.acquire.cta.global.u32", 1)),
        "wait_inputs without its fence.proxy.async":
            (_drop_in(chain, "ChainStaticScheduler", "wait_inputs", "ctapipe::fence_proxy_async_global();"), header),
        "wait_inputs without __syncwarp":
            (_drop_in(chain, "ChainStaticScheduler", "wait_inputs", "__syncwarp();"), header),
        "take without its fence.proxy.async":
            (_drop_in(chain, None, "take", "ctapipe::fence_proxy_async_global();"), header),
        "ChainScheduler::fetched without the load warp's fence.proxy.async":
            (_drop_in(chain, "ChainScheduler", "fetched", "ctapipe::fence_proxy_async_global();"), header),
        "finish without complete_stores":
            (_drop_in(chain, "ChainScheduler", "finish", "ctapipe::complete_stores();"), header),
        "finish without its bar.sync":
            (_drop_in(chain, "ChainScheduler", "finish",
                      'asm volatile("bar.sync %0, %1;" ::"n"(kSignalBarrier), "n"(kEpilogueThreads) : "memory");'),
             header),
        "ChainStaticScheduler::fetch_next_work without wait_inputs":
            (_drop_in(chain, "ChainStaticScheduler", "fetch_next_work", "if (threadIdx.x < 32) wait_inputs(tile);"),
             header),
        "complete_stores without wait_group (ctapipe.cuh)":
            (chain, _drop_in(header, None, "complete_stores", "bulk_wait_all_complete();")),
        "complete_stores with wait_group.read (ctapipe.cuh: the writes may still be pending)":
            (chain, header.replace("cp.async.bulk.wait_group 0;", "cp.async.bulk.wait_group.read 0;", 1)),
        "finish: the signalling thread arrives at the storers' barrier without waiting (bar.arrive)":
            (chain.replace('asm volatile("bar.sync %0, %1;" ::"n"(kSignalBarrier), "n"(kEpilogueThreads) : "memory");',
                           'if (leader) asm volatile("bar.arrive %0, %1;" ::"n"(kSignalBarrier), "n"(kEpilogueThreads)'
                           ' : "memory"); else asm volatile("bar.sync %0, %1;" ::"n"(kSignalBarrier), '
                           '"n"(kEpilogueThreads) : "memory");', 1), header),
    }
    out = {name: (c, h, sched) for name, (c, h) in out.items()}
    # the scheduler-warp adapter (ctapipe_gemm.cuh) that the tickets design inherits
    out["SchedulerWarp::fetch_next_work without the tile's finish (signal)"] = (
        chain, header, _drop_in(sched, "SchedulerWarp", "fetch_next_work", "derived().finish_tile(work);"))
    out["SchedulerWarp::fetch_next_work without fetched (the load warp's fence)"] = (
        chain, header, _drop_in(sched, "SchedulerWarp", "fetch_next_work", "derived().fetched(tile);"))
    out["ChainScheduler::take_next without take (its wait)"] = (
        _drop_in(chain, "ChainScheduler", "take_next", "take<Trace>(chain(), &t0)"), header, sched)
    for name, texts in out.items():
        assert texts != (chain, header, sched), f"mutation {name} did not apply: the kernel changed shape"
    return out


def test_chain_kernel_source_matches_the_chain_programs(chain_model):
    assert chain_compare(chain_model, chain_source_ops()) == []


def test_chain_roles_are_the_ones_the_programs_run(chain_model):
    assert chain_model == {
        "take": ["atom.add.relaxed.gpu", "ld.acquire.gpu", "fence.proxy.async"],
        "fetch_load": ["fence.proxy.async"],
        "finish": ["cp.async.bulk.wait_group", "fence.proxy.async", "bar.sync", "red.add.release.gpu"],
        "wait_inputs": ["ld.acquire.gpu", "bar.warp.sync", "fence.proxy.async"],
    }
    source = chain_source_ops()
    assert set(source) == set(CHAIN_ROLES) and all(source.values())


def test_mutated_chain_kernels_fail_the_check(chain_model):
    chain, header, sched = CHAIN_KERNEL.read_text(), HEADER.read_text(), SCHEDULER_HEADER.read_text()
    for name, (c, h, sh) in chain_mutations(chain, header, sched).items():
        assert chain_compare(chain_model, chain_source_ops(c, h, scheduler_text=sh)), f"{name}: not detected"


def test_drop_in_stays_inside_the_named_class():
    """A seeded bug located in a class that lacks the function fails loudly instead of landing in the next class."""
    chain = CHAIN_KERNEL.read_text()
    with pytest.raises(AssertionError, match="no function fetch_next_work in ChainScheduler"):
        _drop_in(chain, "ChainScheduler", "fetch_next_work", "ctapipe::fence_proxy_async_global();")


def test_chain_programs_with_a_seeded_bug_fail_the_check():
    """The comparison is two-sided: the chain programs with a seeded bug (both designs, where the bug is in code the
    designs share) disagree with the kernel's source."""
    from ctasim.protocol.chain import CHAIN_CORRECT, CHAIN_MUTANTS, CHAIN_STATIC

    M = CHAIN_MUTANTS
    pairs = {
        "cta-scope-red": (M["chain-tickets-cta-scope-red"], M["chain-static-cta-scope-red"]),
        "relaxed-poll (tickets)": (M["chain-tickets-relaxed-poll"], CHAIN_STATIC),
        "relaxed-poll (static)": (CHAIN_CORRECT, M["chain-static-relaxed-poll"]),
        "no-take-fence": (M["chain-tickets-no-take-fence"], CHAIN_STATIC),
        "signal-before-storers": (M["chain-tickets-signal-before-storers"], M["chain-static-signal-before-storers"]),
        "no-load-fence (static)": (CHAIN_CORRECT, M["chain-static-no-load-fence"]),
        "no-syncwarp (static)": (CHAIN_CORRECT, M["chain-static-no-syncwarp"]),
    }
    source = chain_source_ops()
    for name, variants in pairs.items():
        problems = chain_compare(chain_program_ops(variants), source)
        assert problems and not any("never run" in p for p in problems), (name, problems)


def _ring_model():
    """The chain programs on a ring (layer l on GPU l mod 2) at system scope: 3 layers, one CTA per GPU, so every
    role runs (a CTA takes a second tile; both GPUs wait)."""
    from ctasim.protocol.chain import CHAIN_PASSING, ChainSetup

    return chain_program_ops((CHAIN_PASSING["chain-tickets-ring-sys"], CHAIN_PASSING["chain-static-2gpu-sys"]),
                             ChainSetup(3, 1, 2, grid=1))


def test_chain_kernel_source_at_system_scope_matches_the_ring_programs():
    """The kernel's ring branch (sys_scope = 1, ctahw.chain's ring) issues what the ring's programs issue; its GPU
    branch does not, nor does the GPU-scope model match the ring branch."""
    ring = _ring_model()
    assert chain_compare(ring, chain_source_ops(sys_scope=True)) == []
    assert chain_compare(ring, chain_source_ops(sys_scope=False))
    assert chain_compare(chain_program_ops(), chain_source_ops(sys_scope=True))


def test_weakened_system_scope_helpers_fail_the_ring_check():
    chain, header = CHAIN_KERNEL.read_text(), HEADER.read_text()
    ring = _ring_model()
    for old, new in (("ld.acquire.sys.global.u32", "ld.relaxed.sys.global.u32"),
                     ("red.release.sys.global.add", "red.relaxed.sys.global.add"),
                     ("ld.acquire.sys.global.u32", "ld.acquire.gpu.global.u32")):
        assert old in header
        assert chain_compare(ring, chain_source_ops(chain, header.replace(old, new), sys_scope=True)), new
    # the kernel's scope branch swapped: the ring would run GPU-scope operations
    swapped = chain.replace("if (p.sys_scope) ctapipe::red_add_release_sys(c, 1u); else ctapipe::red_add_release_gpu(c, 1u);",
                            "if (p.sys_scope) ctapipe::red_add_release_gpu(c, 1u); else ctapipe::red_add_release_sys(c, 1u);")
    assert swapped != chain
    assert chain_compare(ring, chain_source_ops(swapped, header, sys_scope=True))


def test_the_fold_s_row_statistics_add_is_the_model_s():
    """The chain kernel's row-statistics add (AtomicAddSys) issues what the ring's row-statistics model
    (rowstats-chain-ring, which passes its searches) issues; a weakened scope, a release where the model has none,
    or a plain store instead of the reduction does not."""
    from ctasim.protocol.kernelops import fold_add_ops, fold_compare

    chain = CHAIN_KERNEL.read_text()
    assert fold_add_ops(chain) == ["red.add.relaxed.sys"] and fold_compare() == []
    asm = "red.relaxed.sys.global.add.f32"
    assert asm in chain
    for wrong in ("red.relaxed.gpu.global.add.f32", "red.release.sys.global.add.f32", "st.relaxed.sys.global.f32"):
        assert fold_compare(fold_add_ops(chain.replace(asm, wrong))), wrong
    assert fold_compare(fold_add_ops(chain.replace("struct AtomicAddSys", "struct AtomicAdd")))  # no such functor
