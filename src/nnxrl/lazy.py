"""Imports deferred to first use, so that reading and checking a config (and the CLI's
start) import neither JAX nor an env suite: a package's public names resolved when
first read (``exports``), and a registered function imported when first called
(``imported``)."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def exports(package: str, names: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package``: ``names`` maps each public name to
    ``"module"`` or ``"module:attribute"`` (the attribute defaults to the name)."""

    def getattr_(name: str) -> Any:
        if name not in names:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, _, attribute = names[name].partition(":")
        return getattr(importlib.import_module(module), attribute or name)

    return getattr_


def imported(module: str, function: str) -> Callable[..., Any]:
    """``module.function``, imported when first called."""

    def call(*args: Any, **kwargs: Any) -> Any:
        return getattr(importlib.import_module(module), function)(*args, **kwargs)

    call.__name__ = call.__qualname__ = function
    return call
