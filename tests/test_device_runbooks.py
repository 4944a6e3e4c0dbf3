"""The shell runbooks of ``bench/hw`` against the commands they call (no GPU): a device call is scarce, and a runbook
that passes an option its script no longer has, or names a test file that moved, wastes one.

Every ``python`` / ``python3`` invocation in ``bench/hw/*.sh`` (continuation lines joined) is read: a ``bench/`` script
(by path, or ``"$(dirname "$0")/NAME.py"``), ``-m ctahw.cli SUB`` / ``-m ctasim.cli SUB`` (the subcommand of the
package's ``parser()``), ``-m ctahw.MODULE`` (a module's own ``argparse``), or ``-m pytest PATHS``. Each long option
it passes must be one its parser defines (a script's or module's ``add_argument`` strings, read from its source; a
subcommand's ``option_strings``), and each test path must exist. Options that come from a variable (``$RUN_ARGS``,
``"$@"``) are not seen: only what the file spells out is checked.
"""

from __future__ import annotations

import argparse
import ast
import functools
import re
from pathlib import Path

import pytest

from tests.helpers import BENCH

ROOT = BENCH.parent
HW = BENCH / "hw"

CALL = re.compile(r"""\bpython3?\s+(?:-m\s+(?P<module>[\w.]+)(?:\s+(?P<sub>[a-z][\w-]*))?|(?P<script>"?\$\(dirname "\$0"\)/[\w.]+\.py"?|bench/[\w/]+\.py))""")
OPTION = re.compile(r"""(?<![\w$/.=-])--[a-z][a-z0-9-]*""")
TEST_PATH = re.compile(r"""(?<![\w$/])(tests/[\w/]+\.py)""")
END = re.compile(r"""\s(?:\d?>>?|\|\|?|&&|;|#)\s?|\)\s*$|\$\(""")


def source_options(path: Path) -> set[str]:
    """The long options a source's ``add_argument`` calls define (string constants starting with ``--``), and those
    of ``bench/plan49_judge.judge_main``, ``bench/registered_plan.main``, ``bench/plan72_h100_drift.orders_main`` or
    ``bench/plan101_block_ops.breakdown_main`` where the source's command is built by one."""
    return set(_source_options(path, path.read_text()))


@functools.cache
def _source_options(path: Path, text: str) -> frozenset[str]:
    """:func:`source_options` of ``path`` holding ``text``, parsed once a run (the pages name the same scripts
    hundreds of times, and each script built by ``registered_plan.main`` read its source again)."""
    out: set[str] = set()
    tree = ast.parse(text)
    for n in ast.walk(tree):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "add_argument":
            out.update(a.value for a in n.args if isinstance(a, ast.Constant) and isinstance(a.value, str)
                       and a.value.startswith("--"))
        elif (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "judge_main"
              and path != BENCH / "plan49_judge.py"):
            out |= source_options(BENCH / "plan49_judge.py")
        elif (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "main"
              and isinstance(n.func.value, ast.Name) and n.func.value.id == "registered_plan"):
            out |= source_options(BENCH / "registered_plan.py")
        elif (isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "orders_main"
              and path != BENCH / "plan72_h100_drift.py"):
            out |= source_options(BENCH / "plan72_h100_drift.py")
        elif (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "breakdown_main"
              and path != BENCH / "plan101_block_ops.py"):
            out |= source_options(BENCH / "plan101_block_ops.py")
    return frozenset(out)


def subcommand_options(module: str, sub: str) -> set[str] | None:
    """The options of ``sub`` in ``module``'s ``parser()`` (None: no such subcommand)."""
    import importlib  # noqa: PLC0415

    p = importlib.import_module(module).parser()
    for action in p._actions:  # noqa: SLF001 - argparse keeps its subparsers there
        if isinstance(action, argparse._SubParsersAction) and sub in action.choices:  # noqa: SLF001
            return {o for a in action.choices[sub]._actions for o in a.option_strings}  # noqa: SLF001
    return None


def markdown_commands(text: str) -> str:
    """A Markdown page's commands, one per line at its own line number: each line of a fenced or indented code block,
    and each inline code span (`...`) of the other lines (the prose between them blanked)."""
    out, fenced = [], False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            out.append("")
        elif fenced or line.startswith("    "):
            out.append(line)
        else:
            out.append(" ; ".join(re.findall(r"`([^`]+)`", line)))
    return "\n".join(out)


def calls(text: str) -> list[tuple[int, str, str, str]]:
    """(line, kind, target, the arguments it spells out) of every python invocation in a shell script's text."""
    joined, starts, lines = [], [], text.splitlines()
    i = 0
    while i < len(lines):
        start, parts = i + 1, [lines[i]]
        while parts[-1].rstrip().endswith("\\") and i + 1 < len(lines):
            parts[-1] = parts[-1].rstrip()[:-1]
            i += 1
            parts.append(lines[i])
        joined.append(" ".join(parts))
        starts.append(start)
        i += 1
    out = []
    for start, line in zip(starts, joined):
        if line.lstrip().startswith("#"):
            continue
        for m in CALL.finditer(line):
            rest = line[m.end():]
            cut = END.search(rest)
            args = rest[:cut.start()] if cut else rest
            if m.group("script"):
                name = m.group("script").strip('"').split("/")[-1]
                target = str(HW / name) if "dirname" in m.group("script") else str(ROOT / m.group("script"))
                out.append((start, "script", target, args))
            elif m.group("module") == "pytest":
                out.append((start, "pytest", "", (m.group("sub") or "") + args))
            elif m.group("module") in ("ctahw.cli", "ctasim.cli", "ctahw", "ctasim"):
                module = m.group("module").split(".")[0] + ".cli"  # python -m ctasim runs ctasim.cli
                out.append((start, "sub", f"{module} {m.group('sub') or ''}", args))
            elif m.group("module").split(".")[0] in ("ctahw", "ctasim"):
                out.append((start, "module", m.group("module"), (m.group("sub") or "") + " " + args))
    return out


