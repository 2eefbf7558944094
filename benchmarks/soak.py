"""A soak: one `nnxrl train` for an hour or more, watched from outside, then killed
with SIGKILL and resumed.

    uv run python benchmarks/soak.py --minutes 60
    uv run python benchmarks/soak.py --minutes 5 --set env.num_envs=8   # a short look

The run is the README's CartPole config made endless (``total_env_steps`` far beyond
the soak), with its default loggers (console, JSONL, the MLflow store beside the run)
and a checkpoint every ``--checkpoint-minutes`` (the newest 3 kept). Every
``--every`` seconds the table gets a row: the process's resident memory and threads,
the disk its checkpoints take and its records take, and the env steps per second
since the row before (from the records' updates). Run it by hand in the background
while other work goes on; that work moves the rate, not the memory.

After ``--minutes`` the process is killed with SIGKILL and resumed with ``--resume``
up to the last update the killed run had written: the records of the resumed run
must be byte-identical to the killed run's. The verdicts at the end:

- resident memory after warm-up (the first sample after ``--warm-up`` minutes
  against the last), in MiB and per hour;
- threads: the same count at the end as after warm-up;
- checkpoints on disk: at most ``keep`` (3) at once, and their size;
- the rate: the slowest row against the median;
- resume: identical records, and how long the resume took and its peak memory.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
KEEP = 3


def main() -> None:
    args = parse_args()
    folder = Path(args.out or tempfile.mkdtemp(prefix="nnxrl-soak-"))
    run = folder / "run"
    overrides = [
        "total_env_steps=100000000000",
        "checkpoint.every_updates=null",
        f"checkpoint.every_minutes={args.checkpoint_minutes}",
        f"checkpoint.keep={KEEP}",
        *args.set,
    ]
    print(f"soak: {args.minutes} min of {args.config} {' '.join(args.set)} -> {run}")
    process = start(args.config, run, overrides)
    samples = watch(process, run, args)
    process.send_signal(signal.SIGKILL)
    process.wait()
    killed = (run / "metrics.jsonl").read_bytes()
    print_verdicts(samples, args, resumed_same(run, killed))


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=60.0)
    parser.add_argument("--every", type=float, default=60.0, help="seconds between rows")
    parser.add_argument("--warm-up", type=float, default=5.0, help="minutes before the baseline")
    parser.add_argument("--checkpoint-minutes", type=float, default=3.0)
    parser.add_argument("--config", default=str(ROOT / "configs/ppo-cartpole.yaml"))
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--out", help="the folder to run in (default: a new temporary one)")
    return parser.parse_args()


def start(config: str, run: Path, overrides: list[str]) -> subprocess.Popen:
    """`nnxrl train` in a fresh process (its own Python, so its pid is the trainer's)."""
    sets = sum((["--set", o] for o in overrides), [])
    return nnxrl_train([config, "--out", str(run), *sets])


def nnxrl_train(args: list[str], stderr: Any = subprocess.PIPE) -> subprocess.Popen:
    command = [sys.executable, "-m", "nnxrl", "train", *args]
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=stderr)


