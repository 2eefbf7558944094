"""Can the network hold the task at all? A memory network trained on RepeatPrevious
by supervised learning, the reinforcement learning taken away.

    uv run python benchmarks/recall_supervised.py                         # every kind, delay 4
    uv run python benchmarks/recall_supervised.py --delay 16 --length 32 \
        --variant "gru=network.kind=gru" --variant "lstm=network.kind=lstm"

The network is the config's (``configs/ppo-rnn-repeat-previous.yaml``: its encoder,
memory core and policy head), built as a run builds it. Each gradient step draws
``--batch`` fresh episodes of RepeatPrevious (``--length`` steps, one of ``--symbols``
symbols each step, uniformly, as the env draws them), unrolls the network over each
from a zeroed state, and minimises the cross-entropy of the policy's logits at step t
against the symbol shown at t - ``--delay`` (the steps t >= delay: those the env
scores), with Adam at ``--lr``. Every ``--every`` steps, the greedy policy's accuracy
on 1,024 held-out episodes: the env's return (1 at best, 1/symbols by chance).

Where a kind fails by reinforcement learning and learns here, the bound is the
learning signal (a reward of one bit a step, found by exploring); where it fails
here too, with the answer given at every step, it is the network. Its rows: the
median accuracy over the seeds at each evaluation, and per seed the gradient steps
until 0.9 (``-``: never).
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import time
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx
from gradient_reach import KINDS, network_arguments, variant  # the rows, as there

from nnxrl import config as config_lib
from nnxrl.envs import env_spec
from nnxrl.networks import build_network

HELD_OUT = 1024  # episodes each evaluation draws


def main() -> None:
    args = parse_args()
    variants = dict(map(variant, args.variant)) if args.variant else KINDS
    shown = list(range(args.every, args.steps + 1, args.every))
    print(
        f"RepeatPrevious delay {args.delay}, {args.symbols} symbols, episodes of {args.length};"
        f" batch {args.batch} episodes, Adam {args.lr}, {args.seeds} seeds; greedy accuracy,"
        " median over seeds, after n gradient steps"
    )
    print("| kind | " + " | ".join(f"n={n}" for n in shown) + " | steps to 0.9, per seed | s |")
    print("|---|" + "---:|" * len(shown) + "---|---:|")
    for name, overrides in variants.items():
        began = time.perf_counter()
        curves = np.stack([train(args, overrides, seed) for seed in range(args.seeds)])
        reached = ", ".join(steps_to(curve, 0.9, args.every) for curve in curves)
        cells = " | ".join(f"{a:.2f}" for a in np.median(curves, axis=0))
        seconds = time.perf_counter() - began
        print(f"| {name} | {cells} | {reached} | {seconds:.0f} |", flush=True)


def parse_args() -> argparse.Namespace:
    parser = network_arguments(argparse.ArgumentParser(description=__doc__.split("\n")[0]))
    parser.add_argument("--delay", type=int, default=4)
    parser.add_argument("--symbols", type=int, default=4)
    parser.add_argument("--length", type=int, default=16, help="steps in an episode")
    parser.add_argument("--batch", type=int, default=64, help="episodes a gradient step")
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--steps", type=int, default=2000, help="gradient steps")
    parser.add_argument("--every", type=int, default=250, help="steps between evaluations")
    parser.add_argument("--seeds", type=int, default=4)
    return parser.parse_args()


def train(args: argparse.Namespace, overrides: list[str], seed: int) -> np.ndarray:
    """One seed: the accuracy after every ``args.every`` gradient steps [steps // every]."""
    config = config_lib.load(args.config, [*args.set, *overrides])
    kwargs = {"delay": args.delay, "symbols": args.symbols, "length": args.length}
    spec = env_spec(dataclasses.replace(config.env, kwargs=kwargs))
    model = build_network(config.network, spec, 1, jax.random.key(seed))
    graphdef, params = nnx.split(model)
    optimizer = optax.adam(args.lr)
    task = functools.partial(episodes, delay=args.delay, symbols=args.symbols, length=args.length)
    learn = jax.jit(functools.partial(learn_chunk, graphdef, optimizer, task, args.batch))
    test = jax.jit(functools.partial(accuracy, graphdef, task))
    opt_state = optimizer.init(params)
    key = jax.random.key(10_000 + seed)
    curve = []
    for _ in range(args.steps // args.every):
        key, chunk_key, test_key = jax.random.split(key, 3)
        params, opt_state = learn(params, opt_state, jax.random.split(chunk_key, args.every))
        curve.append(float(test(params, test_key)))
    return np.array(curve)


def episodes(
    key: jax.Array, batch: int, delay: int, symbols: int, length: int
) -> tuple[jax.Array, jax.Array, jax.Array]:
    """``batch`` episodes: observations [L, B, symbols] (one-hot), the symbol asked at
    each step [L, B] (shown[t - delay]) and whether the env scores it [L, 1]."""
    shown = jax.random.randint(key, (length, batch), 0, symbols)
    asked = jnp.roll(shown, delay, axis=0)
    scored = (jnp.arange(length) >= delay)[:, None]
    return jax.nn.one_hot(shown, symbols), asked, scored


def logits_over(graphdef: Any, params: Any, obs: jax.Array) -> jax.Array:
    """The policy's logits [L, B, A] over whole episodes, each from a zeroed state."""
    model = nnx.merge(graphdef, params)
    start = jnp.zeros(obs.shape[:2], bool).at[0].set(True)
    out = model.unroll(model.initial_hidden(obs.shape[1]), obs, start)
    return out[0].logits if isinstance(out, tuple) else out


def learn_chunk(
    graphdef: Any, optimizer: Any, task: Any, batch: int, params: Any, opt_state: Any, keys: Any
) -> tuple[Any, Any]:
    """One Adam step per key, each on ``batch`` fresh episodes."""

    def loss(params: Any, key: jax.Array) -> jax.Array:
        obs, asked, scored = task(key, batch)
        logits = logits_over(graphdef, params, obs)
        nll = optax.softmax_cross_entropy_with_integer_labels(logits, asked)
        return jnp.sum(nll * scored) / (jnp.sum(scored) * batch)

    def step(carry: tuple[Any, Any], key: jax.Array) -> tuple[tuple[Any, Any], None]:
        params, opt_state = carry
        grads = jax.grad(loss)(params, key)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return (optax.apply_updates(params, updates), opt_state), None

    return jax.lax.scan(step, (params, opt_state), keys)[0]


def accuracy(graphdef: Any, task: Any, params: Any, key: jax.Array) -> jax.Array:
    """The greedy policy's fraction named right on held-out episodes (the env's return)."""
    obs, asked, scored = task(key, HELD_OUT)
    right = jnp.argmax(logits_over(graphdef, params, obs), axis=-1) == asked
    return jnp.sum(right * scored) / (jnp.sum(scored) * HELD_OUT)


def steps_to(curve: np.ndarray, level: float, every: int) -> str:
    """The first evaluation's step count at which ``curve`` reaches ``level``, or '-'."""
    reached = np.flatnonzero(curve >= level)
    return str((reached[0] + 1) * every) if reached.size else "-"


if __name__ == "__main__":
    main()
