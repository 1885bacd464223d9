"""A simulated cluster with known communication, for the report's cluster and communication
views, `aclprof analyze --communication` and msprof-analyze's communication recipes.

RANKS rank processes (RANK_ID) run ctests/data/tiny.json and then an allreduce, EXECUTIONS
times, profiling into one folder. The allreduce is a ring: rank r sends BYTES to rank r + 1
over SDMA. Two things are planted:
- rank SLOW_RANK computes 3 times as long, so every other rank waits for it in the allreduce;
- the link SLOW_LINK (3 -> 0) carries its bytes at a fifth of the others' bandwidth.
Steps are cut at the first op (fp_point), so each execution is a step. Each rank's
allreduce lasts until the last rank's transfer is done: it waits (Notify_Wait)
until then, less its own transfer (Memcpy), as CANN's tasks of a collective show it.
"""
import json
import os
import shutil
import subprocess

from check_filemode import build_c, load_json

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RANKS = 4
SLOW_RANK = 2
SLOW_LINK = (3, 0)
EXECUTIONS = 10
BYTES = 1_000_000
TRANSIT_US = 50.0          # 20 GB/s
SLOW_TRANSIT_US = 250.0    # 4 GB/s


def compute_us(model):
    """One execution's device time before the allreduce: each op's duration and wait."""
    wait = model.get("wait_us", 0)
    return sum(op["duration_us"] + op.get("wait_us", wait) for op in model["ops"])


def transit_us(rank):
    return SLOW_TRANSIT_US if (rank, (rank + 1) % RANKS) == SLOW_LINK else TRANSIT_US


def make_cluster(folder):
    """Runs the ranks into `folder`; returns {rank: (compute us, allreduce us, transit us)}."""
    exe = build_c("ctests/env_mode_app.c", "env_mode_app")
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    base = load_json(os.path.join(ROOT, "ctests", "data", "tiny.json"))
    plan = {}
    for rank in range(RANKS):
        m = json.loads(json.dumps(base))
        if rank == SLOW_RANK:
            for op in m["ops"]:
                op["duration_us"] *= 3
        plan[rank] = [compute_us(m), 0.0, transit_us(rank), m]
    # Everyone is done when the last rank to arrive has sent its share.
    end = max(c + t for c, _, t, _ in plan.values())
    for rank, p in plan.items():
        p[1] = end - p[0]
        p[3]["ops"].append({"name": "hcom_allReduce__101_0_1", "type": "hcom_allReduce_",
                            "duration_us": p[1], "bytes": BYTES, "peer": (rank + 1) % RANKS,
                            "transport": "SDMA", "transit_us": p[2], "wait_us": 0})
    procs = []
    for rank, p in plan.items():
        path = os.path.join(folder, "rank%d.json" % rank)
        with open(path, "w", encoding="utf-8") as f:
            json.dump(p[3], f)
        env = dict(os.environ, RANK_ID=str(rank), PROFILING_MODE="true",
                   PROFILING_OPTIONS=json.dumps({"output": folder, "task_trace": "on",
                                                 "training_trace": "on", "fp_point": "trans_TransData_0",
                                                 "bp_point": "fc/MatMulV2"}))
        env.pop("ACLPROF_DEVICE_COUNT", None)
        procs.append(subprocess.Popen([exe, path, str(EXECUTIONS)], env=env, stdout=subprocess.DEVNULL))
    for p in procs:
        if p.wait() != 0:
            raise RuntimeError("a rank process failed")
    for rank in range(RANKS):
        os.remove(os.path.join(folder, "rank%d.json" % rank))
    return {r: tuple(p[:3]) for r, p in plan.items()}
