"""The checks that span a config's sections, run on every config read (``validate``)
and where a run is assembled (``check_parts``, which imports the env suite and the
add-ons). Each names the key, the value and what is allowed. A section's own fields
are checked where they are declared (``schema.setting``: types, ranges, choices)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from nnxrl import schema
from nnxrl.algos.registry import algorithm, algorithm_settings
from nnxrl.algos.settings import OffPolicySettings, OnPolicySettings
from nnxrl.config import hp_schedule, schedule
from nnxrl.config.sections import (
    MAX_BATCH,
    Config,
    IntrinsicConfig,
    NetworkConfig,
    describe,
    traced_keys,
)
from nnxrl.hints import command, did_you_mean
from nnxrl.networks.heads import builds_q_network
from nnxrl.networks.registry import check_network, network_kind
from nnxrl.schema import ConfigError, to_dict
from nnxrl.sweeps import space as sweep_lib


def validate(config: Config) -> Config:
    """Reject impossible combinations; returns the config unchanged when it is sound."""
    env, algo, name = config.env, config.algo_config, config.algo
    batch = schedule.batch_size(config)
    if network_kind(config.network.kind).sequences and not algorithm(name).recurrent:
        raise ConfigError(
            f"network.kind: {config.network.kind!r} is recurrent, and {name} trains "
            "feed-forward networks only (its replay holds no hidden states); choose "
            "network.kind: feedforward, or a recurrent algorithm such as ppo or pqn"
        )
    check_network(config.network, algorithm(name).head)
    if config.network.dueling and not builds_q_network(algorithm(name).head):
        raise ConfigError(
            f"network.dueling: true, but {name}'s network has no Q head to split into a "
            "value and advantages (Q-networks: algo: dqn or pqn); leave it out"
        )
    if isinstance(algo, OnPolicySettings):
        _validate_minibatches(config, batch)
    if isinstance(algo, OffPolicySettings):
        _validate_replay(config, algo)
    if batch > MAX_BATCH:
        raise ConfigError(
            f"env.num_envs: {env.num_envs} envs x {name}.num_steps={algo.num_steps} make a "
            f"batch of {batch:,} transitions, more than the {MAX_BATCH:,} one "
            f"compiled program can index; lower env.num_envs or {name}.num_steps"
        )
    if config.total_env_steps < batch:
        raise ConfigError(
            f"total_env_steps: {config.total_env_steps} is below one batch of "
            f"env.num_envs * {name}.num_steps = {batch}; it must be at least that"
        )
    _validate_schedule(config)
    _validate_hp_schedule(config)
    _validate_intrinsic(config)
    _validate_sweep(config)
    _validate_mesh(config)
    return config


def _validate_minibatches(config: Config, batch: int) -> None:
    """An on-policy algorithm's minibatches split its batch (a recurrent network's:
    its envs, as minibatches of whole env sequences)."""
    env, algo, name = config.env, config.algo_config, config.algo
    if batch % algo.num_minibatches:
        raise ConfigError(
            f"{name}.num_minibatches: {algo.num_minibatches} does not divide the batch of "
            f"env.num_envs * {name}.num_steps = {env.num_envs} * {algo.num_steps} = "
            f"{batch} transitions; choose a divisor of {batch}"
        )
    if network_kind(config.network.kind).sequences and env.num_envs % algo.num_minibatches:
        raise ConfigError(
            f"{name}.num_minibatches: {algo.num_minibatches} does not divide env.num_envs="
            f"{env.num_envs}; a recurrent network trains on minibatches of whole env "
            "sequences, so choose a divisor of num_envs"
        )


def _validate_schedule(config: Config) -> None:
    """The updates split into whole chunks, and checkpoints fall between chunks
    (``config/schedule.py``)."""
    chunk, updates = config.logging.updates_per_chunk, schedule.num_updates(config)
    if chunk is not None and updates % chunk:
        raise ConfigError(
            f"logging.updates_per_chunk: {chunk} does not divide the {updates} "
            f"updates (total_env_steps // (env.num_envs * {config.algo}.num_steps)); "
            "choose a divisor"
        )
    every, per_chunk = config.checkpoint.every_updates, schedule.updates_per_chunk(config)
    evaluate = config.evaluation.every_updates
    if evaluate and (evaluate % per_chunk or evaluate > updates):
        raise ConfigError(
            f"evaluation.every_updates: {evaluate} is not a multiple of the {per_chunk} "
            f"updates per chunk (logging.updates_per_chunk) at most the run's {updates}; "
            "evaluations run between chunks, so choose such a multiple"
        )
    if every is not None and every % per_chunk:
        raise ConfigError(
            f"checkpoint.every_updates: {every} is not a multiple of the "
            f"{per_chunk} updates per chunk (logging.updates_per_chunk); "
            "checkpoints are taken between chunks"
        )


def _validate_hp_schedule(config: Config) -> None:
    """Each entry starts at an update of the run after the one before and changes
    traced keys to values those keys allow (``config/hp_schedule.py``)."""
    entries, updates, traced = config.hp_schedule, schedule.num_updates(config), traced_keys(config)
    if entries and config.is_sweep:
        raise ConfigError(
            "hp_schedule: a sweep's members train with values of their own, so a schedule "
            "is for a plain run; drop the sweep section (a PBT sweep finds a schedule: "
            f"`{command('sweep-report')}` writes it as best_schedule.yaml)"
        )
    previous, per_chunk = 0, schedule.updates_per_chunk(config)
    for i, entry in enumerate(entries):
        where, first = f"hp_schedule[{i}]", entry.get(hp_schedule.FROM)
        if not isinstance(first, int) or isinstance(first, bool) or not previous < first <= updates:
            raise ConfigError(
                f"{where}.{hp_schedule.FROM}: expected an update after {previous} and at "
                f"most the run's last, {updates}; got {first!r}"
            )
        if (first - 1) % per_chunk:
            raise ConfigError(
                f"{where}.{hp_schedule.FROM}: {first} - 1 is not a multiple of the "
                f"{per_chunk} updates per chunk (logging.updates_per_chunk), and values "
                "change between chunks; leave logging.updates_per_chunk unset or choose a "
                "divisor of every from_update - 1"
            )
        names = [k for k in entry if k != hp_schedule.FROM]
        if not names:
            raise ConfigError(
                f"{where}: changes nothing; give {hp_schedule.FROM} and the keys it sets, "
                f"of {config.algo}'s {', '.join(traced)}"
            )
        for key in names:
            if key not in traced:
                close = did_you_mean(key, traced)
                hint = f"{close} " if close else ""
                raise ConfigError(
                    f"{where}.{key}: not a key that can change during a run; {hint}"
                    f"{config.algo}'s are {', '.join(traced)}"
                )
        try:
            with_values(
                dataclasses.replace(config, hp_schedule=()), hp_schedule.values_at(entries, first)
            )
        except ConfigError as e:
            raise ConfigError(f"{where} (from update {first}): {e}") from None
        previous = first


def _validate_sweep(config: Config) -> None:
    """The sweep's keys and distributions, then every setting as a config of its own
    (a value out of range names its setting)."""
    sweep = config.sweep
    if not sweep_lib.is_active(sweep):
        if sweep.only:
            raise ConfigError("sweep.only: set, but the sweep has no grid or random keys")
        return
    sweep_lib.check_shape(sweep)
    others = set(algorithm_settings()) - {config.algo}  # other algorithms' keys: unknown
    known = [key for key, _, _ in describe() if key.split(".")[0] not in others]
    sweep_lib.check_keys(sweep, traced_keys(config), known, config.algo)
    settings = sweep_lib.selected(sweep)
    if not settings:
        raise ConfigError(
            f"sweep.only: {sweep.only} matches none of the sweep's settings; give values "
            "the sweep takes"
        )
    for index, values in settings:
        try:
            with_values(config, values)
        except ConfigError as e:
            raise ConfigError(
                f"sweep: setting {index} ({schema.describe_values(values)}) is not a "
                f"valid config: {e}"
            ) from None
    if sweep.pbt.interval:
        _validate_pbt(config, settings)


def _validate_pbt(config: Config, settings: list[tuple[int, dict[str, Any]]]) -> None:
    """PBT's population is one program of at least two settings, explored within
    bounds that hold every initial value, exploiting at least once."""
    pbt, sweep = config.sweep.pbt, config.sweep
    if sweep.allow_recompile:
        raise ConfigError(
            "sweep.allow_recompile: a PBT population trains as one program, so every "
            "swept key must be traced; drop allow_recompile or sweep.pbt"
        )
    if len(settings) < 2:
        raise ConfigError(
            f"sweep.pbt: the population is the sweep's settings, and it has "
            f"{len(settings)}; give sweep.grid or sweep.random at least two"
        )
    updates = schedule.num_updates(config)
    if pbt.interval >= updates:
        raise ConfigError(
            f"sweep.pbt.interval: {pbt.interval} updates, but the run has {updates}, so "
            f"no member would ever copy another; choose an interval below {updates}"
        )
    per_chunk = schedule.updates_per_chunk(config)
    if pbt.interval % per_chunk:
        raise ConfigError(
            f"sweep.pbt.interval: {pbt.interval} is not a multiple of the {per_chunk} "
            "updates per chunk (logging.updates_per_chunk), and PBT's steps fall between "
            f"chunks; choose an interval that is, or leave logging.updates_per_chunk unset"
        )
    keys = sweep_lib.swept_keys(sweep)
    for key, bounds in pbt.bounds.items():
        if key not in keys:
            raise ConfigError(
                f"sweep.pbt.bounds.{key}: {key} is not swept; bounds are for the swept "
                f"keys ({', '.join(keys)})"
            )
        if (
            not isinstance(bounds, list | tuple)
            or len(bounds) != 2
            or not all(isinstance(b, int | float) for b in map(sweep_lib.plain, bounds))
            or not sweep_lib.plain(bounds[0]) < sweep_lib.plain(bounds[1])
        ):
            raise ConfigError(
                f"sweep.pbt.bounds.{key}: expected [low, high] with low < high, got {bounds!r}"
            )
        low, high = map(sweep_lib.plain, bounds)
        for index, values in settings:
            if not low <= values[key] <= high:
                raise ConfigError(
                    f"sweep.pbt.bounds.{key}: [{low}, {high}] excludes setting {index}'s "
                    f"initial value {values[key]}; widen the bounds or change the sweep"
                )


def with_values(config: Config, values: Mapping[str, Any]) -> Config:
    """``config`` with the dotted keys of ``values`` set and no sweep section, checked
    (a sweep's setting as a config of its own: ``config/population.py``)."""
    data = to_dict(config)
    data.pop("sweep")
    for key, value in values.items():
        node = data
        *parents, leaf = key.split(".")
        for part in parents:
            node = node[part]
        node[leaf] = value
    return validate(schema.build(Config, data))


def _validate_mesh(config: Config) -> None:
    """What can be checked without knowing the devices (``parallel/mesh.py`` checks the rest)."""
    seeds, envs = config.mesh.seeds, config.mesh.envs
    settings = len(sweep_lib.selected(config.sweep)) if config.is_sweep else 1
    if seeds is not None and (settings * config.num_seeds) % seeds:
        population = (
            f"the population of {settings} settings x {config.num_seeds} seeds"
            if config.is_sweep
            else f"num_seeds={config.num_seeds}"
        )
        raise ConfigError(
            f"mesh.seeds: {seeds} does not divide {population}; choose a divisor (or leave "
            "it unset)"
        )
    if envs is not None:
        problem = env_split_problem(config, envs)
        if problem:
            raise ConfigError(f"mesh.envs: {envs} {problem}")


def env_split_problem(config: Config, shards: int) -> str:
    """Why each seed's env batch cannot be split over ``shards`` devices ('' if it can):
    every device must hold whole envs and, unless mesh.invariant, its share must split
    into the algorithm's minibatches (each device shuffles its own share)."""
    env, algo, name = config.env, config.algo_config, config.algo
    if env.num_envs % shards:
        return f"does not divide env.num_envs={env.num_envs}; choose a divisor"
    if config.mesh.invariant or not isinstance(algo, OnPolicySettings):
        return ""
    per_device = env.num_envs // shards
    if network_kind(config.network.kind).sequences and per_device % algo.num_minibatches:
        return (
            f"leaves {per_device} envs per device, which do not split into "
            f"{name}.num_minibatches={algo.num_minibatches} minibatches of whole sequences; "
            "choose fewer devices or minibatches, or set mesh.invariant: true"
        )
    if (per_device * algo.num_steps) % algo.num_minibatches:
        return (
            f"leaves {per_device} envs x {algo.num_steps} steps per device, which do not "
            f"split into {name}.num_minibatches={algo.num_minibatches}; choose fewer devices "
            "or minibatches, or set mesh.invariant: true"
        )
    return ""


def check_parts(config: Config) -> Config:
    """The checks that need a config's parts, run where a run is assembled
    (``nnxrl.train``, and ``nnxrl train`` before it touches --out) rather than when a
    config is read, since they import the env suite and the add-ons: the env id is
    known and its kwargs fit, its action space suits the algorithm and the network's
    options, and the add-on is known and takes its options. A sweep's settings are
    checked each (those that differ in the env, network, add-on or algorithm)."""
    from nnxrl.envs.registry import check_env_config

    settings = sweep_lib.selected(config.sweep) if config.is_sweep else []
    configs = [with_values(config, values) for _, values in settings]
    seen = set()
    for c in [config, *configs]:
        parts = repr((c.algo, to_dict(c.env), to_dict(c.network), to_dict(c.intrinsic)))
        if parts in seen:
            continue
        seen.add(parts)
        check_env_config(c.env)
        _validate_action_space(c)
        _check_addon(c.intrinsic)
    return config


def _validate_replay(config: Config, algo: OffPolicySettings) -> None:
    """The buffer holds what learning waits for: each env's row of ``buffer_size /
    num_envs`` steps (``algos/replay.py``) at least ``learning_starts / num_envs``."""
    name, envs = config.algo, config.env.num_envs
    row = max(algo.buffer_size // envs, algo.n_step + 1)
    if -(-algo.learning_starts // envs) > row:
        raise ConfigError(
            f"{name}.learning_starts: {algo.learning_starts:,} transitions cannot wait in "
            f"a buffer of {name}.buffer_size={algo.buffer_size:,} ({row:,} steps per env x "
            f"{envs} envs); lower {name}.learning_starts to at most {row * envs:,} or raise "
            f"{name}.buffer_size"
        )


def _validate_action_space(config: Config) -> None:
    """An algorithm that acts by argmax (PQN, DQN) needs discrete actions, one with
    its own Gaussian (SAC) continuous ones; the Gaussian's options need continuous
    ones, and an algorithm with its own Gaussian takes none but its offset."""
    network, defaults = config.network, NetworkConfig()
    entry = algorithm(config.algo)
    continuous_options = [
        f"network.{k}"
        for k in ("log_std", "squash", "init_log_std")
        if getattr(network, k) != getattr(defaults, k)
    ]
    shaped = [k for k in continuous_options if k != "network.init_log_std"]
    if entry.continuous_only and shaped:
        raise ConfigError(
            f"{shaped[0]}: set, but algo: {config.algo}'s actor is always a "
            "tanh-squashed Gaussian with a state-dependent log-std; leave it out"
        )
    if not (entry.discrete_only or entry.continuous_only or continuous_options):
        return
    from nnxrl.envs.registry import is_continuous

    continuous = is_continuous(config.env)
    if entry.discrete_only and continuous:
        raise ConfigError(
            f"algo: {config.algo} picks actions by argmax over Q-values, so it needs discrete "
            f"actions; env.id {config.env.id!r} has continuous ones. Use algo: sac or an "
            "actor-critic such as algo: ppo (a Gaussian policy)"
        )
    if entry.continuous_only and not continuous:
        raise ConfigError(
            f"algo: {config.algo} needs continuous actions; env.id {config.env.id!r} has "
            "discrete ones. Use algo: dqn, pqn or ppo"
        )
    if continuous_options and not continuous:
        raise ConfigError(
            f"{continuous_options[0]}: set, but env.id {config.env.id!r} has discrete "
            "actions; the option shapes a Gaussian policy for continuous ones. Leave it out"
        )


def _validate_intrinsic(config: Config) -> None:
    """The add-on's minibatch split (its name and options are ``check_parts``')."""
    intrinsic = config.intrinsic
    num_minibatches = intrinsic.num_minibatches or schedule.minibatches(config)
    if intrinsic.addon != "none" and config.env.num_envs % num_minibatches:
        source = "intrinsic" if intrinsic.num_minibatches else f"{config.algo} (used by intrinsic)"
        raise ConfigError(
            f"{source}.num_minibatches: {num_minibatches} does not divide env.num_envs="
            f"{config.env.num_envs}; add-on minibatches are sets of whole env sequences, "
            "so choose a divisor of num_envs (set intrinsic.num_minibatches)"
        )


def _check_addon(intrinsic: IntrinsicConfig) -> None:
    """The add-on is registered and takes its options."""
    from nnxrl.intrinsic import addon_options, known_addons

    if intrinsic.addon not in known_addons():
        register = "register more with nnxrl.register_addon in a file given to --plugin"
        raise schema.unknown_name("intrinsic.addon", intrinsic.addon, known_addons(), register)
    addon_options(intrinsic.addon, intrinsic.options)  # raises on a bad option
