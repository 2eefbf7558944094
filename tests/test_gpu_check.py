"""benchmarks/gpu_check.py is ready for the first GPU: every row's config and
overrides, at full and at quick size, are valid configs, so the one call a lent GPU
gets cannot fail on a typo."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from nnxrl import config as config_lib
from nnxrl.config.shipped import find_config

ROOT = Path(__file__).resolve().parent.parent


def gpu_check():
    spec = importlib.util.spec_from_file_location("gpu_check", ROOT / "benchmarks/gpu_check.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


CHECK = gpu_check()
ROWS = {**CHECK.ROWS, CHECK.MESH_ROW[0]: CHECK.MESH_ROW[1]}


@pytest.mark.parametrize("name", list(ROWS))
def test_every_row_is_a_valid_config_at_both_sizes(name):
    config, full, quick = ROWS[name]
    for overrides in (full, quick + ["total_env_steps=4096"]):
        loaded = config_lib.check_parts(config_lib.load(str(find_config(config)), overrides))
        assert loaded.total_env_steps > 0
    if "1024 envs" in name:
        assert config_lib.load(str(find_config(config)), full).env.num_envs == 1024
