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
        i = text.index(call, m.end())
        return text[:i] + text[i + len(call):]

    out["push without its fence.acq_rel.sys"] = drop_in("push", "fence_acq_rel_sys();")
    out["pop_n without its fence.proxy.async"] = drop_in("pop_n", "fence_proxy_async_global();")
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

    assert compare(model, ptx_ops(), ordered=False) == []

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
