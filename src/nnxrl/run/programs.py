"""Compiling a run's programs: ``init`` (the first state of every seed) and a chunk of
updates (a guarded scan, ``chunk.py``), mapped over seeds (``members.py``), with seeds
and envs split over the device mesh (``parallel/mesh.py``); networks are initialised
inside ``init``.
Every program is compiled with the run's XLA options, init on CPU with the fast ones
(``compiler_options.py``).

These two are the only programs compiled before training starts: seed keys are
derived inside ``init`` and hyperparameters are placed from NumPy, so no small eager
op compiles first, and each program is traced once, on the calling thread; XLA
compiles init on a thread of its own while the chunk is traced and compiled
(``init_beside``). Both are kept on disk
(``saved_programs.py``), so a second run of a config loads them without tracing;
JAX's persistent compilation cache (``compile_cache.py``) keeps the rest."""

from __future__ import annotations

import dataclasses
import sys
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from dataclasses import dataclass
from functools import cache, cached_property, partial
from typing import Any

import jax
import numpy as np

from nnxrl import config as config_lib
from nnxrl.config import hp_schedule, population, schedule
from nnxrl.envs import EnvSpec, make_env
from nnxrl.envs.compiler_options import compiler_options, init_compiler_options
from nnxrl.intrinsic import addon_for
from nnxrl.parallel.devices import start_jax
from nnxrl.parallel.mesh import (
    SEEDS,
    Layout,
    make_layout,
    per_seed_shard,
    shuffle_groups,
    state_shardings,
    with_num_envs,
)
from nnxrl.run.algorithms import hyperparams_from, make_algorithm
from nnxrl.run.chunk import SEED_AXIS, pbt_chunk, train_chunk
from nnxrl.run.evaluation import make_evaluator
from nnxrl.run.heap import release_freed_memory
from nnxrl.run.members import over_members
from nnxrl.run.resources import check_fits, check_state_fits
from nnxrl.store.compile_cache import use_compile_cache
from nnxrl.store.saved_programs import saved_programs


def seed_key(seed: jax.Array, index: jax.Array) -> jax.Array:
    """The key of seed ``index`` of a run with base seed ``seed``: fold_in(key(seed), index)."""
    return jax.random.fold_in(jax.random.key(seed), index)


@dataclass
class Programs:
    """A run's compiled programs and what placing a restored state needs."""

    init: Any  # () -> the first RunState of every seed
    chunk_programs: dict[int, Any]  # updates per chunk -> (state, hp) -> (state, metrics)
    hp: Any
    template: Any  # the RunState's shapes, dtypes and shardings (all seeds)
    layout: Layout  # the device mesh
    compile_chunk: Any  # updates -> a compiled chunk program of that many updates
    hyperparams_at: Any  # update -> the hp a chunk starting there trains with
    evaluate: Any = None  # (state, update) -> evaluation means; None: no evaluation
    loaded: bool = False  # both programs were loaded from disk: nothing was compiled

    def chunk(self, num_updates: int) -> Any:
        """The program for a chunk of ``num_updates`` (compiled on first use: only a
        resumed run's last chunk may need another length)."""
        if num_updates not in self.chunk_programs:
            self.chunk_programs[num_updates] = self.compile_chunk(num_updates)
        return self.chunk_programs[num_updates]


