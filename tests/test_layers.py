"""Layering: ctasim never imports ctahw, and neither package has an import circle (deferred imports included)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def import_graph(pkg_dir: Path) -> dict[str, set[str]]:
    """{module: modules of the same top-level packages it imports anywhere (function bodies included)}."""
    root = pkg_dir.parent
    mods = {}
    for p in sorted(pkg_dir.rglob("*.py")):
        parts = p.relative_to(root).with_suffix("").parts
        mods[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = p
    graph = {}
    for mod, p in mods.items():
        is_pkg = p.name == "__init__.py"
        deps = set()
        for n in ast.walk(ast.parse(p.read_text(), str(p))):
            names = []
            if isinstance(n, ast.Import):
                names = [a.name for a in n.names]
            elif isinstance(n, ast.ImportFrom):
                if n.level:
                    base = mod.split(".")[: len(mod.split(".")) - n.level + (1 if is_pkg else 0)]
                    base = ".".join(base + ([n.module] if n.module else []))
                else:
                    base = n.module
                names = [base] + [f"{base}.{a.name}" for a in n.names]
            deps.update(x for x in names if x)
        graph[mod] = deps
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each sorted."""
    g = {m: {d for d in deps if d in graph and d != m} for m, deps in graph.items()}
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(g[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(g):
        if v not in index:
            visit(v)
    return out


def test_ctasim_never_imports_ctahw():
    bad = {m: sorted(d for d in deps if d == "ctahw" or d.startswith("ctahw."))
           for m, deps in import_graph(ROOT / "ctasim").items()}
    assert {m: d for m, d in bad.items() if d} == {}


@pytest.mark.parametrize("pkg", ["ctasim", "ctahw"])
def test_no_import_circle(pkg):
    assert cycles(import_graph(ROOT / pkg)) == []


def test_the_checks_find_a_circle_and_a_ctahw_import(tmp_path):
    pkg = tmp_path / "ctasim"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from ctasim.b import x\n")
    (pkg / "b.py").write_text("def f():\n    from .sub import c\n")  # deferred and relative
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "c.py").write_text("def g():\n    import ctasim.a\n    from ctahw.runner import r\n")
    g = import_graph(pkg)
    assert cycles(g) == [["ctasim.a", "ctasim.b", "ctasim.sub.c"]]
    assert "ctahw.runner" in g["ctasim.sub.c"]


def test_every_package_ships_in_the_wheel():
    """pyproject.toml lists its packages by name: a new subpackage left out of the list is missing from an installed
    copy (the Quickstart installs one) while every test run from the checkout still passes."""
    import tomllib

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {".".join(p.parent.relative_to(ROOT).parts) for pkg in ("ctasim", "ctahw")
             for p in (ROOT / pkg).rglob("__init__.py")}
    assert found <= listed, f"add to [tool.setuptools] packages: {sorted(found - listed)}"


def private_imports(pkg_dir: Path) -> dict[str, list[str]]:
    """{module: names starting with one underscore that it imports from another module of ctasim / ctahw}."""
    root = pkg_dir.parent
    out: dict[str, list[str]] = {}
    for p in sorted(pkg_dir.rglob("*.py")):
        mod = ".".join(p.relative_to(root).with_suffix("").parts)
        for n in ast.walk(ast.parse(p.read_text(), str(p))):
            if isinstance(n, ast.ImportFrom) and (n.level or (n.module or "").split(".")[0] in ("ctasim", "ctahw")):
                bad = [a.name for a in n.names if a.name.startswith("_") and not a.name.startswith("__")]
                if bad:
                    out.setdefault(mod, []).extend(bad)
    return out


@pytest.mark.parametrize("pkg", ["ctasim", "ctahw"])
def test_no_module_imports_another_modules_private_helpers(pkg):
    assert private_imports(ROOT / pkg) == {}


def test_the_private_import_check_finds_one(tmp_path):
    pkg = tmp_path / "ctahw"
    pkg.mkdir()
    (pkg / "a.py").write_text("def f():\n    from ctasim.spec import _resolve, Hardware\n    from .b import __all__\n")
    (pkg / "b.py").write_text("from .a import _g\nfrom numpy import _private\n")
    assert private_imports(pkg) == {"ctahw.a": ["_resolve"], "ctahw.b": ["_g"]}


def test_a_fused_activation_costs_its_factor_of_the_gelus_epilogue():
    """tile_ns charges gelu (and swiglu) activation_epilogue_ns_per_element a tile element, silu and relu their
    measured factors of it (h200-x1-calibrated: 1.1924 and 0)."""
    from ctasim import costs
    from ctasim.spec import Layer, load_hardware

    hw = load_hardware("h200-x1-calibrated")
    plain = costs.tile_ns(Layer(m=4096, n=8192, k=8192), 8192, hw, 2)
    per = 128 * 256 * hw.activation_epilogue_ns_per_element
    for op, factor in (("gelu", 1.0), ("silu", 1.1924), ("relu", 0.0)):
        t = costs.tile_ns(Layer(m=4096, n=8192, k=8192, epilogue=(op,)), 8192, hw, 2)
        assert t - plain == pytest.approx(factor * per)
