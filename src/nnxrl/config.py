"""Typed, frozen configuration: YAML -> validated dataclasses, with dotted overrides.

Every key a YAML file may hold is a field below, documented once in its ``doc``.
Loading rejects unknown keys, wrong types, out-of-range values and impossible
combinations before anything is compiled, naming the key, the value and what is
allowed. Nothing inside a jitted program reads these objects: the training code
binds what it needs with ``functools.partial`` at build time.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml

from nnxrl import schema
from nnxrl.algos.registry import REGISTER, algorithm, algorithm_settings
from nnxrl.algos.settings import PPOSettings as PPOConfig
from nnxrl.algos.settings import PQNSettings as PQNConfig
from nnxrl.envs.settings import EnvConfig
from nnxrl.networks.registry import check_network, network_kind
from nnxrl.networks.settings import NetworkSettings as NetworkConfig
from nnxrl.parallel.settings import DistributedConfig, MeshConfig
from nnxrl.run import hp_schedule, schedule
from nnxrl.schema import ConfigError, parse_yaml, section, setting, to_dict
from nnxrl.sweeps import space as sweep_lib
from nnxrl.sweeps.settings import PBTConfig

__all__ = ["Config", "ConfigError", "from_dict", "load", "dump", "to_dict", "setting"]

_field = setting  # the name used in this file
_section = schema.section


@dataclass(frozen=True)
class IntrinsicConfig:
    addon: str = _field(
        "none",
        "Intrinsic-reward add-on: none, icm, e3b or rnd (or any registered with "
        "nnxrl.intrinsic.register).",
    )
    mode: Literal["reward", "value_head"] = _field(
        "reward",
        "How the algorithm consumes the bonus: 'reward' adds reward_coef * bonus to the "
        "extrinsic reward; 'value_head' learns it with a second critic output (PQN: a "
        "second Q head) with its own discount and returns (gamma, episodic), the two "
        "streams weighted by the two *_adv_coef (PQN: acting on the weighted sum of Qs).",
    )
    reward_coef: float = _field(1.0, "Scale of the intrinsic reward stream.", low=0, traced=True)
    gamma: float = _field(
        0.99, "value_head: discount of the intrinsic stream.", low=0, high=1, traced=True
    )
    episodic: bool = _field(
        False,
        "value_head: cut intrinsic returns at episode ends (false: the intrinsic stream "
        "continues through resets, as in RND).",
    )
    extrinsic_adv_coef: float = _field(
        1.0, "value_head: weight of the extrinsic advantage.", low=0, traced=True
    )
    intrinsic_adv_coef: float = _field(
        0.01, "value_head: weight of the intrinsic advantage.", low=0, traced=True
    )
    learning_rate: float = _field(
        3e-4, "Add-on optimiser: Adam step size (constant).", low=0, low_open=True
    )
    adam_eps: float = _field(1e-5, "Add-on optimiser: Adam epsilon.", low=0, low_open=True)
    max_grad_norm: float = _field(
        1.0, "Add-on optimiser: global gradient-norm clip.", low=0, low_open=True
    )
    num_epochs: int = _field(4, "Add-on update passes over each rollout.", low=1, high=1000)
    num_minibatches: int | None = _field(
        None,
        "Add-on minibatches per epoch, each a set of whole env sequences (None: "
        "the algorithm's num_minibatches). Must divide env.num_envs.",
        low=1,
    )
    options: dict = _field(
        {}, "The add-on's own settings (see its options class); unknown keys are rejected."
    )

    @property
    def num_reward_streams(self) -> int:
        """K: 2 when the intrinsic reward has its own value head, else 1."""
        return 2 if self.mode == "value_head" else 1


BACKENDS = ("console", "mlflow", "wandb", "tensorboard")
MAX_SEED = 2**32 - 1  # jax.random.key keeps 32 bits: key(2**32) == key(0)
MAX_BATCH = 2**31 - 1  # transitions per update: arrays are indexed with int32


@dataclass(frozen=True)
class LoggingConfig:
    backends: list = _field(
        ["console", "mlflow"],
        "Metric backends besides metrics.jsonl (always written): any of console, mlflow, "
        "wandb, tensorboard.",
        choices=BACKENDS,
    )
    mlflow_tracking_uri: str | None = _field(
        None,
        "MLflow tracking URI (None: a SQLite store shared by the runs beside this one, "
        "<out>/../mlflow.db, so that `mlflow ui` compares them).",
    )
    mlflow_experiment: str = _field(
        "",
        "MLflow experiment name; empty: nnxrl-<env.id>, one experiment per env, so that "
        "its runs chart the same metrics.",
    )
    wandb_project: str = _field("nnxrl", "Weights & Biases project.")
    wandb_mode: Literal["offline", "online"] = _field(
        "offline", "Weights & Biases mode (offline needs no account; sync later)."
    )
    updates_per_chunk: int | None = _field(
        None,
        "Updates per compiled chunk between host hand-offs (None: automatic, about 50 "
        "chunks). Must divide the number of updates.",
        low=1,
    )
    print_every: int = _field(
        10, "Console: a summary line every this many chunks (and at the end).", low=1
    )
    tracker_points: int = _field(
        200,
        "MLflow and TensorBoard receive each series at about this many evenly spaced "
        "updates (every k-th and the last); metrics.jsonl and W&B keep every update.",
        low=2,
    )
    log_video: bool = _field(
        False,
        "At the end of a run, render one greedy episode of seed 0 to <out>/episode.gif "
        "and attach it to MLflow, W&B and TensorBoard.",
    )
    return_window: int = _field(
        100,
        "The rolling return (console, metrics.jsonl's episode_return_window) is the mean "
        "over each seed's last this many finished episodes. Kept in the run state, so it "
        "cannot change on --resume.",
        low=1,
        high=1_000_000,
    )


@dataclass(frozen=True)
class EvaluationConfig:
    every_updates: int = _field(
        0,
        "Every this many updates, each seed's policy plays `episodes` fresh envs of its own "
        "to the end of their first episode; records carry eval/return and eval/length "
        "there (null elsewhere). 0: off. A multiple of the updates per chunk.",
        low=0,
    )
    episodes: int = _field(16, "Episodes per seed at each evaluation.", low=1, high=4096)
    greedy: bool = _field(
        True, "Act greedily (the mode; Q-networks: epsilon 0); false: sample as in training."
    )
    max_steps: int = _field(
        100_000, "An evaluation stops its episodes after this many steps.", low=1
    )


@dataclass(frozen=True)
class CheckpointConfig:
    enabled: bool = _field(True, "Write checkpoints (and allow --resume).")
    every_updates: int | None = _field(
        None,
        "Checkpoint every this many updates (None: every every_minutes of training). "
        "Must be a multiple of the updates per chunk. The end of the run, a stop "
        "(Ctrl-C, SIGTERM, --stop-after) and a non-finite loss are always checkpointed.",
        low=1,
    )
    every_minutes: float = _field(
        10.0,
        "With every_updates None: checkpoint after a chunk once this many minutes have "
        "passed since the last checkpoint (short runs then save only at the end).",
        low=0,
        low_open=True,
    )
    keep: int = _field(3, "Keep the newest this many checkpoints.", low=1)


@dataclass(frozen=True)
class CompileCacheConfig:
    enabled: bool = _field(
        True,
        "Keep compiled programs on disk (a run's own as saved programs, the rest in JAX's "
        "persistent compilation cache), so that a second run of a config starts without "
        "compiling.",
    )
    dir: str | None = _field(
        None,
        "The cache folder (None: $XDG_CACHE_HOME/nnxrl/jax, else ~/.cache/nnxrl/jax). "
        "It holds only derived data: deleting it costs one cold compile.",
    )
    min_compile_seconds: float = _field(
        0.1, "Cache only programs whose compilation took at least this long.", low=0
    )
    save_programs: bool = _field(
        True,
        "Also keep a run's compiled init and chunk programs themselves in <dir>/programs, "
        "keyed by the config, the code and the devices, so that a repeated config loads "
        "them without tracing (about a second sooner; run/saved_programs.py).",
    )


@dataclass(frozen=True)
class SweepConfig:
    grid: dict = _field(
        {},
        "Values per key, every combination a setting: {ppo.learning_rate: [1e-4, 3e-4]}. "
        "Keys are dotted config keys.",
    )
    random: dict = _field(
        {},
        "A distribution per key, drawn num_samples times: {uniform: [low, high]}, "
        "{log_uniform: [low, high]} or {choice: [values]}. With grid: every grid point "
        "with every draw.",
    )
    num_samples: int = _field(8, "random: settings drawn.", low=1, high=sweep_lib.MAX_SETTINGS)
    seed: int = _field(0, "random: the draws' own seed (not the training seed).", low=0)
    allow_recompile: bool = _field(
        False,
        "Allow keys that change the compiled program (num_envs, width, ...): each "
        "combination of them is trained as its own program, one after another, in "
        "<out>/group-<g>. False: such keys are refused.",
    )
    only: dict = _field(
        {},
        "Train only the settings with these values of swept keys (each group of an "
        "allow_recompile sweep sets its own; also reruns part of a sweep).",
    )
    pbt: PBTConfig = section(
        PBTConfig,
        "Population-based training: with interval > 0 the settings are a population "
        "whose worst members copy better ones and perturb their values every interval "
        "updates, inside the compiled program (sweeps/pbt.py).",
    )


@dataclass(frozen=True)
class Config:
    algo: str = _field(
        "ppo",
        "The learning algorithm: ppo (actor-critic), pqn (parallel Q-learning with "
        "Q(lambda) targets) or any registered with nnxrl.register_algorithm. Its settings "
        "are the section of its name (ppo:, pqn:, ...); a section of another is an error.",
    )
    seed: int = _field(
        0,
        "Base PRNG seed; seed i of num_seeds uses fold_in(seed, i). JAX keys take 32 bits.",
        low=0,
        high=MAX_SEED,
    )
    num_seeds: int = _field(
        1, "Independent seeds trained in one compiled program.", low=1, high=1_000_000
    )
    total_env_steps: int = _field(500_000, "Environment steps per seed.", low=1)
    fast_compile: bool = _field(
        False,
        "Compile the run's programs with XLA's backend optimisations off: sooner to the "
        "first update, slower after it (a tiny Craftax run: 42 s instead of 66 s to its "
        "end; CartPole PQN trains about half as fast). For smoke runs and debugging.",
    )
    env: EnvConfig = _section(EnvConfig, "Environment and batching.")
    network: NetworkConfig = _section(NetworkConfig, "Actor and critic networks.")
    algo_config: Any = schema.chosen_section(
        "algo", algorithm_settings, "The chosen algorithm's settings, under its name.", REGISTER
    )
    intrinsic: IntrinsicConfig = _section(IntrinsicConfig, "Intrinsic-motivation add-on.")
    logging: LoggingConfig = _section(LoggingConfig, "Host-side hand-off and printing.")
    evaluation: EvaluationConfig = _section(
        EvaluationConfig, "Evaluating the policy during training, on envs of its own."
    )
    checkpoint: CheckpointConfig = _section(CheckpointConfig, "Checkpoints and resume.")
    compile_cache: CompileCacheConfig = _section(
        CompileCacheConfig,
        "Compiled programs on disk: a run's saved executables, JAX's persistent cache.",
    )
    mesh: MeshConfig = _section(MeshConfig, "Devices: seeds and envs split over a mesh.")
    distributed: DistributedConfig = _section(
        DistributedConfig, "Many processes (hosts) with jax.distributed."
    )
    sweep: SweepConfig = _section(
        SweepConfig,
        "Hyperparameter sweep: settings x seeds trained as one population in one program.",
    )
    hp_schedule: tuple[dict, ...] = _field(
        (),
        "Traced keys that change value during a plain run: a list of {from_update: u, "
        "<key>: value, ...}, each holding from update u (1-based) on, the config's own "
        "values before. Costs no compilation (run/hp_schedule.py); a PBT run's "
        "best_schedule.yaml holds the schedule its winner trained with.",
    )

    def __post_init__(self) -> None:
        schema.fill_chosen(self)  # algo_config: the chosen algorithm's defaults if unset

    def __getattr__(self, name: str) -> Any:
        """``config.ppo`` (the name of the chosen algorithm) is ``config.algo_config``."""
        algo = self.__dict__.get("algo")
        if algo is not None and name == algo:
            return self.algo_config
        why = f" (algo is {algo!r}: its section is config.{algo})" if algo else ""
        raise AttributeError(f"'Config' object has no attribute {name!r}{why}")

    @property
    def is_sweep(self) -> bool:
        """Whether the ``sweep`` section asks for more than one setting."""
        return sweep_lib.is_active(self.sweep)


# --------------------------------------------------------------------------------------
# Loading and validation
# --------------------------------------------------------------------------------------


def validate(config: Config) -> Config:
    """Reject impossible combinations; returns the config unchanged when it is sound."""
    env, algo, name = config.env, config.algo_config, config.algo
    batch = schedule.batch_size(config)
    check_network(config.network, algorithm(name).head)
    if env.num_envs % env.reset_ratio:
        raise ConfigError(
            f"env.reset_ratio: {env.reset_ratio} does not divide env.num_envs={env.num_envs}; "
            "choose a divisor of num_envs"
        )
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


def _validate_schedule(config: Config) -> None:
    """The updates split into whole chunks, and checkpoints fall between chunks
    (``run/schedule.py``)."""
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
    traced keys to values those keys allow (``run/hp_schedule.py``)."""
    entries, updates, traced = config.hp_schedule, schedule.num_updates(config), traced_keys(config)
    if entries and config.is_sweep:
        raise ConfigError(
            "hp_schedule: a sweep's members train with values of their own, so a schedule "
            "is for a plain run; drop the sweep section (a PBT sweep finds a schedule: "
            "`nnxrl sweep-report` writes it as best_schedule.yaml)"
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
                close = difflib.get_close_matches(str(key), traced, n=1)
                hint = f"did you mean {close[0]}? " if close else ""
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
    (a sweep's setting as a config of its own: ``sweeps/population.py``)."""
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
    if config.mesh.invariant:
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


def _validate_action_space(config: Config) -> None:
    """An algorithm that acts by argmax (PQN) needs discrete actions; the Gaussian's
    options need continuous ones."""
    network, defaults = config.network, NetworkConfig()
    discrete_only = algorithm(config.algo).discrete_only
    continuous_options = [
        f"network.{k}"
        for k in ("log_std", "squash", "init_log_std")
        if getattr(network, k) != getattr(defaults, k)
    ]
    if not discrete_only and not continuous_options:
        return
    from nnxrl.envs.registry import is_continuous

    continuous = is_continuous(config.env)
    if discrete_only and continuous:
        raise ConfigError(
            f"algo: {config.algo} picks actions by argmax over Q-values, so it needs discrete "
            f"actions; env.id {config.env.id!r} has continuous ones. Use an actor-critic "
            "such as algo: ppo (a Gaussian policy)"
        )
    if continuous_options and not continuous:
        raise ConfigError(
            f"{continuous_options[0]}: set, but env.id {config.env.id!r} has discrete "
            "actions; the option shapes a Gaussian policy for continuous ones. Leave it out"
        )


def _validate_intrinsic(config: Config) -> None:
    """The add-on's minibatch split (its name and options are ``check_parts``')."""
    intrinsic = config.intrinsic
    num_minibatches = intrinsic.num_minibatches or config.algo_config.num_minibatches
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


def parse_override(text: str) -> tuple[str, Any]:
    """``"ppo.learning_rate=3e-4"`` -> ``("ppo.learning_rate", 3e-4)`` (value parsed as YAML)."""
    if "=" not in text:
        raise ConfigError(f"override {text!r}: expected KEY=VALUE, e.g. ppo.learning_rate=3e-4")
    key, raw = text.split("=", 1)
    key = key.strip()
    if not key:
        raise ConfigError(f"override {text!r}: the key before '=' is empty")
    return key, parse_yaml(raw, f"override {text!r}") if raw.strip() else None


def apply_overrides(data: dict, overrides: Iterable[str]) -> dict:
    """Set dotted keys in a nested dict (a copy); unknown keys are caught by validation."""
    data = _deep_copy(data)
    for text in overrides:
        key, value = parse_override(text)
        node = data
        parts = key.split(".")
        for part in parts[:-1]:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise ConfigError(f"override {text!r}: {part} is not a section")
            node = child
        if isinstance(node.get(parts[-1]), dict) and not isinstance(value, Mapping):
            raise ConfigError(
                f"override {text!r}: {key} is a section (a mapping of keys); set a key inside it "
                f"(e.g. --set {key}.<key>=VALUE) rather than replacing it with {value!r}"
            )
        node[parts[-1]] = value
    return data


def _deep_copy(data: Any) -> Any:
    if isinstance(data, Mapping):
        return {k: _deep_copy(v) for k, v in data.items()}
    return data


def from_dict(data: Mapping[str, Any], overrides: Iterable[str] = ()) -> Config:
    """Build and validate a Config from plain data plus dotted ``KEY=VALUE`` overrides.
    Reading a config starts no JAX and imports no env suite or add-on: what needs
    them is ``check_parts``, which ``nnxrl.train`` runs."""
    data = without_legacy_sections(dict(data or {}))
    return validate(schema.build(Config, apply_overrides(data, overrides)))


def without_legacy_sections(data: dict) -> dict:
    """Runs saved before a config held only its algorithm's section recorded every
    built-in algorithm's, the others at their defaults, key for key: those are dropped
    (a section a person wrote for another algorithm stays, and is refused)."""
    chosen = data.get("algo", "ppo")
    for name, cls in (("ppo", PPOConfig), ("pqn", PQNConfig)):
        if name != chosen and data.get(name) == to_dict(cls()):
            data.pop(name)
    return data


def traced_keys(config: Config) -> tuple[str, ...]:
    """The keys that enter ``config``'s compiled program as values (its algorithm's
    fields and the intrinsic section's declared ``traced``): a sweep varies them in
    one program."""
    own = schema.traced_fields(type(config.algo_config))
    shared = schema.traced_fields(IntrinsicConfig)
    return tuple(f"{config.algo}.{k}" for k in own) + tuple(f"intrinsic.{k}" for k in shared)


def load(path: str | Path, overrides: Iterable[str] = ()) -> Config:
    """Load a YAML config file, apply overrides, validate."""
    from nnxrl.shipped_configs import find_config, shipped_configs

    path = find_config(path)
    where = f"config file {str(path)!r}"
    if not path.exists():
        names = ", ".join(shipped_configs()) or "none found"
        raise ConfigError(
            f"{where} does not exist; give a YAML file or the name of a shipped config "
            f"({names}; `nnxrl configs` lists them)"
        )
    if not path.is_file():
        raise ConfigError(f"{where} is not a file")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ConfigError(
            f"{where} is not a text file; expected a YAML mapping of config keys"
        ) from None
    except OSError as e:
        raise ConfigError(f"{where} cannot be read ({e.strerror})") from None
    data = parse_yaml(text, where)
    if data is None:
        raise ConfigError(
            f"{where} is empty; expected a YAML mapping of config keys (copy one from configs/)"
        )
    if not isinstance(data, Mapping):
        kind = {list: "a list", str: "a string", bool: "true/false"}.get(type(data), "a number")
        raise ConfigError(
            f"{where} holds {kind} ({str(data)[:60]}); expected a YAML mapping of config "
            "keys such as 'env: {id: CartPole-v1}'"
        )
    return from_dict(data, overrides)


def saved_dict(config: Config) -> dict:
    """The config as a run records it (config.yaml, checkpoints): without the
    ``distributed`` section, which describes one launch, so that reading a run back
    (eval, export, a resume elsewhere) never joins that launch's process group."""
    return {k: v for k, v in to_dict(config).items() if k != "distributed"}


def dump(config: Config, path: str | Path) -> None:
    """Write the config as a run records it, whole or not at all (StorageError)."""
    from nnxrl.run import own_files

    own_files.write_text(path, yaml.safe_dump(saved_dict(config), sort_keys=False))


def describe(cls: type = Config, prefix: str = "") -> list[tuple[str, str, str]]:
    """(key, default, doc) for every config key, for documentation and ``--help``."""
    return schema.describe(cls, prefix)
