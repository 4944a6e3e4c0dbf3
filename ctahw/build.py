"""JIT build of the CUDA sources in ``ctahw/kernels/`` into shared libraries loaded with ctypes.

Contract (after FlashInfer's JIT layer):

* :meth:`KernelLibrary.try_load` never raises for a missing or stale artifact: it returns ``None``.
* :meth:`KernelLibrary.build` is idempotent: it compiles only when no artifact with the same key exists.
  Two processes that build at once serialize on an ``fcntl.flock`` lock file (released by the kernel when
  its holder dies) and the second one checks again after it gets the lock. The holder removes the lock file
  before it unlocks, so lock files do not pile up (one per key ever built); see :class:`_flock` for why that
  is safe. A failed build leaves no temporary file and no empty artifact folder.
* :meth:`KernelLibrary.load` raises a typed :class:`BuildError` subclass that says what is missing.

The cache key covers every input of the build: the source and the project headers next to it (sha256),
the nvcc flags, the target arch, the nvcc version and the CUTLASS version (the headers come from the
``nvidia-cutlass`` wheel, versioned as a whole). Artifacts are named readably::

    <cache>/<name>-sm90a-nvcc13.0.88-cutlass4.2.0-<32 hex digits>/lib<name>.so + manifest.json

Cache directories, searched in this order: ``$CTAHW_CACHE`` (if set), the project-local ``.cache/ctahw``
(a folder ignored by git that can travel with the working tree to a GPU machine), ``~/.cache/ctahw``.
New builds go to the first of these that exists or can be created. On a machine without nvcc a prebuilt
artifact is still found: its manifest must match every input except the nvcc version, which is then
unknown (the library links the CUDA runtime statically, so it does not need the toolkit to run).

Left out: building for other archs than sm_90a, and any source generation (sources are plain files).
"""

from __future__ import annotations

import ctypes
import fcntl
import hashlib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Mapping, Sequence

__all__ = [
    "BuildError",
    "NvccNotFoundError",
    "CutlassHeadersNotFoundError",
    "CompileError",
    "LoadError",
    "Toolchain",
    "KernelLibrary",
    "KERNELS_DIR",
    "ARCH",
    "NVCC_FLAGS",
    "LIBRARIES",
    "cache_dirs",
    "find_nvcc",
    "nvcc_version",
    "cutlass_include_dirs",
    "cutlass_version",
    "nvcc_command",
    "library",
]

KERNELS_DIR = Path(__file__).resolve().parent / "kernels"
PROJECT_ROOT = Path(__file__).resolve().parent.parent

ARCH = "sm_90a"
"""Target: Hopper with its arch-specific instructions (wgmma, setmaxnreg), as CUTLASS's SM90 kernels need."""

NVCC_FLAGS: tuple[str, ...] = (
    "-std=c++17",
    "-O3",
    "-DNDEBUG",  # without it ptxas serializes wgmma (warning C7510): ../shared/DEVICE.md
    "-gencode=arch=compute_90a,code=sm_90a",
    "--expt-relaxed-constexpr",
    "-Xcompiler=-fPIC",
    "-shared",
    "-cudart=static",  # the library runs on a machine without the toolkit's runtime (DEVICE.md: built here, ran there)
)
"""Flags of every build (../shared/CUTLASS-NOTES.md, "Building")."""


# --------------------------------------------------------------------------------------------------
# Errors


class BuildError(RuntimeError):
    """A kernel library could not be built or loaded. Subclasses say why."""


class NvccNotFoundError(BuildError):
    """No nvcc on PATH, in $CUDA_HOME/bin or /usr/local/cuda/bin."""


class CutlassHeadersNotFoundError(BuildError):
    """The nvidia-cutlass wheel (which carries the CUTLASS headers) is not installed."""


