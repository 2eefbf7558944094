"""The other JAX suites' adapters (jumanji:, xland:, navix:, pgx:, popgym:) against each suite's
own API: every step of nnxrl's batched, self-resetting env is compared with a
hand-rolled loop over the suite's reset and step, one env at a time, with the same
keys and actions. Each suite's tests skip without its extra."""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
from dataclasses import dataclass, field
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from nnxrl.config import ConfigError, EnvConfig
from nnxrl.envs import check_env_config, make_env
from nnxrl.envs.base import legal_actions
from nnxrl.envs.compiler_options import FAST_COMPILE_CPU

ROOT = Path(__file__).parents[1]


@dataclass(frozen=True)
class Case:
    env_id: str
    package: str
    kwargs: dict = field(default_factory=dict)
    time_limit: int | None = None  # the episode length a truncation has
    steps: int = 96  # of the compared rollout
    num_envs: int = 6
    legal_only: bool = True  # the rollout's random actions are legal ones
    # the rollouts compiled with FAST_COMPILE_CPU (sooner, running slower); off where
    # running dominates: POPGym Arcade's 128 x 128 frames, 15 s against 1.8 s unoptimised
    fast_compile: bool = True

    @property
    def compiler_options(self) -> dict | None:
        return FAST_COMPILE_CPU if self.fast_compile else None


CASES = {
    # Snake's mask forbids the moves that end an episode: only an illegal one does
    "jumanji": Case(
        "jumanji:Snake-v1",
        "jumanji",
        {"num_rows": 6, "num_cols": 6, "time_limit": 10},
        time_limit=10,
        steps=48,  # played one env at a time on the suite's side: Jumanji's step is slow
        legal_only=False,
    ),
    # random play reaches the goal in 1 of ~16 episodes of 24 steps
    "xland": Case("xland:MiniGrid-Empty-5x5", "xminigrid", {"max_steps": 24}, 24, 120, 16),
    "navix": Case("navix:Navix-Empty-5x5-v0", "navix", {"max_steps": 24}, 24, 120, 16),
    "pgx": Case("pgx:2048", "pgx", steps=320, num_envs=3),
    # random play fires (1 action of 5) its 26 cards within the 126-move limit about
    # half the time: its 6 episodes end both ways
    "popgym": Case(
        "popgym:CountRecallEasy",
        "popgym_arcade",
        {"partial_obs": True},
        126,
        400,
        2,
        fast_compile=False,
    ),
}


@pytest.fixture(params=list(CASES), scope="module")
def case(request) -> Case:
    pytest.importorskip(CASES[request.param].package)
    return CASES[request.param]


# ----- the suites' own APIs, one env at a time ------------------------------------------
# reset(key) -> (state, obs, legal); step(key, state, action) -> (state, obs, reward,
# ended, terminal, legal): `ended` the suite's own end of an episode, `terminal` whether
# it ended in a terminal state (not by its time limit).


def jumanji_api(case: Case):
    import jumanji

    env = jumanji.make(case.env_id.removeprefix("jumanji:"), **case.kwargs)

    def observe(ts):
        o = ts.observation
        obs = jnp.concatenate([o.grid.reshape(-1), jnp.reshape(o.step_count, (1,))])
        return obs.astype(jnp.float32), o.action_mask

    def reset(key):
        state, ts = env.reset(key)
        return state, *observe(ts)

    def step(key, state, action):
        state, ts = env.step(state, action)
        obs, legal = observe(ts)
        # Snake ends its episodes at the time limit with discount 0 too
        terminal = (ts.discount == 0) & (state.step_count < env.time_limit)
        return state, obs, ts.reward, ts.last(), terminal, legal

    return reset, step


def xland_api(case: Case):
    import xminigrid

    env, params = xminigrid.make(case.env_id.removeprefix("xland:"), **case.kwargs)
    everything = jnp.ones(env.num_actions(params), bool)

    def reset(key):
        ts = env.reset(params, key)
        return ts, ts.observation.astype(jnp.float32), everything

    def step(key, ts, action):
        ts = env.step(params, ts, action)
        obs = ts.observation.astype(jnp.float32)
        return ts, obs, ts.reward, ts.last(), ts.discount == 0, everything

    return reset, step


def navix_api(case: Case):
    import navix

    env = navix.make(case.env_id.removeprefix("navix:"), **case.kwargs)
    everything = jnp.ones(int(env.action_space.maximum) + 1, bool)

    def reset(key):
        ts = env.reset(key)
        return ts, ts.observation.astype(jnp.float32), everything

    def step(key, ts, action):
        ts = env.step(ts, action)
        obs = ts.observation.astype(jnp.float32)
        return ts, obs, ts.reward, ts.step_type > 0, ts.is_termination(), everything

    return reset, step