def compile_programs(config: config_lib.Config, run_init: bool = False) -> Programs:
    """Build env and algorithm; compile init and a chunk of updates for all seeds (of
    every setting, in a sweep: the population), on the mesh (``parallel/mesh.py``): members and
    each member's envs split over devices. ``init()`` gives the first RunState of every
    member, networks included; with ``run_init`` (a run that starts at update 0) init
    runs as soon as it is compiled, while the chunk compiles, and ``init()``'s first
    call gives that state. A repeated config loads both programs instead, without
    building or tracing anything (``saved_programs.py``). JAX is started as the config
    says first, unless it has started (``parallel/devices.py``)."""
    start_jax(config.mesh, config.distributed)
    saved = saved_programs(config, use_compile_cache(config.compile_cache))
    check_one_program(config)
    layout = make_layout(config)
    hp, hp_sharding, hp_axis = placed_hyperparams(config, layout)
    pbt = population.pbt_static(config)
    member_hp = hp if pbt is not None else None  # PBT: the members' values in the state
    parts = Tracing(config, layout, member_hp)
    init_args = init_arguments(config, layout, member_hp)

    def compile_chunk(num_updates: int) -> Any:
        def fresh() -> Any:
            program = chunk_program(config, parts.algo.update, num_updates, hp_axis, pbt, layout)
            shardings = jax.tree.map(lambda leaf: leaf.sharding, template)
            lowered = jax.jit(
                program,
                in_shardings=(shardings, hp_sharding),
                # metrics whole on every device: small, and every process reads them
                out_shardings=(shardings, layout.replicated),
                donate_argnums=0,
            ).lower(template, hp)
            return compile_lowered(parts, lowered)

        compiled = saved.compiled(f"chunk-{num_updates}", fresh)
        release_freed_memory()  # what compiling freed, returned to the host (run/heap.py)
        return compiled

    upc = schedule.updates_per_chunk(config)
    beside = ThreadPoolExecutor(1, thread_name_prefix="nnxrl-init")
    try:  # on an error or Ctrl-C here, init's compile is not waited for
        init_job, template = init_beside(saved, parts, init_args, beside, run_init)
        chunks = {upc: compile_chunk(upc)}
        init = init_job.result()
    finally:
        beside.shutdown(wait=False)
    check_fits(config, {"init": saved.need("init"), "a chunk": saved.need(f"chunk-{upc}")})
    hyperparams_at = scheduled_hyperparams(config, hp, layout)
    evaluate = make_evaluator(config)  # compiled at its first use
    return Programs(
        init, chunks, hp, template, layout, compile_chunk, hyperparams_at, evaluate, parts.idle
    )


def init_beside(
    saved: Any, parts: Tracing, args: tuple, pool: Executor, run: bool
) -> tuple[Future, Any]:
    """init (an ``Init``), compiled on ``pool`` while the caller compiles the chunk, and
    the RunState template (shapes, dtypes, shardings) the chunk is lowered with. XLA
    compiles one program on about 1.5 of 2 cores, so the two at once take less wall time
    (``benchmarks/first_update.py``, 64 envs, medians of 3: the first update came
    59.2 -> 52.8 s after start on Craftax-Symbolic, 25.8 -> 23.1 s on Classic). With
    ``run``, init is dispatched as soon as it is compiled, so that it runs beside the
    chunk's compile too. init is traced and lowered here, so that tracing stays on one
    thread; a saved init is loaded here."""
    if saved.holds("init"):
        lower = partial(lower_init, parts, args)
        loaded = saved.compiled("init", lambda: compile_lowered(parts, lower(), init=True))
        done: Future = Future()
        done.set_result(Init(loaded, args, loaded(*args) if run else None))
        return done, state_template(loaded)
    lowered = lower_init(parts, args)
    check_state_fits(parts.config, lowered.out_info)
    parts.options, parts.init_options  # noqa: B018  (settled here, before the two compile)
    return pool.submit(compile_init, saved, parts, lowered, args, run), lowered.out_info


def compile_init(saved: Any, parts: Tracing, lowered: Any, args: tuple, run: bool) -> Init:
    """init compiled (and saved), the memory its compile freed returned to the host at
    once, before the chunk's compile peaks, and with ``run`` its first state dispatched
    (JAX returns at once; the state is computed while the chunk compiles)."""
    program = saved.compiled("init", partial(compile_lowered, parts, lowered, init=True))
    release_freed_memory()
    return Init(program, args, program(*args) if run else None)


@dataclass
class Init:
    """() -> the first RunState of every member: ``program`` run on ``args``. ``ran``,
    if given, is a state it was already dispatched to compute (``init_beside``): the
    first call gives that one, as the chunk donates the state it is given; every later
    call runs the program again."""

    program: Any
    args: tuple
    ran: Any = None

    def __call__(self) -> Any:
        state, self.ran = self.ran, None
        return self.program(*self.args) if state is None else state


