"""Craftax's block textures, prepared once per machine.

Craftax draws pixel observations and rendered frames from textures it prepares from
its PNG assets (about a minute) and caches in a file inside its own package folder,
printing a few lines each time it loads them. That folder is lost whenever the
environment is rebuilt and may not be writable at all, so nnxrl keeps the cache in
its per-user folder (``$XDG_CACHE_HOME/nnxrl/craftax``, or ``~/.cache/nnxrl/craftax``)
and says one line only when the textures are actually prepared.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import sys
from pathlib import Path


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "nnxrl" / "craftax"


def prepare_textures(env_id: str) -> None:
    """Load (or prepare and cache) the textures of ``env_id``'s Craftax variant now,
    quietly; later loads in this process are free (Craftax keeps them in memory)."""
    if "Classic" in env_id:
        from craftax.craftax_classic import constants
    else:
        from craftax.craftax import constants
    ours = cache_dir() / Path(constants.TEXTURE_CACHE_FILE).name
    if constants.TEXTURE_CACHE_FILE != str(ours) and _usable(ours):
        if not ours.exists() and Path(constants.TEXTURE_CACHE_FILE).exists():
            shutil.copyfile(constants.TEXTURE_CACHE_FILE, ours)  # already prepared there
        constants.TEXTURE_CACHE_FILE = str(ours)
    if not Path(constants.TEXTURE_CACHE_FILE).exists():
        print(
            f"nnxrl: preparing the {env_id.split('-')[0]} textures (once per machine, about "
            f"a minute); cached in {constants.TEXTURE_CACHE_FILE}",
            file=sys.stderr,
            flush=True,
        )
    with contextlib.redirect_stdout(io.StringIO()):
        constants.load_all_textures()


def _usable(path: Path) -> bool:
    """Whether the cache file can be kept at ``path`` (its folder made and writable)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError:
        return False
    return os.access(path.parent, os.W_OK)