def pgx_api(case: Case):
    import pgx

    env = pgx.make(case.env_id.removeprefix("pgx:"))

    def reset(key):
        state = env.init(key)
        return state, state.observation.astype(jnp.float32), state.legal_action_mask

    def step(key, state, action):
        state = env.step(state, action, key)
        obs = state.observation.astype(jnp.float32)
        ended = state.terminated | state.truncated
        return state, obs, state.rewards[0], ended, state.terminated, state.legal_action_mask

    return reset, step


def popgym_api(case: Case):
    import popgym_arcade

    env, params = popgym_arcade.make(case.env_id.removeprefix("popgym:"), **case.kwargs)
    everything = jnp.ones(5, bool)

    def reset(key):
        obs, state = env.reset_env(key, params)
        return state, obs.astype(jnp.float32) / 255.0, everything

    def step(key, state, action):
        obs, state, reward, done, info = env.step_env(key, state, action, params)
        obs = obs.astype(jnp.float32) / 255.0
        return state, obs, reward, done, done & ~info["truncated"], everything

    return reset, step


SUITE_APIS = {
    "jumanji": jumanji_api,
    "xland": xland_api,
    "navix": navix_api,
    "pgx": pgx_api,
    "popgym": popgym_api,
}


def pick(key: jax.Array, legal: jax.Array, legal_only: bool) -> jax.Array:
    """A uniformly random action, a legal one if ``legal_only``."""
    legal = legal if legal_only else jnp.ones_like(legal)
    return jax.random.categorical(key, jnp.where(legal, 0.0, -jnp.inf)).astype(jnp.int32)


# ----- the two rollouts -------------------------------------------------------------------


def env_of(case: Case, num_envs: int | None = None):
    config = EnvConfig(id=case.env_id, num_envs=num_envs or case.num_envs, kwargs=case.kwargs)
    check_env_config(config)
    return make_env(config)


@pytest.fixture(scope="module")
def rollouts(case: Case) -> tuple[dict, dict]:
    keys = jax.random.split(jax.random.key(7), case.steps + 1)
    return adapter_rollout(case, keys), suite_rollout(case, keys)


def adapter_rollout(case: Case, keys: jax.Array) -> dict:
    """nnxrl's env: [T, B] of everything it reports, with the mask of each step."""
    env = env_of(case)

    def rollout(keys):
        obs, state = env.reset(keys[0])
        return jax.lax.scan(functools.partial(adapter_step, env, case), (obs, state), keys[1:])[1]

    steps = jax.jit(rollout, compiler_options=case.compiler_options)(keys)
    return jax.tree.map(np.asarray, steps)


def adapter_step(env, case: Case, carry, key):
    obs, state = carry
    action_key, step_key = jax.random.split(key)
    legal = legal_actions(env, state)
    if legal is None:
        legal = jnp.ones((env.num_envs, env.spec.num_actions), bool)
    action_keys = jax.random.split(action_key, env.num_envs)
    action = jax.vmap(pick, (0, 0, None))(action_keys, legal, case.legal_only)
    state, out = env.step(step_key, state, action)
    return (out.obs, state), {"obs_before": obs, "legal": legal, "action": action, **out._asdict()}


def suite_rollout(case: Case, keys: jax.Array) -> dict:
    """The suite's own reset and step, env by env, with the keys ``from_single`` gives
    each env: the step key split over envs, and a fresh reset key where one ended. Each
    env's steps run in one compiled loop (an eager one dispatches dozens of small ops
    per env and step: about 40 s a suite)."""
    reset, step = SUITE_APIS[case.env_id.split(":")[0]](case)
    env_keys = jax.jit(jax.vmap(functools.partial(keys_of_step, num_envs=case.num_envs)))
    all_keys = env_keys(keys[1:])  # action, step and reset keys: [T, B] each
    first_keys = jax.random.split(keys[0], case.num_envs)
    play = functools.partial(play_one_env, reset, step, case.legal_only)
    play = jax.jit(play, compiler_options=case.compiler_options)
    envs = [play(first_keys[b], [k[:, b] for k in all_keys]) for b in range(case.num_envs)]
    return {k: np.stack([np.asarray(e[k]) for e in envs], axis=1) for k in envs[0]}


