"""Simulated runs with known contents, for the report, diff and assistant checks.

A run is a table of ops (msprof op_summary columns: name, type, task type, start, duration)
replayed once by ctests/env_mode_app.c in environment-variable mode, with `fp_point` and
`bp_point` set, so its steps, gaps and overlaps are exactly what the table says.

Each step of the balanced model (times in us, 2 us between ops, 4 us between steps):
  fp_conv Conv2D 40 (fp_point), mm MatMul 30, relu Relu 15, add Add 10,
  bn BNTrainingUpdate 15, bp_conv Conv2DBackpropInput 30 (bp_point), opt ApplyAdam 8.
Variants change one thing each (see VARIANTS).
"""
import csv
import glob
import json
import os
import shutil
import subprocess

from check_filemode import build_c, run

STEPS = 5
FP, BP = "fp_conv", "bp_conv"

BALANCED = [
    (FP, "Conv2D", "AI_CORE", 40.0),
    ("mm", "MatMul", "AI_CORE", 30.0),
    ("relu", "Relu", "AI_VECTOR_CORE", 15.0),
    ("add", "Add", "AI_VECTOR_CORE", 10.0),
    ("bn", "BNTrainingUpdate", "AI_VECTOR_CORE", 15.0),
    (BP, "Conv2DBackpropInput", "AI_CORE", 30.0),
    ("opt", "ApplyAdam", "AI_VECTOR_CORE", 8.0),
]
WAIT, STEP_WAIT = 2.0, 4.0


def ops_of(step, change=None):
    """The ops of step `step` (1-based): [(name, type, task type, duration, wait before)]."""
    ops = [(n, t, k, d, WAIT) for n, t, k, d in BALANCED]
    return change(step, ops) if change else ops


def _set(ops, name, **kw):
    out = []
    for n, t, k, d, w in ops:
        if n == name:
            d = kw.get("dur", d)
            w = kw.get("wait", w)
        out.append((n, t, k, d, w))
    return out


def _insert_after(ops, name, op):
    i = [o[0] for o in ops].index(name) + 1
    return ops[:i] + [op] + ops[i:]


# Each variant: (what it changes, function(step, ops) -> ops, the assistant rule it should
# make fire, or None).
VARIANTS = {
    "balanced": ("nothing", None, None),
    "slow-conv": ("Conv2D twice as slow", lambda s, o: _set(o, FP, dur=80.0), None),
    "free-time": ("60 us idle inside each step",
                  lambda s, o: _set(o, "relu", wait=60.0), "free-time"),
    "communication": ("a 40 us all-reduce after the backward pass",
                      lambda s, o: _insert_after(o, BP, ("hcom_allReduce__1", "hcom_allReduce_", "HCCL", 40.0, WAIT)),
                      "communication"),
    "data-wait": ("80 us before each step's forward pass",
                  lambda s, o: _set(o, FP, wait=80.0) if s > 1 else o, "data-wait"),
    "ai-cpu": ("an AI CPU op in each step",
               lambda s, o: _insert_after(o, "add", ("where", "Where", "AI_CPU", 5.0, WAIT)), "ai-cpu"),
    "transdata": ("a 15 us TransData in each step",
                  lambda s, o: _insert_after(o, FP, ("trans_TransData_1", "TransData", "AI_VECTOR_CORE", 15.0, WAIT)),
                  "transdata"),
    "dominant-type": ("Conv2D at 300 us", lambda s, o: _set(o, FP, dur=300.0), "dominant-type"),
    "slow-step": ("step 3's MatMul at 300 us",
                  lambda s, o: _set(o, "mm", dur=300.0) if s == 3 else o, "slow-step"),
}


def changed(step, ops):
    """What the diff check compares with the balanced run: Conv2D twice as slow, a type
    added (Gelu), an op and its type removed (add), and step 3 slower (MatMul +100 us)."""
    ops = _set(ops, FP, dur=80.0)
    ops = [o for o in ops if o[0] != "add"]
    ops = _insert_after(ops, "relu", ("gelu", "Gelu", "AI_VECTOR_CORE", 5.0, WAIT))
    if step == 3:
        ops = _set(ops, "mm", dur=130.0)
    return ops


def table(path, change=None, steps=STEPS, scale=1.0):
    """Writes the model table: `steps` steps of the balanced model changed by `change`,
    every duration times `scale`."""
    t = 1000.0
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["Op Name", "OP Type", "Task Type", "Task Start Time(us)", "Task Duration(us)"])
        for s in range(1, steps + 1):
            for i, (n, ty, k, d, wait) in enumerate(ops_of(s, change)):
                if s > 1 or i > 0:
                    t += wait if i > 0 else max(wait, STEP_WAIT)
                d *= scale
                w.writerow([n, ty, k, "%.3f" % t, "%.3f" % d])
                t += d
    return path


_APP = []


def record(out, model, env=None):
    """Replays `model` once in environment-variable mode into folder `out` (created);
    returns the new result directory."""
    if not _APP:
        _APP.append(build_c("ctests/env_mode_app.c", "env_mode_app"))
    exe = _APP[0]
    os.makedirs(out, exist_ok=True)
    before = set(glob.glob(os.path.join(out, "PROF_*")))
    options = {"output": out, "task_trace": "on", "training_trace": "on",
               "fp_point": FP, "bp_point": BP}
    e = dict(os.environ, PROFILING_MODE="true", PROFILING_OPTIONS=json.dumps(options))
    e.pop("ACLPROF_DEVICE_COUNT", None)
    e.update(env or {})
    run([exe, model, "1"], env=e, stdout=subprocess.DEVNULL)
    new = sorted(set(glob.glob(os.path.join(out, "PROF_*"))) - before)
    assert len(new) == 1, new
    return new[0]


def make_runs(folder):
    """A folder of runs: one per variant, and `cluster/` (4 ranks, rank 2 twice as slow).
    Returns {name: folder of the run}."""
    shutil.rmtree(folder, ignore_errors=True)
    models = os.path.join(folder, ".models")
    os.makedirs(models)
    runs = {}
    for name, (_, change, _) in VARIANTS.items():
        runs[name] = os.path.join(folder, name)
        record(runs[name], table(os.path.join(models, name + ".csv"), change))
    runs["cluster"] = os.path.join(folder, "cluster")
    for rank in range(4):
        m = table(os.path.join(models, "rank%d.csv" % rank), None, scale=2.0 if rank == 2 else 1.0)
        record(runs["cluster"], m, {"RANK_ID": str(rank)})
    return runs
