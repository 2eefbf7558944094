"""Where the test suite's in-process JAX time goes: tracing, lowering to MLIR, and
compiling or loading from JAX's cache, per test and per program.

    NNXRL_SPANS=spans PYTHONPATH=benchmarks uv run pytest -p suite_compile_time
    uv run python benchmarks/suite_compile_time.py spans [--top 20]

Loaded as a pytest plugin (``-p``), it listens to JAX's compile events
(``jax.monitoring``: each phase's start and end, and the function's name) in every
process pytest runs tests in, and each process writes them to a file of its own under
``$NNXRL_SPANS``. Run as a script, it prints the phases' seconds over the whole suite,
per program and for the tests that spent most. A phase's spans inside one test are
merged where they overlap (a jit traced inside another's trace counts once). Runs the
tests start as subprocesses (``nnxrl train`` through the CLI) are not seen.
"""

from __future__ import annotations

import argparse
import json
import os
from collections import Counter, defaultdict
from pathlib import Path

PHASES = {
    "jaxpr_trace_duration": "trace",
    "jaxpr_to_mlir_module_duration": "lower",
    "backend_compile_duration": "compile or load",
}
_spans: list[tuple[str, str, float, float, str]] = []


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, help="the $NNXRL_SPANS folder of a suite run")
    parser.add_argument("--top", type=int, default=20, help="how many tests to list")
    args = parser.parse_args()
    spans = read_spans(args.folder)
    per_test = merged_per_test(spans)
    print_totals(per_test)
    print_programs(spans)
    print_tests(per_test, args.top)


def read_spans(folder: Path) -> list[list]:
    """Every process's spans: [test, phase, start, end, function name]."""
    return [json.loads(line) for f in sorted(folder.glob("*.jsonl")) for line in f.open()]


def merged_per_test(spans: list[list]) -> dict[str, Counter[str]]:
    """Test -> phase -> seconds, each phase's overlapping spans merged."""
    intervals: dict[str, dict[str, list]] = defaultdict(lambda: defaultdict(list))
    for test, phase, start, end, _ in spans:
        intervals[test][phase].append((start, end))
    return {
        test: Counter({phase: union_seconds(spans) for phase, spans in phases.items()})
        for test, phases in intervals.items()
    }


def union_seconds(intervals: list[tuple[float, float]]) -> float:
    """The length of the union of ``intervals``."""
    total, reach = 0.0, float("-inf")
    for start, end in sorted(intervals):
        total += max(0.0, end - max(start, reach))
        reach = max(reach, end)
    return total


def print_totals(per_test: dict[str, Counter[str]]) -> None:
    totals = sum(per_test.values(), Counter())
    print("| phase, all tests | seconds |\n|---|---:|")
    for phase, name in PHASES.items():
        print(f"| {name} | {totals[phase]:.0f} |")
    print(f"| all three | {sum(totals.values()):.0f} |\n")


def print_programs(spans: list[list]) -> None:
    """The programs that cost most, per phase (spans summed, not merged)."""
    seconds: Counter[tuple[str, str]] = Counter()
    calls: Counter[tuple[str, str]] = Counter()
    for _, phase, start, end, name in spans:
        seconds[phase, name] += end - start
        calls[phase, name] += 1
    print("| phase | program | times | seconds |\n|---|---|---:|---:|")
    for (phase, name), s in seconds.most_common(10):
        print(f"| {PHASES.get(phase, phase)} | {name} | {calls[phase, name]} | {s:.0f} |")
    print()


def print_tests(per_test: dict[str, Counter[str]], top: int) -> None:
    print("| test | " + " | ".join(PHASES.values()) + " |\n|---|" + "---:|" * len(PHASES))
    ranked = sorted(per_test.items(), key=lambda item: -sum(item[1].values()))
    for test, phases in ranked[:top]:
        print(f"| {test} | " + " | ".join(f"{phases[p]:.1f}" for p in PHASES) + " |")


# the plugin: loaded by pytest with -p suite_compile_time


def pytest_configure(config) -> None:
    if os.environ.get("NNXRL_SPANS"):
        import jax

        jax.monitoring.register_event_time_span_listener(_record)


def _record(event: str, start: float, end: float, **kwargs) -> None:
    phase = event.rsplit("/", 1)[-1]
    if phase in PHASES:
        test = os.environ.get("PYTEST_CURRENT_TEST", "outside a test").rsplit(" ", 1)[0]
        _spans.append((test, phase, start, end, kwargs.get("fun_name", "")))


def pytest_sessionfinish(session) -> None:
    folder = os.environ.get("NNXRL_SPANS")
    if folder and _spans:
        name = os.environ.get("PYTEST_XDIST_WORKER", f"process-{os.getpid()}")
        Path(folder).mkdir(parents=True, exist_ok=True)
        with (Path(folder) / f"{name}.jsonl").open("w") as f:
            f.writelines(json.dumps(span) + "\n" for span in _spans)


if __name__ == "__main__":
    main()
