"""The least a CartPole PPO program costs in plain JAX: a floor under nnxrl and rejax.

    uv run python benchmarks/ppo_floor.py               # 1 seed
    uv run python benchmarks/ppo_floor.py --seeds 8     # 8 seeds, over one CPU device a core

PPO at the settings of ``benchmarks/peers.py`` (configs/ppo-cartpole.yaml: 4 envs x
128 steps, 4 epochs x 4 minibatches, two tanh layers of 64 per tower, 500k env steps
a seed), written as one jitted function of the seed keys and nothing else: gymnax's
CartPole-v1 with its own auto-reset, GAE, the clipped policy and value losses, Adam
behind a global-norm clip. Everything either library adds is left out: no metrics
beyond one return, no non-finite guard, no time-limit bootstrap, no learning-rate
schedule, no chunks, no orthogonal init (scaled normal weights), no checkpoints.
What it spends to trace and compile, and its env steps per second, bound what any
PPO at this workload can reach on this machine with JAX's compiler. The seeds are
vmapped and, as nnxrl does, split over one CPU device a core.

``--matched`` computes what nnxrl's CartPole config asks beyond rejax: the learning
rate annealed linearly to 0, and the bootstrap through time limits (one batched
critic pass over every step's observation before any reset: r + gamma V(s') where the
episode was cut by its time limit, r where it terminated). ``--save DIR`` writes the
final parameters and optimiser state with Orbax afterwards, as a run's last
checkpoint does (its seconds reported). Timing the whole process (``time uv run
python benchmarks/ppo_floor.py --matched --save DIR``) gives the floor under the
README's first command.

``peers.py`` runs it as a third side beside nnxrl and rejax (``--floor``).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from functools import partial
from typing import Any

LAST = 20
ENVS, STEPS, EPOCHS, MINIBATCHES, TOTAL = 4, 128, 4, 4, 500_000
GAMMA, LAMBDA, CLIP, ENT, VF, LR, MAX_NORM, WIDTH = 0.99, 0.95, 0.2, 0.01, 0.5, 2.5e-4, 0.5, 64


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--matched", action="store_true", help="anneal; bootstrap time limits")
    parser.add_argument("--save", help="a new folder: write the final state there with Orbax")
    args = parser.parse_args()
    print("RESULT " + json.dumps(run_floor(args.seeds, args.matched, args.save)), flush=True)


def run_floor(seeds: int, matched: bool = False, save: str | None = None) -> dict[str, float]:
    """Compile seconds (trace, lower, XLA), env steps/s of the compiled run, the mean
    return of the episodes that ended in each seed's last updates, peak RSS."""
    import jax

    jax.config.update("jax_num_cpu_devices", os.cpu_count() or 1)
    from nnxrl.envs.plotting_imports import deferred_plotting

    deferred_plotting()  # gymnax imported as lean as nnxrl imports it, so as not to slow the floor
    import gymnax  # noqa: F401  (its import is slow: done here, before the clock)
    import jax.numpy as jnp
    import numpy as np
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    devices = jax.devices()[: seeds if seeds < len(jax.devices()) else None]
    devices = devices[: max(d for d in range(1, len(devices) + 1) if seeds % d == 0)]
    by_seed = NamedSharding(Mesh(np.array(devices), ("seed",)), PartitionSpec("seed"))
    keys = jax.device_put(jax.random.split(jax.random.key(0), seeds), by_seed)
    started = time.perf_counter()
    program = jax.jit(jax.vmap(partial(train, matched=matched)), in_shardings=by_seed)
    compiled = program.lower(keys).compile()
    compile_s = time.perf_counter() - started
    started = time.perf_counter()
    returns, final_state = jax.block_until_ready(compiled(keys))
    seconds = time.perf_counter() - started
    save_s = save_with_orbax(final_state, save) if save else 0.0
    import resource

    return {
        "save_s": save_s,
        "compile_s": compile_s,
        "sps": seeds * updates() * ENVS * STEPS / seconds,
        "final_return": float(jnp.mean(returns)),
        "rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def updates() -> int:
    return TOTAL // (ENVS * STEPS)


def save_with_orbax(state: Any, directory: str) -> float:
    """Seconds to import Orbax and write ``state`` into the new folder ``directory``."""
    started = time.perf_counter()
    import orbax.checkpoint as ocp

    with ocp.StandardCheckpointer() as checkpointer:
        checkpointer.save(os.path.abspath(os.path.join(directory, "final")), state)
    return time.perf_counter() - started


def train(key: Any, matched: bool) -> Any:
    """One seed's whole run: init, then ``updates()`` updates; the mean return of the
    episodes that ended during the last ``LAST`` updates, and the final parameters and
    optimiser state."""
    import gymnax
    import jax
    import optax

    env, env_params = gymnax.make("CartPole-v1")
    steps = updates() * EPOCHS * MINIBATCHES
    lr = optax.linear_schedule(LR, 0.0, steps) if matched else LR
    optimiser = optax.chain(optax.clip_by_global_norm(MAX_NORM), optax.adam(lr, eps=1e-5))
    net_key, env_key, key = jax.random.split(key, 3)
    params = init_params(net_key, env.observation_space(env_params).shape[0])
    obs, env_state = jax.vmap(env.reset, (0, None))(jax.random.split(env_key, ENVS), env_params)
    carry = (params, optimiser.init(params), (env_state, obs, jax.numpy.zeros(ENVS)), key)
    step = lambda c, _: update(c, env, env_params, optimiser, matched)  # noqa: E731
    (params, opt_state, *_), (returns, ended) = jax.lax.scan(step, carry, None, updates())
    mean_return = returns[-LAST:].sum() / jax.numpy.maximum(ended[-LAST:].sum(), 1)
    return mean_return, (params, opt_state)


def init_params(key: Any, obs_size: int) -> dict:
    """Actor and critic towers obs -> 64 -> 64 -> out, weights N(0, 1/fan_in)."""
    import jax
    import jax.numpy as jnp

    def tower(key: Any, out: int) -> list:
        sizes = [obs_size, WIDTH, WIDTH, out]
        keys = jax.random.split(key, 3)
        return [
            (jax.random.normal(k, (a, b)) / jnp.sqrt(a), jnp.zeros(b))
            for k, a, b in zip(keys, sizes[:-1], sizes[1:], strict=True)
        ]

    actor, critic = jax.random.split(key)
    return {"actor": tower(actor, 2), "critic": tower(critic, 1)}


def forward(params: dict, obs: Any) -> tuple[Any, Any]:
    import jax.numpy as jnp

    def tower(layers: list, x: Any) -> Any:
        for w, b in layers[:-1]:
            x = jnp.tanh(x @ w + b)
        w, b = layers[-1]
        return x @ w + b

    return tower(params["actor"], obs), tower(params["critic"], obs)[..., 0]


def update(
    carry: tuple, env: Any, env_params: Any, optimiser: Any, matched: bool
) -> tuple[tuple, Any]:
    """Collect a rollout, compute GAE, run the epochs; the summed return and the count
    of the episodes that ended in it."""
    import jax

    params, opt_state, envs, key = carry
    key, rollout_key, epoch_key = jax.random.split(key, 3)
    envs, batch = collect(params, envs, rollout_key, env, env_params)
    if matched:  # V(s') of every step, before any reset; time limits bootstrapped
        next_value = forward(params, batch["final_obs"])[1]
        cut = batch["terminated"]
    else:  # V of the next observation; every end of an episode cuts
        last_value = forward(params, envs[1])[1]
        next_value = jax.numpy.concatenate([batch["value"][1:], last_value[None]])
        cut = batch["done"]
    advantages = gae(batch["reward"], batch["value"], next_value, cut, batch["done"])
    batch = {**batch, "advantage": advantages, "target": advantages + batch["value"]}
    flat = jax.tree.map(lambda x: x.reshape(ENVS * STEPS, *x.shape[2:]), batch)

    def epoch(state: tuple, key: Any) -> tuple[tuple, None]:
        order = jax.random.permutation(key, ENVS * STEPS).reshape(MINIBATCHES, -1)
        minibatches = jax.tree.map(lambda x: x[order], flat)
        return jax.lax.scan(lambda s, mb: (sgd_step(s, mb, optimiser), None), state, minibatches)

    (params, opt_state), _ = jax.lax.scan(
        epoch, (params, opt_state), jax.random.split(epoch_key, EPOCHS)
    )
    ended = (batch["ended_return"].sum(), batch["done"].sum())
    return (params, opt_state, envs, key), ended


def collect(params: dict, envs: tuple, key: Any, env: Any, env_params: Any) -> Any:
    """``STEPS`` steps of the ``ENVS`` envs (gymnax resets an env that ends); ``envs``
    is their state, observation and running episode return, so that the return of
    an episode is recorded where it ends."""
    import jax
    import jax.numpy as jnp

    def step(carry: tuple, key: Any) -> tuple[tuple, dict]:
        env_state, obs, running = carry
        act_key, step_key = jax.random.split(key)
        logits, value = forward(params, obs)
        action = jax.random.categorical(act_key, logits)
        logp = jax.nn.log_softmax(logits)[jnp.arange(ENVS), action]
        next_obs, env_state, reward, terminated, truncated, info = jax.vmap(
            env.step, (0, 0, 0, None)
        )(jax.random.split(step_key, ENVS), env_state, action, env_params)
        done = terminated | truncated  # a time limit ends the episode as death does
        running = running + reward
        record = {"obs": obs, "action": action, "logp": logp, "value": value}
        record |= {"reward": reward, "done": done, "ended_return": jnp.where(done, running, 0.0)}
        record |= {"terminated": terminated, "final_obs": info["final_observation"]}
        return (env_state, next_obs, jnp.where(done, 0.0, running)), record

    return jax.lax.scan(step, envs, jax.random.split(key, STEPS))


def gae(reward: Any, value: Any, next_value: Any, cut: Any, done: Any) -> Any:
    """A_t = delta_t + gamma lambda (1 - done_t) A_{t+1}, delta_t = r_t + gamma (1 -
    cut_t) V'_t - V_t, with V'_t the next state's value; [STEPS, ENVS] each."""
    import jax

    def back(next_advantage: Any, t: tuple) -> tuple[Any, Any]:
        r, v, v_next, c, d = t
        delta = r + GAMMA * (1 - c) * v_next - v
        advantage = delta + GAMMA * LAMBDA * (1 - d) * next_advantage
        return advantage, advantage

    inputs = (reward, value, next_value, cut.astype(reward.dtype), done.astype(reward.dtype))
    return jax.lax.scan(back, jax.numpy.zeros_like(reward[0]), inputs, reverse=True)[1]


def sgd_step(state: tuple, minibatch: dict, optimiser: Any) -> tuple:
    """One Adam step on the clipped policy loss, the clipped value loss and entropy."""
    import jax
    import optax

    params, opt_state = state
    grads = jax.grad(loss)(params, minibatch)
    updates, opt_state = optimiser.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state


def loss(params: dict, mb: dict) -> Any:
    import jax
    import jax.numpy as jnp

    logits, value = forward(params, mb["obs"])
    logp_all = jax.nn.log_softmax(logits)
    logp = jnp.take_along_axis(logp_all, mb["action"][:, None], axis=1)[:, 0]
    advantage = (mb["advantage"] - mb["advantage"].mean()) / (mb["advantage"].std() + 1e-8)
    ratio = jnp.exp(logp - mb["logp"])
    clipped = jnp.clip(ratio, 1 - CLIP, 1 + CLIP)
    policy = -jnp.minimum(ratio * advantage, clipped * advantage).mean()
    value_clipped = mb["value"] + jnp.clip(value - mb["value"], -CLIP, CLIP)
    value_loss = (
        0.5 * jnp.maximum((value - mb["target"]) ** 2, (value_clipped - mb["target"]) ** 2).mean()
    )
    entropy = -(jnp.exp(logp_all) * logp_all).sum(-1).mean()
    return policy + VF * value_loss - ENT * entropy


if __name__ == "__main__":
    main()
