"""What logging costs a CartPole run: env steps/s with logging off (metrics.jsonl
only), with console + jsonl, with console + jsonl + mlflow, and with an extra
backend that sleeps 50 ms per record (it drains for ~50 s after training ends;
steps/s counts training only).

    uv run python benchmarks/logging_overhead.py [--repeats 3]

Variants alternate within each repeat; medians and ratios to "off" are printed.
"""

from __future__ import annotations

import argparse
import io
import statistics
import tempfile
import time

from nnxrl.parallel.devices import use_cpu_devices

use_cpu_devices()

from nnxrl import config as C  # noqa: E402
from nnxrl.config import schedule  # noqa: E402
from nnxrl.logging.console import ConsoleBackend  # noqa: E402
from nnxrl.run.training import run_training  # noqa: E402


class SleepyBackend:
    """Stands in for a tracker on a slow network: 50 ms per record."""

    name = "sleepy"

    def open(self) -> None:
        pass

    def write(self, batch) -> None:
        time.sleep(0.05 * len(batch.records))

    def close(self, status: str) -> None:
        pass


def run(variant: str) -> float:
    backends = {
        "off": "[]",
        "console+jsonl": "[]",
        "console+jsonl+mlflow": "[mlflow]",
        "sleepy 50 ms": "[]",
    }[variant]
    # 8 updates per chunk: 122 hand-offs to the host in the 976-update run
    config = C.load(
        "configs/ppo-cartpole.yaml", [f"logging.backends={backends}", "logging.updates_per_chunk=8"]
    )
    extra = ()
    if variant.startswith("console"):
        extra = (ConsoleBackend(schedule.num_updates(config), stream=io.StringIO()),)
    elif variant == "sleepy 50 ms":
        extra = (SleepyBackend(),)
    with tempfile.TemporaryDirectory() as out:
        return run_training(config, out, quiet=True, extra_backends=extra).env_steps_per_second


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    variants = ["off", "console+jsonl", "console+jsonl+mlflow", "sleepy 50 ms"]
    results: dict[str, list[float]] = {v: [] for v in variants}
    for _ in range(args.repeats):
        for v in variants:
            results[v].append(run(v))
    base = statistics.median(results["off"])
    print("| CartPole PPO, 1 seed, 122 hand-offs | env steps/s (median) | vs off |")
    print("|---|---:|---:|")
    for v in variants:
        m = statistics.median(results[v])
        print(f"| {v} | {m:,.0f} | {m / base - 1:+.1%} |")


if __name__ == "__main__":
    main()
