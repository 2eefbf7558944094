"""Plugins: modules imported before a command runs, so that the envs, add-ons,
networks, heads and algorithms they register can be named in configs (installed
packages' ``nnxrl.plugins`` entry points, then each ``--plugin``)."""

from __future__ import annotations

import sys
import traceback
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from nnxrl.errors import ConfigError

PLUGIN_GROUP = "nnxrl.plugins"  # entry points of installed packages, imported at start


def load_plugins(names: Sequence[str]) -> None:
    """Import every installed ``nnxrl.plugins`` entry point, then each ``--plugin``
    (a module name, or the path of a .py file)."""
    import importlib
    import importlib.util
    from importlib.metadata import entry_points
    from pathlib import Path

    for entry in entry_points(group=PLUGIN_GROUP):
        with plugin_errors("plugin entry point", f"{entry.name} ({entry.value})"):
            entry.load()
    for name in names:
        with plugin_errors("--plugin", name):
            if name.endswith(".py"):
                path = Path(name)
                if not path.is_file():
                    raise FileNotFoundError(f"no such file {path}")
                spec = importlib.util.spec_from_file_location(path.stem, path)
                module = importlib.util.module_from_spec(spec)
                sys.modules[path.stem] = module
                spec.loader.exec_module(module)
            else:
                importlib.import_module(name)


@contextmanager
def plugin_errors(what: str, name: str) -> Iterator[None]:
    """Whatever importing plugin ``name`` raises (or a ``sys.exit`` in it) becomes a
    ConfigError that names the plugin, the error and the line it came from."""
    try:
        yield
    except (ImportError, FileNotFoundError) as e:
        raise ConfigError(
            f"{what}: cannot import {name!r} ({type(e).__name__}: {e}); give a module name "
            "on the Python path or the path of a .py file"
        ) from None
    except SystemExit as e:
        raise ConfigError(
            f"{what}: {name!r} called sys.exit({e.code!r}) while being imported; a plugin "
            "should only define and register envs, add-ons or networks"
        ) from None
    except Exception as e:
        if isinstance(e, SyntaxError):
            place = f"{e.filename}, line {e.lineno}"
        else:
            frame = traceback.extract_tb(e.__traceback__)[-1]
            place = f"{frame.filename}, line {frame.lineno}"
        raise ConfigError(
            f"{what}: {name!r} failed while being imported ({type(e).__name__}: {e}; at "
            f"{place}); fix the plugin or leave it out"
        ) from None
