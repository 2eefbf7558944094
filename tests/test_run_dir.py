"""Where a run starts (nnxrl.run.run_dir), from the files alone, without training: a
fresh directory, one that already holds a run, a resume whose config changed, a
checkpoint that does not exist, and paths that cannot be written."""

from __future__ import annotations

import pytest

from nnxrl import config as config_lib
from nnxrl.errors import CheckpointError, ConfigError
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
