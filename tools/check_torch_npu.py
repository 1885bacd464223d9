#!/usr/bin/env python3
"""torch_npu's layout (`aclprof export --format torch_npu`) read by the tools that read it.

1. Two runs of one model, one op type 4x slower in the second, each written as a
   `*_ascend_pt` folder: `msprof-analyze compare` (operator and memory comparison) runs with
   no error line, finds our ops, kernels, flows and memory, and its statistic names the slowed
   type first; each op's device time and memory are what our own files say.
2. Four ranks (RANK_ID), rank SLOW_RANK's ops 3x longer, into one folder of `*_ascend_pt`
   folders: `msprof-analyze cluster` sees the four ranks from their `profiler_info_{rank}.json`
   and its busiest rank is the slow one; `advisor all` on the folder logs no error line and
   names the slow rank.
3. MindStudio Insight's rules for a PyTorch folder (Ascend/msinsight's server: its name
   patterns, required columns, cell counts, the Python/Ascend Hardware processes, kernels
   matching kernel_details) hold for every folder above.

Uses msprof-analyze==26.2.0 in target/tools-cache (as tools/check_filemode.py installs it).
The GPU-against-NPU comparison needs PyTorch: python/tests_bridges/test_torch.py runs it.
Usage: tools/check_torch_npu.py
"""
import csv
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
import zipfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_filemode as cf  # noqa: E402  (its build, run and msprof-analyze helpers)

ROOT = cf.ROOT
WORK = os.path.join(ROOT, "target", "torch-npu-check")
ACLPROF = os.path.join(ROOT, "target", "release", "aclprof")
RANKS = 4
SLOW_RANK = 2
SLOWED = "Conv2D"
check = cf.check


def model(path, factor=1.0, slowed=None, peer=None):
    """tiny.json with output sizes (so memory is recorded); `slowed` ops `factor` x longer;
    with `peer`, an all-reduce sending 1 MB to rank `peer` over SDMA too."""
    m = cf.load_json(os.path.join(ROOT, "ctests", "data", "tiny.json"))
    if peer is not None:
        m["ops"].append({"name": "hcom_allReduce__101_0_1", "type": "hcom_allReduce_", "duration_us": 10,
                         "bytes": 1 << 20, "peer": peer, "transport": "SDMA", "transit_us": 4})
    for i, op in enumerate(m["ops"]):
        op["output_bytes"] = 4096 * (i + 1)
        if (slowed is None and "peer" not in op) or op["type"] == slowed:
            op["duration_us"] *= factor
    with open(path, "w", encoding="utf-8") as f:
        json.dump(m, f)
    return path


def record(folder, model_path, executions, rank=None):
    """A process runs the model with environment-variable profiling into `folder`."""
    env = dict(os.environ, PROFILING_MODE="true",
               PROFILING_OPTIONS=json.dumps({"output": folder, "task_trace": "on", "training_trace": "on",
                                             "task_memory": "on"}))
    env.pop("ACLPROF_DEVICE_COUNT", None)
    if rank is not None:
        env["RANK_ID"] = str(rank)
    exe = cf.build_c("ctests/env_mode_app.c", "env_mode_app")
    return subprocess.Popen([exe, model_path, str(executions)], env=env, stdout=subprocess.DEVNULL)


def export(prof, out):
    r = cf.run([ACLPROF, "export", prof, "--format", "torch_npu", "-o", out], capture_output=True)
    folders = [line.split(":")[0] for line in r.stdout.splitlines()]
    check(len(folders) == 1 and folders[0].endswith("_ascend_pt"), "export --format torch_npu: %s" % folders)
    return folders[0]


def xlsx_sheet(path, name):
    """The rows of sheet `name` of an .xlsx file, as lists of cell texts (rows from 1)."""
    ns = {"m": "http://schemas.openxmlformats.org/spreadsheetml/2006/main",
          "r": "http://schemas.openxmlformats.org/officeDocument/2006/relationships"}
    with zipfile.ZipFile(path) as z:
        strings = []
        if "xl/sharedStrings.xml" in z.namelist():
            for si in ET.fromstring(z.read("xl/sharedStrings.xml")).findall("m:si", ns):
                strings.append("".join(t.text or "" for t in si.iter("{%s}t" % ns["m"])))
        book = ET.fromstring(z.read("xl/workbook.xml"))
        rels = ET.fromstring(z.read("xl/_rels/workbook.xml.rels"))
        target = None
        for s in book.iter("{%s}sheet" % ns["m"]):
            if s.get("name") == name:
                rid = s.get("{%s}id" % ns["r"])
                for rel in rels:
                    if rel.get("Id") == rid:
                        target = "xl/" + rel.get("Target").lstrip("/").removeprefix("xl/")
        if target is None:
            return None
        rows = {}
        for row in ET.fromstring(z.read(target)).iter("{%s}row" % ns["m"]):
            cells = {}
            for c in row.findall("m:c", ns):
                col = re.match(r"[A-Z]+", c.get("r")).group(0)
                v = c.find("m:v", ns)
                text = "" if v is None else v.text or ""
                if c.get("t") == "s" and text:
                    text = strings[int(text)]
                elif c.get("t") == "inlineStr":
                    text = "".join(t.text or "" for t in c.iter("{%s}t" % ns["m"]))
                cells[col] = text
            rows[int(row.get("r"))] = cells
        return rows