def keys_of_step(key: jax.Array, num_envs: int) -> tuple[jax.Array, jax.Array, jax.Array]:
    """One step's action, step and reset keys per env, as the adapter splits them."""
    action_key, step_key = jax.random.split(key)
    env_step_key, reset_key = jax.random.split(step_key)
    return tuple(jax.random.split(k, num_envs) for k in (action_key, env_step_key, reset_key))


def play_one_env(reset, step, legal_only: bool, first_key, env_keys) -> dict:
    """One env from ``reset(first_key)`` through a step per row of ``env_keys`` (action,
    step and reset keys): a random action, the suite's step, its reset where the
    episode ended; what each step reports, [T]."""

    def body(carry, keys):
        state, legal = carry
        action_key, step_key, reset_key = keys
        action = pick(action_key, legal, legal_only)
        state, final, reward, ended, terminal, legal = step(step_key, state, action)
        state, obs, legal = jax.lax.cond(
            ended, lambda: reset(reset_key), lambda: (state, final, legal)
        )
        seen = (obs, final, reward, ended, terminal, action)
        return (state, legal), dict(zip(REPORTED, seen, strict=True))

    state, _, legal = reset(first_key)
    return jax.lax.scan(body, (state, legal), env_keys)[1]


REPORTED = ("obs", "final_obs", "reward", "ended", "terminal", "action")


# ----- the comparisons ----------------------------------------------------------------------


def test_reset_and_step_have_the_shapes_and_dtypes_of_the_spec(case, rollouts):
    env = env_of(case, num_envs=2)
    obs, state = env.reset(jax.random.key(0))
    assert obs.shape == (2, *env.spec.obs_shape) and obs.dtype == jnp.float32
    steps, _ = rollouts
    T, B = case.steps, case.num_envs
    assert steps["obs"].shape == steps["final_obs"].shape == (T, B, *env.spec.obs_shape)
    assert steps["reward"].shape == (T, B) and steps["reward"].dtype == np.float32
    assert steps["terminated"].dtype == steps["truncated"].dtype == np.bool_
    assert steps["legal"].shape == (T, B, env.spec.num_actions)
    masked = case.env_id.startswith(("jumanji:", "pgx:"))
    assert (env.action_mask is not None) == masked
    if masked:  # a real mask: some steps forbid some actions
        assert not steps["legal"].all() and steps["legal"].any(axis=-1).all()


def test_every_step_matches_the_suites_own_loop(case, rollouts):
    ours, theirs = rollouts
    np.testing.assert_array_equal(ours["action"], theirs["action"])
    ended = ours["terminated"] | ours["truncated"]
    np.testing.assert_array_equal(ended, theirs["ended"])
    assert ended.any(), "the rollout must end episodes to compare their resets"
    np.testing.assert_array_equal(ours["terminated"], theirs["ended"] & theirs["terminal"])
    np.testing.assert_allclose(ours["reward"], theirs["reward"], rtol=1e-6)
    # after an end, obs is the new episode's first and final_obs the old one's last
    np.testing.assert_array_equal(ours["obs"], theirs["obs"])
    np.testing.assert_array_equal(ours["final_obs"], theirs["final_obs"])
    assert not np.array_equal(ours["obs"][ended], ours["final_obs"][ended])
    np.testing.assert_array_equal(ours["obs"][~ended], ours["final_obs"][~ended])


def test_episode_returns_and_lengths_are_the_suites(case, rollouts):
    ours, theirs = rollouts
    ended = theirs["ended"]
    for b in range(case.num_envs):
        start, total = 0, 0.0
        for t in range(case.steps):
            total += float(theirs["reward"][t, b])
            if ended[t, b]:
                assert ours["episode"]["length"][t, b] == t + 1 - start
                np.testing.assert_allclose(ours["episode"]["return"][t, b], total, rtol=1e-5)
                start, total = t + 1, 0.0


def test_a_time_limit_truncates_and_a_terminal_state_terminates(case, rollouts):
    ours, _ = rollouts
    length = ours["episode"]["length"]
    assert ours["terminated"].any(), "the rollout must reach terminal states"
    assert not (ours["terminated"] & ours["truncated"]).any()
    if case.time_limit is None:  # the suite has no time limit
        assert not ours["truncated"].any()
        return
    assert ours["truncated"].any(), "the rollout must reach the time limit"
    assert (length[ours["truncated"]] == case.time_limit).all()
    assert (length[ours["terminated"]] <= case.time_limit).all()


# ----- ids and options checked by name ------------------------------------------------------

