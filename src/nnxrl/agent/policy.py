"""Saved policies: the trained network's parameters and what rebuilding it needs.

``RUN_DIR/policy/`` holds ``policy.yaml`` (the env and network config, the
algorithm, the number of value outputs and seeds, and ``source``: the run, update,
git commit and nnxrl version it comes from) and ``params/`` (every seed's
network parameters, stacked, written by Orbax under their paths in the network: no
pickle).
``load_policy`` rebuilds the network from the network config and the env's spec,
without any training config or state, so others can evaluate, render or act with an
agent from this folder alone; a run's checkpoints give the same through
``policy_from_checkpoint``.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import yaml
from flax import nnx

from nnxrl import config as config_lib
from nnxrl import schema
from nnxrl.algos.normalization import observe
from nnxrl.algos.registry import algorithm
from nnxrl.config import EnvConfig, NetworkConfig, population
from nnxrl.envs import check_env_config, env_spec
from nnxrl.hints import command, first_few
from nnxrl.networks import build_network, heads
from nnxrl.ops.running_moments import Moments
from nnxrl.store import own_files

MOMENTS = ("count", "mean", "var")  # the observation moments' fields, saved beside params
MOMENTS_PREFIX = "obs_normalizer."
SPEC_KEYS = ("env", "network", "num_seeds")  # what policy.yaml must hold


@dataclass
class Policy:
    """Everything needed to act: the env and network it was trained with, the
    algorithm (an actor-critic's policy, or epsilon-greedy on a Q-network) and every
    seed's parameters."""

    env: EnvConfig
    network: NetworkConfig
    num_values: int  # critic outputs or Q rows (reward streams)
    graphdef: Any
    params: Any  # nnx.State with a leading seed axis [S, ...]
    num_seeds: int
    algo: str = "ppo"  # the algorithm that trained it (a record: acting follows ``head``)
    head: str = "actor_critic"  # how it acts (networks/heads.py): 'q' is epsilon-greedy
    stream_weights: tuple[float, ...] = (1.0,)  # a Q head's weights of the streams' Qs
    epsilon: float = 0.0  # a head that takes it: random-action probability (0: greedy)
    setting: int | None = None  # the sweep setting it comes from (None: not a sweep)
    # ppo.normalize_obs: each seed's observation moments (leading seed axis), else None
    obs_moments: Any = None
    obs_clip: float = 10.0
    # where it comes from: run directory, update, git commit and nnxrl version
    source: dict = field(default_factory=dict)

    def seed_moments(self, seed: int | jax.Array) -> Any:
        """Seed ``seed``'s observation moments (() when observations are not normalised)."""
        if self.obs_moments is None:
            return ()
        return jax.tree.map(lambda x: x[seed], self.obs_moments)

    def act(
        self,
        obs: jax.Array,
        key: jax.Array,
        *,
        seed: int = 0,
        greedy: bool = False,
        hidden: jax.Array | None = None,
        start: jax.Array | None = None,
        action_mask: jax.Array | None = None,
    ) -> tuple[jax.Array, jax.Array]:
        """Actions [B] for observations [B, *obs_shape] with seed ``seed``'s network,
        sampled (or the most likely with ``greedy``; a Q-network samples
        epsilon-greedily with ``epsilon``), among the legal actions ``action_mask``
        [B, A] bool where the env has one. Returns (actions, hidden): a recurrent
        policy carries ``hidden`` from call to call (None: a fresh one) and ``start``
        [B] marks observations that begin an episode."""
        model = nnx.merge(self.graphdef, jax.tree.map(lambda x: x[seed], self.params))
        obs = jnp.asarray(obs, jnp.float32)
        batch = obs.shape[0]
        if hidden is None:
            hidden = model.initial_hidden(batch)
        if start is None:
            start = jnp.zeros(batch, bool)
        moments = self.seed_moments(seed)
        hidden, dist = self.action_distribution(model, hidden, obs, start, moments, action_mask)
        return (dist.mode() if greedy else dist.sample(key)), hidden

    def action_distribution(
        self,
        model: Any,
        hidden: jax.Array,
        obs: jax.Array,
        start: jax.Array,
        moments: Any = (),
        legal: jax.Array | None = None,
    ) -> tuple[jax.Array, Any]:
        """One step of ``model`` (this policy's network, one seed's parameters, and that
        seed's observation ``moments``): (next hidden, the distribution actions are
        drawn from, over the ``legal`` actions [B, A] where the env has a mask)."""
        obs = observe(moments, obs, self.obs_clip)
        return heads.head(self.head).acting(model, hidden, obs, start, legal, self)


def policy_at(
    path: str | Path,
    step: int | None = None,
    setting: int | None = None,
    epsilon: float | None = None,
) -> Policy:
    """The policy at ``path``: a saved policy's folder (``nnxrl export``) or a run's
    directory (its latest checkpoint, or update ``step``; a sweep's ``setting``), acting
    with ``epsilon`` where its head takes one (a ConfigError where it does not)."""
    from nnxrl.analysis.sweep_report import setting_run_dir

    if (Path(path) / "policy.yaml").is_file():
        if step is not None:
            raise config_lib.ConfigError("--step: a saved policy has no checkpoints to choose from")
        policy = load_policy(path)
        if setting is not None and setting != policy.setting:
            raise config_lib.ConfigError(
                f"--setting: {path} holds the policy of setting {policy.setting}, not "
                f"{setting}; export that one with "
                f"`{command(f'export RUN_DIR --setting {setting}')}`"
            )
    else:
        policy = policy_from_checkpoint(setting_run_dir(path, setting), step, setting)
    if epsilon is None:
        return policy
    if not heads.head(policy.head).takes_epsilon:
        raise config_lib.ConfigError(
            f"--epsilon: {path} holds a {policy.algo} policy, which acts from its "
            f"{policy.head} head without epsilon; --epsilon is for epsilon-greedy heads "
            "(such as PQN's q). Leave it out, or pass --greedy"
        )
    return dataclasses.replace(policy, epsilon=epsilon)


def policy_of(config: config_lib.Config, params: Any, obs_moments: Any = None) -> Policy:
    """The policy of a run of ``config`` whose network parameters are ``params`` (and,
    with ``ppo.normalize_obs``, whose observation moments are ``obs_moments``)."""
    num_values = config.intrinsic.num_reward_streams
    head = algorithm(config.algo).head
    graphdef, _ = _network_template(config.env, config.network, num_values, head)
    return Policy(
        config.env,
        config.network,
        num_values,
        graphdef,
        params,
        config.num_seeds,
        algo=config.algo,
        head=head,
        stream_weights=stream_weights_of(config),
        obs_moments=obs_moments if isinstance(obs_moments, Moments) else None,
        obs_clip=getattr(config.algo_config, "obs_clip", 10.0),
    )


def setting_policy(
    config: config_lib.Config, params: Any, setting: int | None, obs_moments: Any = None
) -> Policy:
    """The policy of a run whose members' parameters (and observation moments) are
    ``params`` (``obs_moments``): for a sweep, that of setting ``setting`` (its seeds'
    rows, its own config)."""
    check_setting(config, setting)
    if not config.is_sweep:
        return policy_of(config, params, obs_moments)
    position = [index for index, _ in population.settings(config)].index(setting)
    n = config.num_seeds
    rows = jax.tree.map(lambda x: x[position * n : (position + 1) * n], (params, obs_moments))
    policy = policy_of(population.setting_config(config, setting), *rows)
    policy.setting = setting
    return policy


def check_setting(
    config: config_lib.Config, setting: int | None, run_dir: str | Path = "RUN_DIR"
) -> None:
    """A ConfigError naming the choices when a sweep's setting is missing or not among
    the run's (``run_dir``, for the command that ranks them), or one is given for a run
    that is not a sweep."""
    if not config.is_sweep:
        if setting is not None:
            raise config_lib.ConfigError(
                f"--setting: {setting} given, but the run is not a sweep; leave it out"
            )
        return
    indices = [index for index, _ in population.settings(config)]
    if setting not in indices:
        given = "none was given" if setting is None else f"{setting} is not one of them"
        raise config_lib.ConfigError(
            f"--setting: the run is a sweep of settings {describe_indices(indices)} and one "
            f"must be chosen ({given}); `{command(f'sweep-report {run_dir}')}` ranks them"
        )


def describe_indices(indices: list[int]) -> str:
    if indices == list(range(indices[0], indices[-1] + 1)):
        return f"{indices[0]}..{indices[-1]}"
    return ", ".join(map(str, indices))


def stream_weights_of(config: config_lib.Config) -> tuple[float, ...]:
    """PQN's weights of the reward streams' Qs in the values it acts on."""
    i = config.intrinsic
    return (i.extrinsic_adv_coef, i.intrinsic_adv_coef)[: i.num_reward_streams]


def _network_template(env: EnvConfig, network: NetworkConfig, num_values: int, head: str):
    """(graphdef, params as shapes): the network's structure, nothing computed."""
    spec = env_spec(env)
    model = nnx.eval_shape(
        lambda: build_network(network, spec, num_values, jax.random.key(0), head)
    )
    return nnx.split(model)


def param_paths(params: Any) -> list[tuple[str, Any]]:
    """(path, leaf) for every parameter, the path as its keys joined by dots."""
    flat, _ = jax.tree_util.tree_flatten_with_path(params)
    return [(".".join(_key_name(k) for k in path), leaf) for path, leaf in flat]


def _key_name(key: Any) -> str:
    for attr in ("key", "name", "idx"):
        if hasattr(key, attr):
            return str(getattr(key, attr))
    return str(key)


def save_policy(directory: str | Path, policy: Policy, *, run_owned: bool = False) -> Path:
    """Write ``policy`` to ``directory`` (see the module docstring): into a folder
    beside it with a manifest of what was written, renamed into place once whole, and
    only over an empty directory or a policy saved before and unchanged
    (``own_files.check_replaceable``, ``run_owned`` a run's own policy folder; a
    ConfigError otherwise). In a multi-process run every process calls this (Orbax
    synchronises them) and process 0 writes."""
    import shutil

    import orbax.checkpoint as ocp

    own_files.check_replaceable(directory, "the policy's directory", run_owned=run_owned)
    directory = Path(directory).parent.resolve() / Path(directory).name
    written = directory.with_name(f".{directory.name}.partial")
    if jax.process_count() == 1:
        shutil.rmtree(written, ignore_errors=True)  # what a killed export left
    spec = {
        "env": schema.to_dict(policy.env),
        "network": schema.to_dict(policy.network),
        "num_values": policy.num_values,
        "num_seeds": policy.num_seeds,
        "algo": policy.algo,
        "head": policy.head,
        "stream_weights": list(policy.stream_weights),
        "setting": policy.setting,
        "obs_clip": policy.obs_clip,
        "normalize_obs": policy.obs_moments is not None,
        "source": policy.source,
    }
    params = policy.params
    arrays = {path: np.asarray(x) for path, x in param_paths(jax.device_get(params))}
    if policy.obs_moments is not None:  # [seeds, ...] each
        moments = jax.device_get(policy.obs_moments)
        arrays.update({f"{MOMENTS_PREFIX}{k}": np.asarray(getattr(moments, k)) for k in MOMENTS})
    with ocp.StandardCheckpointer() as checkpointer:
        checkpointer.save(written / "params", arrays, force=True)
    if jax.process_index() == 0:
        own_files.write_text(written / "policy.yaml", yaml.safe_dump(spec, sort_keys=False))
        own_files.write_manifest(written)
        own_files.replace_directory(directory, written, run_owned=run_owned)
    return directory


def load_policy(directory: str | Path) -> Policy:
    """Rebuild a saved policy (see module docstring)."""
    directory = Path(directory).resolve()
    spec_file = directory / "policy.yaml"
    if not spec_file.is_file():
        raise FileNotFoundError(f"{directory} is not a saved policy: it has no policy.yaml")
    spec = schema.parse_yaml(spec_file.read_text(errors="replace"), str(spec_file))
    missing = [k for k in SPEC_KEYS if not isinstance(spec, dict) or k not in spec]
    if missing:
        raise config_lib.ConfigError(
            f"{spec_file} is not a saved policy's spec: it lacks {', '.join(missing)} (a policy "
            f"directory holds the policy.yaml `{command('export')}` writes); export it again "
            f"with `{command('export RUN_DIR --out DIR')}`"
        )
    env = schema.build(EnvConfig, spec["env"], "env.")
    network = schema.build(NetworkConfig, spec["network"], "network.")
    check_env_config(env)
    num_values = int(spec.get("num_values", 1))
    algo = str(spec.get("algo", "ppo"))
    head = str(spec["head"]) if "head" in spec else algorithm(algo).head  # older: no head
    graphdef, template = _network_template(env, network, num_values, head)
    check_params_whole(directory)
    arrays = read_params(directory)
    params = _fill(template, lambda path: arrays.get(path), str(directory / "params"), network)
    weights = tuple(float(w) for w in spec.get("stream_weights", [1.0] * num_values))
    obs_moments = None
    if spec.get("normalize_obs"):
        obs_moments = Moments(**{k: jnp.asarray(arrays[f"{MOMENTS_PREFIX}{k}"]) for k in MOMENTS})
    return Policy(
        env,
        network,
        num_values,
        graphdef,
        params,
        int(spec["num_seeds"]),
        algo=algo,
        head=head,
        stream_weights=weights,
        setting=spec.get("setting"),
        obs_moments=obs_moments,
        obs_clip=float(spec.get("obs_clip", 10.0)),
        source=dict(spec.get("source") or {}),
    )


def read_params(directory: Path) -> dict:
    """The arrays of ``directory/params``; one a policy saved before manifests has
    damaged is a CheckpointError naming it (Orbax's late tracebacks held back)."""
    import orbax.checkpoint as ocp

    from nnxrl.errors import CheckpointError
    from nnxrl.store.checkpoint import first_line, quiet_if_it_fails

    try:
        with quiet_if_it_fails(), ocp.StandardCheckpointer() as checkpointer:
            return checkpointer.restore(directory / "params")
    except Exception as e:  # Orbax/tensorstore errors: name the folder, not the internals
        raise CheckpointError(
            f"{directory / 'params'} is damaged or incomplete and cannot be read "
            f"({first_line(e)}). Export the policy again into a new folder: "
            f"`{command('export RUN_DIR --out NEW_DIR')}`"
        ) from e


def check_params_whole(directory: Path) -> None:
    """A CheckpointError naming the parameter files that differ from what nnxrl saved
    (its manifest's digests): caught before Orbax reads a truncated file."""
    from nnxrl.errors import CheckpointError

    damaged = own_files.damaged_since_saved(directory, "params")
    if damaged:
        raise CheckpointError(
            f"{directory}: {first_few(damaged, 3)} missing or changed since nnxrl saved "
            f"this policy (not the bytes its {own_files.POLICY_MANIFEST} records): it is "
            "damaged. Export the policy again into a new folder: "
            f"`{command('export RUN_DIR --out NEW_DIR')}`"
        )


def policy_from_checkpoint(
    run_dir: str | Path, update: int | None = None, setting: int | None = None
) -> Policy:
    """The policy in a run's checkpoint (the latest by default); a sweep's ``setting``."""
    from nnxrl.store import checkpoint

    meta = checkpoint.load_meta(run_dir, update)
    config = config_lib.from_dict(meta["config"])
    check_setting(config, setting, run_dir)
    static = population.program_config(config)  # a sweep's settings share the network
    num_values = static.intrinsic.num_reward_streams
    head = algorithm(static.algo).head
    graphdef, template = _network_template(static.env, static.network, num_values, head)
    items, meta = checkpoint.read_items(run_dir, meta["update"], with_state=True)
    by_path = {path: f"leaf_{i:05d}" for i, path in enumerate(meta["paths"])}
    wanted = {d: by_path.get(".params" + k) for d, k in _checkpoint_paths(template).items()}

    def lookup(path: str) -> Any:
        name = wanted.get(path)
        return None if name is None else items.get(name)

    params = _fill(template, lookup, meta["where"], static.network)
    obs_moments = None
    if getattr(config.algo_config, "normalize_obs", False):
        obs_moments = Moments(
            **{k: jnp.asarray(items[by_path[f".normalizer.obs.{k}"]]) for k in MOMENTS}
        )
    policy = setting_policy(config, params, setting, obs_moments)
    policy.source = provenance(run_dir, meta["update"])
    return policy


def provenance(run_dir: str | Path, update: int) -> dict:
    """Where a policy comes from: the run directory, the update, and the git commit
    and nnxrl version the run started with (its run.json)."""
    source = {"run": str(Path(run_dir).resolve()), "update": int(update)}
    try:
        started = json.loads((Path(run_dir) / "run.json").read_text())
    except (OSError, ValueError):
        return source
    return {**source, "git_commit": started.get("git_commit"), "nnxrl": started.get("nnxrl")}


def _checkpoint_paths(template: Any) -> dict[str, str]:
    """Dotted path -> the path as checkpoints record it (``jax.tree_util.keystr``)."""
    flat, _ = jax.tree_util.tree_flatten_with_path(template)
    dotted = [p for p, _ in param_paths(template)]
    return {d: jax.tree_util.keystr(path) for d, (path, _) in zip(dotted, flat, strict=True)}


def _fill(template: Any, lookup: Any, where: str, network: Any = None) -> Any:
    """The template's leaves replaced by the saved arrays of the same path (each with a
    leading seed axis); a missing or misshapen one is an error naming the path, and
    ``network.width`` where the saved one differs."""
    from nnxrl.errors import CheckpointError

    leaves = []
    for path, want in param_paths(template):
        got = lookup(path)
        if got is None or tuple(np.shape(got))[1:] != tuple(want.shape):
            found = "missing" if got is None else f"shaped {list(np.shape(got))}"
            raise CheckpointError(
                f"{where}: the parameter {path} is {found}, but the network needs "
                f"[seeds, *{list(want.shape)}]: it was saved for another network"
                + width_differs(got, want, network)
            )
        leaves.append(jnp.asarray(got))
    return jax.tree.unflatten(jax.tree.structure(template), leaves)


def width_differs(got: Any, want: Any, network: Any) -> str:
    """' (network.width: 64 in the saved parameters, 128 in its spec)' where the
    saved array's size differs from the network's in a dimension of the network's
    width; '' otherwise."""
    width = getattr(network, "width", None)
    if got is None or width is None or np.ndim(got) - 1 != len(want.shape):
        return ""
    saved = [g for w, g in zip(want.shape, np.shape(got)[1:], strict=True) if w == width != g]
    return (
        f" (network.width: {saved[0]} in the saved parameters, {width} in its spec)"
        if saved
        else ""
    )
