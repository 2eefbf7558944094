"""What each suspect costs in nnxrl's Craftax PPO update: each one switched off alone.

    uv run python benchmarks/craftax_suspects.py
    uv run python benchmarks/craftax_suspects.py --env Craftax-Classic-Symbolic-v1 --repeats 3
    uv run python benchmarks/craftax_suspects.py --variant "no guard"   # beside "as shipped"

The workload of ``benchmarks/craftax_baselines.py`` (Craftax-Symbolic-v1 feed-forward
PPO, 64 envs x 64 steps, 4 epochs x 8 minibatches, width 512, optimistic resets with
ratio 16). Each variant is the shipped program with one piece replaced while it is
traced (nothing in ``src/`` changes); what the variant computes differs, so these
are costs, not options:

- ``as shipped``: nothing replaced;
- ``one is_terminal``: the step's second ``is_terminal`` call (which tells death from
  the time limit) dropped: every ended episode counts as terminated;
- ``no achievements``: the per-step achievement flags (67 per env and step) neither
  carried in the rollout nor averaged into metrics;
- ``no resets``: no fresh worlds generated in the step and none swapped in (ended
  envs step on), the whole optimistic-reset mechanism gone;
- ``no shuffle``: minibatches cut from the rollout in order, no gather;
- ``no guard``: the chunk's non-finite guard gone (no check of the metrics and
  parameters after each update, no branch keeping the last good state);
- ``vmap of one``: the other way round, a piece put back: the run's one seed vmapped
  over an axis of size 1, as every run was before ``run/members.py`` (the same
  computation, so this one is an option's cost).

Each measurement is a fresh process (JAX's compilation cache in a scratch folder
shared by the run, so only a variant's first process compiles cold; nnxrl's saved
programs off); variants take turns in each repetition, in reversed order every other
one. A process times ``--updates`` updates after the first and reports the median
update's env steps/s; the table gives the median over repetitions and each variant's
rate over the shipped one's.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve()
ROOT = HERE.parent.parent
NUM_ENVS, NUM_STEPS = 64, 64
VARIANTS = (
    "as shipped",
    "one is_terminal",
    "no achievements",
    "no resets",
    "no shuffle",
    "no guard",
    "vmap of one",
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="Craftax-Symbolic-v1")
    parser.add_argument("--updates", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--variant", choices=VARIANTS[1:], action="append", help="default: every one"
    )
    parser.add_argument("--worker", choices=VARIANTS, help=argparse.SUPPRESS)
    parser.add_argument("--cache-dir", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print("RESULT " + json.dumps(run_worker(args)))
        return
    with tempfile.TemporaryDirectory() as cache_dir:
        rates = measure_all(args, cache_dir)
    shipped = statistics.median(rates["as shipped"])
    print(f"\n{args.env}, medians of {args.repeats}:\n")
    print("| variant | env steps/s | / as shipped |")
    print("|---|---:|---:|")
    for variant, values in rates.items():
        rate = statistics.median(values)
        print(f"| {variant} | {rate:,.0f} | {rate / shipped:.2f}x |")


def measure_all(args: argparse.Namespace, cache_dir: str) -> dict[str, list[float]]:
    """Every variant ``--repeats`` times, alternated, each a fresh process."""
    variants = (VARIANTS[0], *(args.variant or VARIANTS[1:]))
    rates: dict[str, list[float]] = {v: [] for v in variants}
    for rep in range(args.repeats):
        for variant in variants if rep % 2 == 0 else tuple(reversed(variants)):
            command = ["uv", "run", "python", str(HERE), f"--worker={variant}"]
            command += ["--env", args.env, "--updates", str(args.updates)]
            done = subprocess.run(
                [*command, "--cache-dir", cache_dir], cwd=ROOT, capture_output=True, text=True
            )
            lines = [x for x in done.stdout.splitlines() if x.startswith("RESULT ")]
            if done.returncode != 0 or not lines:
                sys.exit(f"{variant} failed ({done.returncode}):\n{done.stderr[-4000:]}")
            rates[variant].append(json.loads(lines[-1].removeprefix("RESULT "))["sps"])
            print(f"rep {rep + 1} {variant}: {rates[variant][-1]:,.0f} env steps/s", flush=True)
    return rates


def run_worker(args: argparse.Namespace) -> dict:
    """Replace the variant's piece, compile, and time ``--updates`` updates."""
    import jax

    from nnxrl import config as config_lib
    from nnxrl.run.programs import compile_programs

    switch_off(args.worker)
    config = config_lib.load(
        ROOT / "configs" / "ppo-craftax-classic-symbolic.yaml",
        [
            f"env.id={args.env}",
            f"env.num_envs={NUM_ENVS}",
            f"total_env_steps={(args.updates + 1) * NUM_ENVS * NUM_STEPS}",
            "logging.updates_per_chunk=1",
            f"compile_cache.dir={args.cache_dir}",  # JAX's cache, this run's scratch folder
            "compile_cache.save_programs=false",
        ],
    )
    programs = compile_programs(config)
    state, chunk = programs.init(), programs.chunk(1)
    state, metrics = chunk(state, programs.hp)
    jax.block_until_ready(metrics)
    times = []
    for _ in range(args.updates):
        started = time.perf_counter()
        state, metrics = chunk(state, programs.hp)
        jax.block_until_ready(metrics)
        times.append(time.perf_counter() - started)
    return {"sps": NUM_ENVS * NUM_STEPS / statistics.median(times)}


