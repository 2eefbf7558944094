"""run/programs.py: what compile_programs gives the run loop (init of every member,
chunk programs compiled once per length, the state's template), seed keys, a sweep's
hyperparameters per member, and a sweep of several programs refused."""

from __future__ import annotations

import re
import threading
from pathlib import Path

import jax
import numpy as np
import pytest

from nnxrl import config as config_lib
from nnxrl.run.algorithms import hyperparams_from
from nnxrl.run.programs import (
    Init,
    build_algorithm,
    check_one_program,
    chunk_program,
    compile_programs,
    population_hyperparams,
    seed_key,
)

CARTPOLE = Path(__file__).parents[1] / "configs" / "ppo-cartpole.yaml"
TINY = [
    "num_seeds=2",
    "env.num_envs=4",
    "ppo.num_steps=8",
    "ppo.num_minibatches=2",
    "ppo.num_epochs=1",
    "network.width=16",
    "total_env_steps=256",
    "logging.updates_per_chunk=2",
    "logging.backends=[]",
]


@pytest.fixture(scope="module")
def compiled() -> tuple:
    """The programs and (program, thread) of each XLA compile (JAX reports one on a
    hit in its persistent cache too; saved programs, which compile nothing, are off)."""
    threads: list[tuple[str, str]] = []

    def on_span(event: str, start: float, end: float, fun_name: str = "", **_: object) -> None:
        if event == "/jax/core/compile/backend_compile_duration":
            threads.append((fun_name, threading.current_thread().name))

    jax.monitoring.register_event_time_span_listener(on_span)
    try:
        config = config_lib.load(CARTPOLE, [*TINY, "compile_cache.save_programs=false"])
        programs = compile_programs(config, run_init=True)
        return programs, threads, programs.init.ran
    finally:
        jax.monitoring.unregister_event_time_span_listener(on_span)


@pytest.fixture(scope="module")
def programs(compiled):
    return compiled[0]


def test_init_compiles_on_a_thread_of_its_own_beside_the_chunk(compiled):
    """XLA uses about 1.5 of 2 cores on one program: init is compiled beside the chunk."""
    threads = dict(compiled[1])
    assert threads["jit(init_seeds)"] == "nnxrl-init_0"
    assert threads["jit(train_chunk)"] == threading.current_thread().name


def test_seed_keys_fold_the_index_into_the_base_seed():
    a, b = (jax.random.key_data(seed_key(np.uint32(7), np.int32(i))) for i in (0, 1))
    expected = jax.random.key_data(jax.random.fold_in(jax.random.key(7), 0))
    np.testing.assert_array_equal(a, expected)
    assert not np.array_equal(a, b)


def test_init_gives_every_member_a_state_matching_the_template(programs):
    state = programs.init()
    leaves, shapes = jax.tree.leaves(state), jax.tree.leaves(programs.template)
    assert len(leaves) == len(shapes)
    for leaf, shape in zip(leaves, shapes, strict=True):
        assert leaf.shape == shape.shape and leaf.dtype == shape.dtype
        assert leaf.shape[0] == 2  # the member (seed) axis
    weights = jax.tree.leaves(state.params)
    assert any(not np.array_equal(w[0], w[1]) for w in weights)  # the seeds start apart


def test_a_chunk_program_is_compiled_once_per_length(programs):
    assert set(programs.chunk_programs) == {2}
    assert programs.chunk(2) is programs.chunk(2)
    one = programs.chunk(1)  # a resumed run's last chunk may be shorter
    assert programs.chunk(1) is one and set(programs.chunk_programs) == {1, 2}
    state, metrics = one(programs.init(), programs.hp)
    assert metrics["loss/total"].shape == (2, 1)
    assert np.isfinite(np.asarray(metrics["loss/total"])).all()
    assert jax.tree.leaves(state)[0].shape[0] == 2


