"""The compile cache's folder and switches: it can be moved or switched off, and an
unwritable folder is skipped (its two levels: test_saved_programs.py)."""

from __future__ import annotations

from pathlib import Path

from cli_runs import train_logged

from nnxrl import config as config_lib
from nnxrl.run.compile_cache import default_cache_dir

ROOT = Path(__file__).resolve().parent.parent
CARTPOLE = str(ROOT / "configs/ppo-cartpole.yaml")


def test_switched_off_it_writes_nothing_and_an_unwritable_folder_is_skipped(tmp_path):
    cache = tmp_path / "cache"
    log = train_logged(
        tmp_path / "off", [f"compile_cache.dir={cache}", "compile_cache.enabled=false"]
    )
    assert not cache.exists() and "cache hit" not in log
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    log = train_logged(tmp_path / "blocked", [f"compile_cache.dir={blocker / 'cache'}"])
    assert f"compile cache {blocker / 'cache'} cannot be used" in log
    assert "compile_cache.enabled=false" in log  # says what to do
    assert (tmp_path / "blocked" / "metrics.jsonl").exists()


def test_the_default_folder_is_per_user_and_follows_xdg(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert default_cache_dir() == tmp_path / "nnxrl" / "jax"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert default_cache_dir() == Path.home() / ".cache" / "nnxrl" / "jax"


def test_its_keys_are_validated_and_may_change_on_resume():
    config = config_lib.load(CARTPOLE, ["compile_cache.min_compile_seconds=0.5"])
    assert config.compile_cache.min_compile_seconds == 0.5
    try:
        config_lib.load(CARTPOLE, ["compile_cache.enable=false"])
    except config_lib.ConfigError as e:
        assert "compile_cache.enable" in str(e) and "enabled" in str(e)
    else:
        raise AssertionError("a misspelt key was accepted")