def switch_off(variant: str) -> None:
    """Replace, before anything is traced, the piece ``variant`` names."""
    import jax.numpy as jnp

    from nnxrl.algos import sgd
    from nnxrl.envs import craftax_env
    from nnxrl.run import programs

    if variant == "one is_terminal":

        def step_world(env, params, no_limit, key, state, action):
            obs, state, reward, done, _ = env.step(key, state, action, params)
            return obs.astype(jnp.float32), state, reward, done, done

        craftax_env.step_world = step_world
    elif variant == "no achievements":
        craftax_env.achievement_names = lambda env_id: ()
        step_worlds = craftax_env.step_worlds

        def without_achievements(*args, **kwargs):
            state, out = step_worlds(*args, **kwargs)
            return state, out._replace(episode={})

        craftax_env.step_worlds = without_achievements
    elif variant == "no resets":
        craftax_env.step_worlds = step_without_resets
    elif variant == "no shuffle":
        sgd.shuffle_steps = in_order
    elif variant == "no guard":
        programs.train_chunk = unguarded_chunk
    elif variant == "vmap of one":
        programs.over_members = always_vmap


def always_vmap(fn, count, in_axes, axis_name):
    """``run/members.py``'s ``over_members`` as it was: ``jax.vmap`` for any count."""
    import jax

    return jax.vmap(fn, in_axes=tuple(in_axes), axis_name=axis_name)


def unguarded_chunk(state, hp, *, update_fn, num_updates, axis_name=None):
    """``run/chunk.py``'s ``train_chunk`` without its guard."""
    import jax
    import jax.numpy as jnp

    def one(state, _):
        state, metrics = update_fn(state, hp)
        return state, {**metrics, "nonfinite": jnp.float32(0.0)}

    return jax.lax.scan(one, state, length=num_updates)


def in_order(key, batch, num_minibatches, groups=1):
    """``ops.minibatch.shuffle_steps`` without the shuffle: [T, B, ...] -> [M, T * B / M, ...]."""
    import jax

    def split(x):
        return x.reshape((num_minibatches, -1, *x.shape[2:]))

    return jax.tree.map(split, batch)


def step_without_resets(reset_one, step_one, num_envs, num_fresh, key, state, action):
    """``craftax_env.step_worlds`` without generating or swapping in fresh worlds."""
    import jax

    from nnxrl.envs.base import EnvStep

    obs, stepped, reward, done, terminated = jax.vmap(step_one)(
        jax.random.split(key, num_envs), state, action
    )
    return stepped, EnvStep(
        obs=obs,
        reward=reward.astype("float32"),
        terminated=terminated,
        truncated=done & ~terminated,
        final_obs=obs,
        episode={"achievements": stepped.achievements.astype("float32")},
    )


if __name__ == "__main__":
    main()
