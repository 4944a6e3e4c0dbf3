"""The memory operations the kernels issue, read from ctahw/kernels/ctapipe.cuh, against the programs the model runs.

Three readings of the same protocol, compared role by role (``pop_n``, ``wait_n``, ``complete_stores``,
``signal``, ``push``):

* :func:`program_ops` -- the operations the kernel-form programs (:data:`~ctasim.protocol.programs.KERNEL`,
  :data:`~ctasim.protocol.programs.KERNEL_WAIT`) issue when the model runs them, per role, as
  ``<instruction>.<semantics>.<scope>`` (``ld.acquire.sys``, ``atom.add.acq_rel.sys``, ``fence.proxy.async``...);
* :func:`header_ops` -- the same, read from the header's source: each ``__device__`` helper's inline ``asm``
  string (``ld_acquire_sys`` -> ``ld.acquire.sys.global.u64``), the CUDA builtins (``atomicAdd``: a relaxed
  gpu-scope atomic; ``__threadfence``: ``fence.sc.gpu``), and, per role function (found by name, so new functions
  in the header change nothing), the helpers it calls in source order (calls of ``record_error``, the error path,
  are skipped);
* :func:`ptx_ops` -- the instructions ``nvcc -ptx`` emits for a kernel that calls each role (needs nvcc).

The chain kernel (ctahw/kernels/ctapipe_sm90_bf16_chain.cu, one GPU, GPU scope) has its own half:
:func:`chain_source_ops` reads its functions by name (``take``, ``ChainScheduler::finish``,
``ChainStaticScheduler::wait_inputs``, ...; :data:`CHAIN_ROLES`), helpers expanded through ctapipe.cuh, and
:func:`chain_compare` requires each to equal the operations of the roles the chain programs
(:mod:`ctasim.protocol.chain`) issue when the model runs them (:func:`chain_program_ops`).

:func:`compare` says, per role, what the model's sequence has that the header lacks (in order) and which
ordering operations the header has that no model program issues.  tests/protocol/test_kernel_ops.py runs it on the
header and on mutated copies (a ``.sys`` turned into ``.gpu``, a fence dropped), which must fail.

:func:`fold_compare` checks the chain kernel's row-statistics add (the LayerNorm fold, ``AtomicAddSys``) against the
operation the row-statistics model's ring variant issues.

Leaves out: control flow (a role's operations are compared as a sequence, loops and branches flattened), the
rest of the kernels' translation units (of ctapipe_gemm.cuh only the scheduler-warp adapter is read; the CTA /
cluster hand-overs are compared by reading, see docs/protocol.md), and tile stores (weak stores / TMA, not qualifiers worth comparing).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from pathlib import Path

__all__ = ["ROLES", "op_name", "program_ops", "header_ops", "ptx_ops", "compare", "normalize", "HEADER", "CHAIN_KERNEL",
           "SCHEDULER_HEADER", "ADAPTER", "FOLD_ADD", "fold_add_ops", "fold_model_ops", "fold_compare",
           "CHAIN_ROLES", "chain_source_ops", "chain_program_ops", "chain_compare"]

HEADER = Path(__file__).resolve().parents[2] / "ctahw" / "kernels" / "ctapipe.cuh"
"""The protocol header of the kernels."""

ROLES = {
    "pop_n": ["pop_n"],
    "wait_n": ["wait_n"],
    "complete_stores": ["complete_stores"],
    "signal(queue)": ["signal"],
    "signal(wait)": ["signal"],
    "push": ["push"],
}
"""Model role -> header function(s) whose operations it must match."""

_BUILTINS = {"atomicAdd": "atom.add.relaxed.gpu", "__threadfence": "fence.sc.gpu",
             "__threadfence_system": "fence.sc.sys"}
_SCOPES = ("cta", "cluster", "gpu", "sys")
_SEMS = ("relaxed", "acquire", "release", "acq_rel", "sc", "weak", "volatile")


def normalize(instr: str) -> str:
    """A PTX instruction (``atom.acq_rel.sys.global.add.u32``, ``fence.proxy.async.global`` ...) as the model writes
    it (``atom.add.acq_rel.sys``, ``fence.proxy.async``); ``""`` for instructions the comparison ignores."""
    parts = instr.strip().split()[0].rstrip(";").split(".")
    op = parts[0]
    quals = parts[1:]
    sem = next((q for q in quals if q in _SEMS), None)
    scope = next((q for q in quals if q in _SCOPES), None)
    if op == "fence":
        if "proxy" in quals:
            return "fence.proxy.async" if "async" in quals else "fence.proxy." + quals[quals.index("proxy") + 1]
        return f"fence.{sem or 'acq_rel'}.{scope}"
    if op == "membar":
        return {"cta": "fence.sc.cta", "gl": "fence.sc.gpu", "sys": "fence.sc.sys"}.get(quals[0], "")
    if op in ("atom", "red"):
        kind = next((q for q in quals if q in ("add", "inc", "exch", "cas", "max", "min", "or", "and")), "?")
        return f"{op}.{kind}.{sem or 'relaxed'}.{scope or 'gpu'}"
    if op in ("ld", "st"):
        if "shared" in quals or "param" in quals or "local" in quals or "const" in quals or "nc" in quals:
            return ""
        if sem is None or sem == "weak":
            return ""  # weak accesses: data, not protocol words
        if sem == "volatile":
            return f"{op}.relaxed.sys"
        return f"{op}.{sem}.{scope or 'gpu'}"
    if op == "cp" and "wait_group" in quals:
        # .read waits only until the bulk stores' shared-memory sources were read, not for their writes: no
        # completion, so not the model's bulk wait (ctahw.stress's wait-group-read build)
        return "cp.async.bulk.wait_group.read" if "read" in quals else "cp.async.bulk.wait_group"
    return ""


# ------------------------------------------------------------------------------------------------ the header
_FUNC = re.compile(r"(?:__device__|__global__)[^;{()]*?\b(\w+)\s*\(", re.S)


def _bodies(text: str, pattern: re.Pattern | None = None) -> dict[str, str]:
    """Function name -> body text (brace-matched) for every ``__device__`` function in ``text`` (``pattern``: what
    starts a function, :data:`_FUNC` by default)."""
    out = {}
    for m in (pattern or _FUNC).finditer(text):
        name = m.group(1)
        i = text.find("{", m.end())
        semi = text.find(";", m.end())
        if i < 0 or (0 <= semi < i and ")" in text[m.end():semi] and "{" not in text[m.end():semi]
                     and text[m.end():semi].count("(") < text[m.end():semi].count(")")):
            continue
        depth, j = 0, i
        while j < len(text):
            if text[j] == "{":
                depth += 1
            elif text[j] == "}":
                depth -= 1
                if depth == 0:
                    break
            j += 1
        out.setdefault(name, text[i + 1:j])
    return out


def _strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def header_ops(text: str | None = None) -> dict[str, list[str]]:
    """Per function of the header: its ordering operations in source order (helpers expanded)."""
    text = _strip_comments(HEADER.read_text() if text is None else text)
    bodies = _bodies(text)
    asm_of = {}
    for name, body in bodies.items():
        ops = [normalize(s) for s in re.findall(r'asm\s+volatile\s*\(\s*"([^"]*)"', body)]
        ops = [o for o in ops if o]
        if ops:
            asm_of[name] = ops
    call = re.compile(r"\b(\w+)\s*(?:<[^<>()]*>)?\s*\(")

    def expand(name: str, depth: int = 0) -> list[str]:
        body = bodies.get(name, "")
        if name in asm_of and "asm" in body and not call.search(re.sub(r"asm\s+volatile\s*\(.*?\);", "", body,
                                                                          flags=re.S)):
            return list(asm_of[name])
        out = []
        for m in call.finditer(body):
            callee = m.group(1)
            if callee == "record_error" or depth > 8:
                continue
            if callee in _BUILTINS:
                out.append(_BUILTINS[callee])
            elif callee == "asm":
                s = re.match(r'asm\s+volatile\s*\(\s*"([^"]*)"', body[m.start():])
                if s and normalize(s.group(1)):
                    out.append(normalize(s.group(1)))
            elif callee in bodies and callee != name:
                out += expand(callee, depth + 1)
        return out

    return {name: expand(name) for name in bodies}


# ------------------------------------------------------------------------------------------------ nvcc -ptx
_WRAPPERS = {
    "pop_n": "extern \"C\" __global__ void k_pop_n(ctapipe::Params p, int* t, int* s) { ctapipe::pop_n(p, 2, t, s); }",
    "wait_n": "extern \"C\" __global__ void k_wait_n(ctapipe::Params p, int* t, int* s) { ctapipe::wait_n(p, 0, 2, t, s); }",
    "complete_stores": "extern \"C\" __global__ void k_complete_stores() { ctapipe::complete_stores(); }",
    "signal": "extern \"C\" __global__ void k_signal(ctapipe::Params p, int tile) { ctapipe::signal<false>(p, tile); }",
    "push": "extern \"C\" __global__ void k_push(ctapipe::Params p, int dep) { ctapipe::push<false>(p, dep); }",
    # the chain kernel's GPU-scope helpers
    "ld_acquire_gpu_u32": "extern \"C\" __global__ void k_ld_acquire_gpu_u32(const unsigned* p, unsigned* o) "
                          "{ *o = ctapipe::ld_acquire_gpu_u32(p); }",
    "red_add_release_gpu": "extern \"C\" __global__ void k_red_add_release_gpu(unsigned* p) "
                           "{ ctapipe::red_add_release_gpu(p, 1u); }",
}


def ptx_ops(header: Path = HEADER, nvcc: str | None = None, arch: str = "sm_90a") -> dict[str, list[str]]:
    """Per role function: the ordering instructions in the PTX ``nvcc -ptx`` emits for a kernel calling it
    (record_error's ``atom.global.add`` / ``fence.sc.sys`` included: the caller filters them).  Raises
    ``FileNotFoundError`` without nvcc."""
    nvcc = nvcc or shutil.which("nvcc")
    if nvcc is None:
        raise FileNotFoundError("nvcc not found")
    with tempfile.TemporaryDirectory() as d:
        src = Path(d) / "roles.cu"
        src.write_text(f'#include "{header.name}"\n' + "\n".join(_WRAPPERS.values()) + "\n")
        out = Path(d) / "roles.ptx"
        subprocess.run([nvcc, "-ptx", f"-arch={arch}", "-std=c++17", "-I", str(header.parent), str(src), "-o",
                        str(out)], check=True, capture_output=True, text=True)
        ptx = out.read_text()
    result = {}
    for name in _WRAPPERS:
        m = re.search(rf"\.entry\s+k_{name}\s*\(.*?\n}}", ptx, re.S)
        body = m.group(0) if m else ""
        result[name] = [n for n in (normalize(line) for line in body.splitlines()
                                    if re.match(r"\s*(atom|red|ld|st|fence|membar|cp)\.", line)) if n]
    return result


# ------------------------------------------------------------------------------------------------ the model
def program_ops() -> dict[str, list[str]]:
    """Per role: the operations the kernel-form programs issue when the model runs them (a small setup)."""
    from .grid import Chain
    from .harness import Run, Setup
    from .programs import KERNEL, KERNEL_WAIT

    roles: dict[str, list[str]] = {}
    for variant in (KERNEL, KERNEL_WAIT):
        run = Run(Setup(Chain(1, (2, 1, 1), 1), 1, (1, 1, 1), "async", "async"), variant)
        sys_ = run.system
        sys_.verbose = False
        per_thread: dict = {}
        while not sys_.finished():
            for thr in sys_.threads:
                if thr.op is not None and thr.wait is None:
                    seq = per_thread.setdefault(id(thr), [])
                    if not seq or seq[-1] is not thr.op:
                        seq.append(thr.op)
            if sys_.fair_step() is None:
                raise RuntimeError(f"kernel-form program stuck: {sys_.stuck()}")
        for seq in per_thread.values():
            _roles_of([n for n in map(op_name, seq) if n], variant.consumer, roles)
    return roles


def _dedup(names: list[str]) -> list[str]:
    out = []
    for n in names:
        if not out or out[-1] != n:
            out.append(n)
    return out


def _roles_of(names: list[str], consumer: str, roles: dict) -> None:
    """Cut one thread's operations into roles, by the instruction each role starts with."""
    if names[:1] == ["cp.async.bulk.wait_group"]:
        roles.setdefault("complete_stores", names[:2])
        return
    i = 0
    while i < len(names):
        n = names[i]
        if n == "atom.add.relaxed.gpu":
            j = names.index("fence.proxy.async", i)
            roles.setdefault("pop_n", _dedup(names[i:j + 1]))
            i = j + 1
        elif n == "ld.acquire.sys" and consumer == "wait":
            j = names.index("fence.proxy.async", i)
            roles.setdefault("wait_n", _dedup(names[i:j + 1]))
            i = j + 1
        elif n == "fence.proxy.async" and i + 1 < len(names) and names[i + 1].startswith(("atom.add.acq_rel",
                                                                                          "red.add")):
            roles.setdefault("signal(wait)" if consumer == "wait" else "signal(queue)", names[i:i + 2])
            i += 2
        elif n == "atom.add.relaxed.sys":
            roles.setdefault("push", _dedup(names[i:]))
            i = len(names)
        else:
            i += 1


def _is_subsequence(small: list[str], big: list[str]) -> bool:
    it = iter(big)
    return all(any(x == y for y in it) for x in small)


def compare(model: dict[str, list[str]], header: dict[str, list[str]], ordered: bool = True) -> list[str]:
    """Differences between the model's roles and the header's functions (empty: they agree).  ``ordered=False``
    compares sets (for PTX, whose block layout need not follow the source)."""
    problems = []
    every = {op for ops in model.values() for op in ops}
    noise = set() if ordered else {"atom.add.relaxed.gpu", "fence.sc.sys"}  # record_error's, inlined in the PTX
    for role, funcs in ROLES.items():
        want = model.get(role)
        if want is None:
            problems.append(f"{role}: the model's programs never run this role")
            continue
        got = [op for f in funcs for op in header.get(f, [])]
        if not got:
            problems.append(f"{role}: no function {funcs} with memory operations in the header")
            continue
        ok = _is_subsequence(want, got) if ordered else set(want) <= set(got)
        if not ok:
            problems.append(f"{role}: the model issues {want}, the header's {'/'.join(funcs)} issues {got}")
    for f in sorted({f for funcs in ROLES.values() for f in funcs}):
        extra = sorted(set(header.get(f, [])) - every - noise)
        if extra:
            problems.append(f"{f}: the header issues {extra}, which no program of the model issues")
    return problems


# ------------------------------------------------------------------------------------------------ the chain kernel
CHAIN_KERNEL = HEADER.parent / "ctapipe_sm90_bf16_chain.cu"
"""The chain kernel (producer and consumer CTAs on one GPU, GPU scope; :mod:`ctasim.protocol.chain`)."""

CHAIN_CLASSES = ("ChainScheduler", "ChainStaticScheduler")

SCHEDULER_HEADER = HEADER.parent / "ctapipe_gemm.cuh"
"""The CTA-pipelined GEMM header, where the scheduler-warp adapter (``SchedulerWarp``) lives: a chain class that
derives from it inherits its ``advance_to_next_work`` and ``fetch_next_work``, which call the class's own
``take_next``, ``finish_tile`` and ``fetched`` (``derived().f(...)``)."""

ADAPTER = "SchedulerWarp"

CHAIN_ROLES: dict[str, tuple[tuple[str, ...], bool]] = {
    "take": (("take",), False),
    "ChainScheduler::ChainScheduler": (("take",), False),
    "ChainScheduler::advance_to_next_work": (("take",), False),
    "ChainScheduler::fetch_next_work": (("finish", "fetch_load"), True),
    "ChainScheduler::finish": (("finish",), True),
    "ChainStaticScheduler::initial_work_tile_info": (("wait_inputs",), True),
    "ChainStaticScheduler::fetch_next_work": (("finish", "wait_inputs"), True),
    "ChainStaticScheduler::wait_inputs": (("wait_inputs",), True),
}
"""Kernel function (``Class::method`` or a namespace-level name) -> (the model roles whose operations it must issue,
in this order; whether barriers are compared).  Barriers (``bar.sync``, ``__syncthreads``: ``bar.sync``;
``__syncwarp``: ``bar.warp.sync``) are compared where the model's role has them; elsewhere they are left out (the
scheduler warp's ``__syncwarp`` around its elected lane, the constructor's ``__syncthreads``, which the model runs
outside the role)."""

_CHAIN_BUILTINS = _BUILTINS | {"__syncwarp": "bar.warp.sync", "__syncthreads": "bar.sync"}
_CHAIN_SKIP = {"record_error", "record_error_at", "volatile"}  # the error path, and `asm volatile (`
_BARRIERS = ("bar.sync", "bar.warp.sync")
_FUNC_CHAIN = re.compile(r"(?:__device__|__global__|CUTLASS_DEVICE)[^;{()]*?\b(\w+)\s*\(", re.S)
_TOKEN = re.compile(r'asm\s+volatile\s*\(\s*"([^"]*)"'  # an inline PTX string, or a call with its qualifier
                    r'|(?:\b(\w+)\s*(?:<[^<>()]*>)?\s*::\s*)?\b(\w+)\s*(?:<[^<>()]*>)?\s*\(')


def _normalize_chain(instr: str) -> str:
    head = instr.strip().split()[0].rstrip(";") if instr.strip() else ""
    if head in ("bar.sync", "barrier.sync", "bar.warp.sync"):
        return "bar.warp.sync" if head == "bar.warp.sync" else "bar.sync"
    if head in ("bar.arrive", "barrier.arrive"):
        return "bar.arrive"  # arrives without waiting: orders nothing after it (no model operation issues it)
    return normalize(instr)


def _block_body(text: str, open_brace: int) -> str:
    """The text between ``text[open_brace] == '{'`` and its matching ``}``."""
    depth, j = 0, open_brace
    while j < len(text):
        depth += {"{": 1, "}": -1}.get(text[j], 0)
        if depth == 0:
            break
        j += 1
    return text[open_brace + 1:j]


def _class_bodies(text: str, names, keyword: str = "class") -> tuple[dict[str, str], str]:
    """``{class: body}`` for the named classes (or structs), and ``text`` with those bodies blanked out."""
    out, rest = {}, text
    for name in names:
        m = re.search(rf"\b{keyword}\s+{name}\b[^;{{]*\{{", text)
        if m is None:
            continue
        body = _block_body(text, m.end() - 1)
        out[name] = body
        rest = rest.replace(body, "")
    return out, rest


_SCOPE_BRANCH = re.compile(r"if\s*\(\s*[\w.>-]*\bsys_scope\s*\)\s*([^;{}]*;)\s*else\s*([^;{}]*;)")


def pick_scope(text: str, sys_scope: bool) -> str:
    """``text`` with every ``if (p.sys_scope) A; else B;`` replaced by ``A;`` (``sys_scope``) or ``B;``: the chain
    kernel's operations at one of its two scopes (system scope on a ring, GPU scope on one GPU)."""
    return _SCOPE_BRANCH.sub(lambda m: m.group(1) if sys_scope else m.group(2), text)


def chain_source_ops(chain_text: str | None = None, header_text: str | None = None,
                     skip: dict[str, set] | None = None, sys_scope: bool = False,
                     scheduler_text: str | None = None) -> dict[str, list[str]]:
    """Per function of :data:`CHAIN_ROLES`: the ordering operations the chain kernel's source issues, in source order,
    helpers expanded through the chain file and ctapipe.cuh (``ctapipe::`` calls resolve in the header,
    ``Class<...>::f`` calls in that class, others in the own class, its :data:`ADAPTER` base (read from
    ``scheduler_text``, default :data:`SCHEDULER_HEADER`; its calls resolve in the deriving class), the file, then
    the header).  ``skip``: callees left out per function.  ``sys_scope``: the branch the kernel takes on a ring
    (:func:`pick_scope`)."""
    chain = pick_scope(_strip_comments(CHAIN_KERNEL.read_text() if chain_text is None else chain_text), sys_scope)
    header = _strip_comments(HEADER.read_text() if header_text is None else header_text)
    scheduler = _strip_comments(SCHEDULER_HEADER.read_text() if scheduler_text is None else scheduler_text)
    classes_text, rest = _class_bodies(chain, CHAIN_CLASSES)
    classes = {c: _bodies(body, _FUNC_CHAIN) for c, body in classes_text.items()}
    adapter = {name: _bodies(body, _FUNC_CHAIN) for name, body in _class_bodies(scheduler, (ADAPTER,))[0].items()}
    adapter_funcs = adapter.get(ADAPTER, {})
    derived = {c for c in classes if re.search(rf"\bclass\s+{c}\b[^;{{]*:\s*public\s+{ADAPTER}\s*<", chain)}
    file_funcs = _bodies(rest, _FUNC_CHAIN)
    head_funcs = _bodies(header)

    def own(cls: str) -> list:
        """The class's functions, then its adapter base's (whose calls resolve in the class: the owner stays cls)."""
        return [(cls, classes[cls])] + ([(cls, adapter_funcs)] if cls in derived else [])

    def find(name: str, qual: str | None, cls: str | None):
        if qual == "ctapipe":
            scopes = [(None, head_funcs)]
        elif qual in classes:
            scopes = own(qual)
        else:
            scopes = (own(cls) if cls else []) + [(None, file_funcs), (None, head_funcs)]
        for owner, funcs in scopes:
            if name in funcs:
                return owner, funcs[name]
        return None, None

    def expand(body: str, cls: str | None, depth: int, skipped: set) -> list[str]:
        out = []
        for m in _TOKEN.finditer(body):
            asm, qual, callee = m.groups()
            if asm is not None:
                op = _normalize_chain(asm)
                if op:
                    out.append(op)
                continue
            if callee in _CHAIN_SKIP or callee in skipped or depth > 8:
                continue
            if callee in _CHAIN_BUILTINS:
                out.append(_CHAIN_BUILTINS[callee])
                continue
            owner, sub = find(callee, qual, cls)
            if sub is not None and sub is not body:
                out += expand(sub, owner, depth + 1, skipped)
        return out

    result = {}
    for func in CHAIN_ROLES:
        cls, _, name = func.rpartition("::")
        owner, body = find(name, cls or None, cls or None)
        result[func] = [] if body is None else expand(body, owner, 0, (skip or {}).get(func, set()))
    return result


def op_name(op, barriers: bool = False) -> str:
    """The PTX instruction a model operation stands for, as the header check names it ('' for operations the check
    leaves out: weak accesses, async-proxy loads, and barriers unless ``barriers``)."""
    from .ops import Atom, Bar, BulkWait, Fence, Ld, Poll, ProxyFence, St, sem

    if isinstance(op, Bar):
        return ("bar.warp.sync" if op.warp else "bar.sync") if barriers else ""
    if isinstance(op, Atom):
        return f"{'atom' if op.returns else 'red'}.add." + sem(op.scope, op.release, op.acquire)
    if isinstance(op, (Ld, Poll)):
        if getattr(op, "proxy", "generic") == "async" or op.op_scope is None:
            return ""
        return "ld." + sem(op.scope, None, op.acquire)
    if isinstance(op, St):
        return "" if op.op_scope is None else "st." + sem(op.scope, op.release, None)
    if isinstance(op, Fence):
        return f"fence.{'sc' if op.sc else 'acq_rel'}.{op.scope}"
    if isinstance(op, ProxyFence):
        return "fence.proxy.async"
    if isinstance(op, BulkWait):
        return "cp.async.bulk.wait_group"
    return ""


def _merge_at_barrier(a: list[str], b: list[str]) -> list[str]:
    """Two threads' sequences of one kernel function that meet at a barrier, as the function's source reads: both
    parts before the barrier, the barrier, both parts after it (once where they agree)."""
    def split(s):
        i = next((k for k, x in enumerate(s) if x in _BARRIERS), None)
        return (s, None, []) if i is None else (s[:i], s[i], s[i + 1:])

    pa, ba, sa = split(a)
    pb, bb, sb = split(b)
    if ba is None and bb is None:  # no barrier between them: the function issues both threads' operations
        return a if a == b else a + b
    pre = pa if pa == pb else pa + pb
    post = sa if sa == sb else sa + sb
    return pre + [ba or bb] + post


def chain_program_ops(variants=None, setup=None) -> dict[str, list[str]]:
    """Per model role of the chain programs (``take``, ``fetch:load``, ``finish``, ``wait_inputs``): the operations the
    programs issue when the model runs them (``setup``: a small one by default; both designs), as one sequence per role: the longest a
    thread issued (the full path through the role's branches), the threads of one role merged at their barrier."""
    from .chain import CHAIN_CORRECT, CHAIN_STATIC, chain_role_ops

    seqs: dict[str, list[list[str]]] = {}
    for v in variants or (CHAIN_CORRECT, CHAIN_STATIC):
        for role, runs in chain_role_ops(v, setup).items():
            seqs.setdefault(role, []).extend(
                [n for n in (op_name(o, barriers=True) for o in ops) if n] for ops in runs)
    longest = {r: max(s, key=len) for r, s in seqs.items()}
    for r, s in seqs.items():
        for one in s:
            if not _is_subsequence(one, longest[r]):
                raise RuntimeError(f"role {r}: the model issues {one} and {longest[r]} on different paths")
    out = {}
    for role in sorted({r.split(":")[0] for r in longest}):
        parts = [longest[r] for r in longest if r.split(":")[0] == role]
        merged = parts[0]
        for other in parts[1:]:
            merged = _merge_at_barrier(merged, other)
        out[role] = merged
    return out


def chain_compare(model: dict[str, list[str]], source: dict[str, list[str]]) -> list[str]:
    """Differences between the chain programs' roles and the chain kernel's functions (empty: they agree).  Each
    function's sequence must equal the concatenation of its roles' (barriers left out where the roles have none)."""
    problems = []
    for func, (roles, barriers) in CHAIN_ROLES.items():
        missing = [r for r in roles if r not in model]
        if missing:
            problems.append(f"{func}: the model's programs never run {missing}")
            continue
        want = [op for r in roles for op in model[r]]
        got = source.get(func, [])
        if not barriers:
            want = [op for op in want if op not in _BARRIERS]
            got = [op for op in got if op not in _BARRIERS]
        if not got:
            problems.append(f"{func}: no such function with memory operations in the chain kernel")
        elif got != want:
            problems.append(f"{func}: the model issues {want}, the kernel's source issues {got}")
    return problems


# ------------------------------------------------------------------------------------------------ the LayerNorm fold
FOLD_ADD = "AtomicAddSys"
"""The chain kernel's row-statistics add (the functor CUTLASS's column reduction calls per row and warp)."""


def fold_add_ops(chain_text: str | None = None) -> list[str]:
    """The ordering operations of the chain kernel's row-statistics add (``struct AtomicAddSys``'s inline PTX), as the
    model writes them (``red.add.relaxed.sys``)."""
    chain = _strip_comments(CHAIN_KERNEL.read_text() if chain_text is None else chain_text)
    body = _class_bodies(chain, (FOLD_ADD,), keyword="struct")[0].get(FOLD_ADD, "")
    return [op for op in (_normalize_chain(a.group(1)) for a in _TOKEN.finditer(body) if a.group(1)) if op]


def fold_model_ops() -> list[str]:
    """The operation the row-statistics model's ring variant (:data:`ctasim.protocol.rowstats.ROWSTATS_CHAIN_RING`,
    checked by its searches) issues for each add: an ``Atom`` without a return at the variant's scope."""
    from .ops import Atom
    from .rowstats import ROWSTATS_CHAIN_RING as v

    if v.add != "red":
        raise ValueError(f"{v.name}: adds are {v.add}, not red.add")
    return [op_name(Atom(("rsum", 0, 0, 0), 1, returns=False, scope=v.scope))]


def fold_compare(source: list[str] | None = None) -> list[str]:
    """Differences between the model's row-statistics add and the kernel's (empty: they agree)."""
    got = fold_add_ops() if source is None else source
    want = fold_model_ops()
    return [] if got == want else [f"{FOLD_ADD}: the model issues {want}, the kernel's source issues {got}"]
