"""The kernel libraries' PTX at a git revision against the working tree's: a kernel-source change checked without
a GPU.

    ctahw ptx-diff --base REV [--only NAME,...] [--jobs N] [--out DIR]

What it does
    For each library of :data:`ctahw.build.LIBRARIES`, ``nvcc -ptx`` with the library's own compile flags (its
    :attr:`~ctahw.build.KernelLibrary.flags` less those that link a shared library: :data:`LINK_ONLY_FLAGS`) and the
    CUTLASS headers the build uses, once on ``ctahw/kernels`` as committed at ``REV`` (``git archive``) and once on
    the working tree's. Both PTX texts are normalised (:func:`normalise`: nvcc's comment lines and the per-file hash
    it puts in the names of internal-linkage symbols) and compared line by line. The same PTX and the same
    ``ptxas`` flags give the same machine code, so a change that leaves every library's PTX as it was (a refactor
    of the kernel sources) needs no GPU run to be trusted: it builds the kernels the committed runs measured.

Left out
    Judging a difference: a changed PTX line is reported (``DIR/<library>.diff``), not classified; whether a
    reordering or a removed instruction is harmless is the reader's call, on a GPU where it matters. The host code
    (the launchers' C++ outside the kernels) is not compared: it does not reach the PTX. ``ptxas`` itself is not run:
    a different ``ptxas`` version could compile the same PTX differently, which is the build key's business
    (:meth:`ctahw.build.KernelLibrary.key`), not this check's.
"""

from __future__ import annotations

import difflib
import io
import re
import subprocess
import tarfile
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from ctahw import build

__all__ = ["LINK_ONLY_FLAGS", "PtxDifference", "normalise", "unnumbered", "compare_ptx", "ptx_command", "kernels_at", "ptx_of",
           "compare_trees"]

LINK_ONLY_FLAGS = ("-Xcompiler=-fPIC", "-shared", "-cudart=static")
"""The build flags that only shape the shared library (position-independent host code, the link): left out of
``nvcc -ptx``, which stops before them."""

_MODULE_HASH = re.compile(r"(?:_INTERNAL_|_GLOBAL__N__)([0-9a-f]{8})_")
"""Where nvcc names a file's hash: internal-linkage symbols (``_INTERNAL_<hash>_``) and anonymous namespaces
(``_GLOBAL__N__<hash>_``)."""


def normalise(ptx: str) -> list[str]:
    """The PTX's lines less nvcc's comment lines (its version and build id among them) and blank lines, with the
    per-file hash nvcc puts in internal names (the 8 hex digits of ``_INTERNAL_<hash>_`` and ``_GLOBAL__N__<hash>_``,
    wherever they stand) replaced by ``MODULE``: the hash follows the source file's path and contents,
    not the code."""
    for h in sorted(set(_MODULE_HASH.findall(ptx))):
        ptx = ptx.replace(h, "MODULE")
    return [ln.rstrip() for ln in ptx.splitlines() if ln.strip() and not ln.lstrip().startswith("//")]


_REGISTER = re.compile(r"%(r|rd|rs|f|fd|p|SP|SPL)\d+\b")
_LABEL = re.compile(r"\$L__BB\d+_\d+")
_DECLARED = re.compile(r"^(\s*\.reg\s+\.\w+\s+%\w+)<\d+>;")


def unnumbered(lines: list[str]) -> list[str]:
    """Normalised PTX lines with the numbers of virtual registers (``%r12`` -> ``%r``), of labels and of the
    register declarations' counts erased: what is left is the instructions and their operands' kinds, so that an
    added or removed instruction shows as itself and not as every register after it renumbered."""
    out = []
    for ln in lines:
        ln = _DECLARED.sub(r"\1<>;", ln)
        out.append(_LABEL.sub("$L", _REGISTER.sub(r"%\1", ln)))
    return out


def _diff(library: str, a: list[str], b: list[str]) -> tuple[int, str]:
    diff = list(difflib.unified_diff(a, b, f"{library} (base)", f"{library} (working tree)", n=2, lineterm=""))
    changed = sum(1 for ln in diff if ln[:1] in "+-" and not ln.startswith(("+++", "---")))
    return changed, "\n".join(diff) + ("\n" if diff else "")


