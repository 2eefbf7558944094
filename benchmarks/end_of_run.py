"""What a short run waits for after training: the seconds from the device's last
chunk to ``run_training`` returning (the trackers' flush, the last checkpoint, the
exported policy), for the default backends against metrics.jsonl alone.

    uv run python benchmarks/end_of_run.py [--repeats 3] [--steps 50000]

A 50k-step CartPole run of PPO (97 updates, one per chunk: the default chunking),
each variant in a fresh MLflow store; variants alternate within each repeat and
medians are printed, with the extra wait over metrics.jsonl alone.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from nnxrl.parallel.devices import use_cpu_devices

use_cpu_devices()

from nnxrl import config as C  # noqa: E402
from nnxrl.run.training import run_training  # noqa: E402

VARIANTS = {
    "metrics.jsonl only": "[]",
    "mlflow (the default)": "[mlflow]",
    "mlflow + tensorboard": "[mlflow,tensorboard]",
}


def after_training(backends: str, steps: int) -> float:
    overrides = [f"total_env_steps={steps}", f"logging.backends={backends}"]
    config = C.load("configs/ppo-cartpole.yaml", overrides)
    with tempfile.TemporaryDirectory() as root:
        result = run_training(config, Path(root) / "run", quiet=True)
        return time.perf_counter() - result.train_end


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--steps", type=int, default=50_000)
    args = parser.parse_args()
    seconds: dict[str, list[float]] = {v: [] for v in VARIANTS}
    for _ in range(args.repeats):
        for name, backends in VARIANTS.items():
            seconds[name].append(after_training(backends, args.steps))
    base = statistics.median(seconds["metrics.jsonl only"])
    print(f"| CartPole PPO, {args.steps:,} env steps | seconds after training (median) | extra |")
    print("|---|---:|---:|")
    for name, values in seconds.items():
        m = statistics.median(values)
        print(f"| {name} | {m:.2f} | {m - base:+.2f} |")


if __name__ == "__main__":
    main()
