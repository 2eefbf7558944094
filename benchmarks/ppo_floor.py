"""The least PPO program in plain JAX (CartPole, Craftax): the floor peers are measured on.

    uv run python benchmarks/ppo_floor.py               # 1 seed
    uv run python benchmarks/ppo_floor.py --seeds 8     # 8 seeds, over one CPU device a core

PPO at the settings of ``benchmarks/peers.py`` (configs/ppo-cartpole.yaml: 4 envs x
128 steps, 4 epochs x 4 minibatches, two tanh layers of 64 per tower, 500k env steps
a seed), written as one jitted function of the seed keys and nothing else: gymnax's
CartPole-v1 with its own auto-reset, GAE, the clipped policy and value losses, Adam
behind a global-norm clip. Everything either library adds is left out: no metrics
beyond one return, no non-finite guard, no time-limit bootstrap, no learning-rate
schedule, no chunks, no orthogonal init (scaled normal weights), no checkpoints.
What it spends to trace and compile, and its env steps per second, are what a PPO at
this workload costs on this machine with JAX's compiler and nothing more: a floor in
the sense of a measurement (single processes spread; one run may put a library above
it). The seeds are vmapped and, as nnxrl does, split over one CPU device a core.

``--matched`` computes what nnxrl's CartPole config asks beyond rejax: the learning
rate annealed linearly to 0, and the bootstrap through time limits (one batched
critic pass over every step's observation before any reset: r + gamma V(s') where the
episode was cut by its time limit, r where it terminated). ``--save DIR`` writes the
final parameters and optimiser state with Orbax afterwards, as a run's last
checkpoint does (its seconds reported). Timing the whole process (``time uv run
python benchmarks/ppo_floor.py --matched --save DIR``) gives the floor under the
README's first command.

``peers.py`` runs it as a third side beside nnxrl and rejax. ``run_craftax`` is the
same program at the Craftax workload of ``craftax_baselines.py`` (64 envs x 64 steps,
4 epochs x 8 minibatches, three tanh layers of 512, the baselines' hyperparameters),
on nnxrl's Craftax env with optimistic resets (the code ``--env-alone`` times there),
with init and one update compiled as two programs so that each update can be timed:
``craftax_baselines.py --least`` runs it as a side of its own.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from dataclasses import dataclass
from functools import partial
from typing import Any, NamedTuple

LAST = 20  # the final updates whose ended episodes give the reported return


@dataclass(frozen=True)
class Workload:
    """One PPO workload's sizes and hyperparameters."""

    envs: int
    steps: int
    epochs: int
    minibatches: int
    width: int
    layers: int
    updates: int
    lr: float
    gamma: float
    lam: float
    max_norm: float
    clip: float = 0.2
    ent: float = 0.01
    vf: float = 0.5


