"""Throughput of one run on 1, 2, 4 ... devices and in 1 or 2 processes.

The same global run (one seed's env batch, split over the devices of the mesh: every
device steps its share of envs and gradients are averaged across them) is trained in
a fresh process per setting, since JAX fixes its devices when it starts. On CPU the
"devices" are JAX CPU devices (``mesh.cpu_devices``) and the processes run on this
machine with a loopback coordinator, so every row shares the same cores: the table
shows what splitting costs, not a speed-up. On a machine with N GPUs the same command
spreads the run over real devices:

    uv run python benchmarks/scaling.py                       # CPU: 1, 2, 4 devices, 2 processes
    uv run python benchmarks/scaling.py --platform gpu --devices 1 2 4 8 --processes 1

Prints a Markdown table: env steps/s of the run, its ratio to one device, compile time.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import time

DEFAULT = [
    "num_seeds=1",
    "env.num_envs=256",
    "ppo.num_steps=64",
    "ppo.num_minibatches=4",
    "total_env_steps=2000000",
    "logging.backends=[]",
    "checkpoint.enabled=false",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="ppo-cartpole")
    parser.add_argument("--devices", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--processes", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--platform", choices=["cpu", "gpu"], default="cpu")
    parser.add_argument("--set", action="append", default=[], help="config override")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    overrides = DEFAULT + args.set
    if args.worker:
        return worker(args.config, overrides)

    rows = []
    for devices in args.devices:
        for variant in ("per device", "invariant") if devices > 1 else ("per device",):
            extra = ["mesh.invariant=true"] if variant == "invariant" else []
            rows.append(measure(args, devices, 1, overrides + extra, variant))
    for processes in [p for p in args.processes if p > 1]:
        devices = max(args.devices)
        if devices % processes == 0:
            rows.append(measure(args, devices, processes, overrides, "per device"))
    base = rows[0]["sps"]
    print(f"\n{args.config} with {' '.join(overrides)} ({args.platform})\n")
    print(
        "| processes | devices | mesh (seeds x envs) | minibatches | env steps/s "
        "| vs 1 device | compile s |"
    )
    print("|---:|---:|---|---|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['processes']} | {r['devices']} | {r['mesh']} | {r['variant']} | "
            f"{r['sps']:,.0f} | {r['sps'] / base:.2f} | {r['compile']:.1f} |"
        )


def measure(args, devices: int, processes: int, overrides: list[str], variant: str) -> dict:
    """Train in ``processes`` fresh processes sharing ``devices`` devices; process 0's report."""
    per_process = devices // processes
    common = [sys.executable, __file__, "--worker", "--config", args.config]
    # the seed's envs split over `devices` devices (the first ones, on a GPU machine)
    overrides = [*overrides, "mesh.seeds=1", f"mesh.envs={devices}"]
    if args.platform == "cpu":
        overrides.append(f"mesh.cpu_devices={per_process}")
    if processes > 1:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        overrides += [
            f"distributed.coordinator_address=127.0.0.1:{port}",
            f"distributed.num_processes={processes}",
        ]
    procs = []
    for i in range(processes):
        launch = overrides + ([f"distributed.process_id={i}"] if processes > 1 else [])
        sets = [x for o in launch for x in ("--set", o)]
        procs.append(
            subprocess.Popen(common + sets, stdout=subprocess.PIPE, text=True, env=os.environ)
        )
    outputs = [p.communicate()[0] for p in procs]
    for p, out in zip(procs, outputs, strict=True):
        if p.returncode != 0:
            sys.exit(f"a worker failed ({devices} devices, {processes} processes):\n{out}")
    report = json.loads(outputs[0].strip().splitlines()[-1])
    print(
        f"{processes} process(es), {devices} device(s), {variant}: {report['sps']:,.0f} env steps/s"
    )
    return {**report, "devices": devices, "processes": processes, "variant": variant}


def worker(config_name: str, overrides: list[str]) -> None:
    import nnxrl
    from nnxrl.parallel.mesh import make_layout

    config = nnxrl.load_config(config_name, overrides)
    layout = make_layout(config)
    started = time.perf_counter()
    result = nnxrl.train(config, progress=False)
    report = {
        "sps": result.env_steps_per_second,
        "compile": result.compile_seconds,
        "mesh": f"{layout.seed_shards} x {layout.env_shards}",
        "wall": time.perf_counter() - started,
    }
    print(json.dumps(report), flush=True)


if __name__ == "__main__":
    main()