def watch(process: subprocess.Popen, run: Path, args: argparse.Namespace) -> list[dict]:
    """A row every ``args.every`` seconds until ``args.minutes`` have passed."""
    started = time.monotonic()
    samples: list[dict] = []
    print("| min | RSS MiB | threads | checkpoints | MiB | records MiB | update | env steps/s |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    while time.monotonic() - started < args.minutes * 60:
        time.sleep(args.every)
        if process.poll() is not None:
            sys.exit(
                f"soak: the run ended early (exit {process.returncode}):\n"
                + process.stderr.read().decode()[-3000:]
            )
        samples.append(sample(process.pid, run, time.monotonic() - started, samples))
        s = samples[-1]
        print(
            f"| {s['minutes']:.1f} | {s['rss']:.0f} | {s['threads']} | {s['kept']} "
            f"| {s['checkpoints']:.1f} "
            f"| {s['records']:.1f} | {s['update']} | {s['rate']:,.0f} |",
            flush=True,
        )
    return samples


def sample(pid: int, run: Path, seconds: float, before: list[dict]) -> dict:
    """The process's memory and threads, the run's disk use and its rate since the
    sample ``before`` (from the last update in its records)."""
    status = dict(
        line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
    )
    update, steps = last_update(run / "metrics.jsonl")
    rate = 0.0
    if before and seconds > before[-1]["seconds"]:
        rate = (steps - before[-1]["steps"]) / (seconds - before[-1]["seconds"])
    return {
        "seconds": seconds,
        "minutes": seconds / 60,
        "rss": int(status["VmRSS"].split()[0]) / 1024,
        "threads": int(status["Threads"]),
        "checkpoints": disk_mib(run / "checkpoints"),
        "kept": count_checkpoints(run / "checkpoints"),
        "records": disk_mib(run, "*.jsonl"),
        "update": update,
        "steps": steps,
        "rate": rate,
    }


def last_update(records: Path) -> tuple[int, int]:
    """(the last update written, its env steps per seed) from a run's records."""
    try:
        with records.open("rb") as f:
            f.seek(max(0, records.stat().st_size - 65536))
            lines = [line for line in f.read().splitlines() if line.endswith(b"}")]
    except OSError:
        return 0, 0
    if not lines:
        return 0, 0
    record = json.loads(lines[-1])
    return int(record["update"]), int(record.get("env_steps", 0))


def count_checkpoints(folder: Path) -> int:
    """The checkpoints in ``folder`` (one folder per update)."""
    return sum(1 for p in folder.glob("*") if p.name.isdigit()) if folder.exists() else 0


def disk_mib(path: Path, pattern: str = "**/*") -> float:
    if not path.exists():
        return 0.0
    return sum(p.stat().st_size for p in path.glob(pattern) if p.is_file()) / 2**20


def resumed_same(run: Path, killed: bytes) -> dict:
    """Resume the killed run up to its last whole update: the same records, and a stop
    where --stop-after says (exit 130), not a refusal; with the resume's wall time and
    peak resident memory (its own, from wait4)."""
    killed = killed[: killed.rfind(b"\n") + 1]  # a line cut by the kill is not a record
    last = json.loads(killed[killed.rfind(b"\n", 0, -1) + 1 :])["update"]
    (run.parent / "killed-metrics.jsonl").write_bytes(killed)
    started = time.monotonic()
    with open(run.parent / "resume-stderr.txt", "wb") as err:
        process = nnxrl_train(["--resume", str(run), "--stop-after", str(last)], stderr=err)
        _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    resume = {"seconds": time.monotonic() - started, "peak": usage.ru_maxrss / 1024}
    with (run / "metrics.jsonl").open("rb") as f:
        resume["same"] = process.returncode == 130 and f.read(len(killed)) == killed
    print(
        f"\nresumed to update {last} (exit {process.returncode}) in {resume['seconds']:.0f} s, "
        f"peak RSS {resume['peak']:.0f} MiB: "
        f"{'identical' if resume['same'] else 'DIFFERENT'} records ({len(killed):,} bytes)"
    )
    if process.returncode != 130:
        print((run.parent / "resume-stderr.txt").read_text()[-2000:])
    return resume


def print_verdicts(samples: list[dict], args: argparse.Namespace, resume: dict) -> None:
    warm = [s for s in samples if s["minutes"] >= args.warm_up] or samples[-1:]
    first, last = warm[0], samples[-1]
    hours = max(last["minutes"] - first["minutes"], 1e-9) / 60
    growth = last["rss"] - first["rss"]
    rates = [s["rate"] for s in samples[1:] if s["rate"] > 0]
    most = max(s["checkpoints"] for s in samples)
    print("\n| check | figure |")
    print("|---|---|")
    print(
        f"| RSS after warm-up | {first['rss']:.0f} -> {last['rss']:.0f} MiB "
        f"({growth:+.0f} MiB, {growth / hours:+.0f} MiB/h) |"
    )
    print(f"| threads after warm-up | {first['threads']} -> {last['threads']} |")
    kept = max(s["kept"] for s in samples)
    print(f"| checkpoints on disk | at most {kept} at once (keep {KEEP}), {most:.1f} MiB |")
    if rates:
        print(
            f"| env steps/s | median {statistics.median(rates):,.0f}, slowest "
            f"{min(rates):,.0f} ({min(rates) / statistics.median(rates):.2f}x) |"
        )
    same = "identical records" if resume["same"] else "DIFFERENT records"
    print(f"| resumed after SIGKILL | {same} |")
    print(f"| the resume | {resume['seconds']:.0f} s, peak RSS {resume['peak']:,.0f} MiB |")


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