# configs/ppo-cartpole.yaml; 500k env steps
CARTPOLE = Workload(4, 128, 4, 4, 64, 2, 500_000 // 512, 2.5e-4, 0.99, 0.95, 0.5)


def craftax_workload(updates: int) -> Workload:
    """configs/ppo-craftax-classic-symbolic.yaml at craftax_baselines.py's 64 envs."""
    return Workload(64, 64, 4, 8, 512, 3, updates, 2e-4, 0.99, 0.8, 1.0)


class Env(NamedTuple):
    """A batch of envs: reset(key) -> (obs, state); step(key, state, action) -> (state,
    obs, reward, terminated, done, obs before any reset)."""

    reset: Any
    step: Any
    obs_size: int
    num_actions: int


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--matched", action="store_true", help="anneal; bootstrap time limits")
    parser.add_argument("--save", help="a new folder: write the final state there with Orbax")
    args = parser.parse_args()
    print("RESULT " + json.dumps(run_floor(args.seeds, args.matched, args.save)), flush=True)


def run_floor(seeds: int, matched: bool = False, save: str | None = None) -> dict[str, float]:
    """CartPole: compile seconds (trace, lower, XLA), env steps/s of the compiled run,
    the mean return of the episodes that ended in each seed's last updates, peak RSS."""
    import jax

    jax.config.update("jax_num_cpu_devices", os.cpu_count() or 1)
    import jax.numpy as jnp
    import numpy as np
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    env, w = cartpole(), CARTPOLE
    count = max(d for d in range(1, len(jax.devices()) + 1) if seeds % d == 0)
    devices = jax.devices()[:count]  # the most devices that split the seeds evenly
    by_seed = NamedSharding(Mesh(np.array(devices), ("seed",)), PartitionSpec("seed"))
    keys = jax.device_put(jax.random.split(jax.random.key(0), seeds), by_seed)
    started = time.perf_counter()
    program = jax.jit(jax.vmap(partial(train, w=w, env=env, matched=matched)), in_shardings=by_seed)
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
        "sps": seeds * w.updates * w.envs * w.steps / seconds,
        "final_return": float(jnp.mean(returns)),
        "rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def cartpole() -> Env:
    """gymnax's CartPole-v1, ``CARTPOLE.envs`` of them, with gymnax's own auto-reset."""
    from nnxrl.envs.plotting_imports import deferred_plotting

    deferred_plotting()  # gymnax imported as lean as nnxrl imports it
    import gymnax
    import jax

    env, params = gymnax.make("CartPole-v1")
    n = CARTPOLE.envs

    def reset(key: Any) -> tuple[Any, Any]:
        return jax.vmap(env.reset, (0, None))(jax.random.split(key, n), params)

    def step(key: Any, state: Any, action: Any) -> tuple:
        obs, state, reward, terminated, truncated, info = jax.vmap(env.step, (0, 0, 0, None))(
            jax.random.split(key, n), state, action, params
        )
        return state, obs, reward, terminated, terminated | truncated, info["final_observation"]

    return Env(reset, step, env.observation_space(params).shape[0], env.num_actions)


def run_craftax(env_id: str, updates: int, marks: list[float]) -> None:
    """The least program at the Craftax workload, matched (annealed, bootstrapped):
    init compiled and run, then ``updates`` updates, the Unix time after each."""
    import jax

    w = craftax_workload(updates)
    env, options = craftax(env_id, w)
    optimiser = make_optimiser(w, matched=True)
    init = jax.jit(partial(initial_carry, w=w, env=env, optimiser=optimiser))
    carry = init.lower(jax.random.key(0)).compile(options)(jax.random.key(0))
    one = partial(update, w=w, env=env, optimiser=optimiser, matched=True)
    program = jax.jit(one, donate_argnums=0).lower(carry).compile(options)
    for _ in range(updates):
        carry, ended = program(carry)
        jax.block_until_ready(ended)
        marks.append(time.time())


def craftax(env_id: str, w: Workload) -> tuple[Env, dict]:
    """nnxrl's Craftax env, ``w.envs`` of them with optimistic resets (ratio 16), and
    the XLA options nnxrl compiles it with."""
    from nnxrl.envs.compiler_options import compiler_options
    from nnxrl.envs.craftax_env import make_craftax_env

    vec = make_craftax_env(env_id, w.envs, reset_ratio=16)

    def step(key: Any, state: Any, action: Any) -> tuple:
        state, out = vec.step(key, state, action)
        done = out.terminated | out.truncated
        return state, out.obs, out.reward, out.terminated, done, out.final_obs

    env = Env(vec.reset, step, vec.spec.obs_shape[0], vec.spec.num_actions)
    return env, compiler_options(vec.spec)


def save_with_orbax(state: Any, directory: str) -> float:
    """Seconds to import Orbax and write ``state`` into the new folder ``directory``."""
    started = time.perf_counter()
    import orbax.checkpoint as ocp

    with ocp.StandardCheckpointer() as checkpointer:
        checkpointer.save(os.path.abspath(os.path.join(directory, "final")), state)
    return time.perf_counter() - started


def train(key: Any, w: Workload, env: Env, matched: bool) -> Any:
    """One seed's whole run: init, then ``w.updates`` updates; the mean return of the
    episodes that ended during the last ``LAST`` updates, and the final parameters and
    optimiser state."""
    import jax

    optimiser = make_optimiser(w, matched)
    carry = initial_carry(key, w, env, optimiser)
    step = partial(update, w=w, env=env, optimiser=optimiser, matched=matched)
    (params, opt_state, *_), (returns, ended) = jax.lax.scan(
        lambda c, _: step(c), carry, None, w.updates
    )
    mean_return = returns[-LAST:].sum() / jax.numpy.maximum(ended[-LAST:].sum(), 1)
    return mean_return, (params, opt_state)


def make_optimiser(w: Workload, matched: bool) -> Any:
    """Adam behind a global-norm clip; with ``matched``, the rate annealed linearly to 0."""
    import optax

    steps = w.updates * w.epochs * w.minibatches
    lr = optax.linear_schedule(w.lr, 0.0, steps) if matched else w.lr
    return optax.chain(optax.clip_by_global_norm(w.max_norm), optax.adam(lr, eps=1e-5))


def initial_carry(key: Any, w: Workload, env: Env, optimiser: Any) -> tuple:
    """(params, optimiser state, (env state, obs, running returns), key)."""
    import jax

    net_key, env_key, key = jax.random.split(key, 3)
    params = init_params(net_key, w, env.obs_size, env.num_actions)
    obs, env_state = env.reset(env_key)
    return params, optimiser.init(params), (env_state, obs, jax.numpy.zeros(w.envs)), key


def init_params(key: Any, w: Workload, obs_size: int, num_actions: int) -> dict:
    """Actor and critic towers obs -> width x layers -> out, weights N(0, 1/fan_in)."""
    import jax
    import jax.numpy as jnp

    def tower(key: Any, out: int) -> list:
        sizes = [obs_size] + [w.width] * w.layers + [out]
        keys = jax.random.split(key, len(sizes) - 1)
        return [
            (jax.random.normal(k, (a, b)) / jnp.sqrt(a), jnp.zeros(b))
            for k, a, b in zip(keys, sizes[:-1], sizes[1:], strict=True)
        ]

    actor, critic = jax.random.split(key)
    return {"actor": tower(actor, num_actions), "critic": tower(critic, 1)}


def forward(params: dict, obs: Any) -> tuple[Any, Any]:
    import jax.numpy as jnp

    def tower(layers: list, x: Any) -> Any:
        for w, b in layers[:-1]:
            x = jnp.tanh(x @ w + b)
        w, b = layers[-1]
        return x @ w + b

    return tower(params["actor"], obs), tower(params["critic"], obs)[..., 0]


def update(carry: tuple, w: Workload, env: Env, optimiser: Any, matched: bool) -> tuple:
    """Collect a rollout, compute GAE, run the epochs; the summed return and the count
    of the episodes that ended in it."""
    import jax

    params, opt_state, envs, key = carry
    key, rollout_key, epoch_key = jax.random.split(key, 3)
    envs, batch = collect(params, envs, rollout_key, env, w)
    if matched:  # V(s') of every step, before any reset; time limits bootstrapped
        next_value = forward(params, batch["final_obs"])[1]
        cut = batch["terminated"]
    else:  # V of the next observation; every end of an episode cuts
        last_value = forward(params, envs[1])[1]
        next_value = jax.numpy.concatenate([batch["value"][1:], last_value[None]])
        cut = batch["done"]
    advantages = gae(batch["reward"], batch["value"], next_value, cut, batch["done"], w)
    batch = {**batch, "advantage": advantages, "target": advantages + batch["value"]}
    keep = ("obs", "action", "logp", "value", "advantage", "target")
    flat = {k: batch[k].reshape(w.envs * w.steps, *batch[k].shape[2:]) for k in keep}

    def shuffled(key: Any) -> dict:
        order = jax.random.permutation(key, w.envs * w.steps).reshape(w.minibatches, -1)
        return jax.tree.map(lambda x: x[order], flat)

    sgd = partial(sgd_step, optimiser=optimiser, w=w)
    params, opt_state = run_epochs((params, opt_state), epoch_key, w, shuffled, sgd)
    ended = (batch["ended_return"].sum(), batch["done"].sum())
    return (params, opt_state, envs, key), ended


def run_epochs(state: tuple, key: Any, w: Workload, shuffled: Any, sgd: Any) -> tuple:
    """``w.epochs`` passes, each one ``sgd`` step per minibatch of ``shuffled(key)``."""
    import jax

    def epoch(state: tuple, key: Any) -> tuple[tuple, None]:
        return jax.lax.scan(lambda s, mb: (sgd(s, mb), None), state, shuffled(key))

    return jax.lax.scan(epoch, state, jax.random.split(key, w.epochs))[0]


def collect(params: dict, envs: tuple, key: Any, env: Env, w: Workload) -> Any:
    """``w.steps`` steps of the envs; ``envs`` is their state, observation and running
    episode return, so that the return of an episode is recorded where it ends."""
    import jax
    import jax.numpy as jnp

    def step(carry: tuple, key: Any) -> tuple[tuple, dict]:
        env_state, obs, running = carry
        act_key, step_key = jax.random.split(key)
        logits, value = forward(params, obs)
        action = jax.random.categorical(act_key, logits)
        logp = jnp.take_along_axis(jax.nn.log_softmax(logits), action[:, None], axis=1)[:, 0]
        env_state, next_obs, reward, terminated, done, final_obs = env.step(
            step_key, env_state, action
        )
        running = running + reward
        record = {"obs": obs, "action": action, "logp": logp, "value": value}
        record |= {"reward": reward, "done": done, "ended_return": jnp.where(done, running, 0.0)}
        record |= {"terminated": terminated, "final_obs": final_obs}
        return (env_state, next_obs, jnp.where(done, 0.0, running)), record

    return jax.lax.scan(step, envs, jax.random.split(key, w.steps))


def gae(reward: Any, value: Any, next_value: Any, cut: Any, done: Any, w: Workload) -> Any:
    """A_t = delta_t + gamma lambda (1 - done_t) A_{t+1}, delta_t = r_t + gamma (1 -
    cut_t) V'_t - V_t, with V'_t the next state's value; [steps, envs] each."""
    import jax

    def back(next_advantage: Any, t: tuple) -> tuple[Any, Any]:
        r, v, v_next, c, d = t
        delta = r + w.gamma * (1 - c) * v_next - v
        advantage = delta + w.gamma * w.lam * (1 - d) * next_advantage
        return advantage, advantage

    inputs = (reward, value, next_value, cut.astype(reward.dtype), done.astype(reward.dtype))
    return jax.lax.scan(back, jax.numpy.zeros_like(reward[0]), inputs, reverse=True)[1]


def sgd_step(state: tuple, minibatch: dict, optimiser: Any, w: Workload) -> tuple:
    """One Adam step on the clipped policy loss, the clipped value loss and entropy."""
    import jax
    import optax

    params, opt_state = state
    grads = jax.grad(loss)(params, minibatch, w)
    updates, opt_state = optimiser.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state


def loss(params: dict, mb: dict, w: Workload) -> Any:
    logits, value = forward(params, mb["obs"])
    return ppo_loss(logits, value, mb, w)


def ppo_loss(logits: Any, value: Any, mb: dict, w: Workload) -> Any:
    """The clipped policy loss, the clipped value loss and the entropy bonus of a
    minibatch whose policy logits and values the network has just computed."""
    import jax
    import jax.numpy as jnp

    logp_all = jax.nn.log_softmax(logits)
    logp = jnp.take_along_axis(logp_all, mb["action"][..., None], axis=-1)[..., 0]
    advantage = (mb["advantage"] - mb["advantage"].mean()) / (mb["advantage"].std() + 1e-8)
    ratio = jnp.exp(logp - mb["logp"])
    clipped = jnp.clip(ratio, 1 - w.clip, 1 + w.clip)
    policy = -jnp.minimum(ratio * advantage, clipped * advantage).mean()
    value_clipped = mb["value"] + jnp.clip(value - mb["value"], -w.clip, w.clip)
    value_loss = (
        0.5 * jnp.maximum((value - mb["target"]) ** 2, (value_clipped - mb["target"]) ** 2).mean()
    )
    entropy = -(jnp.exp(logp_all) * logp_all).sum(-1).mean()
    return policy + w.vf * value_loss - w.ent * entropy


if __name__ == "__main__":
    main()