class Tracing:
    """What compiling a program needs, built on first use (a loaded program needs
    none of it): the algorithm, the state's shardings and the XLA options."""

    def __init__(self, config: config_lib.Config, layout: Layout, member_hp: Any) -> None:
        self.config, self.layout, self.member_hp = config, layout, member_hp

    @property
    def idle(self) -> bool:
        """Nothing was traced: every program was loaded."""
        return "algo" not in vars(self)

    @cached_property
    def algo(self) -> BuiltAlgorithm:
        return build_algorithm(population.program_config(self.config))

    @cached_property
    def shardings(self) -> Any:
        """Every leaf split along its seed axis, and the env axes (found by shaping the
        state twice) over the env shards."""
        layout, config = self.layout, self.config
        shardings: Any = layout.by_seed
        if layout.env_shards > 1:
            static = population.program_config(config)
            shardings = state_shardings(
                layout,
                jax.eval_shape(lambda: self.algo.init(jax.random.key(0))),
                state_shape_at(static, 2 * config.env.num_envs),
                config.env.num_envs,
            )
        if self.member_hp is not None:  # the members' values travel in the state, split like it
            shardings = with_member_hyperparams(shardings, self.member_hp, layout)
        return shardings

    @cached_property
    def options(self) -> dict[str, Any]:
        """The run's XLA options (``compiler_options``); {} once XLA refused them."""
        return compiler_options(self.algo.env_spec, self.config.fast_compile)

    @cached_property
    def init_options(self) -> dict[str, Any]:
        """init's XLA options (``init_compiler_options``); {} once XLA refused any."""
        return init_compiler_options(self.algo.env_spec, self.config.fast_compile)


def chunk_program(
    config: config_lib.Config,
    update_fn: Any,
    num_updates: int,
    hp_axis: int | None,
    pbt: Any,
    layout: Layout | None = None,
) -> Any:
    """(state, hp) -> (state, metrics) of ``num_updates`` updates of every member: the
    guarded chunk mapped over members (``members.py``), each device mapping its own
    seeds (``mesh.per_seed_shard``), then, with PBT, its step across every member
    (``sweeps/pbt.py``). A plain run stops every seed at a non-finite value; in a sweep
    each member that meets one keeps its last good state and the others train on
    (``chunk.py``). ``layout`` None: one device."""
    shards = 1 if layout is None else layout.seed_shards
    local = population.num_members(config) // shards  # members on each device
    guard_axes = ((SEED_AXIS,) if local > 1 else ()) + ((SEEDS,) if shards > 1 else ())
    one_chunk = partial(
        train_chunk,
        update_fn=update_fn,
        num_updates=num_updates,
        axis_name=None if config.is_sweep or not guard_axes else guard_axes,
    )
    hp_axis = 0 if pbt is not None else hp_axis  # PBT: each member's values, from its state
    members = over_members(one_chunk, local, (0, hp_axis), SEED_AXIS)
    program = members if shards == 1 else per_seed_shard(members, layout, hp_axis)
    return program if pbt is None else partial(pbt_chunk, train_members=program, s=pbt)


def placed_hyperparams(config: config_lib.Config, layout: Any) -> tuple[Any, Any, int | None]:
    """The traced coefficients on the devices, their sharding and vmap axis: a
    sweep's one setting's per member, split like the members; else one, replicated."""
    if config.is_sweep:
        return jax.device_put(population_hyperparams(config), layout.by_seed), layout.by_seed, 0
    hp = jax.device_put(hyperparams_from(config), layout.replicated)
    return hp, layout.replicated, None


def scheduled_hyperparams(config: config_lib.Config, hp: Any, layout: Any) -> Any:
    """update -> the traced values a chunk starting at that update trains with:
    ``hp`` throughout, or with an ``hp_schedule`` the values then in force
    (``config/hp_schedule.py``), placed from NumPy once per change, like ``hp``."""
    if not config.hp_schedule:
        return lambda update: hp
    plain = dataclasses.replace(config, hp_schedule=())

    @cache
    def placed(values: tuple) -> Any:
        config = config_lib.with_values(plain, dict(values))
        return jax.device_put(hyperparams_from(config), layout.replicated)

    return lambda update: placed(tuple(hp_schedule.values_at(config.hp_schedule, update).items()))


def init_arguments(config: config_lib.Config, layout: Layout, member_hp: Any) -> tuple:
    """init's arguments: the base seed, the seed index of every member (member m trains
    seed m % num_seeds: the same key as that seed of a run of its own) and, with PBT,
    each member's values [M] to hold in its state."""
    base_seed = jax.device_put(np.uint32(config.seed), layout.replicated)
    seeds = np.arange(population.num_members(config), dtype=np.int32) % config.num_seeds
    return base_seed, jax.device_put(seeds, layout.by_seed), member_hp


