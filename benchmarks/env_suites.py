"""Each env suite's adapter beside the suite's own step loop, and training on it.

    uv run python benchmarks/env_suites.py              # every suite installed
    uv run python benchmarks/env_suites.py --suite pgx  # one

Per suite, 64 envs of its shipped config's env, random (legal) actions, in one jitted
scan of 1024 steps; medians of 5 timed runs after a warm-up:

- suite's own loop: the suite's reset and step vmapped over the envs, with its own
  auto-reset (Jumanji's AutoResetWrapper, XLand-MiniGrid's GymAutoResetWrapper,
  Navix's built-in one, Pgx's ``experimental.auto_reset``), nothing else;
- nnxrl's env: ``make_env`` of the same env (nnxrl's reset of ended envs keeping the
  final observation, episode statistics, the mask);
- training: the shipped config at 64 envs x 32 steps, its env steps/s over the whole
  run after compilation (compile seconds apart).
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import tempfile
import time
from collections.abc import Callable

from nnxrl.parallel.devices import use_cpu_devices

use_cpu_devices()  # before JAX starts: one CPU device per core, as the CLI does

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

from nnxrl import config as C  # noqa: E402
from nnxrl.envs import make_env  # noqa: E402
from nnxrl.envs.base import legal_actions  # noqa: E402
from nnxrl.run.training import run_training  # noqa: E402

NUM_ENVS, STEPS = 64, 1024
# suite -> (its package, the shipped config, the algorithm's section)
SUITES = {
    "jumanji": ("jumanji", "configs/ppo-jumanji-snake.yaml", "ppo"),
    "xland": ("xminigrid", "configs/pqn-xland-empty.yaml", "pqn"),
    "navix": ("navix", "configs/ppo-navix-empty.yaml", "ppo"),
    "pgx": ("pgx", "configs/ppo-pgx-2048.yaml", "ppo"),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", choices=list(SUITES), action="append")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    rows = []
    for suite in args.suite or list(SUITES):
        package, path, algo = SUITES[suite]
        if importlib.util.find_spec(package) is None:
            print(f"{suite}: not installed (uv sync --extra {suite}); skipped")
            continue
        config = C.load(path, [f"env.num_envs={NUM_ENVS}"])
        own = timed(own_loop(suite, config), args.repeats)
        ours = timed(nnxrl_loop(config), args.repeats)
        compile_s, train = training_sps(path, algo)
        rows.append((config.env.id, own, ours, train, compile_s))
        print(f"{config.env.id}: done", flush=True)
    print_table(rows)


def timed(rollout: Callable[[jax.Array], jax.Array], repeats: int) -> float:
    """Env steps/s of ``rollout`` (NUM_ENVS x STEPS steps), median of ``repeats``."""
    fn = jax.jit(rollout)
    fn(jax.random.key(0)).block_until_ready()
    times = []
    for i in range(repeats):
        start = time.perf_counter()
        fn(jax.random.key(i + 1)).block_until_ready()
        times.append(time.perf_counter() - start)
    return NUM_ENVS * STEPS / statistics.median(times)


def nnxrl_loop(config: C.Config) -> Callable[[jax.Array], jax.Array]:
    env = make_env(config.env)
    everything = jnp.ones((NUM_ENVS, env.spec.num_actions), bool)

    def rollout(key):
        _, state = env.reset(key)

        def body(state, key):
            action_key, step_key = jax.random.split(key)
            legal = legal_actions(env, state)
            action = random_action(action_key, everything if legal is None else legal)
            state, out = env.step(step_key, state, action)
            return state, out.reward.sum() + out.obs.mean()

        return jax.lax.scan(body, state, jax.random.split(key, STEPS))[1].sum()

    return rollout


def random_action(key: jax.Array, legal: jax.Array) -> jax.Array:
    """[B] uniformly random legal actions."""
    return jax.random.categorical(key, jnp.where(legal, 0.0, -jnp.inf)).astype(jnp.int32)


def own_loop(suite: str, config: C.Config) -> Callable[[jax.Array], jax.Array]:
    """The suite's own API: (reset(keys [B]) -> state, step(keys, state, actions) ->
    (state, obs [B, ...], reward [B], legal [B, A])) scanned with random legal actions;
    both loops use each step's observations (as an agent would), so neither is cut
    away by the compiler."""
    name = config.env.id.split(":", 1)[1]
    reset, step, num_actions = OWN_APIS[suite](name, config.env.kwargs)
    everything = jnp.ones((NUM_ENVS, num_actions), bool)

    def rollout(key):
        state = reset(jax.random.split(key, NUM_ENVS))
        legal = everything

        def body(carry, key):
            state, legal = carry
            action_key, step_key = jax.random.split(key)
            action = random_action(action_key, legal)
            state, obs, reward, legal = step(jax.random.split(step_key, NUM_ENVS), state, action)
            return (state, everything if legal is None else legal), reward.sum() + obs.mean()

        return jax.lax.scan(body, (state, legal), jax.random.split(key, STEPS))[1].sum()

    return rollout


def jumanji_api(name: str, kwargs: dict):
    import jumanji
    from jumanji.wrappers import AutoResetWrapper

    env = AutoResetWrapper(jumanji.make(name, **kwargs))

    def step(keys, state, action):
        state, ts = jax.vmap(env.step)(state, action)
        obs = ts.observation.grid
        return state, obs, ts.reward, ts.observation.action_mask

    return (lambda keys: jax.vmap(env.reset)(keys)[0]), step, env.action_spec.num_values


def xland_api(name: str, kwargs: dict):
    import xminigrid
    from xminigrid.wrappers import GymAutoResetWrapper

    env, params = xminigrid.make(name, **kwargs)
    env = GymAutoResetWrapper(env)

    def step(keys, ts, action):
        ts = jax.vmap(env.step, (None, 0, 0))(params, ts, action)
        return ts, ts.observation, ts.reward, None

    reset = jax.vmap(env.reset, (None, 0))
    return (lambda keys: reset(params, keys)), step, env.num_actions(params)


def navix_api(name: str, kwargs: dict):
    import navix

    env = navix.make(name, **kwargs)

    def step(keys, ts, action):  # Navix resets an ended episode on the next step
        ts = jax.vmap(env.step)(ts, action)
        return ts, ts.observation, ts.reward, None

    return jax.vmap(env.reset), step, int(env.action_space.maximum) + 1


def pgx_api(name: str, kwargs: dict):
    import pgx
    from pgx.experimental import auto_reset

    env = pgx.make(name, **kwargs)
    step_fn = jax.vmap(auto_reset(env.step, env.init))

    def step(keys, state, action):
        state = step_fn(state, action, keys)
        return state, state.observation, state.rewards[:, 0], state.legal_action_mask

    return jax.vmap(env.init), step, env.num_actions


OWN_APIS = {"jumanji": jumanji_api, "xland": xland_api, "navix": navix_api, "pgx": pgx_api}


def training_sps(path: str, algo: str) -> tuple[float, float]:
    """(compile seconds, env steps/s) of the shipped config at 64 envs x 32 steps."""
    overrides = [
        f"env.num_envs={NUM_ENVS}",
        f"{algo}.num_steps=32",
        f"{algo}.num_minibatches=4",
        "total_env_steps=65536",
        "logging.backends=[]",
        "compile_cache.enabled=false",
        "checkpoint.enabled=false",
    ]
    with tempfile.TemporaryDirectory() as out:
        result = run_training(C.load(path, overrides), out, quiet=True)
    return result.compile_seconds, result.env_steps_per_second


def print_table(rows: list[tuple]) -> None:
    print(f"\n{NUM_ENVS} envs, random legal actions; training: the shipped config at 64 x 32")
    print(
        "| env | suite's own loop, steps/s | nnxrl env, steps/s | nnxrl / own | training, "
        "env steps/s | compile s |"
    )
    print("|---|---:|---:|---:|---:|---:|")
    for env_id, own, ours, train, compile_s in rows:
        print(
            f"| {env_id} | {own:,.0f} | {ours:,.0f} | {ours / own:.2f}x | {train:,.0f} | "
            f"{compile_s:.1f} |"
        )


if __name__ == "__main__":
    main()
