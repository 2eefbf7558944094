"""The GPU check: one command, about 8 minutes on one GPU, a table printed and written.

    uv run python benchmarks/gpu_check.py [--out gpu_check.md] [--quick]

On a machine with an NVIDIA GPU and JAX without CUDA, it first installs the CUDA
extra (``uv sync --extra cuda --extra brax``) and runs itself again under it; where
that cannot be installed it says so and stops. ``--quick`` runs every row at a toy
size on whatever backend there is (this is how the check itself is tested on CPU).

Each row is a fresh process (a cold compile: the compile cache off) that compiles
the config's programs, runs one warm-up chunk and then times chunks: compile seconds,
env steps per second over every seed, peak device memory (the allocator's peak;
"n/a" on CPU) and peak host memory (max RSS). The Craftax-Classic PPO row also gives
its share of the Craftax paper's headline rate, 1B env steps in an hour on one GPU
(277,778 env steps/s). A mesh row runs when there are two devices or more.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve()
ROOT = HERE.parent.parent
HEADLINE_SPS = 1e9 / 3600  # Craftax paper: PPO, 1B env steps in under an hour

# name -> (config, overrides at full size, overrides at --quick size)
ROWS = {
    "CartPole PPO, 1 seed": ("ppo-cartpole", ["total_env_steps=2000000"], []),
    "CartPole PPO, 8 seeds": ("ppo-cartpole", ["num_seeds=8", "total_env_steps=2000000"], []),
    "Craftax-Classic-Symbolic PPO, 1024 envs": (
        "ppo-craftax-classic-symbolic",
        ["env.num_envs=1024", "total_env_steps=100000000"],
        ["env.num_envs=16", "ppo.num_steps=8"],
    ),
    "Craftax-Symbolic PPO-RNN (GRU), 1024 envs": (
        "ppo-rnn-craftax-symbolic",
        ["env.num_envs=1024", "total_env_steps=100000000"],
        ["env.num_envs=16", "ppo.num_steps=8"],
    ),
    "Craftax-Classic-Pixels PPO, 256 envs": (
        "ppo-craftax-classic-symbolic",
        ["env.id=Craftax-Classic-Pixels-v1", "env.num_envs=256", "total_env_steps=20000000"],
        ["env.id=Craftax-Classic-Pixels-v1", "env.num_envs=16", "ppo.num_steps=8"],
    ),
    "Breakout-MinAtar PPO, conv torso, 128 envs": (
        "ppo-cartpole",
        ["env.id=Breakout-MinAtar", "env.num_envs=128", "total_env_steps=20000000"],
        ["env.id=Breakout-MinAtar", "ppo.num_steps=8"],
    ),
    "Craftax-Classic-Symbolic PQN-RNN (GRU), 1024 envs": (
        "pqn-rnn-craftax-classic-symbolic",
        ["env.num_envs=1024", "total_env_steps=100000000"],
        ["env.num_envs=16", "pqn.num_steps=8"],
    ),
}
MESH_ROW = (
    "CartPole PPO, 8 seeds on a 2-device mesh",
    ("ppo-cartpole", ["num_seeds=8", "mesh.seeds=2", "total_env_steps=2000000"], []),
)
TIMED_CHUNKS = 5


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="gpu_check.md", help="where the table is written too")
    parser.add_argument("--quick", action="store_true", help="every row at a toy size")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print("RESULT " + json.dumps(measure(*json.loads(args.worker))), flush=True)
        return
    if not args.quick:
        ensure_cuda()
    import jax

    rows = dict(ROWS)
    if len(jax.devices()) >= 2:
        rows[MESH_ROW[0]] = MESH_ROW[1]
    device = f"{jax.devices()[0].device_kind} x {len(jax.devices())} ({jax.default_backend()})"
    lines = [
        f"GPU check on {device}, jax {jax.__version__}" + (" (quick sizes)" if args.quick else ""),
        "",
        "| run | compile s | env steps/s | of the 1B-in-1h rate | peak device GiB "
        "| peak host GiB |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    print("\n".join(lines), flush=True)
    for name, (config, full, quick) in rows.items():
        overrides = quick + ["total_env_steps=4096"] if args.quick else full
        r = worker(config, overrides)
        share = f"{r['sps'] / HEADLINE_SPS:.0%}" if "PPO, 1024" in name else ""
        device_gib = f"{r['device_peak'] / 2**30:.1f}" if r["device_peak"] is not None else "n/a"
        line = (
            f"| {name} | {r['compile_s']:.1f} | {r['sps']:,.0f} | {share} | {device_gib} "
            f"| {r['host_peak'] / 2**30:.1f} |"
        )
        lines.append(line)
        print(line, flush=True)
    Path(args.out).write_text("\n".join(lines) + "\n")
    print(f"\nwritten to {args.out}")


def ensure_cuda() -> None:
    """Re-run under the CUDA extra when there is an NVIDIA GPU and JAX lacks CUDA."""
    import jax

    if jax.default_backend() == "gpu" or shutil.which("nvidia-smi") is None:
        return
    if os.environ.get("NNXRL_GPU_CHECK_SYNCED"):
        sys.exit("gpu_check: an NVIDIA GPU is here but JAX still sees no GPU after the sync")
    print("gpu_check: installing the CUDA extra (uv sync --extra cuda --extra brax)", flush=True)
    sync = subprocess.run(["uv", "sync", "--extra", "cuda", "--extra", "brax"], cwd=ROOT)
    if sync.returncode != 0:
        sys.exit("gpu_check: the CUDA extra could not be installed; run it where it can be")
    env = {**os.environ, "NNXRL_GPU_CHECK_SYNCED": "1"}
    os.execvpe("uv", ["uv", "run", "python", str(HERE), *sys.argv[1:]], env)


def worker(config: str, overrides: list[str]) -> dict:
    cmd = [sys.executable, str(HERE), "--worker", json.dumps([config, overrides])]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    if done.returncode != 0 or not lines:
        sys.exit(f"gpu_check: {config} {overrides} failed:\n{done.stderr[-3000:]}")
    return json.loads(lines[-1][len("RESULT ") :])


def measure(config_name: str, overrides: list[str]) -> dict:
    """Compile, one warm-up chunk, then TIMED_CHUNKS timed chunks (see the docstring)."""
    from nnxrl.parallel.devices import use_cpu_devices

    use_cpu_devices()
    import jax

    from nnxrl import config as config_lib
    from nnxrl.config import schedule
    from nnxrl.config.shipped import find_config
    from nnxrl.run.programs import compile_programs

    sets = ["compile_cache.enabled=false", "logging.backends=[]", *overrides]
    config = config_lib.load(str(find_config(config_name)), sets)
    t = time.perf_counter()
    programs = compile_programs(config, run_init=True)
    upc = schedule.updates_per_chunk(config)
    chunk, state = programs.chunk(upc), programs.init()
    compile_s = time.perf_counter() - t
    state, metrics = chunk(state, programs.hp)
    jax.block_until_ready(metrics)
    chunks = min(TIMED_CHUNKS, schedule.num_updates(config) // upc - 1)
    times = []
    for _ in range(max(chunks, 1)):
        t = time.perf_counter()
        state, metrics = chunk(state, programs.hp)
        jax.block_until_ready(metrics)
        times.append(time.perf_counter() - t)
    steps = upc * schedule.batch_size(config) * config.num_seeds
    stats = jax.devices()[0].memory_stats() or {}
    return {
        "compile_s": compile_s,
        "sps": steps / statistics.median(times),
        "device_peak": stats.get("peak_bytes_in_use"),
        "host_peak": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
    }


if __name__ == "__main__":
    main()
