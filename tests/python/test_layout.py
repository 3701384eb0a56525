"""The Python package's layout: its modules import each other without cycles, and no module
imports another module's private names.

The graph is built from the source (every ``import``/``from ... import`` in every module,
including those inside functions, since an import deferred into a function still ties the two
modules together), not from what happens to be loaded.
"""

from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parents[2] / "python" / "ratelab"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PKG.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in PKG.rglob("*.py")}


def resolve(name: str, known: dict[str, Path]) -> str | None:
    """The module ``name`` refers to: itself, or the longest known prefix (``a.b.c`` where ``c``
    is a name in module ``a.b``)."""
    while name:
        if name in known:
            return name
        name = name.rpartition(".")[0]
    return None


def imports(mod: str, path: Path, known: dict[str, Path]) -> list[tuple[str, list[str]]]:
    """(imported module, names taken from it) for every ratelab import in ``mod``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("ratelab"):
                    out.append((a.name, []))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if not target.startswith("ratelab"):
                continue
            names = [a.name for a in node.names]
            # `from pkg import submodule` imports the submodule
            subs = [n for n in names if f"{target}.{n}" in known]
            out.extend((f"{target}.{n}", []) for n in subs)
            rest = [n for n in names if n not in subs]
            if rest or not subs:  # `from pkg import sub` alone does not depend on pkg's own names
                out.append((target, rest))
    return [(t, n) for t, n in out if t]


def graph() -> dict[str, set[str]]:
    known = modules()
    g: dict[str, set[str]] = {m: set() for m in known}
    for mod, path in known.items():
        for target, _ in imports(mod, path, known):
            r = resolve(target, known)
            if r is None or r == mod:
                continue
            # importing ratelab.x.y runs ratelab/__init__ and ratelab/x/__init__ first; a package
            # importing its own submodules is the usual re-export, so only the leaf counts
            g[mod].add(r)
    return g


def find_cycle(g: dict[str, set[str]]) -> list[str] | None:
    WHITE, GREY, BLACK = 0, 1, 2
    colour = {m: WHITE for m in g}
    stack: list[str] = []

    def visit(m: str) -> list[str] | None:
        colour[m] = GREY
        stack.append(m)
        for n in sorted(g[m]):
            if colour[n] == GREY:
                return stack[stack.index(n):] + [n]
            if colour[n] == WHITE:
                found = visit(n)
                if found:
                    return found
        stack.pop()
        colour[m] = BLACK
        return None

    for m in sorted(g):
        if colour[m] == WHITE:
            found = visit(m)
            if found:
                return found
    return None


def test_no_import_cycle():
    cycle = find_cycle(graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_the_cycle_finder_finds_a_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_the_graph_sees_imports_inside_functions():
    g = graph()
    # run_report imports the figures lazily, inside a function
    assert "ratelab.report.figures" in g["ratelab.report.run_report"]


#: Underscored names that are shared on purpose: the compiled extension and the version module.
PUBLIC_PRIVATE = {"ratelab._core", "ratelab._version"}


def test_no_private_names_imported_from_another_module():
    known = modules()
    bad = []
    for mod, path in known.items():
        for target, names in imports(mod, path, known):
            r = resolve(target, known)
            if r is None or r == mod:
                continue
            leaf = r.rpartition(".")[2]
            if leaf.startswith("_") and r not in PUBLIC_PRIVATE:
                bad.append(f"{mod} imports the private module {r}")
            for n in names:
                if n.startswith("_") and not n.startswith("__") and f"{r}.{n}" not in PUBLIC_PRIVATE:
                    bad.append(f"{mod} imports {r}.{n}")
    assert not bad, "\n".join(bad)


def test_top_level_holds_only_cross_cutting_modules():
    """Concepts live in subpackages; the top level keeps the public API and small leaves."""
    top = sorted(p.stem for p in PKG.glob("*.py"))
    assert top == ["__init__", "__main__", "_version", "errors", "gym_registration", "limits", "native", "scenario"], top


# --- one place for a controller's facts (issue 21) ---------------------------------------------

#: Modules that may name controllers: the paper reproductions and the RL experiments compare
#: the controllers their papers name; the examples are user code.
NAMING_ALLOWED = ("ratelab.reproduce", "ratelab.rl", "ratelab.examples")


def controller_name_collections(names: set[str]) -> list[str]:
    """Every set, list, tuple or dict literal in the front end whose string items are all
    controller names: a per-controller fact kept outside the registry."""
    found = []
    for mod, path in modules().items():
        if mod.startswith(NAMING_ALLOWED):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            items = node.keys if isinstance(node, ast.Dict) else getattr(node, "elts", None) \
                if isinstance(node, (ast.Set, ast.List, ast.Tuple)) else None
            if not items:
                continue
            strings = [i.value for i in items if isinstance(i, ast.Constant) and isinstance(i.value, str)]
            if strings and len(strings) == len(items) and set(strings) <= names:
                found.append(f"{mod}:{node.lineno}: {sorted(set(strings))}")
    return found


def test_no_list_of_controller_names_outside_the_registry(core):
    """A controller's facts (needs a file, sender or receiver side, in "all") are fields of its
    registry entry (crates/ratelab-core/src/controllers/mod.rs); a list of names in the front end
    is one a newcomer would have to find and edit."""
    from ratelab.reproduce import PAPERS

    # `ratelab reproduce PAPER` lists papers, some of which share their controller's name
    names = {c["name"] for c in core.controllers()} - set(PAPERS) - {"r3net"}
    assert not controller_name_collections(names), controller_name_collections(names)


def test_the_scan_finds_a_list_of_names(tmp_path, monkeypatch, core):
    names = {c["name"] for c in core.controllers()}
    probe = PKG / "cli" / "_probe_for_test.py"
    probe.write_text('EXCLUDED = {"fixed"}\n', encoding="utf-8")
    try:
        assert any("_probe_for_test" in f for f in controller_name_collections(names))
    finally:
        probe.unlink()


def test_registry_facts_reach_python(core):
    entries = {c["name"]: c for c in core.controllers()}
    assert entries["onnx"]["required_file"] == "model" and entries["onnx"]["side"] == "receiver"
    assert entries["r3net"]["side"] == "receiver" and entries["gcc"]["side"] == "sender"
    assert entries["fixed"]["in_all"] is False and entries["gcc"]["in_all"] is True
    from ratelab.native import all_controller_names, runnable_controller_names

    assert "onnx" not in runnable_controller_names() and "fixed" in runnable_controller_names()
    assert set(all_controller_names()) == {n for n, e in entries.items() if e["in_all"]}