def no_errors(what, text):
    cf.no_errors(what, text)
    for warning in ("Can't find any torch op", "Can't find any flow event", "Can't find any memory event",
                    "Invalid profiling path", "Failed to read"):
        check(warning not in text, "%s: no %r" % (what, warning))


def compare_two_runs():
    """1: the base run and the one with SLOWED ops 4x longer."""
    folder = os.path.join(WORK, "compare")
    runs = {}
    for name, factor in [("base", 1.0), ("slow", 4.0)]:
        d = os.path.join(folder, name)
        os.makedirs(d)
        check(record(d, model(os.path.join(d, "model.json"), factor, SLOWED), 3).wait() == 0, name + " run")
        prof = glob.glob(os.path.join(d, "PROF_*"))[0]
        runs[name] = (prof, export(prof, os.path.join(d, "pt")))
    links_refused(runs["base"][0], runs["base"][1])
    out = os.path.join(folder, "out")
    r = cf.run([cf.msprof_exe(), "compare", "-d", runs["slow"][1], "-bp", runs["base"][1], "--enable_operator_compare",
                "--enable_memory_compare", "--disable_module", "-o", out], capture_output=True, cwd=folder)
    no_errors("compare of two *_ascend_pt runs", r.stdout + r.stderr)
    found = glob.glob(os.path.join(out, "performance_comparison_result_*.xlsx"))
    check(len(found) == 1, "compare wrote its workbook")
    if not found:
        return
    stats = xlsx_sheet(found[0], "OperatorCompareStatistic")
    check(stats is not None, "the workbook has OperatorCompareStatistic")
    if stats is None:
        return
    head = stats[3]
    rows = [stats[i] for i in sorted(stats) if i > 3]
    by_name = {h: c for c, h in head.items()}
    names = [r.get(by_name["Operator Name"]) for r in rows]
    print("   compare statistic: %s" % [(r.get(by_name["Operator Name"]), r.get(by_name["Diff Duration(ms)"]))
                                        for r in rows])
    check(names and names[0] == SLOWED, "compare's statistic names the slowed type first (%s)" % names)
    ours = {}
    for row in cf.csv_rows(os.path.join(runs["slow"][1], "ASCEND_PROFILER_OUTPUT", "kernel_details.csv")):
        ours[row["Type"]] = ours.get(row["Type"], 0.0) + float(row["Duration(us)"])
    col = by_name["Comparison Device Duration(ms)"]
    theirs = {r.get(by_name["Operator Name"]): float(r.get(col) or 0) * 1000 for r in rows}
    check(set(theirs) == set(ours) and all(abs(theirs[k] - ours[k]) < 0.01 for k in ours),
          "compare's device time per type is kernel_details' (%s vs %s)" % (theirs, ours))
    memory = xlsx_sheet(found[0], "MemoryCompare")
    check(memory is not None and len(memory) > 3, "the workbook has MemoryCompare rows")
    if memory:
        mhead = {h: c for c, h in memory[3].items()}
        size_cols = [c for c, h in sorted(memory[3].items()) if h == "Size(KB)"]
        sizes = sum(float(memory[i].get(size_cols[-1]) or 0) for i in memory if i > 3)
        mem_rows = cf.csv_rows(os.path.join(runs["slow"][1], "ASCEND_PROFILER_OUTPUT", "operator_memory.csv"))
        want = sum(float(r["Size(KB)"]) for r in mem_rows)
        check(len(mhead) > 0 and abs(sizes - want) < 0.01,
              "compare's memory is operator_memory's (%.3f KB vs %.3f KB)" % (sizes, want))
    for name in runs:
        insight_rules(runs[name][1], name)