class CompileError(BuildError):
    """nvcc failed. ``log`` holds its combined output, ``source`` the file, ``command`` the command line."""

    def __init__(self, source: Path, command: Sequence[str], log: str, returncode: int):
        self.source, self.command, self.log, self.returncode = source, list(command), log, returncode
        tail = "\n".join(log.strip().splitlines()[-30:])
        super().__init__(f"nvcc failed (exit {returncode}) on {source}\n$ {' '.join(command)}\n{tail}")


class LoadError(BuildError):
    """The shared library exists but cannot be used (dlopen failed, a symbol or the ABI version is wrong)."""


# --------------------------------------------------------------------------------------------------
# Toolchain discovery (no imports of cutlass_library: its imports pull in more than headers)


def find_nvcc() -> Path | None:
    """nvcc from $CTAHW_NVCC, PATH, $CUDA_HOME/bin or /usr/local/cuda/bin; None if there is none."""
    explicit = os.environ.get("CTAHW_NVCC")
    if explicit:
        return Path(explicit) if Path(explicit).is_file() else None
    found = shutil.which("nvcc")
    if found:
        return Path(found)
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if home and (Path(home) / "bin" / "nvcc").is_file():
            return Path(home) / "bin" / "nvcc"
    return None


_NVCC_VERSION_RE = re.compile(r"release\s+[\d.]+,\s+V(\d+\.\d+\.\d+)")


def parse_nvcc_version(text: str) -> str:
    """'13.0.88' from the output of ``nvcc --version``; raises BuildError if it is not there."""
    m = _NVCC_VERSION_RE.search(text)
    if not m:
        raise BuildError(f"cannot read the nvcc version from: {text.strip()[-200:]!r}")
    return m.group(1)


@lru_cache(maxsize=8)
def nvcc_version(nvcc: Path) -> str:
    out = subprocess.run([str(nvcc), "--version"], capture_output=True, text=True, check=False)
    return parse_nvcc_version(out.stdout + out.stderr)


def cutlass_package_dir() -> Path | None:
    spec = importlib.util.find_spec("cutlass_library")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def cutlass_include_dirs() -> list[Path]:
    """``<cutlass_library>/source/include`` and ``.../source/tools/util/include``; raises if missing."""
    pkg = cutlass_package_dir()
    if pkg is None:
        raise CutlassHeadersNotFoundError(
            "the CUTLASS headers come from the nvidia-cutlass wheel, which is not installed: "
            "pip install --no-deps nvidia-cutlass==4.2.0.0"
        )
    dirs = [pkg / "source" / "include", pkg / "source" / "tools" / "util" / "include"]
    for d in dirs:
        if not d.is_dir():
            raise CutlassHeadersNotFoundError(f"nvidia-cutlass is installed at {pkg} but {d} is missing")
    return dirs


def parse_cutlass_version(version_h: str) -> str:
    parts = []
    for name in ("MAJOR", "MINOR", "PATCH"):
        m = re.search(rf"#define\s+CUTLASS_{name}\s+(\d+)", version_h)
        if not m:
            raise CutlassHeadersNotFoundError(f"cutlass/version.h has no CUTLASS_{name}")
        parts.append(m.group(1))
    return ".".join(parts)


def cutlass_version(include_dirs: Sequence[Path]) -> str:
    return parse_cutlass_version((Path(include_dirs[0]) / "cutlass" / "version.h").read_text())


def undefined_driver_symbols(lib: Path, nm: str | None = None) -> list[str]:
    """The CUDA driver functions (``cu`` + capital) a built library leaves undefined, by ``nm -D``; [] where nm is
    missing. The libraries link the runtime statically and not libcuda, so such a symbol makes dlopen fail on the
    GPU machine."""
    nm = nm or shutil.which("nm")
    if nm is None:
        return []
    out = subprocess.run([nm, "-D", "--undefined-only", str(lib)], capture_output=True, text=True, check=False)
    return sorted({m.group(1) for m in re.finditer(r"\bU (cu[A-Z]\w*)", out.stdout)})


