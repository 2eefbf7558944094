"""What the host spends on a chunk's records: ``chunk_to_records``, ``aggregate`` and
the JSON lines of both files, for the shape of SAC's learning check (4 seeds x 20,000
updates, one env step each, SAC's 15 metrics), from one or two source trees, each
measurement a fresh process, the trees alternated, medians of ``--rounds``.

    uv run python benchmarks/host_records.py src                      # this tree
    uv run python benchmarks/host_records.py ../before/src src        # A/B

The host does this beside training: on a 2-core machine its seconds are taken from
the devices' threads.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

MEASURE = r"""
import json, sys, time
import numpy as np
from nnxrl.logging.records import aggregate, chunk_to_records
seeds, updates = int(sys.argv[1]), int(sys.argv[2])
names = ["episode_count", "episode_length", "episode_return", "episode_return_window",
         "episodes_in_window", "loss/actor", "loss/alpha", "loss/critic", "loss/total",
         "reward/extrinsic", "reward/intrinsic", "stats/alpha", "stats/entropy",
         "stats/gradient_steps", "stats/q_taken"]
rng = np.random.default_rng(0)
metrics = {name: rng.standard_normal((seeds, updates)).astype(np.float32) for name in names}
metrics["episode_count"] = (rng.random((seeds, updates)) < 0.005).astype(np.int32)
metrics["episodes_in_window"] = np.cumsum(metrics["episode_count"], axis=1).clip(max=100)
times = {}
t = time.perf_counter()
records = chunk_to_records(metrics, 1, 1)
times["records"] = time.perf_counter() - t
t = time.perf_counter()
aggregates = aggregate(records)
times["aggregate"] = time.perf_counter() - t
t = time.perf_counter()
text = "".join(json.dumps(r) + "\n" for r in records + aggregates)
times["json"] = time.perf_counter() - t
print(json.dumps(times))
"""
PARTS = ("records", "aggregate", "json")


def measure(src: str, seeds: int, updates: int) -> dict:
    env = {**os.environ, "PYTHONPATH": src}
    args = [sys.executable, "-c", MEASURE, str(seeds), str(updates)]
    done = subprocess.run(args, capture_output=True, text=True, env=env, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("srcs", nargs="+", help="one or two src folders")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seeds", type=int, default=4)
    parser.add_argument("--updates", type=int, default=20_000)
    args = parser.parse_args()
    results: dict[str, list[dict]] = {src: [] for src in args.srcs}
    for _ in range(args.rounds):
        for src in args.srcs:
            results[src].append(measure(src, args.seeds, args.updates))
    print(f"\n{args.seeds} seeds x {args.updates:,} updates, host seconds (medians)")
    print("| tree | " + " | ".join(PARTS) + " | total |")
    print("|---|" + "---:|" * (len(PARTS) + 1))
    for src, runs in results.items():
        med = [statistics.median(r[p] for r in runs) for p in PARTS]
        print(f"| {src} | " + " | ".join(f"{m:.2f}" for m in med) + f" | {sum(med):.2f} |")


if __name__ == "__main__":
    main()