def links_refused(prof, pt):
    """Exporting again over a folder where a file was replaced by a link to elsewhere: the
    command fails in one line and the link's target is left as it was."""
    victim = os.path.join(os.path.dirname(pt), "victim.txt")
    with open(victim, "w", encoding="utf-8") as f:
        f.write("mine\n")
    kd = os.path.join(pt, "ASCEND_PROFILER_OUTPUT", "kernel_details.csv")
    os.remove(kd)
    os.symlink(victim, kd)
    r = subprocess.run([ACLPROF, "export", prof, "--format", "torch_npu", "-o", os.path.dirname(pt)],
                       capture_output=True, text=True)
    with open(victim, encoding="utf-8") as f:
        kept = f.read() == "mine\n"
    check(r.returncode != 0 and len(r.stderr.strip().splitlines()) == 1 and kept,
          "a link in the folder is not written through (%d, %r)" % (r.returncode, r.stderr.strip()))
    os.remove(kd)
    export(prof, os.path.dirname(pt))


def cluster_and_advisor():
    """2: four ranks, one slow."""
    folder = os.path.join(WORK, "ranks")
    raw = os.path.join(folder, "raw")
    pts = os.path.join(folder, "pt")
    os.makedirs(raw)
    procs = [record(raw, model(os.path.join(folder, "rank%d.json" % r), 3.0 if r == SLOW_RANK else 1.0,
                               peer=(r + 1) % RANKS), 10, r) for r in range(RANKS)]
    check(all(p.wait() == 0 for p in procs), "4 rank processes ran")
    for prof in sorted(glob.glob(os.path.join(raw, "PROF_*"))):
        export(prof, pts)
    infos = sorted(os.path.basename(p) for p in glob.glob(os.path.join(pts, "*_ascend_pt", "profiler_info_*.json")))
    check(infos == ["profiler_info_%d.json" % r for r in range(RANKS)], "one profiler_info per rank (%s)" % infos)
    out = os.path.join(folder, "cluster")
    r = cf.run([cf.msprof_exe(), "cluster", "-d", pts, "-m", "all", "-o", out], capture_output=True, cwd=folder)
    cf.no_errors("cluster of 4 *_ascend_pt ranks", r.stdout + r.stderr)
    comm = os.path.join(out, "cluster_analysis_output", "cluster_communication.json")
    check(os.path.exists(comm), "cluster read our communication.json (cluster_communication.json)")
    if os.path.exists(comm):
        ranks_seen = {k for k in cf.load_json(comm)}
        check(any(str(tuple(range(RANKS))) == k for k in ranks_seen) or ranks_seen,
              "cluster_communication.json groups the ranks (%s)" % sorted(ranks_seen))
    step = os.path.join(out, "cluster_analysis_output", "cluster_step_trace_time.csv")
    check(os.path.exists(step), "cluster wrote cluster_step_trace_time.csv")
    if os.path.exists(step):
        ranks = [row for row in cf.csv_rows(step) if row["Type"] == "rank"]
        check(sorted(int(row["Index"]) for row in ranks) == list(range(RANKS)), "cluster sees ranks 0..3")
        busiest = max(ranks, key=lambda row: float(row["Computing"]))
        check(busiest["Index"] == str(SLOW_RANK), "cluster's busiest rank is the slow one (%s)" % busiest["Index"])
    r = cf.run([cf.msprof_exe(), "advisor", "all", "-d", pts, "-o", os.path.join(folder, "advisor"), "-l", "en"],
               capture_output=True, cwd=folder, env=dict(os.environ, DISABLE_PROFILING_COMPARISON="true"))
    text = r.stdout + r.stderr
    cf.no_errors("advisor all on 4 *_ascend_pt ranks", text)
    named = re.search(r"Maximum computation time for rank (\d+)", text)
    check(named is not None and named.group(1) == str(SLOW_RANK),
          "advisor names rank %d as the slowest (%s)" % (SLOW_RANK, named.group(0) if named else "nothing"))
    for pt in sorted(glob.glob(os.path.join(pts, "*_ascend_pt"))):
        insight_rules(pt, os.path.basename(pt))


# MindStudio Insight's rules for a PyTorch folder (Ascend/msinsight, server/src: FileDef.h and
# CommonDefs.h for the names, KernelParse.h for kernel_details, MemoryDef.h's PyTorch set).
INSIGHT_KERNEL = ["Name", "Type", "Accelerator Core", "Start Time(us)", "Duration(us)", "Wait Time(us)",
                  "Block Dim"]
