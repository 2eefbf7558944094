"""Where a run's start goes, on a cold and a repeated config, in fresh processes.

    uv run python benchmarks/warm_start.py [--repeats 3] [--part 1|2] [--before SRC]

Part 1, the start: seconds from calling ``nnxrl.train`` (imports done, config loaded)
to the first update's metrics (timing.jsonl's first line), for a tiny CartPole PPO
run written to a run directory, with the compile cache's three states:

- saved programs (``compile_cache.save_programs``, the default): the executables
  loaded, nothing traced;
- JAX's cache only (``save_programs=false``): traced and lowered, XLA's output read;
- cold (``compile_cache.enabled=false``): traced, lowered and compiled;

and once more with saved programs and the env suite (gymnax) imported before the
clock starts, which shows what the start costs besides that import.

Part 2, the README's first command, ``nnxrl train ppo-cartpole`` (500k env steps,
console and MLflow), repeated: wall seconds of the whole process, and what importing
its heaviest parts costs alone in a fresh process. With ``--before SRC`` (another
tree's ``src`` folder, e.g. from ``git archive COMMIT src | tar -x -C DIR``), the same
command from that tree alternates with this one's, each with its own compile cache.

Each variant runs in a fresh process; variants alternate within each repetition and
the table shows medians with peak host memory (max RSS).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve()
ROOT = HERE.parent.parent
TINY = ["total_env_steps=4096", "ppo.num_steps=16", "logging.backends=[]"]
VARIANTS = {
    "saved programs (default)": [],
    "saved programs, gymnax imported before the clock": ["+import gymnax"],
    "JAX's cache only": ["compile_cache.save_programs=false"],
    "cold (no cache)": ["compile_cache.enabled=false"],
}
IMPORTS = ("jax", "gymnax", "mlflow", "nnxrl.run.training")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--part", type=int, choices=(1, 2), help="only this part")
    parser.add_argument("--before", type=Path, help="part 2 beside this src folder")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print("RESULT " + json.dumps(start_seconds(json.loads(args.worker))), flush=True)
        return
    with tempfile.TemporaryDirectory() as root:
        if args.part in (None, 1):
            starts(Path(root), args.repeats)
        if args.part in (None, 2):
            first_command(Path(root), args.repeats, args.before)


def starts(root: Path, repeats: int) -> None:
    cache = f"compile_cache.dir={root / 'cache'}"
    for overrides in VARIANTS.values():  # fill the caches
        worker([cache, *overrides], root / "fill")
    runs: dict[str, list[dict]] = {name: [] for name in VARIANTS}
    for rep in range(repeats):
        names = list(VARIANTS) if rep % 2 == 0 else list(reversed(VARIANTS))
        for name in names:
            runs[name].append(worker([cache, *VARIANTS[name]], root / f"{rep}-{len(runs[name])}"))
    print(
        "| start of a tiny CartPole PPO run | train() to first update, s | of which compile, s "
        "| peak RSS, MiB |"
    )
    print("|---|---:|---:|---:|")
    for name, results in runs.items():
        first, compiled, rss = (
            statistics.median(r[k] for r in results)
            for k in ("first_update_s", "compile_s", "rss_mib")
        )
        print(f"| {name} | {first:.2f} | {compiled:.2f} | {rss:,.0f} |")


def worker(overrides: list[str], out: Path) -> dict:
    cmd = [
        sys.executable,
        str(HERE),
        "--worker",
        json.dumps({"overrides": overrides, "out": str(out)}),
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    if done.returncode != 0 or not lines:
        sys.exit(f"worker failed ({' '.join(cmd)}):\n{done.stderr[-3000:]}")
    return json.loads(lines[-1][len("RESULT ") :])


def start_seconds(job: dict) -> dict:
    from nnxrl.parallel.devices import use_cpu_devices

    use_cpu_devices()  # as the CLI does
    import shutil

    from nnxrl import config as config_lib
    from nnxrl.run.training import run_training

    overrides = [o for o in job["overrides"] if not o.startswith("+import ")]
    for module in [o.removeprefix("+import ") for o in job["overrides"] if o not in overrides]:
        __import__(module)
    config = config_lib.load(str(ROOT / "configs/ppo-cartpole.yaml"), TINY + overrides)
    out = Path(job["out"])
    shutil.rmtree(out, ignore_errors=True)
    started = time.time()
    result = run_training(config, out, quiet=True)
    first = json.loads((out / "timing.jsonl").read_text().splitlines()[0])["time"]
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"first_update_s": first - started, "compile_s": result.compile_seconds, "rss_mib": rss}


def first_command(root: Path, repeats: int, before: Path | None) -> None:
    trees = {"this tree": ROOT / "src", **({"before": before.resolve()} if before else {})}
    walls: dict[str, list[float]] = {name: [] for name in trees}
    ends: dict[str, list[float]] = {name: [] for name in trees}
    rss = []
    for rep in range(repeats + 1):  # the first fills each tree's cache
        for name in list(trees) if rep % 2 == 0 else list(reversed(trees)):
            wall, end = run_first_command(trees[name], root / name.replace(" ", "-"), rep)
            if rep:
                walls[name].append(wall)
                ends[name].append(end)
                rss.append(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)
    imports = {name: import_seconds(name) for name in IMPORTS}
    print("\n| `nnxrl train ppo-cartpole`, repeated | seconds (median) |")
    print("|---|---:|")
    for name in trees:
        wall, end = walls[name], ends[name]
        print(f"| whole process, wall, {name} ({listed(wall)}) | {median(wall)} |")
        print(f"| of which after its last line, {name} ({listed(end)}) | {median(end)} |")
    for name, seconds in imports.items():
        print(f"| import {name} alone, fresh process | {seconds:.2f} |")
    print(f"| peak RSS of a run, MiB | {max(rss):,.0f} |")


def listed(seconds: list[float]) -> str:
    return ", ".join(f"{s:.2f}" for s in seconds)


def median(seconds: list[float]) -> str:
    return f"{statistics.median(seconds):.2f}"


def run_first_command(src: Path, root: Path, rep: int) -> tuple[float, float]:
    """The first command from the tree at ``src`` (its own compile cache under
    ``root``; a tree from before ``python -m nnxrl`` runs ``nnxrl.cli``): its wall
    seconds, and those from its last line of output to the process's end."""
    module = "nnxrl" if (src / "nnxrl" / "__main__.py").exists() else "nnxrl.cli"
    env = {**os.environ, "XDG_CACHE_HOME": str(root / "xdg"), "PYTHONPATH": str(src)}
    env["PYTHONUNBUFFERED"] = "1"  # each line as it is printed
    config = ROOT / "configs" / "ppo-cartpole.yaml"  # by path: an archived src has no configs
    command = [sys.executable, "-m", module, "train", str(config)]
    root.mkdir(exist_ok=True)
    started = time.perf_counter()
    with subprocess.Popen(
        [*command, "--out", str(root / f"first-{rep}")],
        cwd=root,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    ) as process:
        lines = []
        for line in process.stdout:
            lines.append(line)
            last_line = time.perf_counter()
    ended = time.perf_counter()
    if process.returncode != 0:
        sys.exit(f"{' '.join(command)} failed:\n{''.join(lines)[-3000:]}")
    return ended - started, ended - last_line


def import_seconds(module: str) -> float:
    """The median over 3 fresh processes of importing ``module``."""
    code = f"import time; t = time.perf_counter(); import {module}; print(time.perf_counter() - t)"
    values = [
        float(
            subprocess.run(
                [sys.executable, "-c", code], capture_output=True, text=True, check=True
            ).stdout
        )
        for _ in range(3)
    ]
    return statistics.median(values)


if __name__ == "__main__":
    main()
