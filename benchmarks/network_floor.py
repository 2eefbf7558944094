"""The network's share of a PPO update, measured alone: a floor under any implementation.

    uv run python benchmarks/network_floor.py                       # Craftax-Symbolic's shapes
    uv run python benchmarks/network_floor.py --obs 1345 --actions 17  # Craftax-Classic-Symbolic's

A plain JAX actor-critic of the shipped Craftax configs' shape (separate actor and
critic towers of ``--layers`` tanh layers of ``--width``), with no env, no GAE and
no metrics, does the matrix work every PPO update at that workload must do: the
rollout's forward pass (``--steps`` steps of ``--envs`` observations, one step at a
time) and ``--epochs`` x ``--minibatches`` steps of a policy-gradient and value loss
with Adam. Observations and targets are random. Both XLA settings nnxrl could use
are timed (XLA's default, and the single-dot YNNPACK option nnxrl compiles Craftax
with): the seconds to trace and compile the update, and the median of ``--repeats``
calls after a warm-up. Add the env alone (``benchmarks/craftax_baselines.py
--env-alone``) to get the floor of a whole update. With ``--obs 4 --actions 2 --width
64 --layers 2 --envs 4 --steps 128 --epochs 4 --minibatches 4`` it is CartPole PPO's.
"""

from __future__ import annotations

import argparse
import statistics
import time

import jax
import jax.numpy as jnp
import optax

OPTIONS = {
    "XLA's default": {},
    "YNNPACK single dots (nnxrl's Craftax option)": {
        "xla_cpu_experimental_ynn_fusion_type": "LIBRARY_FUSION_TYPE_INDIVIDUAL_DOT"
    },
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--obs", type=int, default=8268, help="observation size")
    parser.add_argument("--actions", type=int, default=43)
    parser.add_argument("--width", type=int, default=512)
    parser.add_argument("--layers", type=int, default=3)
    parser.add_argument("--envs", type=int, default=64)
    parser.add_argument("--steps", type=int, default=64)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--minibatches", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    params = init_params(jax.random.key(0), args)
    batch = args.envs * args.steps
    flops = 2 * weights(params) * batch * (1 + 3 * args.epochs)  # forward 2w, backward 4w
    print(f"obs {args.obs}, {args.layers} x {args.width}, {batch} samples an update")
    print(f"{weights(params):,} weights; {flops / 1e9:,.0f} GFLOP of matrix work an update\n")
    print("| XLA setting | compile s | s an update | GFLOP/s | env steps/s, network alone |")
    print("|---|---:|---:|---:|---:|")
    for name, options in OPTIONS.items():
        compile_s, seconds = time_update(params, args, options)
        rate = f"{flops / seconds / 1e9:,.0f} | {batch / seconds:,.0f}"
        print(f"| {name} | {compile_s:.2f} | {seconds:.3f} | {rate} |")


def init_params(key: jax.Array, args: argparse.Namespace) -> dict:
    """Two towers, actor and critic: obs -> width x layers -> actions (or 1)."""

    def tower(key: jax.Array, out: int) -> list:
        sizes = [args.obs] + [args.width] * args.layers + [out]
        keys = jax.random.split(key, len(sizes) - 1)
        return [
            (jax.random.normal(k, (a, b)) / jnp.sqrt(a), jnp.zeros(b))
            for k, a, b in zip(keys, sizes, sizes[1:], strict=False)
        ]

    actor, critic = jax.random.split(key)
    return {"actor": tower(actor, args.actions), "critic": tower(critic, 1)}


def weights(params: dict) -> int:
    return sum(w.size for tower in params.values() for w, _ in tower)


def forward(params: dict, obs: jax.Array) -> tuple[jax.Array, jax.Array]:
    def tower(layers: list, x: jax.Array) -> jax.Array:
        for w, b in layers[:-1]:
            x = jnp.tanh(x @ w + b)
        w, b = layers[-1]
        return x @ w + b

    return tower(params["actor"], obs), tower(params["critic"], obs)[..., 0]


def time_update(params: dict, args: argparse.Namespace, options: dict) -> tuple[float, float]:
    """Seconds to trace and compile the update, and of one update's network work
    (median of ``--repeats``)."""
    optimiser = optax.adam(2e-4)
    started = time.perf_counter()
    program = jax.jit(lambda p, o, k: update(p, o, k, args, optimiser)).lower(
        params, optimiser.init(params), jax.random.key(1)
    )
    compiled = program.compile(options)
    compile_s = time.perf_counter() - started
    state = (params, optimiser.init(params))
    jax.block_until_ready(compiled(*state, jax.random.key(1)))
    times = []
    for repeat in range(args.repeats):
        started = time.perf_counter()
        state = jax.block_until_ready(compiled(*state, jax.random.key(repeat)))
        times.append(time.perf_counter() - started)
    return compile_s, statistics.median(times)


def update(params, opt_state, key, args: argparse.Namespace, optimiser) -> tuple:
    """The rollout's forward passes, then the epochs of minibatch steps."""

    def act(carry, key):
        obs = jax.random.normal(key, (args.envs, args.obs))
        logits, value = forward(params, obs)
        return carry, (obs, jax.random.categorical(key, logits), value)

    _, (obs, actions, values) = jax.lax.scan(act, None, jax.random.split(key, args.steps))
    size = args.envs * args.steps // args.minibatches
    data = (obs.reshape(-1, size, args.obs), actions.reshape(-1, size), values.reshape(-1, size))

    def loss(params, minibatch):
        obs, action, target = minibatch
        logits, value = forward(params, obs)
        logp = jax.nn.log_softmax(logits)
        chosen = jnp.take_along_axis(logp, action[:, None], axis=1)[:, 0]
        entropy = -(jnp.exp(logp) * logp).sum(-1)
        return -(chosen * target).mean() + ((value - target) ** 2).mean() - 0.01 * entropy.mean()

    def step(carry, minibatch):
        params, opt_state = carry
        grads = jax.grad(loss)(params, minibatch)
        updates, opt_state = optimiser.update(grads, opt_state, params)
        return (optax.apply_updates(params, updates), opt_state), None

    def epoch(carry, _):
        return jax.lax.scan(step, carry, data)[0], None

    return jax.lax.scan(epoch, (params, opt_state), None, length=args.epochs)[0]


if __name__ == "__main__":
    main()
