"""The installed nnxrl's version, in one place (a leaf: the logging backends and the
run directory read it without importing the package's public names)."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _distribution_version


def version() -> str:
    """The version the package was installed at; ``0.0.0`` for a source tree that is
    not installed."""
    try:
        return _distribution_version("nnxrl")
    except PackageNotFoundError:
        return "0.0.0"
