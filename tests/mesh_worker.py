"""Run by tests/test_mesh.py in a fresh process, so that JAX starts with the device
count (and process group) the test asks for:

    python mesh_worker.py OUT_DIR REPORT.npz [--resume STEP] KEY=VALUE...

Trains ppo-cartpole with the overrides into OUT_DIR (or resumes it from the
checkpoint of update STEP, first saving that checkpoint as restored here) and writes
REPORT.npz: the final parameters (``param_<i>``), the restored state (``restored_<i>``)
and a JSON description of where the arrays lived (``layout``).
"""

from __future__ import annotations

import json
import sys

import jax
import numpy as np

import nnxrl
from nnxrl.parallel.mesh import host_copy
from nnxrl.run.programs import compile_programs
from nnxrl.store import checkpoint


def main(argv: list[str]) -> None:
    out_dir, report = argv[0], argv[1]
    resume = argv[2] == "--resume"
    step = int(argv[3]) if resume else None
    overrides = argv[4:] if resume else argv[2:]
    config = nnxrl.load_config("ppo-cartpole", overrides)
    arrays: dict[str, np.ndarray] = {}
    if resume:
        programs = compile_programs(config)
        restored, _ = checkpoint.restore(out_dir, programs.template, step)
        for i, leaf in enumerate(jax.tree.leaves(restored)):
            leaf = jax.random.key_data(leaf) if checkpoint._is_key(leaf) else leaf
            arrays[f"restored_{i}"] = np.asarray(host_copy(leaf))
    result = nnxrl.train(config, out_dir, resume=resume, step=step)
    state = result.final_state
    for i, leaf in enumerate(jax.tree.leaves(host_copy(state.params))):
        arrays[f"param_{i}"] = np.asarray(leaf)
    obs = state.obs
    param = jax.tree.leaves(state.params)[0]
    layout = {
        "devices": len(jax.devices()),
        "processes": jax.process_count(),
        "mesh": dict(obs.sharding.mesh.shape),
        "obs_shape": list(obs.shape),
        "obs_spec": [str(a) for a in obs.sharding.spec],
        "obs_shards": sorted({tuple(s.data.shape) for s in obs.addressable_shards}),
        "obs_shard_count": len(obs.sharding.device_set),
        "param_shape": list(param.shape),
        "param_spec": [str(a) for a in param.sharding.spec],
        "param_shards": sorted({tuple(s.data.shape) for s in param.addressable_shards}),
        "final_returns": result.final_returns,
    }
    if jax.process_index() == 0:
        np.savez(report, layout=json.dumps(layout), **arrays)


if __name__ == "__main__":
    main(sys.argv[1:])