def lower_init(parts: Tracing, args: tuple) -> Any:
    """init of every member, lowered: (base seed, seed indices, member values) -> the
    first RunState of each."""
    algo, by_seed, replicated = parts.algo, parts.layout.by_seed, parts.layout.replicated

    def init_seeds(base_seed: jax.Array, indices: jax.Array, member_hp: Any) -> Any:
        keys = jax.vmap(seed_key, in_axes=(None, 0))(base_seed, indices)
        states = over_members(algo.init, indices.shape[0], (0,), SEED_AXIS)(keys)
        return states if member_hp is None else states.replace(hyperparams=member_hp)

    return jax.jit(
        init_seeds, in_shardings=(replicated, by_seed, by_seed), out_shardings=parts.shardings
    ).lower(*args)


def compile_lowered(parts: Tracing, lowered: Any, init: bool = False) -> Any:
    """``lowered`` compiled with the run's XLA options (init's, with ``init``). Options
    XLA refuses are dropped, for every program after it too."""
    options = parts.init_options if init else parts.options
    try:
        return lowered.compile(options)
    except Exception as e:  # an XLA release without the option: run without it
        if not options:
            raise
        print(
            f"nnxrl: XLA options {options} not accepted ({e}); Craftax resets on CPU will be slow",
            file=sys.stderr,
        )
        parts.options = parts.init_options = {}
        return lowered.compile({})


def state_template(init_compiled: Any) -> Any:
    """The RunState's shapes, dtypes and shardings (all members), from compiled init."""
    return jax.tree.map(
        lambda x, sharding: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=sharding),
        init_compiled.out_info,
        init_compiled.output_shardings,
    )


def with_member_hyperparams(shardings: Any, hp: Any, layout: Any) -> Any:
    """The state's shardings with its ``hyperparams`` split along the members, like
    the rest (one sharding for every leaf stays as it is)."""
    if not hasattr(shardings, "replace"):
        return shardings
    return shardings.replace(hyperparams=jax.tree.map(lambda _: layout.by_seed, hp))


def population_hyperparams(config: config_lib.Config) -> Any:
    """A sweep's traced coefficients per member: every field [settings x seeds], member
    m holding those of its setting m // num_seeds."""
    per_setting = [
        hyperparams_from(population.setting_config(config, index))
        for index, _ in population.settings(config)
    ]
    members = [hp for hp in per_setting for _ in range(config.num_seeds)]
    return jax.tree.map(lambda *values: np.stack(values), *members)


def check_one_program(config: config_lib.Config) -> None:
    """A sweep whose settings differ in untraced keys is several programs."""
    from nnxrl.sweeps import space as sweep_lib

    traced = config_lib.traced_keys(config)
    if config.is_sweep and len(sweep_lib.groups(config.sweep, traced)) > 1:
        raise config_lib.ConfigError(
            f"sweep: {', '.join(sweep_lib.untraced_keys(config.sweep, traced))} "
            "take several values, so the sweep is several programs, one per group; train "
            "it with nnxrl.train_groups(config, out_dir) (a RunResult per group) or "
            "`nnxrl train`, which run them one after another"
        )


@dataclass(frozen=True)
class BuiltAlgorithm:
    init: Any
    update: Any
    env_spec: EnvSpec


def build_algorithm(config: config_lib.Config) -> BuiltAlgorithm:
    """The env, the add-on and the algorithm ``config`` names, bound together."""
    env = make_env(config.env)
    addon = addon_for(config, env.spec, schedule.minibatches(config))
    algo = make_algorithm(config, env, addon, shuffle_groups(config))
    return BuiltAlgorithm(algo.init, algo.update, env.spec)


def state_shape_at(config: config_lib.Config, num_envs: int) -> Any:
    """One seed's RunState shapes with ``num_envs`` envs (``mesh.state_shardings``
    compares two counts to find the env axes)."""
    algo = build_algorithm(with_num_envs(config, num_envs))
    return jax.eval_shape(lambda: algo.init(jax.random.key(0)))
