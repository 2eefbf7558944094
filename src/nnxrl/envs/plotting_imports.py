"""Env packages that import plotting libraries at module level, for renderers nnxrl
does not call at start-up: gymnax's ``misc`` and ``visualize`` modules import
``matplotlib.pyplot`` and seaborn, and seaborn imports pandas and SciPy (about half of
``import gymnax``, before the first env is made, on every run).

``deferred_plotting()`` puts a stand-in for each of those modules in ``sys.modules``:
the import statements in the env packages succeed at once, and the real module is
imported the first time one of its names is read (a render, ``nnxrl plot``), then
replaces the stand-in. The standard library's ``importlib.util.LazyLoader`` does not
do here: on Python 3.11 an ``import seaborn`` of a lazy module already in
``sys.modules`` reads its ``__spec__`` and so loads it. Measured in
``docs/performance.md``.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types

DEFERRED = ("matplotlib.pyplot", "seaborn")
# read by the import system on a module already in sys.modules: never a reason to load
IMPORT_SYSTEM = frozenset({"__path__", "__file__", "__cached__", "__all__"})


def deferred_plotting() -> None:
    """Stand-ins for ``DEFERRED`` unless imported already (idempotent; a module that is
    not installed is left to fail where it is imported, as before)."""
    for name in DEFERRED:
        if name in sys.modules or importlib.util.find_spec(name) is None:
            continue
        stand_in = DeferredModule(name)
        sys.modules[name] = stand_in
        parent, _, child = name.rpartition(".")
        if parent:  # `import matplotlib.pyplot as plt` reads the parent's attribute
            setattr(sys.modules[parent], child, stand_in)


class DeferredModule(types.ModuleType):
    """A module's stand-in that imports the module at its first attribute read."""

    def __getattr__(self, attribute: str):
        if attribute in IMPORT_SYSTEM:
            raise AttributeError(attribute)
        return getattr(self._imported(), attribute)

    def _imported(self) -> types.ModuleType:
        name = self.__name__
        if sys.modules.get(name) is self:
            del sys.modules[name]
        return importlib.import_module(name)  # puts itself in sys.modules and the parent
