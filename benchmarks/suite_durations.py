"""Each test file's measured seconds, which set the suite's schedule: ``tests/conftest.py``
hands the two workers the longest files first, so that each worker's last file is a
short one and both end together.

    uv run pytest --junitxml=suite.xml
    uv run python benchmarks/suite_durations.py suite.xml [--write]

Prints each file's seconds (its tests' setup, call and teardown, summed), longest
first, and their total; ``--write`` saves them to ``tests/durations.json``. Refresh it
when a file's tests grow or shrink by a minute or more: a stale figure only schedules
a file earlier or later, and a file not in it yet goes first.
"""

from __future__ import annotations

import argparse
import json
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

DURATIONS = Path(__file__).resolve().parents[1] / "tests" / "durations.json"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("junit", type=Path, help="a --junitxml report of the whole suite")
    parser.add_argument("--write", action="store_true", help=f"save them to {DURATIONS.name}")
    args = parser.parse_args()
    seconds = file_seconds(args.junit)
    print("| test file | seconds |\n|---|---:|")
    for name, s in seconds.items():
        print(f"| {name} | {s:.0f} |")
    print(f"| all {len(seconds)} files | {sum(seconds.values()):.0f} |")
    if args.write:
        DURATIONS.write_text(json.dumps(seconds, indent=1) + "\n")


def file_seconds(junit: Path) -> dict[str, float]:
    """File name -> its tests' seconds, longest first (a test's classname is
    ``tests.test_x``; its time covers setup, call and teardown)."""
    totals: Counter[str] = Counter()
    for case in ET.parse(junit).iter("testcase"):
        totals[case.get("classname").rsplit(".", 1)[-1] + ".py"] += float(case.get("time"))
    return {name: round(s, 1) for name, s in totals.most_common()}


if __name__ == "__main__":
    main()
