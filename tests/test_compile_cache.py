"""The compile cache's folder and switches: it can be moved or switched off, and an
unwritable folder is skipped, a read-only one read (its two levels:
test_saved_programs.py)."""

from __future__ import annotations

import threading
from pathlib import Path

import jax
from cli_runs import train_logged
from disks import mount_tmpfs, remount_read_only, unmount

from nnxrl import config as config_lib
from nnxrl.config import CompileCacheConfig
from nnxrl.store.compile_cache import default_cache_dir, persistent_cache_off, use_compile_cache

ROOT = Path(__file__).resolve().parent.parent
CARTPOLE = str(ROOT / "configs/ppo-cartpole.yaml")


def test_switched_off_it_writes_nothing_and_an_unwritable_folder_is_skipped(tmp_path, capsys):
    """(A run that goes on past a cache it cannot write: the read-only test below and
    test_saved_programs.py.)"""
    cache = tmp_path / "cache"
    try:
        assert use_compile_cache(CompileCacheConfig(dir=str(cache), enabled=False)) is None
        assert not cache.exists() and not jax.config.jax_enable_compilation_cache
        blocker = tmp_path / "a-file"
        blocker.write_text("not a folder")
        assert use_compile_cache(CompileCacheConfig(dir=str(blocker / "cache"))) is None
        said = capsys.readouterr().err
        assert f"compile cache {blocker / 'cache'} cannot be used" in said
        assert "compile_cache.enabled=false" in said  # says what to do
        assert not jax.config.jax_enable_compilation_cache
    finally:
        use_compile_cache(CompileCacheConfig())  # the suite's own cache, as conftest set it


def test_a_read_only_folder_is_read_and_never_written(tmp_path):
    """A cache warmed into a read-only mount (a container image, a shared disk) loads
    its programs; a config it lacks compiles, warns of no failed write and adds nothing."""
    cache = tmp_path / "cache"
    mount_tmpfs(cache, "size=64m")
    try:
        train_logged(tmp_path / "warm", [f"compile_cache.dir={cache}"])
        files = sorted(cache.rglob("*"))
        remount_read_only(cache)
        log = train_logged(tmp_path / "read", [f"compile_cache.dir={cache}"])
        assert f"compile cache {cache} is read-only" in log
        assert "loaded the compiled programs" in log
        log = train_logged(tmp_path / "miss", [f"compile_cache.dir={cache}", "network.width=8"])
        assert "compiled in" in log and "could not be saved" not in log
        assert "Error writing" not in log and sorted(cache.rglob("*")) == files
    finally:
        unmount(cache)
    runs = [(tmp_path / run / "metrics.jsonl").read_bytes() for run in ("warm", "read")]
    assert runs[0] == runs[1]


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


def test_threads_compiling_at_once_share_one_switch_of_the_persistent_cache(tmp_path):
    """init compiles beside the chunk (run/programs.py): the cache stays off until the
    last of them is out, then is on again."""
    use_compile_cache(CompileCacheConfig(dir=str(tmp_path)))
    inside, release = threading.Event(), threading.Event()

    def compile_beside() -> None:
        with persistent_cache_off():
            inside.set()
            release.wait(10)

    beside = threading.Thread(target=compile_beside)
    try:
        with persistent_cache_off():
            beside.start()
            assert inside.wait(10) and not jax.config.jax_enable_compilation_cache
        assert not jax.config.jax_enable_compilation_cache  # the other is still inside
        release.set()
        beside.join(10)
        assert jax.config.jax_enable_compilation_cache
    finally:
        release.set()
        use_compile_cache(CompileCacheConfig())  # the suite's own cache, as conftest set it