@pytest.mark.parametrize("seeds", [1, 2])
def test_a_run_of_one_seed_has_no_member_axis_in_its_products(seeds):
    """Vmapped over one member, every matrix product would carry a batch axis of size
    1, which XLA's CPU backend computes through a transposed copy (run/members.py)."""
    config = config_lib.load(CARTPOLE, [*TINY, f"num_seeds={seeds}"])
    algo = build_algorithm(config)
    one = jax.eval_shape(algo.init, jax.random.key(0))
    state = jax.tree.map(lambda x: jax.ShapeDtypeStruct((seeds, *x.shape), x.dtype), one)
    program = chunk_program(config, algo.update, 1, None, None)
    text = str(jax.make_jaxpr(program)(state, hyperparams_from(config)))
    batch_axes = re.findall(
        r"dot_general\[dimension_numbers=\(\(\[\d*\], \[\d*\]\), \((\[.*?\])", text
    )
    assert batch_axes and (set(batch_axes) == {"[]"}) == (seeds == 1), set(batch_axes)


def test_a_sweeps_hyperparameters_are_per_member_setting_major():
    config = config_lib.load(
        CARTPOLE, [*TINY, "num_seeds=3", "sweep.grid={ppo.learning_rate: [0.001, 0.002]}"]
    )
    hp = population_hyperparams(config)
    np.testing.assert_allclose(hp.learning_rate, [0.001] * 3 + [0.002] * 3)
    assert hp.gamma.shape == (6,)


def test_a_sweep_of_several_programs_is_refused_naming_train_groups():
    config = config_lib.load(
        CARTPOLE, [*TINY, "sweep.grid={network.width: [16, 32]}", "sweep.allow_recompile=true"]
    )
    with pytest.raises(config_lib.ConfigError, match=r"network.width .*nnxrl.train_groups"):
        check_one_program(config)
    check_one_program(config_lib.load(CARTPOLE, TINY))  # one program: nothing to say


def test_fast_compile_reaches_the_evaluation_and_init_compiles_fast_on_cpu_anyway():
    """fast_compile=true compiles with XLA's backend optimisations and CPU fusion
    emitters off: the in-run evaluation is another program than by default, and the
    chunk trains. init, which runs once, is compiled so on CPU whatever fast_compile
    says: the same program both ways (the optimised HLO, source locations aside)."""

    def compiled(fast: str) -> tuple[str, str, dict]:
        overrides = [*TINY, "compile_cache.enabled=false", f"fast_compile={fast}"]
        overrides += ["evaluation.every_updates=2", "evaluation.episodes=2"]
        programs = compile_programs(config_lib.load(CARTPOLE, overrides))
        state, metrics = programs.chunk(2)(programs.init(), programs.hp)
        evaluation = programs.evaluate.lower(state, np.int32(2)).compile()
        return optimised(programs.init.program), optimised(evaluation), jax.device_get(metrics)

    fast, default = compiled("true"), compiled("false")
    assert fast[0] == default[0] and fast[1] != default[1]
    assert np.isfinite(fast[2]["loss/total"]).all()
    # the same updates, up to float rounding of other machine code
    np.testing.assert_allclose(fast[2]["loss/total"], default[2]["loss/total"], rtol=1e-3)


def optimised(program) -> str:
    """A compiled program's optimised HLO without its source locations (which name
    the line and column each was traced from)."""
    text = re.sub(r", metadata=\{[^}]*\}", "", program.as_text())
    return "\n".join(line for line in text.splitlines() if "file_name_id=" not in line)


def test_init_gives_the_state_it_ran_beside_the_chunk_once_then_runs_again(compiled):
    """A run from update 0 dispatches init as soon as it is compiled; that state is the
    one init gives, and only once: the chunk donates (frees) the state it is given."""
    ran = compiled[2]
    again = compiled[0].init()
    assert ran is not None and again is not ran
    for a, b in zip(jax.tree.leaves(ran), jax.tree.leaves(again), strict=True):
        np.testing.assert_array_equal(
            np.asarray(jax.random.key_data(a) if is_key(a) else a),
            np.asarray(jax.random.key_data(b) if is_key(b) else b),
        )
    calls = []
    init = Init(lambda *args: calls.append(args) or len(calls), ("seed",), ran="dispatched")
    assert [init(), init(), init()] == ["dispatched", 1, 2]


def is_key(x) -> bool:
    return jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key)
