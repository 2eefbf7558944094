"""The least recurrent PPO program in plain JAX at the Craftax workload: the floor
under PPO-RNN, as ``ppo_floor.py`` is under feed-forward PPO.

    uv run python benchmarks/craftax_baselines.py --baselines DIR --kind rnn --least

What nnxrl's ``ppo-rnn-craftax-symbolic`` config computes, at ``craftax_baselines.py``'s
64 envs x 64 steps, 4 epochs x 8 minibatches, and nothing more: a 512-unit ReLU
embedding, a GRU of 512 (zeroed where an episode starts) shared by actor and critic
towers of two 512-unit ReLU layers; minibatches of whole env sequences re-run from
the hidden state the rollout started with; GAE with time limits bootstrapped (each
step's final observation valued through the GRU from the step's new hidden state, as
nnxrl does); the clipped losses of ``ppo_floor.ppo_loss``; Adam behind a global-norm
clip with the rate annealed. Left out: metrics beyond one return, the non-finite
guard, chunks, checkpoints, orthogonal init (scaled normal weights). Init and one
update are compiled as two programs with nnxrl's XLA options for Craftax, a mark
after each update, as ``ppo_floor.run_craftax`` does.
"""

from __future__ import annotations

import time
from functools import partial
from typing import Any

from ppo_floor import (
    Env,
    Workload,
    craftax,
    craftax_workload,
    gae,
    make_optimiser,
    ppo_loss,
    run_epochs,
)


def run_craftax_rnn(env_id: str, updates: int, marks: list[float]) -> None:
    """Init compiled and run, then ``updates`` updates, the Unix time after each."""
    import jax

    w = craftax_workload(updates)
    env, options = craftax(env_id, w)
    optimiser = make_optimiser(w, matched=True)
    init = jax.jit(partial(initial_carry, w=w, env=env, optimiser=optimiser))
    carry = init.lower(jax.random.key(0)).compile(options)(jax.random.key(0))
    one = partial(update, w=w, env=env, optimiser=optimiser)
    program = jax.jit(one, donate_argnums=0).lower(carry).compile(options)
    for _ in range(updates):
        carry, ended = program(carry)
        jax.block_until_ready(ended)
        marks.append(time.time())


def initial_carry(key: Any, w: Workload, env: Env, optimiser: Any) -> tuple:
    """(params, optimiser state, (env state, obs, hidden, start, running returns), key)."""
    import jax
    import jax.numpy as jnp

    net_key, env_key, key = jax.random.split(key, 3)
    params = init_params(net_key, w, env.obs_size, env.num_actions)
    obs, env_state = env.reset(env_key)
    hidden, start = jnp.zeros((w.envs, w.width)), jnp.ones(w.envs, bool)
    envs = (env_state, obs, hidden, start, jnp.zeros(w.envs))
    return params, optimiser.init(params), envs, key


def init_params(key: Any, w: Workload, obs_size: int, num_actions: int) -> dict:
    """The embedding, the GRU's fused input and hidden weights (reset, update, new
    gates) and the two towers; weights N(0, 1/fan_in), biases 0."""
    import jax
    import jax.numpy as jnp

    def dense(key: Any, a: int, b: int) -> tuple:
        return jax.random.normal(key, (a, b)) / jnp.sqrt(a), jnp.zeros(b)

    keys = iter(jax.random.split(key, 9))
    n = w.width

    def towers(out: int) -> list:
        return [dense(next(keys), n, n), dense(next(keys), n, n), dense(next(keys), n, out)]

    return {
        "embed": dense(next(keys), obs_size, n),
        "gru_in": dense(next(keys), n, 3 * n),
        "gru_hidden": dense(next(keys), n, 3 * n),
        "actor": towers(num_actions),
        "critic": towers(1),
    }


def update(carry: tuple, w: Workload, env: Env, optimiser: Any) -> tuple:
    """Collect a rollout, compute GAE, run the epochs over sequence minibatches; the
    summed return and the count of the episodes that ended in it."""
    import jax

    params, opt_state, envs, key = carry
    key, rollout_key, epoch_key = jax.random.split(key, 3)
    first_hidden = envs[2]
    envs, batch = collect(params, envs, rollout_key, env, w)
    advantages = gae(
        batch["reward"], batch["value"], batch["final_value"], batch["terminated"], batch["done"], w
    )
    batch = {**batch, "advantage": advantages, "target": advantages + batch["value"]}
    keep = ("obs", "start", "action", "logp", "value", "advantage", "target")
    sequences = {k: batch[k] for k in keep}  # [steps, envs, ...]

    def shuffled(key: Any) -> tuple:  # whole sequences: the envs shuffled
        order = jax.random.permutation(key, w.envs).reshape(w.minibatches, -1)
        return jax.tree.map(lambda x: x[:, order].swapaxes(0, 1), sequences), first_hidden[order]

    sgd = partial(sgd_step, optimiser=optimiser, w=w)
    params, opt_state = run_epochs((params, opt_state), epoch_key, w, shuffled, sgd)
    ended = (batch["ended_return"].sum(), batch["done"].sum())
    return (params, opt_state, envs, key), ended