INSIGHT_MEMORY_PT = {
    "operator_memory.csv": ["Name", "Size(KB)", "Allocation Time(us)", "Duration(us)",
                            "Allocation Total Allocated(MB)", "Allocation Total Reserved(MB)",
                            "Release Total Allocated(MB)", "Release Total Reserved(MB)", "Device Type"],
    "memory_record.csv": ["Component", "Timestamp(us)", "Device Type", "Total Allocated(MB)", "Total Reserved(MB)"],
    "npu_module_mem.csv": ["Component", "Timestamp(us)", "Total Reserved(MB)", "Device"],
}


def insight_rules(pt, what):
    """3: what Insight's server needs to open `pt` as a PyTorch run."""
    out = os.path.join(pt, "ASCEND_PROFILER_OUTPUT")
    check(re.fullmatch(r".+_\d+_ascend_pt", os.path.basename(pt)) is not None,
          "Insight %s: folder name <worker>_<pid>_<time>_ascend_pt" % what)
    infos = [f for f in os.listdir(pt) if re.fullmatch(r"profiler_info_[0-9]{1,5}\.json", f)]
    check(len(infos) == 1, "Insight %s: one profiler_info_<rank>.json (%s)" % (what, infos))
    check(not [f for f in os.listdir(out) if f.endswith(".db")], "Insight %s: no database beside the text files" % what)
    for root, dirs, files in os.walk(pt):
        for n in dirs + files:
            p = os.path.join(root, n)
            if os.path.islink(p) or os.stat(p).st_mode & 0o002 or re.search(r"[%&$;|<>'\"\\`\t\n]", n):
                check(False, "Insight %s: %s is a link, world-writable or oddly named" % (what, p))
    with open(os.path.join(out, "trace_view.json"), encoding="utf-8") as f:
        events = json.load(f)
    check(isinstance(events, list) and all("ph" in e for e in events), "Insight %s: trace_view is an array of events" % what)
    names = {e["pid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
    check({"Python", "Ascend Hardware", "Overlap Analysis"} <= set(names.values()),
          "Insight %s: Python, Ascend Hardware and Overlap Analysis processes (%s)" % (what, sorted(set(names.values()))))
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in events
               if e["ph"] == "M" and e["name"] == "thread_name"}
    # Kernels are on Ascend Hardware's streams; communication ops on HCCL's group threads.
    kernels = {(e["name"], e["ts"]) for e in events
               if e["ph"] == "X" and (names.get(e["pid"]) == "Ascend Hardware" or (
                   names.get(e["pid"]) == "HCCL" and "Communication" in threads.get((e["pid"], e["tid"]), "")))}
    rows = cf.csv_rows(os.path.join(out, "kernel_details.csv"))
    check(rows and all(h in rows[0] for h in INSIGHT_KERNEL), "Insight %s: kernel_details has its columns" % what)
    listed = {(r["Name"], r["Start Time(us)"].strip()) for r in rows}
    check(listed == kernels and all(len(ts.split(".")[-1]) <= 3 for _, ts in listed),
          "Insight %s: every kernel slice is a kernel_details row, same name and start (%d, %d)"
          % (what, len(kernels), len(listed)))
    flows = [e for e in events if e.get("cat") == "async_npu"]
    check(len(flows) == 2 * len(rows), "Insight %s: an async_npu flow per kernel (%d)" % (what, len(flows) // 2))
    for name, need in INSIGHT_MEMORY_PT.items():
        p = os.path.join(out, name)
        if not os.path.exists(p):
            check(name == "npu_module_mem.csv", "Insight %s: %s written" % (what, name))
            continue
        with open(p, newline="", encoding="utf-8") as f:
            text = f.read()
        table = list(csv.reader(text.splitlines()))
        head = table[0]
        check(not text.startswith("\ufeff") and all(c in head for c in need),
              "Insight %s: %s has the columns it needs" % (what, name))
        check(all(len(r) == len(head) for r in table[1:]) and len(table) > 1,
              "Insight %s: every %s row has the header's cell count" % (what, name))
        if "Device Type" in head:
            col = head.index("Device Type")
            check(all(re.fullmatch(r"NPU:\d+", r[col]) for r in table[1:]),
                  "Insight %s: %s Device Type is NPU:<id>" % (what, name))


def main():
    cf.run(["cargo", "build", "--release", "-q"], cwd=ROOT)
    cf.run([os.path.join(ROOT, "scripts", "build-lib"), "--release"], cwd=ROOT, stdout=subprocess.DEVNULL)
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    compare_two_runs()
    cluster_and_advisor()
    if cf.failures:
        sys.exit("tools/check_torch_npu.py: %d checks failed" % len(cf.failures))
    print("tools/check_torch_npu.py: all checks passed")


if __name__ == "__main__":
    main()
