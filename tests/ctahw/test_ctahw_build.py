"""ctahw.build: cache keys, command lines, the lock and re-check, and error paths (CPU only, fake nvcc)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ctahw import build
from ctahw.build import (CompileError, CutlassHeadersNotFoundError, KernelLibrary, LoadError, NvccNotFoundError,
                         Toolchain)

FAKE_NVCC = textwrap.dedent('''\
    #!{python}
    import os, sys, time
    args = sys.argv[1:]
    if "--version" in args:
        print("nvcc: NVIDIA (R) Cuda compiler driver\\nCuda compilation tools, release 13.0, V13.0.88")
        sys.exit(0)
    src = [a for a in args if a.endswith(".cu")][0]
    if "BROKEN" in open(src).read():
        print(src + "(3): error: identifier \\"BROKEN\\" is undefined", file=sys.stderr)
        sys.exit(2)
    time.sleep(float(os.environ.get("FAKE_NVCC_SLEEP", "0")))
    with open(os.environ["FAKE_NVCC_COUNT"], "a") as f:
        f.write("x")
    open(args[args.index("-o") + 1], "wb").write(b"not a shared library")
''')


@pytest.fixture
def fake(tmp_path, monkeypatch):
    nvcc = tmp_path / "nvcc"
    nvcc.write_text(FAKE_NVCC.format(python=sys.executable))
    nvcc.chmod(0o755)
    count = tmp_path / "count"
    count.write_text("")
    cache = tmp_path / "cache"
    monkeypatch.setenv("CTAHW_CACHE", str(cache))
    monkeypatch.setenv("FAKE_NVCC_COUNT", str(count))
    src = tmp_path / "k.cu"
    src.write_text('extern "C" int k_abi() { return 1; }\n')
    lib = KernelLibrary(name="k", source=src, needs_cutlass=False, signatures={}, abi_symbol="k_abi", abi_version=1)
    tc = Toolchain(nvcc, "13.0.88", (), None)
    return dict(nvcc=nvcc, count=count, cache=cache, src=src, lib=lib, tc=tc)


def test_parse_nvcc_version():
    out = "nvcc: NVIDIA (R) Cuda compiler driver\nCuda compilation tools, release 13.0, V13.0.88\nBuild cuda_13.0"
    assert build.parse_nvcc_version(out) == "13.0.88"
    with pytest.raises(build.BuildError):
        build.parse_nvcc_version("command not found")


def test_parse_cutlass_version():
    text = "#define CUTLASS_MAJOR 4\n#define CUTLASS_MINOR 2\n#define CUTLASS_PATCH 0\n"
    assert build.parse_cutlass_version(text) == "4.2.0"
    with pytest.raises(CutlassHeadersNotFoundError):
        build.parse_cutlass_version("#define CUTLASS_MAJOR 4\n")


def test_key_is_readable_and_covers_every_input(fake):
    lib, tc = fake["lib"], fake["tc"]
    key = lib.key(tc)
    name, arch, nvcc, digest = key.split("-")
    assert (name, arch, nvcc) == ("k", "sm90a", "nvcc13.0.88")
    assert len(digest) == 32 and int(digest, 16) >= 0
    other_nvcc = Toolchain(tc.nvcc, "13.0.48", (), None)
    other_flags = KernelLibrary(**{**lib.__dict__, "flags": lib.flags + ("-lineinfo",)})
    other_arch = KernelLibrary(**{**lib.__dict__, "arch": "sm_100a"})
    keys = {key, lib.key(other_nvcc), other_flags.key(tc), other_arch.key(tc)}
    fake["src"].write_text(fake["src"].read_text() + "// changed\n")
    keys.add(lib.key(tc))
    assert len(keys) == 5


def test_cutlass_version_is_in_the_key_of_cutlass_kernels():
    g = build.LIBRARIES["gemm_sm90_bf16"]
    a = g.key(Toolchain(Path("nvcc"), "13.0.88", (), "4.2.0"))
    b = g.key(Toolchain(Path("nvcc"), "13.0.88", (), "4.3.0"))
    assert "cutlass4.2.0" in a and a != b


def test_nvcc_command_is_a_list_with_the_project_flags():
    cmd = build.nvcc_command(Path("/x/nvcc"), Path("a b.cu"), Path("o.so"), [Path("/inc one")])
    assert cmd[0] == "/x/nvcc" and cmd[-3:] == ["a b.cu", "-o", "o.so"]
    for flag in ("-std=c++17", "-O3", "-DNDEBUG", "-gencode=arch=compute_90a,code=sm_90a", "--expt-relaxed-constexpr",
                 "-shared", "-cudart=static"):
        assert flag in cmd
    assert "-I/inc one" in cmd


def test_every_kernel_source_is_registered():
    sources = {p.name for p in build.KERNELS_DIR.glob("*.cu")}
    assert sources == {lib.source.name for lib in build.LIBRARIES.values()}


def test_every_project_header_a_library_includes_is_in_its_cache_key():
    """The headers next to the kernel sources that a library includes (recursively, #include "...") are exactly its
    `headers`: one left out would let a changed header reuse a stale build."""
    import re

    def project_includes(path, seen):
        for name in re.findall(r'^\s*#include\s+"([^"]+)"', path.read_text(), flags=re.M):
            h = build.KERNELS_DIR / name
            if h.exists() and h not in seen:
                seen.add(h)
                project_includes(h, seen)
        return seen

    for lib in build.LIBRARIES.values():
        assert project_includes(lib.source, set()) == set(lib.headers), lib.name


def test_signatures_use_argtypes_after_open():
    # ctypes reads `argtypes`; a typo (`argtype`) would silently disable checking.
    src = Path(build.__file__).read_text()
    assert ".argtype " not in src and ".argtype=" not in src


def test_build_without_nvcc_says_so(fake):
    with pytest.raises(NvccNotFoundError, match="nvcc"):
        fake["lib"].build(Toolchain(None, None, (), None))


def test_build_without_cutlass_headers_says_so(fake, monkeypatch):
    monkeypatch.setattr(build.importlib.util, "find_spec", lambda name: None)
    g = KernelLibrary(**{**fake["lib"].__dict__, "needs_cutlass": True})
    with pytest.raises(CutlassHeadersNotFoundError, match="nvidia-cutlass"):
        g.build(fake["tc"])


def test_compile_error_carries_the_log(fake):
    fake["src"].write_text("BROKEN\n")
    with pytest.raises(CompileError) as ei:
        fake["lib"].build(fake["tc"])
    e = ei.value
    assert 'identifier "BROKEN" is undefined' in e.log and e.source == fake["src"] and e.returncode == 2
    assert str(fake["nvcc"]) == e.command[0]
    assert not list(fake["cache"].rglob("*.so"))  # nothing half-built is left to be found


def test_build_is_idempotent_and_writes_a_manifest(fake):
    lib, tc = fake["lib"], fake["tc"]
    p1 = lib.build(tc)
    p2 = lib.build(tc)
    assert p1 == p2 and fake["count"].read_text() == "x"
    man = json.loads((p1.parent / "manifest.json").read_text())
    assert man["source_sha256"] == lib.source_sha256() and man["nvcc_version"] == "13.0.88"
    assert p1.parent.name == lib.key(tc)


def test_stale_artifact_is_not_found_and_try_load_never_raises(fake):
    lib, tc = fake["lib"], fake["tc"]
    lib.build(tc)
    assert lib.find_artifact(tc) is not None
    assert lib.try_load(tc) is None  # the fake output is no ELF: try_load says None, load raises
    with pytest.raises(LoadError):
        lib.load(tc)
    fake["src"].write_text(fake["src"].read_text() + "// edited\n")
    assert lib.find_artifact(tc) is None
    with pytest.raises(build.BuildError, match="no built library"):
        lib.load(tc)


def test_prebuilt_artifact_is_found_where_there_is_no_nvcc(fake):
    lib, tc = fake["lib"], fake["tc"]
    built = lib.build(tc)
    assert lib.find_artifact(Toolchain(None, None, (), None)) == built
    # but an artifact of other flags is not taken
    other = KernelLibrary(**{**lib.__dict__, "flags": lib.flags + ("-G",)})
    assert other.find_artifact(Toolchain(None, None, (), None)) is None


def test_cache_dirs_order(monkeypatch, tmp_path):
    monkeypatch.setenv("CTAHW_CACHE", str(tmp_path / "x"))
    dirs = build.cache_dirs()
    assert dirs[0] == tmp_path / "x"
    assert dirs[1] == build.PROJECT_ROOT / ".cache" / "ctahw"
    assert dirs[-1] == Path.home() / ".cache" / "ctahw"


_RACE = textwrap.dedent('''
    import sys
    from pathlib import Path
    from ctahw.build import KernelLibrary, Toolchain
    lib = KernelLibrary(name="k", source=Path(sys.argv[1]), needs_cutlass=False, signatures={}, abi_symbol="k_abi",
                        abi_version=1)
    print(lib.build(Toolchain(Path(sys.argv[2]), "13.0.88", (), None)))
''')


def test_two_processes_building_at_once_compile_once(fake):
    env = dict(os.environ, FAKE_NVCC_SLEEP="1.0", PYTHONPATH=str(build.PROJECT_ROOT))
    procs = [subprocess.Popen([sys.executable, "-c", _RACE, str(fake["src"]), str(fake["nvcc"])], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=60) for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    assert outs[0][0] == outs[1][0]
    assert fake["count"].read_text() == "x"  # the second process found the first one's artifact after the lock


def test_cache_dirs_include_the_working_checkouts_cache(monkeypatch, tmp_path):
    # ctahw installed into site-packages, run from a checkout that carries .cache/ctahw
    monkeypatch.delenv("CTAHW_CACHE", raising=False)
    monkeypatch.setattr(build, "PROJECT_ROOT", tmp_path / "site-packages")
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    (checkout / "pyproject.toml").write_text("")
    monkeypatch.chdir(checkout)
    assert checkout / ".cache" / "ctahw" in build.cache_dirs()
    monkeypatch.chdir(tmp_path)  # not a checkout: not searched
    assert tmp_path / ".cache" / "ctahw" not in build.cache_dirs()


def _leftovers(cache: Path) -> list[str]:
    """Lock files, temporary files and empty folders under the cache."""
    out = [p.name for p in cache.rglob("*") if p.suffix in (".lock", ".tmp") or p.name.startswith(".")]
    out += [p.name + "/" for p in cache.rglob("*") if p.is_dir() and not any(p.iterdir())]
    return sorted(out)


def test_a_build_leaves_no_lock_or_temporary_file(fake):
    lib, tc = fake["lib"], fake["tc"]
    lib.build(tc)
    lib.build(tc)
    assert _leftovers(fake["cache"]) == []
    assert [p.name for p in fake["cache"].iterdir()] == [lib.key(tc)]


def test_a_failed_compile_leaves_nothing(fake):
    fake["src"].write_text("BROKEN\n")
    with pytest.raises(CompileError):
        fake["lib"].build(fake["tc"])
    assert list(fake["cache"].iterdir()) == []  # no lock, no temporary file, no empty artifact folder


def test_a_failing_write_leaves_no_temporary_file(fake, monkeypatch):
    real_replace = os.replace

    def disk_full(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(build.os, "replace", disk_full)  # the library's rename fails
    with pytest.raises(OSError, match="No space"):
        fake["lib"].build(fake["tc"])
    assert list(fake["cache"].iterdir()) == []

    calls = []

    def manifest_fails(src, dst):  # the library goes in place, the manifest's rename fails
        calls.append(Path(dst).name)
        if Path(dst).name == "manifest.json":
            raise OSError(28, "No space left on device")
        real_replace(src, dst)

    monkeypatch.setattr(build.os, "replace", manifest_fails)
    with pytest.raises(OSError, match="No space"):
        fake["lib"].build(fake["tc"])
    assert calls == ["libk.so", "manifest.json"]
    assert list(fake["cache"].iterdir()) == []  # no library without its manifest either
    monkeypatch.setattr(build.os, "replace", real_replace)
    assert fake["lib"].build(fake["tc"]).is_file() and _leftovers(fake["cache"]) == []


def test_write_atomic_removes_its_temporary_file_when_the_write_fails(tmp_path):
    with pytest.raises(TypeError):
        build._write_atomic(tmp_path / "manifest.json", None)  # type: ignore[arg-type]
    assert list(tmp_path.iterdir()) == []


def test_removing_the_lock_file_keeps_the_lock_exclusive(tmp_path):
    """A waiter that got the lock on a file its holder unlinked must not hold it beside a newcomer who
    locked the path's new file: it re-checks the inode and locks the new file (blocking while it is held)."""
    import fcntl
    import threading

    path = tmp_path / "k.lock"
    first = build._flock(path).__enter__()
    entered, release = threading.Event(), threading.Event()

    def waiter():
        with build._flock(path):  # opens the first holder's file, then waits in flock
            entered.set()
            release.wait(10)

    t = threading.Thread(target=waiter)
    t.start()
    import time

    time.sleep(0.3)  # the waiter is in flock on the first file
    assert not entered.is_set()
    first.__exit__(None, None, None)  # unlinks the file, then unlocks
    assert entered.wait(10)
    # The waiter holds the file now at the path: a newcomer cannot lock it.
    fd = os.open(path, os.O_RDWR | os.O_CREAT)
    try:
        with pytest.raises(BlockingIOError):
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    finally:
        os.close(fd)
        release.set()
        t.join(10)
    assert not path.exists()


_COUNT = textwrap.dedent('''
    import sys, time
    from pathlib import Path
    from ctahw.build import _flock
    lock, counter = Path(sys.argv[1]), Path(sys.argv[2])
    for _ in range(int(sys.argv[3])):
        with _flock(lock):
            n = int(counter.read_text() or 0)
            time.sleep(0.001)
            counter.write_text(str(n + 1))
''')


def test_processes_counting_under_the_removed_lock_lose_no_update(tmp_path):
    counter = tmp_path / "n"
    counter.write_text("0")
    env = dict(os.environ, PYTHONPATH=str(build.PROJECT_ROOT))
    procs = [subprocess.Popen([sys.executable, "-c", _COUNT, str(tmp_path / "c.lock"), str(counter), "40"], env=env,
                              stderr=subprocess.PIPE, text=True) for _ in range(4)]
    errs = [p.communicate(timeout=120)[1] for p in procs]
    assert all(p.returncode == 0 for p in procs), errs
    assert counter.read_text() == "160"
    assert not (tmp_path / "c.lock").exists()


def test_every_library_s_abi_version_is_its_source_s():
    """The ABI version ctahw.build expects of each library is the one its source returns (a kernel change that bumps
    the source's version and not the loader's, or the reverse, fails here instead of at load time on a GPU)."""
    import re

    from ctahw.build import LIBRARIES

    def version(text: str, symbol: str) -> int | None:
        m = re.search(rf"int\s+{symbol}\s*\(\s*\)\s*\{{\s*return\s+(\d+)\s*;", text)
        return int(m.group(1)) if m else None

    for name, lib in LIBRARIES.items():
        texts = [lib.source.read_text()] + [h.read_text() for h in lib.headers]
        found = [v for v in (version(t, lib.abi_symbol) for t in texts) if v is not None]
        assert found == [lib.abi_version], f"{name}: the source returns {found}, ctahw.build expects {lib.abi_version}"
    # a source that returns another version than the loader expects is found
    chain = LIBRARIES["ctapipe_sm90_bf16_chain"]
    bumped = re.sub(r"(int ctahw_chain_abi_version\(\) \{ return )\d+", rf"\g<1>{chain.abi_version + 1}",
                    chain.source.read_text())
    assert version(bumped, chain.abi_symbol) == chain.abi_version + 1 != chain.abi_version


def test_a_library_leaving_driver_functions_undefined_is_found(tmp_path):
    """undefined_driver_symbols reads `nm -D --undefined-only`: driver functions (cuX...) are named, runtime and libc
    symbols are not; without nm it finds nothing."""
    from ctahw.build import undefined_driver_symbols

    nm = tmp_path / "nm"
    nm.write_text("#!/bin/sh\necho '                 U cuMemsetD32Async'\necho '                 U cudaLaunchKernel'\n"
                  "echo '                 U cuGetErrorString'\necho '                 U memcpy@GLIBC_2.14'\n")
    nm.chmod(0o755)
    assert undefined_driver_symbols(tmp_path / "lib.so", str(nm)) == ["cuGetErrorString", "cuMemsetD32Async"]
    clean = tmp_path / "nm-clean"
    clean.write_text("#!/bin/sh\necho '                 U cudaLaunchKernel'\n")
    clean.chmod(0o755)
    assert undefined_driver_symbols(tmp_path / "lib.so", str(clean)) == []


def test_nm_missing_finds_nothing(tmp_path, monkeypatch):
    from ctahw import build

    monkeypatch.setattr(build.shutil, "which", lambda name: None)
    assert build.undefined_driver_symbols(tmp_path / "lib.so") == []


def test_a_library_with_undefined_driver_symbols_is_refused(fake, monkeypatch):
    """A compiled library that names CUDA driver functions it does not define is not kept: a CompileError that names
    them, and nothing left in the cache."""
    monkeypatch.setattr(build, "undefined_driver_symbols", lambda path, nm=None: ["cuMemsetD32Async"])
    with pytest.raises(CompileError, match="cuMemsetD32Async"):
        fake["lib"].build(fake["tc"])
    assert list(fake["cache"].iterdir()) == []
    monkeypatch.setattr(build, "undefined_driver_symbols", lambda path, nm=None: [])
    assert fake["lib"].build(fake["tc"]).is_file()
