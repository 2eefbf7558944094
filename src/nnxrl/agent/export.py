"""``nnxrl export``: a run's policy written as a folder of its own (``policy.yaml`` and
``params/``, ``agent/policy.py``) that ``load_policy`` reads without the run."""

from __future__ import annotations

from contextlib import nullcontext
from pathlib import Path

from nnxrl.agent.policy import Policy, policy_from_checkpoint, save_policy
from nnxrl.analysis.sweep_report import setting_run_dir
from nnxrl.store import lock as run_lock
from nnxrl.store import own_files
from nnxrl.store.own_files import ensure_writable_dir


def export_policy(
    run_dir: str | Path,
    out: str | Path | None = None,
    *,
    step: int | None = None,
    setting: int | None = None,
) -> tuple[Path, Policy]:
    """Write the policy of ``run_dir``'s latest checkpoint (or update ``step``; a
    sweep's ``setting``) to ``out`` (default: ``RUN_DIR/policy``); returns the folder
    written and the policy. ``out`` may be new, empty or a policy written before; the
    run's own policy folder is written under the run's lock."""
    run = setting_run_dir(run_dir, setting)
    out = Path(out or Path(run_dir) / "policy")
    inside = out.parent.resolve() == Path(run_dir).resolve()  # the run's own policy
    own_files.check_replaceable(out, "--out", run_owned=inside)  # before anything is written
    ensure_writable_dir(out.parent, "--out")
    with run_lock.hold(run_dir, "export") if inside else nullcontext():
        policy = policy_from_checkpoint(run, step, setting)
        return save_policy(out, policy, run_owned=inside), policy
