"""The package's import graph, read from every import statement of its source
(function-level and type-checking imports included): no module reaches itself
through its imports, and every module imports only its own layer and the layers
below it, as docs/architecture.md draws them (the pure parts at the bottom, then the
config, the store, the host side, the run and the users' entry points). (The
package's ``__init__`` names its exports as strings, imported on first use: the
public API lists them, it does not import them.)"""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).parents[1] / "src" / "nnxrl"


def modules() -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its own name)."""
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def import_graph() -> dict[str, set[str]]:
    """module -> the package's modules it imports."""
    mods = modules()

    def resolve(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    graph = {}
    for name, path in mods.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets = []
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets += [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*up, base] if base else up)
                for alias in node.names:  # `from a import b`: module a.b, or a itself
                    full = f"{base}.{alias.name}"
                    targets.append(full if resolve(full) == full else base)
        graph[name] = {t for t in map(resolve, targets) if t and t != name}
    return graph


def test_no_module_imports_itself_through_others():
    graph = import_graph()
    cycles = []
    for start in graph:
        seen, frontier = set(), list(graph[start])
        while frontier:
            module = frontier.pop()
            if module == start:
                cycles.append(start)
                break
            if module not in seen:
                seen.add(module)
                frontier += graph[module]
    assert cycles == []


def test_every_module_imports_only_its_layer_and_the_layers_below():
    """The layers are the picture on docs/architecture.md, lowest last: a module may
    import its own layer and those below it, never one above."""
    rows = layers()
    assert [name for name, _ in rows][:3] == ["entry", "run", "agent"]  # the picture read
    rank = {member: i for i, (_, members) in enumerate(reversed(rows)) for member in members}
    unplaced = sorted({top(m) for m in import_graph()} - set(rank))
    assert unplaced == []  # every folder and top-level module is on the picture
    upward = [
        f"{module} -> {target}"
        for module, imports in import_graph().items()
        for target in sorted(imports)
        if rank[top(target)] > rank[top(module)]
    ]
    assert upward == []


def layers() -> list[tuple[str, set[str]]]:
    """The picture's rows, highest first: (layer, its folders and top-level modules)."""
    picture = re.search(r"<!-- layers -->\n```\n(.*?)```", ARCHITECTURE.read_text(), re.S)
    rows = []
    for line in picture.group(1).splitlines():
        name, *words = line.split()
        named = [w for w in words if w.endswith(("/", ".py"))]
        members = {w.removesuffix("/").removesuffix(".py") for w in named}
        rows.append((name, members))
    return rows


def top(module: str) -> str:
    """The folder or top-level module a module belongs to (the package root: __init__)."""
    return module.split(".")[1] if "." in module else "__init__"


def test_no_module_compares_a_head_by_name():
    """Policies, evaluation, export and the networks ask the head (``networks/heads.py``)
    how it acts; no comparison with a shipped head's name is left anywhere."""
    assert compared(("actor_critic", "q")) == []


def test_no_algorithm_is_named_outside_its_own_file_and_the_registry():
    """The host side asks the registry what an algorithm needs (its head, discrete
    actions); no comparison with a built-in algorithm's name is left anywhere else."""
    from nnxrl.algos.registry import algorithm_settings

    own = ("algos/registry.py", "algos/ppo.py", "algos/pqn.py")
    assert compared(tuple(algorithm_settings()), skip=own) == []


def compared(names: tuple[str, ...], skip: tuple[str, ...] = ()) -> list[str]:
    """file:line of every comparison with one of ``names`` in the package, but in the
    files ``skip``."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if str(path.relative_to(PACKAGE)) in skip:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Compare):
                for side in [node.left, *node.comparators]:
                    if isinstance(side, ast.Constant) and side.value in names:
                        found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    return found


def test_analysis_reads_runs_without_the_training_layers():
    """``analysis/`` (plots, scores, interval estimates, compare, sweep reports) reads
    finished runs' records and configs: it imports the records' readers, the store's
    safe writes and lock, the config and the sweep space, never the algorithms'
    programs, networks, envs or the run."""
    allowed = ("logging.jsonl", "logging.records", "store.own_files", "store.lock", "config")
    allowed += ("sweeps.space", "schema")
    reaching = []
    for module, imports in import_graph().items():
        if module.startswith("nnxrl.analysis"):
            reaching += [
                f"{module} -> {t}"
                for t in sorted(imports)
                if not t.startswith(("nnxrl.analysis", *(f"nnxrl.{a}" for a in allowed)))
            ]
    assert reaching == []


ARCHITECTURE = PACKAGE.parents[1] / "docs" / "architecture.md"


def test_every_place_the_architecture_page_names_exists():
    """Each ``file.py: name`` of docs/architecture.md is a function or class (or a
    class's method) of that file, each example a file, each register_* exported."""
    import nnxrl

    text = ARCHITECTURE.read_text()
    places = re.findall(r"`([\w/]+\.py): ([\w.]+)`", text)
    assert len(places) >= 10
    missing = []
    for file, name in places:
        tree = ast.parse((PACKAGE / file).read_text())
        defined = {n.name: n for n in tree.body if hasattr(n, "name")}
        outer, _, inner = name.partition(".")
        node = defined.get(outer)
        if node is None or (inner and inner not in {getattr(n, "name", "") for n in node.body}):
            missing.append(f"{file}: {name}")
    missing += [
        e
        for e in re.findall(r"`(examples/\w+\.py)`", text)
        if not (ARCHITECTURE.parents[1] / e).is_file()
    ]
    missing += [r for r in re.findall(r"`nnxrl\.(register_\w+)`", text) if r not in nnxrl.__all__]
    assert missing == []


def test_the_cli_only_parses_and_calls_the_public_api():
    """``cli/`` reads arguments, calls what ``import nnxrl`` exports and prints: beside
    the config (reading one is parsing), the checks of the paths it is given and the
    base's hints (what to type next), it imports no module of the library, and every
    ``nnxrl.<name>`` it calls is exported."""
    import nnxrl

    allowed = ("nnxrl.cli", "nnxrl.config", "nnxrl.errors", "nnxrl.progress", "nnxrl.version")
    allowed += ("nnxrl.hints",)
    allowed += ("nnxrl.store.own_files",)
    reaching, unexported = [], []
    for module, imports in import_graph().items():
        if module.startswith("nnxrl.cli"):
            reaching += [
                f"{module} -> {t}"
                for t in sorted(imports)
                if t != "nnxrl" and not t.startswith(allowed)
            ]
    for path in sorted((PACKAGE / "cli").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and getattr(node.value, "id", None) == "nnxrl":
                if node.attr not in nnxrl.__all__:
                    unexported.append(f"{path.name}:{node.lineno} nnxrl.{node.attr}")
    assert reaching == [] and unexported == []
