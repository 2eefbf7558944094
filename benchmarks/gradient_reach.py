"""How far back a memory network's output depends on its input: the gradient's reach.

    uv run python benchmarks/gradient_reach.py                    # every kind, at init
    uv run python benchmarks/gradient_reach.py --run RUN_DIR      # a trained run's seeds
    uv run python benchmarks/gradient_reach.py --variant "gru=network.kind=gru" \
        --variant "gru, chrono 32=network.kind=gru;network.options={chrono: 32}"

For sequences of T observations of RepeatPrevious-v0 (each step one of n symbols, drawn
uniformly, as the env draws them), one episode from its first step, the reach at k is

    R(k) = E_seq || d out_{T-1} / d obs_{T-1-k} ||_F      (k = 0 .. T-1)

where out is the policy's logits (an actor-critic) or its Q-values (a Q-network). It is
what a loss at step T-1 can learn from the input k steps back: a task asking for the
symbol shown k steps earlier gets its gradient through R(k) alone. The table gives
R(k) / R(0), the median over seeds (each seed its own initialisation or trained
parameters), and, where a seed's ratio falls under 1e-3, how many seeds do: a vanishing
gradient shows as ratios falling by orders of magnitude with k. A Transformer-XL is the
check: its reach ends where its window does (M steps back, per layer).

``--run RUN_DIR`` reads a run's latest checkpoint (every seed) instead of initialising
the config's network, for the network a run ended with; ``--variant`` replaces the
rows at init (one per memory kind) with its own.
"""

from __future__ import annotations

import argparse
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from nnxrl import config as config_lib
from nnxrl.agent.policy import policy_at
from nnxrl.algos.registry import algorithm
from nnxrl.envs import env_spec
from nnxrl.networks import build_network

KINDS = {  # name: overrides
    "gru": ["network.kind=gru"],
    "lstm": ["network.kind=lstm"],
    "min_gru (2 layers)": ["network.kind=min_gru"],
    "transformer_xl (1 layer, M = 8)": [
        "network.kind=transformer_xl",
        "network.options={layers: 1, heads: 2, memory: 8}",
    ],
}
SHOWN = (0, 1, 2, 4, 8, 12, 16, 24, 32, 48)  # the k columns printed (those under T)


def main() -> None:
    args = parse_args()
    if args.run:
        policy = policy_at(args.run)
        models = [
            nnx.merge(policy.graphdef, jax.tree.map(lambda x, s=s: x[s], policy.params))
            for s in range(policy.num_seeds)
        ]
        rows = {f"{policy.network.kind} ({args.run})": models}
    else:
        variants = dict(map(variant, args.variant)) if args.variant else KINDS
        rows = {name: initial_models(args, overrides) for name, overrides in variants.items()}
    print_table(rows, args)


def parse_args() -> argparse.Namespace:
    parser = network_arguments(argparse.ArgumentParser(description=__doc__.split("\n")[0]))
    parser.add_argument("--run", help="a run's directory: its latest checkpoint's networks")
    parser.add_argument("--steps", type=int, default=25, help="T, the sequence's length")
    parser.add_argument("--sequences", type=int, default=64)
    parser.add_argument("--seeds", type=int, default=4, help="initialisations (not with --run)")
    return parser.parse_args()


def network_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """--config, --set and --variant: the networks a row is built from."""
    parser.add_argument("--config", default="configs/ppo-rnn-repeat-previous.yaml")
    parser.add_argument("--set", action="append", default=[], help="an override")
    parser.add_argument(
        "--variant",
        action="append",
        default=[],
        help="NAME=OVERRIDE;OVERRIDE... (a row; NAME without '=')",
    )
    return parser


def variant(text: str) -> tuple[str, list[str]]:
    """``NAME=OVERRIDE;OVERRIDE...`` -> (name, overrides)."""
    name, _, overrides = text.partition("=")
    return name, [o for o in overrides.split(";") if o]


def initial_models(args: argparse.Namespace, overrides: list[str]) -> list[Any]:
    """The config's network (with ``overrides``) at ``args.seeds`` initialisations."""
    config = config_lib.load(args.config, [*args.set, *overrides])
    head = algorithm(config.algo).head
    spec = env_spec(config.env)
    keys = jax.random.split(jax.random.key(0), args.seeds)
    return [build_network(config.network, spec, 1, key, head) for key in keys]


def print_table(rows: dict[str, list[Any]], args: argparse.Namespace) -> None:
    shown = [k for k in SHOWN if k < args.steps]
    print(f"R(k) / R(0), median over seeds; T = {args.steps}, {args.sequences} sequences")
    print("| kind | " + " | ".join(f"k={k}" for k in shown) + " |")
    print("|---|" + "---:|" * len(shown))
    for name, models in rows.items():
        ratios = np.stack([relative_reach(m, args.steps, args.sequences) for m in models])
        cells = [cell(ratios[:, k]) for k in shown]
        print(f"| {name} | " + " | ".join(cells) + " |")


def cell(ratios: np.ndarray) -> str:
    median = float(np.median(ratios))
    low = int(np.sum(ratios < 1e-3))
    return f"{median:.2g}" + (f" ({low}/{len(ratios)} < 1e-3)" if low else "")


def relative_reach(model: Any, steps: int, sequences: int) -> np.ndarray:
    """R(k) / R(0) for k = 0 .. steps - 1 (the module docstring), one model."""
    symbols = model_inputs(model)
    shown = jax.random.randint(jax.random.key(1), (sequences, steps), 0, symbols)
    obs = jax.nn.one_hot(shown, symbols)[:, :, None]  # [N, T, 1, D]: one env a sequence
    reach = np.asarray(jnp.mean(_reach_of_each(model, obs), axis=0))  # [T], k = T-1-t
    reach = reach[::-1]
    return reach / reach[0]


@nnx.jit
def _reach_of_each(model: Any, obs: jax.Array) -> jax.Array:
    """||d out_{T-1} / d obs_t||_F for each sequence [N, T, 1, D] -> [N, T]."""

    def last_output(sequence: jax.Array) -> jax.Array:
        start = jnp.zeros(sequence.shape[:2], bool).at[0].set(True)
        out = model.unroll(model.initial_hidden(1), sequence, start)
        out = out[0].logits if isinstance(out, tuple) else out
        return out[-1]

    def one(sequence: jax.Array) -> jax.Array:
        jacobian = jax.jacrev(last_output)(sequence)  # [1, ..., T, 1, D]
        axes = tuple(i for i in range(jacobian.ndim) if i != jacobian.ndim - 3)
        return jnp.sqrt(jnp.sum(jacobian**2, axis=axes))

    return jax.vmap(one)(obs)


def model_inputs(model: Any) -> int:
    """The number of symbols the network observes (its encoder's input features)."""
    return int(model.encoder.out_features)


if __name__ == "__main__":
    main()