BAD_CONFIGS = {
    "jumanji": [
        (
            {"id": "jumanji:Snake-v2"},
            "unknown Jumanji environment 'jumanji:Snake-v2'; did you mean jumanji:Snake-v1",
        ),
        (
            {"id": "jumanji:Snake-v1", "kwargs": {"time_limt": 5}},
            "env.kwargs.time_limt: .*did you mean time_limit",
        ),
        (
            {"id": "jumanji:Snake-v1", "kwargs": {"time_limit": "long"}},
            "env.kwargs.time_limit: expected an integer",
        ),
        (
            {"id": "jumanji:BinPack-v2"},
            "action space; nnxrl's Jumanji adapter takes envs with one discrete action",
        ),
    ],
    "xland": [
        ({"id": "xland:XLand-MiniGrid-R1-9x9"}, "must be downloaded .* use a MiniGrid-\\* id"),
        (
            {"id": "xland:MiniGrid-Empty-5x5", "kwargs": {"view_size": 0}},
            "env.kwargs.view_size: 0 must be at least 1",
        ),
    ],
    "navix": [
        ({"id": "navix:Navix-Empty-5x5-v9"}, "did you mean navix:Navix-Empty-5x5-v0"),
        (
            {"id": "navix:Navix-Empty-5x5-v0", "kwargs": {"observation": "pixels"}},
            "observation: 'pixels' is not one of",
        ),
    ],
    "pgx": [
        (
            {"id": "pgx:minatar-breakout"},
            "train gymnax's own MinAtar envs instead \\(env.id: Breakout-MinAtar\\)",
        ),
        ({"id": "pgx:tic_tac_toe"}, "is a two-player game"),
        (
            {"id": "pgx:2048", "kwargs": {"size": 5}},
            "env.kwargs.size: pgx:2048 has no option 'size'.*none",
        ),
        ({"id": "pgx:2048", "reset_ratio": 2}, "env.reset_ratio: 2 is for Craftax envs only"),
    ],
    "popgym": [
        ({"id": "popgym:CountRecallEasey"}, "did you mean popgym:CountRecallEasy"),
        (
            {"id": "popgym:CountRecallEasy", "kwargs": {"partial_ob": True}},
            "env.kwargs.partial_ob: .*did you mean partial_obs",
        ),
        (
            {"id": "popgym:CountRecallEasy", "kwargs": {"obs_size": 64}},
            "env.kwargs.obs_size: 64 is not one of POPGym Arcade's frame sizes: 128, 256",
        ),
    ],
}


@pytest.mark.parametrize(
    "suite, env, message", [(s, e, m) for s, cases in BAD_CONFIGS.items() for e, m in cases]
)
def test_a_bad_id_or_option_is_refused_by_name_before_anything_is_written(
    suite, env, message, tmp_path
):
    from nnxrl import config as config_lib
    from nnxrl.cli import main

    pytest.importorskip(CASES[suite].package)
    with pytest.raises(ConfigError, match=message):
        config_lib.check_parts(config_lib.from_dict({"env": env}))
    out = tmp_path / "run"
    overrides = [f"env.{k}={v}" for k, v in env.items()]
    args = ["train", str(ROOT / "configs/ppo-cartpole.yaml"), "--out", str(out)]
    assert main(args + sum((["--set", o] for o in overrides), [])) == 2
    assert not out.exists()


def test_a_suite_without_its_extra_says_which_command_installs_it(monkeypatch):
    from nnxrl.envs import suites

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "navix" else real(name, *a)
    )
    with pytest.raises(ConfigError, match="needs the Navix package.*`uv sync --extra navix`"):
        check_env_config(EnvConfig(id="navix:Navix-Empty-5x5-v0"))
    assert suites.suite_ids(suites.suite_of("navix:x")) == []


def test_popgym_partial_obs_hides_what_the_full_frame_shows():
    """The same game, keys and actions: the POMDP's frames differ from the MDP's, its
    rewards and ends do not."""
    pytest.importorskip("popgym_arcade")
    case = CASES["popgym"]
    keys = jax.random.split(jax.random.key(3), 13)
    full = adapter_rollout(dataclasses.replace(case, kwargs={}, steps=12), keys)
    partial = adapter_rollout(dataclasses.replace(case, steps=12), keys)
    np.testing.assert_array_equal(full["reward"], partial["reward"])
    np.testing.assert_array_equal(full["terminated"], partial["terminated"])
    assert not np.array_equal(full["obs"], partial["obs"])
