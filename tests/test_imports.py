"""The package's import graph, read from the source with ``ast``, has no cycle: not at
top level and not inside functions.

An import of ``nnxrl.a.b`` also runs ``nnxrl/a/__init__.py``, so it counts as an edge
to the package ``nnxrl.a`` too. The root package (the public API, which imports
everything) is left out of that rule: it is the parent of every module and is
always being imported first. Imports under ``if TYPE_CHECKING:`` never run
and are left out.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
SRC = ROOT / "src"


def module_name(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def is_type_checking_block(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def imported_names(tree: ast.AST) -> list[str]:
    """Every module name imported anywhere in ``tree`` (``from m import x`` gives m
    and m.x, the latter kept only if it is a module)."""
    names: list[str] = []

    def visit(node: ast.AST) -> None:
        if is_type_checking_block(node):
            return
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module != "nnxrl":  # `from nnxrl import config`: the module config
                names.append(node.module)
            names.extend(f"{node.module}.{alias.name}" for alias in node.names)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return names


def import_graph() -> dict[str, set[str]]:
    modules = {module_name(p): p for p in (SRC / "nnxrl").rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        edges = set()
        for target in imported_names(ast.parse(path.read_text())):
            if target not in modules:
                continue
            edges.add(target)
            parts = target.split(".")
            edges.update(".".join(parts[:i]) for i in range(2, len(parts)))  # parents
        edges.discard(name)
        graph[name] = {e for e in edges if not name.startswith(e + ".")}  # own packages
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            connect(v)
    return found


def test_the_graph_is_read_correctly():
    graph = import_graph()
    assert "nnxrl.schema" in graph["nnxrl.config.sections"]
    assert "nnxrl.envs" in graph["nnxrl.config.sections"]  # a package import counts
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_the_package_has_no_import_cycle():
    assert cycles(import_graph()) == []


def test_the_schema_the_errors_and_the_hints_are_leaves():
    graph = import_graph()
    assert {m for m in graph["nnxrl.schema"] if m.startswith("nnxrl")} == {
        "nnxrl.errors",
        "nnxrl.hints",
    }
    assert not {m for m in graph["nnxrl.errors"] if m.startswith("nnxrl")}
    assert not {m for m in graph["nnxrl.hints"] if m.startswith("nnxrl")}


def test_every_error_class_is_in_the_errors_module():
    """One error module: no other module defines an exception class."""
    defined = {}
    for path in (SRC / "nnxrl").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            bases = [ast.unparse(b) for b in getattr(node, "bases", [])]
            if isinstance(node, ast.ClassDef) and any(
                b.endswith(("Error", "Exception", "Interrupt")) for b in bases
            ):
                defined[node.name] = path.name
    assert set(defined.values()) == {"errors.py"}, defined


# The core: what an algorithm is made of. It may import itself, the env and add-on
# interfaces, the optimiser, the shared types, the schema's `setting`, the error
# classes and the deferred imports, never the
# host side (config, mesh, devices, logging, sweeps, the run): an algorithm is built
# from its own settings and the facts passed in.
CORE = ("nnxrl.algos", "nnxrl.networks", "nnxrl.ops")
CORE_MAY_IMPORT = (
    *CORE,
    "nnxrl.envs",
    "nnxrl.intrinsic",
    "nnxrl.optim",
    "nnxrl.types",
    "nnxrl.schema",
    "nnxrl.errors",
    "nnxrl.lazy",
)


def upward_imports(source: str) -> list[str]:
    """The nnxrl modules ``source`` imports from outside the core, type-only
    imports included (they couple a file to the host just the same)."""
    names = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "nnxrl":
                names += [f"nnxrl.{alias.name}" for alias in node.names]
            else:
                names.append(node.module)

    def inside(name: str) -> bool:
        return any(name == m or name.startswith(m + ".") for m in CORE_MAY_IMPORT)

    return sorted(n for n in names if n.split(".")[0] == "nnxrl" and not inside(n))


def test_the_core_imports_nothing_from_the_host_side():
    found = {}
    for package in CORE:
        for path in (SRC / package.replace(".", "/")).rglob("*.py"):
            if upward := upward_imports(path.read_text()):
                found[str(path.relative_to(SRC))] = upward
    assert found == {}


def test_an_upward_import_is_found():
    source = (
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from nnxrl.config import Config\n"
    )
    assert upward_imports(source) == ["nnxrl.config"]
    assert upward_imports("from nnxrl import config, optim\n") == ["nnxrl.config"]
    assert upward_imports("from nnxrl.parallel import mesh\n") == ["nnxrl.parallel"]
    assert upward_imports("from nnxrl.ops.gae import episodic_gae\nimport jax\n") == []


def test_reading_a_config_imports_no_jax_env_suite_or_addon():
    """Config as data: ``import nnxrl`` and loading, overriding and validating configs
    (Craftax with an add-on, a sweep, PQN, a recurrent network) start no JAX and
    import no env suite, add-on or algorithm implementation (of ``nnxrl.envs`` only
    the env section's dataclass)."""
    code = (
        "import sys, nnxrl\n"
        "nnxrl.load_config('rnd-craftax-classic-symbolic')\n"
        "nnxrl.load_config('sweep-ppo-cartpole', ['num_seeds=2'])\n"
        "nnxrl.load_config('pqn-rnn-craftax-classic-symbolic')\n"
        "heavy = ('jax', 'jaxlib', 'flax', 'optax', 'orbax', 'gymnax', 'craftax', 'brax')\n"
        "own = ('nnxrl.envs', 'nnxrl.intrinsic', 'nnxrl.algos.ppo', 'nnxrl.algos.pqn')\n"
        "data = ('nnxrl.envs', 'nnxrl.envs.settings')  # the env section's dataclass\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in heavy\n"
        "             or any(m == o or m.startswith(o + '.') for o in own) and m not in data))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert out.stdout.strip() == "[]"


def test_importing_the_registries_starts_no_jax_backend():
    """A module-level array would start JAX at import, with the default device count,
    before a run can set mesh.cpu_devices or join a process group."""
    code = (
        "import nnxrl.envs.registry, nnxrl.envs.memory_tasks, nnxrl.networks.factory\n"
        "import nnxrl.run.programs, nnxrl.run.training, nnxrl.agent.evaluate\n"
        "from nnxrl.parallel.devices import jax_started\n"
        "print(jax_started())\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert out.stdout.strip() == "False", out.stderr[-2000:]


def test_every_public_name_resolves():
    import nnxrl

    assert set(nnxrl.__all__) == set(nnxrl._EXPORTS) | {"__version__"}
    for name in nnxrl.__all__:
        assert getattr(nnxrl, name) is not None, name
    with pytest.raises(AttributeError, match="no attribute 'trian'"):
        nnxrl.trian  # noqa: B018