@dataclass(frozen=True)
class Toolchain:
    """What a build uses: nvcc (path and version; None where there is no nvcc) and the CUTLASS headers."""

    nvcc: Path | None
    nvcc_version: str | None
    cutlass_includes: tuple[Path, ...]
    cutlass_version: str | None

    @classmethod
    def detect(cls) -> "Toolchain":
        nvcc = find_nvcc()
        version = nvcc_version(nvcc) if nvcc else None
        try:
            inc = tuple(cutlass_include_dirs())
            cver = cutlass_version(inc)
        except CutlassHeadersNotFoundError:
            inc, cver = (), None
        return cls(nvcc, version, inc, cver)


def nvcc_command(nvcc: Path, source: Path, output: Path, include_dirs: Sequence[Path],
                 flags: Sequence[str] = NVCC_FLAGS) -> list[str]:
    """The nvcc command line as a list (never split from a string)."""
    cmd = [str(nvcc), *flags]
    for d in include_dirs:
        cmd.append(f"-I{d}")
    cmd += [str(source), "-o", str(output)]
    return cmd


# --------------------------------------------------------------------------------------------------
# Cache


def cache_dirs() -> list[Path]:
    """Where artifacts are looked for, in order; new builds go to the first usable one."""
    dirs: list[Path] = []
    env = os.environ.get("CTAHW_CACHE")
    if env:
        dirs.append(Path(env).expanduser())
    if (PROJECT_ROOT / "pyproject.toml").is_file():
        dirs.append(PROJECT_ROOT / ".cache" / "ctahw")
    # An installed (non-editable) ctahw run from a checkout: its carried .cache/ctahw is in the working directory.
    here = Path.cwd() / ".cache" / "ctahw"
    if (Path.cwd() / "pyproject.toml").is_file() and here not in dirs:
        dirs.append(here)
    dirs.append(Path.home() / ".cache" / "ctahw")
    return dirs