@dataclass(frozen=True)
class PtxDifference:
    """One library compared: ``changed`` lines of the unified diff (added plus removed; 0 = the same PTX), ``lines``
    the working tree's normalised PTX lines, ``diff`` the unified diff's text; ``unnumbered_changed`` and
    ``unnumbered_diff`` the same with register and label numbers erased (:func:`unnumbered`), the diff to read when
    a removed instruction renumbered the registers after it."""

    library: str
    changed: int
    lines: int
    diff: str
    unnumbered_changed: int = 0
    unnumbered_diff: str = ""

    @property
    def identical(self) -> bool:
        return self.changed == 0


def compare_ptx(library: str, base: str, new: str) -> PtxDifference:
    """``base`` against ``new`` (two PTX texts of ``library``), normalised by :func:`normalise`."""
    a, b = normalise(base), normalise(new)
    changed, diff = _diff(library, a, b)
    if not changed:
        return PtxDifference(library, 0, len(b), "")
    return PtxDifference(library, changed, len(b), diff, *_diff(library, unnumbered(a), unnumbered(b)))


def ptx_command(lib: build.KernelLibrary, source: Path, out: Path, nvcc: Path) -> list[str]:
    """``nvcc -ptx`` for ``lib``'s ``source`` (the library's flags less :data:`LINK_ONLY_FLAGS`, the CUTLASS
    include folders where it needs them) into ``out``."""
    flags = [f for f in lib.flags if f not in LINK_ONLY_FLAGS] + ["-ptx"]
    includes = build.cutlass_include_dirs() if lib.needs_cutlass else []
    return build.nvcc_command(nvcc, source, out, includes, flags)


def kernels_at(rev: str, dest: Path, repo: Path = build.PROJECT_ROOT) -> Path:
    """``ctahw/kernels`` as committed at ``rev``, written under ``dest``; the folder. ValueError (one line) where
    git does not know ``rev`` or it has no kernel sources."""
    rel = build.KERNELS_DIR.relative_to(build.PROJECT_ROOT).as_posix()
    proc = subprocess.run(["git", "-C", str(repo), "archive", "--format=tar", rev, rel], capture_output=True,
                          check=False)
    if proc.returncode != 0:
        why = proc.stderr.decode(errors="replace").strip().splitlines()
        raise ValueError(f"--base {rev}: git archive failed ({why[-1] if why else 'exit ' + str(proc.returncode)})")
    with tarfile.open(fileobj=io.BytesIO(proc.stdout)) as tar:
        if hasattr(tarfile, "data_filter"):  # Python >= 3.11.4: refuse links and paths out of dest
            tar.extractall(dest, filter="data")
        else:
            tar.extractall(dest)
    return dest / rel


def ptx_of(lib: build.KernelLibrary, kernels: Path, out: Path, nvcc: Path) -> str:
    """The PTX of ``lib``'s source in the folder ``kernels`` (written to ``out``). BuildError (``CompileError``)
    where nvcc fails, ValueError where the folder lacks the source."""
    source = kernels / lib.source.name
    if not source.is_file():
        raise ValueError(f"{lib.name}: no {lib.source.name} in {kernels}")
    cmd = ptx_command(lib, source, out, nvcc)
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise build.CompileError(source, cmd, proc.stdout + proc.stderr, proc.returncode)
    return out.read_text()


def compare_trees(base: Path, new: Path, names: Sequence[str], nvcc: Path, jobs: int = 1) -> list[PtxDifference]:
    """Each library of ``names`` compiled to PTX from the kernel folders ``base`` and ``new`` and compared, in the
    order given; ``jobs`` nvcc processes at once."""
    libs = [build.LIBRARIES[n] for n in names]
    with tempfile.TemporaryDirectory(prefix="ctahw-ptx-") as tmp, ThreadPoolExecutor(max_workers=jobs) as pool:
        work = Path(tmp)
        futures = [(lib, pool.submit(ptx_of, lib, base, work / f"{lib.name}.base.ptx", nvcc),
                    pool.submit(ptx_of, lib, new, work / f"{lib.name}.new.ptx", nvcc)) for lib in libs]
        return [compare_ptx(lib.name, a.result(), b.result()) for lib, a, b in futures]