def problems_of(path: Path, text: str | None = None) -> list[str]:
    """What ``path`` (a shell script; ``text`` in its place if given) calls that does not exist."""
    out = []
    for line, kind, target, args in calls(path.read_text() if text is None else text):
        where = f"{path.name}:{line}"
        if kind == "pytest":
            for t in TEST_PATH.findall(args):
                if not (ROOT / t).is_file():
                    out.append(f"{where}: no test file {t}")
            continue
        if kind == "script":
            p = Path(target)
            if not p.is_file():
                out.append(f"{where}: no script {p.relative_to(ROOT)}")
                continue
            known = source_options(p)
        elif kind == "sub":
            module, _, sub = target.partition(" ")
            known = subcommand_options(module, sub) if sub.strip() else set()
            if known is None:
                out.append(f"{where}: {module} has no subcommand {sub}")
                continue
        else:
            import importlib.util  # noqa: PLC0415

            spec = importlib.util.find_spec(target)
            if spec is None or not spec.origin:
                out.append(f"{where}: no module {target}")
                continue
            known = source_options(Path(spec.origin))
        for opt in OPTION.findall(args):
            if opt not in known:
                out.append(f"{where}: {target.split('/')[-1]} has no option {opt}")
    return out


def test_every_runbook_calls_what_exists():
    scripts = sorted(HW.glob("*.sh"))
    found = [c for p in scripts for c in calls(p.read_text())]
    assert len(found) >= 40  # every python invocation of the runbooks is read
    assert {k for _, k, _, _ in found} == {"script", "pytest", "sub", "module"}
    problems = [x for p in scripts for x in problems_of(p)]
    assert problems == []


def documents() -> list[Path]:
    return sorted([*ROOT.glob("docs/*.md"), ROOT / "README.md", *ROOT.glob("bench/predictions/**/README.md"),
                   *ROOT.glob("bench/results/**/README.md")])


def test_every_documented_command_calls_what_exists():
    """The same over the commands the docs and the registrations' and results' READMEs give (code blocks and inline
    code): a command a page tells a user to run must run as written."""
    pages = documents()
    found = sum(len(calls(markdown_commands(p.read_text()))) for p in pages)
    assert found >= 200
    problems = [x for p in pages for x in problems_of(p, markdown_commands(p.read_text()))]
    assert problems == []


def test_markdown_commands_keeps_code_at_its_line():
    page = "prose `python bench/x.py --a` more `y`\n```bash\npython -m ctasim run z --out o\n```\n    indented\n"
    assert markdown_commands(page).splitlines() == ["python bench/x.py --a ; y", "", "python -m ctasim run z --out o",
                                                    "", "    indented"]


def test_the_runbook_check_reports_a_gone_option_script_subcommand_and_test():
    """Deliberately broken runbook lines; the good ones beside them pass."""
    text = "\n".join([
        'timeout 200 python3 bench/hw/gemm_shape_probe.py "$R/g.csv" --reps 3 --shapz "$S" 2>&1 | tee x',
        'python3 "$(dirname "$0")/gemm_shape_probe.py" "$R/g.csv" --reps 3 --shapes "$S" \\',
        '    --rest-ms 80 > "$R/log" 2>&1',
        "python3 bench/hw/nowhere.py x",
        'timeout 280 python3 -m ctahw.cli run "$e" --registration "bench/predictions/$e" --tune-rounds 2 --out "$R" \\',
        '  --no-such-flag > "$R/$e.log" 2>&1',
        "python3 -m ctahw.cli runn x",
        "python3 -m pytest tests/hw/test_gone.py -q -rs",
        "python3 -m pytest tests/hw/test_hw_gpu.py -q",
        "# python3 bench/hw/nowhere.py in a comment",
    ])
    got = problems_of(HW / "made-up.sh", text)
    assert got == [
        "made-up.sh:1: gemm_shape_probe.py has no option --shapz",
        "made-up.sh:4: no script bench/hw/nowhere.py",
        "made-up.sh:5: ctahw.cli run has no option --no-such-flag",
        "made-up.sh:7: ctahw.cli has no subcommand runn",
        "made-up.sh:8: no test file tests/hw/test_gone.py",
    ]


@pytest.mark.parametrize("line, want", [
    ('x=$(python3 -m ctahw.pipelined "$WANT" 2>>"$LOG" | tail -1)', ("module", "ctahw.pipelined")),
    ("python3 bench/order_drift.py \"$R/probes\" 2>&1 | tail", ("script", str(ROOT / "bench/order_drift.py"))),
])
def test_calls_reads_the_shapes_the_runbooks_use(line, want):
    (_, kind, target, _), = calls(line)
    assert (kind, target) == want
