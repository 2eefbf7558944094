"""The config's sections: typed, frozen dataclasses, one field per key a YAML file may
hold, each documented once in its ``doc`` (the config reference and ``--help`` read
them). The sections of the pure layers are defined with them (``envs/settings.py``,
``networks/settings.py``, ``algos/settings.py``, ``sweeps/settings.py``); the host
side's are here and in ``mesh.py``. Nothing inside a jitted program reads these
objects: the training code binds what it needs with ``functools.partial`` at build
time."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from nnxrl import schema
from nnxrl.algos.registry import REGISTER, algorithm_settings
from nnxrl.config.mesh import DistributedConfig, MeshConfig
from nnxrl.envs.settings import EnvConfig
from nnxrl.networks.settings import NetworkSettings as NetworkConfig
from nnxrl.schema import section, setting
from nnxrl.sweeps import space as sweep_lib
from nnxrl.sweeps.settings import PBTConfig

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
        "chunks of at most 2**20 env steps per seed). Must divide the number of updates.",
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
    replay: bool = _field(
        True,
        "Save an off-policy algorithm's replay buffer (DQN, SAC) in checkpoints, so that "
        "a resumed run is exact. false: leave its transitions out (for a buffer too large "
        "to write often); a resumed run then refills it from empty and is not exact.",
    )


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
        "them without tracing (about a second sooner; store/saved_programs.py).",
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
    total_env_steps: int = _field(
        500_000, "Environment steps per seed (at most 10^12).", low=1, high=10**12
    )
    fast_compile: bool = _field(
        False,
        "Compile the run's programs with XLA's backend optimisations and CPU fusion "
        "emitters off: sooner to the first update, slower after it (a tiny Craftax run: "
        "20 s instead of 30 s to its end). For smoke runs, tests and debugging.",
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
        "values before. Costs no compilation (config/hp_schedule.py); a PBT run's "
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


def traced_keys(config: Config) -> tuple[str, ...]:
    """The keys that enter ``config``'s compiled program as values (its algorithm's
    fields and the intrinsic section's declared ``traced``): a sweep varies them in
    one program."""
    own = schema.traced_fields(type(config.algo_config))
    shared = schema.traced_fields(IntrinsicConfig)
    return tuple(f"{config.algo}.{k}" for k in own) + tuple(f"intrinsic.{k}" for k in shared)


def describe(cls: type = Config, prefix: str = "") -> list[tuple[str, str, str]]:
    """(key, default, doc) for every config key, for documentation and ``--help``."""
    return schema.describe(cls, prefix)
