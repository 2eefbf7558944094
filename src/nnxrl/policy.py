"""Saved policies: the trained network's parameters and what rebuilding it needs.

``RUN_DIR/policy/`` holds ``policy.yaml`` (the env and network config, the number
of value outputs and seeds) and ``params/`` (every seed's network parameters,
stacked, written by Orbax: no pickle). ``load_policy`` rebuilds the network without
any training state, so others can evaluate or render an agent from this folder
alone; a run's checkpoints give the same through ``policy_from_checkpoint``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import yaml
from flax import nnx

from nnxrl import config as config_lib


@dataclass
class Policy:
    """Everything needed to act: the config it was trained with and its parameters."""

    config: config_lib.Config  # env and network sections are the ones that matter
    graphdef: Any
    params: Any  # nnx.State with a leading seed axis [S, ...]
    num_seeds: int

    def network(self, seed: int):
        """The network of one seed, as an NNX module."""
        return nnx.merge(self.graphdef, jax.tree.map(lambda x: x[seed], self.params))


def _network_template(config: config_lib.Config):
    from nnxrl.algos.ppo import build_network
    from nnxrl.envs import make_env

    env = make_env(dataclasses.replace(config.env, num_envs=1, reset_ratio=1))
    return nnx.split(build_network(config, env, jax.random.key(0)))


def save_policy(directory: str | Path, config: config_lib.Config, params: Any) -> Path:
    """Write the policy (params with a leading seed axis) to ``directory``."""
    import orbax.checkpoint as ocp

    directory = Path(directory).resolve()
    data = config_lib.to_dict(config)
    spec = {k: data[k] for k in ("env", "network", "intrinsic", "num_seeds", "seed")}
    leaves = {
        f"leaf_{i:05d}": np.asarray(x)
        for i, x in enumerate(jax.tree.leaves(jax.device_get(params)))
    }
    with ocp.StandardCheckpointer() as checkpointer:
        checkpointer.save(directory / "params", leaves, force=True)
    (directory / "policy.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    return directory


def load_policy(directory: str | Path) -> Policy:
    """Rebuild a saved policy (see module docstring)."""
    import orbax.checkpoint as ocp

    directory = Path(directory).resolve()
    spec_file = directory / "policy.yaml"
    if not spec_file.is_file():
        raise FileNotFoundError(f"{directory} is not a saved policy: it has no policy.yaml")
    spec = yaml.safe_load(spec_file.read_text())
    config = config_lib.from_dict(
        {
            **spec,
            "total_env_steps": spec["env"]["num_envs"],
            "ppo": {"num_steps": 1, "num_minibatches": 1},
        }
    )
    graphdef, template = _network_template(config)
    with ocp.StandardCheckpointer() as checkpointer:
        items = checkpointer.restore(directory / "params")
    flat, treedef = jax.tree.flatten(template)
    leaves = [jnp.asarray(items[f"leaf_{i:05d}"]) for i in range(len(flat))]
    params = jax.tree.unflatten(treedef, leaves)
    return Policy(config, graphdef, params, int(spec["num_seeds"]))


def policy_from_checkpoint(run_dir: str | Path, update: int | None = None) -> Policy:
    """The policy in a run's checkpoint (the latest by default)."""
    from nnxrl import checkpoint

    meta = checkpoint.load_meta(run_dir, update)
    config = config_lib.from_dict(meta["config"])
    graphdef, template = _network_template(config)
    items, meta = checkpoint.read_items(run_dir, meta["update"], with_state=True)
    # the RunState's first leaves are its params (RunState field order)
    n = len(jax.tree.leaves(template))
    flat, treedef = jax.tree.flatten(template)
    leaves = [jnp.asarray(items[f"leaf_{i:05d}"]) for i in range(n)]
    for want, got, path in zip(flat, leaves, meta["paths"][:n], strict=True):
        if got.shape[1:] != want.shape or not path.startswith(".params"):
            raise checkpoint.CheckpointError(f"{meta['where']}: {path} does not match the network")
    return Policy(config, graphdef, jax.tree.unflatten(treedef, leaves), config.num_seeds)
