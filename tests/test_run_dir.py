"""Where a run starts (nnxrl.run.run_dir), from the files alone, without training: a
fresh directory, one that already holds a run, a resume whose config changed, a
checkpoint that does not exist, and paths that cannot be written."""

from __future__ import annotations

import tracemalloc

import pytest

from nnxrl import config as config_lib
from nnxrl.errors import CheckpointError, ConfigError
from nnxrl.logging.jsonl import RecordOrder, records_in_order, truncate_after
from nnxrl.logging.records import Members
from nnxrl.run import run_dir

CONFIG = config_lib.from_dict({}, ["total_env_steps=2048", "ppo.num_steps=32"])


def test_a_fresh_directory_starts_at_update_zero(tmp_path):
    assert run_dir.prepare(CONFIG, tmp_path, resume=False) == run_dir.StartPoint(0, None)


def test_a_directory_that_holds_a_run_is_refused_with_the_command_to_continue_it(tmp_path):
    (tmp_path / "metrics.jsonl").write_text('{"update": 1, "seed": 0}\n')
    with pytest.raises(ConfigError, match=f"nnxrl train --resume {tmp_path}"):
        run_dir.prepare(CONFIG, tmp_path, resume=False)


def test_a_resume_checks_the_config_it_started_with(tmp_path):
    run_dir.write_config(CONFIG, tmp_path, fresh=True)
    assert run_dir.prepare(CONFIG, tmp_path, resume=True).update == 0
    changed = config_lib.from_dict(config_lib.to_dict(CONFIG), ["ppo.learning_rate=0.1"])
    with pytest.raises(ConfigError, match="ppo.learning_rate: 0.00025 -> 0.1"):
        run_dir.prepare(changed, tmp_path, resume=True)
    logging_only = config_lib.from_dict(config_lib.to_dict(CONFIG), ["logging.print_every=3"])
    assert run_dir.prepare(logging_only, tmp_path, resume=True).update == 0


def test_a_missing_checkpoint_names_the_ones_there_are(tmp_path):
    run_dir.write_config(CONFIG, tmp_path, fresh=True)
    with pytest.raises(CheckpointError, match=r"no checkpoint for update 8 .* available: \[\]"):
        run_dir.prepare(CONFIG, tmp_path, resume=True, step=8)


def test_paths_that_cannot_be_written_are_named(tmp_path):
    from nnxrl.store import own_files

    a_file = tmp_path / "file"
    a_file.write_text("keep")
    with pytest.raises(ConfigError, match="--out: .* is a file, not a directory"):
        run_dir.fresh_run_dir(a_file, "--out")
    with pytest.raises(ConfigError, match="mkdir -p"):
        own_files.ensure_writable_file(tmp_path / "no" / "such.json", "--json")
    assert own_files.ensure_writable_file(tmp_path / "new.json", "--json")
    held = run_dir.fresh_run_dir(tmp_path / "a" / "run", "--out")  # created
    (held / "metrics.jsonl").write_text('{"update": 1}\n')
    with pytest.raises(ConfigError, match="--out: .* already holds a run; continue it with"):
        run_dir.fresh_run_dir(held, "--out")
    assert not (tmp_path / "new.json").exists() and a_file.read_text() == "keep"


def test_a_long_runs_records_are_checked_and_trimmed_a_line_at_a_time(tmp_path):
    """An endless run's records outgrow memory, so a resume checks and trims them a line
    at a time, in place: what Python allocates stays far below the files' size, and
    the whole records before the cut keep their bytes (a record whose newline a kill
    cut off gets it back; a cut-short line is dropped)."""
    padding = "x" * 200
    lines = [f'{{"update": {u}, "seed": 0, "note": "{padding}"}}\n' for u in range(1, 40_001)]
    records = "".join(lines)
    (tmp_path / "metrics.jsonl").write_text(records + '{"update": 40001, "se')
    (tmp_path / "metrics_aggregate.jsonl").write_text(records[:-1])  # its newline cut off
    tracemalloc.start()
    order = records_in_order(tmp_path / "metrics.jsonl", Members(num_seeds=1))
    truncate_after(tmp_path, 40_000, 1)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert order == RecordOrder(40_000)
    assert len(records) > 9_000_000 and peak < 1_000_000
    assert (tmp_path / "metrics.jsonl").read_text() == records
    assert (tmp_path / "metrics_aggregate.jsonl").read_text() == records
    truncate_after(tmp_path, 3, 1)
    assert (tmp_path / "metrics.jsonl").read_text() == "".join(lines[:3])