def collect(params: dict, envs: tuple, key: Any, env: Env, w: Workload) -> Any:
    """``w.steps`` steps of the envs, acting from the GRU's hidden state; each step's
    final observation valued from the new hidden state (the time-limit bootstrap)."""
    import jax
    import jax.numpy as jnp

    def step(carry: tuple, key: Any) -> tuple[tuple, dict]:
        env_state, obs, hidden, start, running = carry
        act_key, step_key = jax.random.split(key)
        hidden, logits, value = forward(params, hidden, obs, start)
        action = jax.random.categorical(act_key, logits)
        logp = jnp.take_along_axis(jax.nn.log_softmax(logits), action[:, None], axis=1)[:, 0]
        env_state, next_obs, reward, terminated, done, final_obs = env.step(
            step_key, env_state, action
        )
        final_value = forward(params, hidden, final_obs, jnp.zeros_like(start))[2]
        running = running + reward
        record = {"obs": obs, "start": start, "action": action, "logp": logp, "value": value}
        record |= {"reward": reward, "done": done, "ended_return": jnp.where(done, running, 0.0)}
        record |= {"terminated": terminated, "final_value": final_value}
        return (env_state, next_obs, hidden, done, jnp.where(done, 0.0, running)), record

    return jax.lax.scan(step, envs, jax.random.split(key, w.steps))


def forward(params: dict, hidden: Any, obs: Any, start: Any) -> tuple[Any, Any, Any]:
    """One step for a batch: the new hidden state, the logits and the value."""
    hidden = recur(params, hidden, project(params, obs), start)
    return (hidden, *heads(params, hidden))


def project(params: dict, obs: Any) -> Any:
    """The GRU's input term W x + b of the embedded observation, for any leading axes
    (a whole sequence's in one matmul: only U h runs step by step)."""
    import jax

    (we, be), (wi, bi) = params["embed"], params["gru_in"]
    return jax.nn.relu(obs @ we + be) @ wi + bi


def recur(params: dict, h: Any, projected: Any, start: Any) -> Any:
    """One GRU step, the hidden state zeroed first where an episode starts:
    r = s(W_r x + U_r h + b_r), z = s(W_z x + U_z h + b_z),
    n = tanh(W_n x + b_n + r * (U_n h + c_n)), h' = (1 - z) n + z h."""
    import jax
    import jax.numpy as jnp

    h = jnp.where(start[:, None], 0.0, h)
    wh, bh = params["gru_hidden"]
    xr, xz, xn = jnp.split(projected, 3, axis=-1)
    hr, hz, hn = jnp.split(h @ wh + bh, 3, axis=-1)
    r, z = jax.nn.sigmoid(xr + hr), jax.nn.sigmoid(xz + hz)
    n = jnp.tanh(xn + r * hn)
    return (1 - z) * n + z * h


def heads(params: dict, hidden: Any) -> tuple[Any, Any]:
    return tower(params["actor"], hidden), tower(params["critic"], hidden)[..., 0]


def tower(layers: list, x: Any) -> Any:
    import jax

    for w, b in layers[:-1]:
        x = jax.nn.relu(x @ w + b)
    w, b = layers[-1]
    return x @ w + b


def sgd_step(state: tuple, minibatch: tuple, optimiser: Any, w: Workload) -> tuple:
    """One Adam step on a minibatch of whole sequences [steps, envs / minibatches]."""
    import jax
    import optax

    params, opt_state = state
    grads = jax.grad(loss)(params, *minibatch, w)
    updates, opt_state = optimiser.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state


def loss(params: dict, mb: dict, hidden: Any, w: Workload) -> Any:
    """The sequences re-run from the hidden state the rollout started with: every
    step's input term in one batch, the GRU scanned, the towers in one batch."""
    import jax

    def step(hidden: Any, inputs: tuple) -> tuple[Any, Any]:
        hidden = recur(params, hidden, *inputs)
        return hidden, hidden

    _, hiddens = jax.lax.scan(step, hidden, (project(params, mb["obs"]), mb["start"]))
    logits, value = heads(params, hiddens)
    return ppo_loss(logits, value, mb, w)
