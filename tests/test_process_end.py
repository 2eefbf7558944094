"""The ``nnxrl`` command's process ends once the command returns and Python's exit
handlers have run (``nnxrl/__main__.py``): a plugin's handler runs, stdout reaches a
pipe whole, and the modules are not torn down one by one, where Python's own exit
(the same command through ``nnxrl.cli.main``) tears them down."""

from __future__ import annotations

import os
import subprocess
import sys

from nnxrl.config.shipped import shipped_configs

# A plugin as a tracker would be: an exit handler that writes, and an object whose
# finaliser writes only if its module is torn down at the process's end.
PLUGIN = """
import atexit, os

fd = os.open(os.environ["PLUGIN_LOG"], os.O_WRONLY | os.O_APPEND | os.O_CREAT)


def exit_handler(write=os.write):
    write(fd, b"exit handler\\n")


class Kept:
    def __del__(self, write=os.write):
        write(fd, b"torn down\\n")


atexit.register(exit_handler)
kept = Kept()
"""


def test_the_command_ends_after_every_exit_handler_without_tearing_down(tmp_path):
    plugin = tmp_path / "tracker_plugin.py"
    plugin.write_text(PLUGIN)
    own_exit = "import sys; from nnxrl.cli import main; sys.exit(main())"
    names = list(shipped_configs())
    ways = {"nnxrl": ["-m", "nnxrl"], "python's exit": ["-c", own_exit]}
    for way, start in ways.items():
        log = tmp_path / f"{way}.log"
        env = {**os.environ, "PLUGIN_LOG": str(log)}
        env.pop("PYTHONUNBUFFERED", None)  # stdout to a pipe kept in a buffer, as by default
        command = [sys.executable, *start, "--plugin", str(plugin), "configs"]
        done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)
        assert done.returncode == 0, done.stderr
        listed = done.stdout.split()
        assert names and all(name in listed for name in names), (way, done.stdout)
        torn_down = "torn down\n" if way == "python's exit" else ""
        assert log.read_text() == "exit handler\n" + torn_down, way