def _sha256_files(paths: Sequence[Path]) -> str:
    h = hashlib.sha256()
    for p in sorted(paths, key=lambda p: p.name):  # sorted: the key must not depend on directory order
        h.update(p.name.encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()


@dataclass(frozen=True)
class KernelLibrary:
    """One CUDA source file built into one shared library with ``extern "C"`` launchers.

    ``signatures`` maps each exported symbol to ``(restype, argtypes)``; :meth:`load` sets both on the
    loaded functions (ctypes reads ``argtypes``, plural) and checks ``abi_symbol`` returns ``abi_version``.
    """

    name: str
    source: Path
    needs_cutlass: bool
    signatures: Mapping[str, tuple[object, tuple[object, ...]]]
    abi_symbol: str
    abi_version: int
    flags: tuple[str, ...] = NVCC_FLAGS
    arch: str = ARCH
    headers: tuple[Path, ...] = field(default_factory=tuple)

    # ---- the key
    def source_sha256(self) -> str:
        return _sha256_files([self.source, *self.headers])

    def inputs(self, tc: Toolchain) -> dict:
        """Every input of the build, as recorded in the manifest."""
        return {
            "name": self.name,
            "source": self.source.name,
            "source_sha256": self.source_sha256(),
            "flags": list(self.flags),
            "arch": self.arch,
            "nvcc_version": tc.nvcc_version,
            "cutlass_version": tc.cutlass_version if self.needs_cutlass else None,
        }

    def key(self, tc: Toolchain) -> str:
        inp = self.inputs(tc)
        digest = hashlib.sha256(json.dumps(inp, sort_keys=True).encode()).hexdigest()[:32]
        parts = [self.name, self.arch.replace("_", ""), f"nvcc{tc.nvcc_version or 'none'}"]
        if self.needs_cutlass:
            parts.append(f"cutlass{tc.cutlass_version or 'none'}")
        return "-".join(parts + [digest])

    @property
    def lib_filename(self) -> str:
        return f"lib{self.name}.so"

    # ---- finding artifacts
    def manifest_matches(self, manifest: Mapping, tc: Toolchain) -> bool:
        """True if a manifest records the same inputs. An input this machine cannot know (no nvcc here, no
        CUTLASS headers here) is not compared: a prebuilt library carried from a build machine is then used."""
        for k, v in self.inputs(tc).items():
            if v is None and k in ("nvcc_version", "cutlass_version"):
                continue
            if manifest.get(k) != v:
                return False
        return True

    def find_artifact(self, tc: Toolchain | None = None) -> Path | None:
        """Path of a usable built library, or None. Never raises for missing or stale artifacts."""
        tc = tc or Toolchain.detect()
        exact = self.key(tc)
        for d in cache_dirs():
            if not d.is_dir():
                continue
            # The exact key first, then any artifact of this library whose manifest matches.
            cands = sorted(d.glob(f"{self.name}-{self.arch.replace('_', '')}-*"), key=lambda c: c.name != exact)
            for c in cands:
                lib, man = c / self.lib_filename, c / "manifest.json"
                if not (lib.is_file() and man.is_file()):
                    continue
                try:
                    manifest = json.loads(man.read_text())
                except (OSError, ValueError):
                    continue
                if self.manifest_matches(manifest, tc):
                    return lib
        return None

    # ---- build
    def build(self, tc: Toolchain | None = None, out_dir: Path | None = None, quiet: bool = True) -> Path:
        """Compile unless an artifact with this key exists; return the library path. Idempotent."""
        tc = tc or Toolchain.detect()
        if tc.nvcc is None:
            raise NvccNotFoundError(
                f"nvcc is needed to build {self.source.name} and none was found "
                "(looked in $CTAHW_NVCC, PATH, $CUDA_HOME/bin, /usr/local/cuda/bin); "
                "or carry a prebuilt .cache/ctahw from a machine that has it"
            )
        includes: tuple[Path, ...] = ()
        if self.needs_cutlass:
            includes = tuple(cutlass_include_dirs())  # raises CutlassHeadersNotFoundError
        root = out_dir or _writable_cache_dir()
        final = root / self.key(tc)
        lib = final / self.lib_filename
        if (final / "manifest.json").is_file() and lib.is_file():
            return lib
        root.mkdir(parents=True, exist_ok=True)
        with _flock(root / f"{self.key(tc)}.lock"):
            # Another process may have built it while we waited for the lock.
            if (final / "manifest.json").is_file() and lib.is_file():
                return lib
            final.mkdir(parents=True, exist_ok=True)
            tmp = final / f".{self.lib_filename}.{os.getpid()}.tmp"
            done = False
            try:
                cmd = nvcc_command(tc.nvcc, self.source, tmp, includes, self.flags)
                t0 = time.monotonic()
                proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
                log = proc.stdout + proc.stderr
                if proc.returncode != 0:
                    raise CompileError(self.source, cmd, log, proc.returncode)
                missing = undefined_driver_symbols(tmp)
                if missing:
                    raise CompileError(self.source, cmd, log + "\nthe library leaves CUDA driver functions undefined "
                                       f"({', '.join(missing)}): it does not link libcuda, so it would not load; "
                                       "reach them through cudaGetDriverEntryPointByVersion", 0)
                os.replace(tmp, lib)
                manifest = dict(self.inputs(tc), command=cmd, seconds=round(time.monotonic() - t0, 1), log=log,
                                built_at=time.strftime("%Y-%m-%dT%H:%M:%S%z"))
                _write_atomic(final / "manifest.json", json.dumps(manifest, indent=1))  # written last: the commit mark
                done = True
            finally:
                # Whatever failed (nvcc, a write, an interrupt): no temporary file, no library without its
                # manifest (never found anyway, but not left either) and no empty artifact folder. We hold the
                # lock, so no other process is writing this artifact.
                tmp.unlink(missing_ok=True)
                if not done:
                    lib.unlink(missing_ok=True)
                    try:
                        final.rmdir()  # only if empty
                    except OSError:
                        pass
            if not quiet:
                print(f"ctahw: built {lib} in {manifest['seconds']} s")
        return lib

    # ---- load
    def try_load(self, tc: Toolchain | None = None) -> ctypes.CDLL | None:
        lib = self.find_artifact(tc)
        if lib is None:
            return None
        try:
            return self._open(lib)
        except LoadError:
            return None

    def load(self, tc: Toolchain | None = None) -> ctypes.CDLL:
        """Load the built library; raise a BuildError subclass saying what is missing."""
        tc = tc or Toolchain.detect()
        lib = self.find_artifact(tc)
        if lib is None:
            where = ", ".join(str(d) for d in cache_dirs())
            raise BuildError(f"no built library for {self.name} with key {self.key(tc)} in {where}; "
                             "run `ctahw build` (needs nvcc and nvidia-cutlass)")
        return self._open(lib)

    def build_and_load(self, tc: Toolchain | None = None, quiet: bool = True) -> ctypes.CDLL:
        tc = tc or Toolchain.detect()
        cdll = self.try_load(tc)
        if cdll is not None:
            return cdll
        self.build(tc, quiet=quiet)
        return self.load(tc)

    def _open(self, path: Path) -> ctypes.CDLL:
        try:
            cdll = ctypes.CDLL(str(path), mode=ctypes.RTLD_LOCAL)
        except OSError as e:
            raise LoadError(f"cannot load {path}: {e}") from e
        for sym, (restype, argtypes) in self.signatures.items():
            try:
                fn = getattr(cdll, sym)
            except AttributeError as e:
                raise LoadError(f"{path} lacks the symbol {sym}") from e
            fn.restype = restype
            fn.argtypes = list(argtypes)
        got = getattr(cdll, self.abi_symbol)()
        if got != self.abi_version:
            raise LoadError(f"{path}: ABI version {got}, expected {self.abi_version}")
        cdll._ctahw_path = str(path)  # type: ignore[attr-defined]
        return cdll


def _writable_cache_dir() -> Path:
    for d in cache_dirs():
        try:
            d.mkdir(parents=True, exist_ok=True)
        except OSError:
            continue
        if os.access(d, os.W_OK):
            return d
    raise BuildError(f"no writable cache directory among {[str(d) for d in cache_dirs()]} (set $CTAHW_CACHE)")


class _flock:
    """An exclusive fcntl.flock on a lock file; the kernel drops it when the holder dies.

    The holder unlinks the lock file before it unlocks (``remove``, the default), so no lock file is left
    behind. Removing a lock file is the classic race: a process that opened the file before the unlink and
    waits in ``flock`` gets the lock on an inode that is no longer the path's, while a newcomer creates a
    new file at the path and locks that one at once -- two holders. So, after ``flock`` returns, the inode
    locked is compared with the one at the path (``fstat`` against ``stat``); if the path is gone or is
    another file, the lock is dropped and taken again on the path's current file. The one who holds the lock
    on the file that is at the path is then the only holder: the file is unlinked only by its holder, while
    it holds it. (A process of an older ctahw, which does not re-check, can still end up beside a newer one;
    then both may compile the same key, which costs time but cannot corrupt the artifact: the library and
    the manifest are each put in place by an atomic rename, the manifest last.) A lock file left by a
    holder that died is taken by the next builder and removed when it is done."""

    def __init__(self, path: Path, remove: bool = True):
        self.path = path
        self.remove = remove
        self.fd: int | None = None

    def __enter__(self):
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                held = os.fstat(fd)
                try:
                    now = os.stat(self.path)
                except FileNotFoundError:
                    now = None
            except BaseException:
                os.close(fd)
                raise
            if now is not None and (now.st_dev, now.st_ino) == (held.st_dev, held.st_ino):
                self.fd = fd
                return self
            os.close(fd)  # the previous holder removed this file while we waited: lock the path's file anew

    def __exit__(self, *exc):
        assert self.fd is not None
        try:
            if self.remove:
                self.path.unlink(missing_ok=True)  # while still holding it (see the class docstring)
        finally:
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None


def _write_atomic(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# --------------------------------------------------------------------------------------------------
# The project's libraries

_p, _i, _u, _f, _ll, _ull = (ctypes.c_void_p, ctypes.c_int, ctypes.c_uint, ctypes.c_float, ctypes.c_longlong,
                             ctypes.c_ulonglong)

def _ctapipe_library(name: str, extra: Mapping[str, tuple[object, tuple[object, ...]]] | None = None) -> KernelLibrary:
    """A CTA-pipelining kernel library: every variant exports the same launcher ABI (ctapipe_gemm.cuh), and ``extra``
    symbols of its own."""
    return KernelLibrary(
        name=name,
        source=KERNELS_DIR / f"{name}.cu",
        needs_cutlass=True,
        abi_symbol="ctahw_ctapipe_abi_version",
        abi_version=5,
        headers=(KERNELS_DIR / "ctapipe.cuh", KERNELS_DIR / "ctapipe_gemm.cuh", KERNELS_DIR / "launch_status.cuh"),
        signatures={
            "ctahw_ctapipe_abi_version": (_i, ()),
            "ctahw_ctapipe_desc_fields": (_i, ()),
            "ctahw_ctapipe_desc_names": (ctypes.c_char_p, ()),
            "ctahw_ctapipe_tile_stamp_words": (_i, ()),
            "ctahw_ctapipe_describe": (_i, (_i, ctypes.c_char_p, _i)),
            "ctahw_ctapipe_gemm": (_i, (_p, _p, _p, _i, _i, _i, _f, _p, _i, _i, _i, _i, _p)),
            "ctahw_ctapipe_status_string": (ctypes.c_char_p, (_i,)),
            **(extra or {}),
        },
    )


LIBRARIES: dict[str, KernelLibrary] = {
    "gemm_sm90_bf16": KernelLibrary(
        name="gemm_sm90_bf16",
        source=KERNELS_DIR / "gemm_sm90_bf16.cu",
        needs_cutlass=True,
        abi_symbol="ctahw_gemm_abi_version",
        abi_version=2,
        headers=(KERNELS_DIR / "launch_status.cuh",),
        signatures={
            "ctahw_gemm_abi_version": (_i, ()),
            "ctahw_gemm_describe": (_i, (ctypes.c_char_p, _i)),
            "ctahw_gemm_workspace_bytes": (_ll, (_i, _i, _i, _i, _i)),
            "ctahw_gemm_can_implement": (_i, (_i, _i, _i, _i, _i)),
            "ctahw_gemm_bf16_128x256x64_coop": (_i, (_p, _p, _p, _i, _i, _i, _f, _p, _ll, _i, _i, _i, _i, _p)),
            "ctahw_gemm_status_string": (ctypes.c_char_p, (_i,)),
        },
    ),
    "gemm_sm90_bf16_epi": KernelLibrary(
        name="gemm_sm90_bf16_epi",
        source=KERNELS_DIR / "gemm_sm90_bf16_epi.cu",
        needs_cutlass=True,
        abi_symbol="ctahw_gemm_epi_abi_version",
        abi_version=1,
        headers=(KERNELS_DIR / "launch_status.cuh",),
        signatures={
            "ctahw_gemm_epi_abi_version": (_i, ()),
            "ctahw_gemm_epi_describe": (_i, (_i, ctypes.c_char_p, _i)),
            "ctahw_gemm_epi_workspace_bytes": (_ll, (_i, _i, _i, _i, _i, _i)),
            "ctahw_gemm_epi_can_implement": (_i, (_i, _i, _i, _i, _i, _i)),
            "ctahw_gemm_epi_bf16_128x256x64_coop": (_i, (_i, _p, _p, _p, _p, _i, _i, _i, _p, _ll, _i, _i, _i, _i,
                                                         _p)),
            "ctahw_gemm_epi_status_string": (ctypes.c_char_p, (_i,)),
        },
    ),
    "probes": KernelLibrary(
        name="probes",
        source=KERNELS_DIR / "probes.cu",
        needs_cutlass=False,
        abi_symbol="ctahw_probes_abi_version",
        abi_version=6,
        signatures={
            "ctahw_probes_abi_version": (_i, ()),
            "ctahw_probe_store": (_i, (_p, _ll, _i, _i, _u, _p)),
            "ctahw_probe_pingpong": (_i, (_p, _p, _i, _i, _i, _p, _ull, _p, _p)),
            "ctahw_probe_fence": (_i, (_p, _i, _i, _p, _p)),
            "ctahw_probe_atomic_latency": (_i, (_p, _i, _p, _p, _p)),
            "ctahw_probe_timer": (_i, (_p, _i, _p)),
            "ctahw_probe_stamp": (_i, (_p, _p)),
            "ctahw_probe_sleep": (_i, (_ull, _p)),
            "ctahw_probe_l2_rate": (_i, (_p, _ull, _i, _i, _i, _i, _ll, _i, _i, _i, _i, _ull, _p, _p, _p)),
            "ctahw_probe_l2_tile": (_i, (_p, _p, _i, _i, _i, _i, _i, _i, _ll, _ull, _p, _p, _p)),
        },
    ),
    # Variant (a) also runs fused epilogue ops (ABI 5): the op names by code and the launcher that takes op and C.
    **{name: _ctapipe_library(name, {
        "ctahw_ctapipe_epilogue_names": (ctypes.c_char_p, ()),
        "ctahw_ctapipe_describe_epi": (_i, (_i, _i, ctypes.c_char_p, _i)),
        "ctahw_ctapipe_gemm_epi": (_i, (_i, _p, _p, _p, _p, _i, _i, _i, _p, _i, _i, _i, _i, _p)),
    }) for name in ("ctapipe_sm90_bf16", "ctapipe_sm90_bf16_cluster")},
    # The persistent kernels' ring design: the scratch its grid needs, and the launcher's ring-depth check.
    "ctapipe_sm90_bf16_persistent": _ctapipe_library(
        "ctapipe_sm90_bf16_persistent",
        {"ctahw_ctapipe_ring_words": (_i, (_i,)), "ctahw_ctapipe_ring_check": (_i, (_i, _i, _i))}),
    "ctapipe_sm90_bf16_chain": KernelLibrary(
        name="ctapipe_sm90_bf16_chain",
        source=KERNELS_DIR / "ctapipe_sm90_bf16_chain.cu",
        needs_cutlass=True,
        abi_symbol="ctahw_chain_abi_version",
        abi_version=5,
        headers=(KERNELS_DIR / "ctapipe.cuh", KERNELS_DIR / "ctapipe_gemm.cuh", KERNELS_DIR / "launch_status.cuh"),
        signatures={
            "ctahw_chain_abi_version": (_i, ()),
            "ctahw_chain_desc_fields": (_i, ()),
            "ctahw_chain_desc_names": (ctypes.c_char_p, ()),
            "ctahw_chain_tile_stamp_words": (_i, ()),
            "ctahw_chain_designs": (_i, ()),
            "ctahw_chain_describe": (_i, (_i, ctypes.c_char_p, _i)),
            "ctahw_chain_resident_ctas": (_i, (_i, _i)),
            "ctahw_chain_gemm": (_i, (_p, _p, _p, _p, _i, _i, _i, _p, _i, _i, _i, _i, _i, _p)),
            "ctahw_chain_epilogue_names": (ctypes.c_char_p, ()),
            "ctahw_chain_load": (_i, (_i, _i, _i, _i)),
            "ctahw_chain_status_string": (ctypes.c_char_p, (_i,)),
        },
    ),
}
"""Every kernel source of the project, by name. tests/ctahw checks that this covers ``kernels/*.cu``."""

_loaded: dict[str, ctypes.CDLL] = {}


def library(name: str, build: bool = True) -> ctypes.CDLL:
    """The loaded library ``name`` (built first if needed and ``build``), cached per process."""
    if name not in _loaded:
        spec = LIBRARIES[name]
        _loaded[name] = spec.build_and_load() if build else spec.load()
    return _loaded[name]
