"""Environments: ``make_env`` builds a batched, self-resetting env with episode
statistics for any gymnax id, Craftax id or (with the brax extra) ``brax:<name>``;
``register_env`` adds a user's. Each name is imported when first read, so that the
env section of a config (``nnxrl.envs.settings``) is read without JAX."""

from __future__ import annotations

from typing import TYPE_CHECKING

from nnxrl.lazy import exports

_EXPORTS = {
    "EnvSpec": "nnxrl.envs.base",
    "EnvStep": "nnxrl.envs.base",
    "VecEnv": "nnxrl.envs.base",
    "EnvConfig": "nnxrl.envs.settings",
    "from_single": "nnxrl.envs.single",
    "CRAFTAX_IDS": "nnxrl.envs.craftax_env",
    "register_env": "nnxrl.envs.registry",
    "make_env": "nnxrl.envs.registry",
    "env_spec": "nnxrl.envs.registry",
    "check_env_config": "nnxrl.envs.registry",
    "is_continuous": "nnxrl.envs.registry",
    "known_env_ids": "nnxrl.envs.registry",
}
__getattr__ = exports(__name__, _EXPORTS)
__all__ = [
    "CRAFTAX_IDS",
    "EnvConfig",
    "EnvSpec",
    "EnvStep",
    "VecEnv",
    "check_env_config",
    "env_spec",
    "from_single",
    "is_continuous",
    "known_env_ids",
    "make_env",
    "register_env",
]

if TYPE_CHECKING:  # the same names, for type checkers and editors
    from nnxrl.envs.base import EnvSpec, EnvStep, VecEnv
    from nnxrl.envs.craftax_env import CRAFTAX_IDS
    from nnxrl.envs.registry import (
        check_env_config,
        env_spec,
        is_continuous,
        known_env_ids,
        make_env,
        register_env,
    )
    from nnxrl.envs.settings import EnvConfig
    from nnxrl.envs.single import from_single
