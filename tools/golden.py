#!/usr/bin/env python3
"""The golden test: what aclprof writes for fixed inputs, byte for byte.

Inputs (all deterministic):
  sim     a simulated ResNet-50, three executions, under the virtual clock
          (ACLPROF_CLOCK=virtual: op times and gaps from the model, not the wall);
  replay  a real torch_npu kernel_details.csv (tests/data/real) replayed by the simulator,
          under the virtual clock;
  db      CANN's SQLite database (tests/data/real/msprof_full_db_msinsight.db) imported by
          `aclprof export`.
Outputs compared with tests/golden/: every file the export writes under
mindstudio_profiler_output/ (the databases as SQL text dumps, the native timeline as hex),
`aclprof analyze` as table, CSV, JSON and markdown, `aclprof diff` as table and JSON,
`aclprof timeline`, and `aclprof report` (one page, and a site of the three runs).
What differs between two runs on two machines is masked first: result-directory names,
process and thread ids, and paths.

Usage: tools/golden.py            compare (exit 1 and a unified diff on any difference)
       tools/golden.py --bless    write tests/golden/ from this build
"""
import difflib
import glob
import os
import re
import shutil
import sqlite3
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GOLDEN = os.path.join(ROOT, "tests", "golden")
WORK = os.path.join(ROOT, "target", "golden")
REAL = os.path.join(ROOT, "tests", "data", "real")
REPLAY_CSV = "kernel_details_torchnpu_level1_pipeutil_910B_msinsight.csv"
DB = "msprof_full_db_msinsight.db"


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        sys.exit(f"golden: {' '.join(cmd)} failed ({r.returncode}):\n{r.stdout}{r.stderr}")
    return r.stdout


def build():
    run(["cargo", "build", "--quiet", "--bin", "aclprof"], cwd=ROOT)
    run([os.path.join(ROOT, "scripts", "build-lib")], cwd=ROOT)
    exe = os.path.join(WORK, "filemode_profile")
    run(["gcc", "-std=c99", "-O1", "-I" + os.path.join(ROOT, "include"), "-o", exe,
         os.path.join(ROOT, "examples", "filemode_profile.c"),
         "-L" + os.path.join(ROOT, "target", "debug"), "-laclprof", "-lpthread",
         "-Wl,-rpath," + os.path.join(ROOT, "target", "debug")])
    return os.path.join(ROOT, "target", "debug", "aclprof"), exe


def env():
    e = dict(os.environ)
    for k in list(e):
        if k.startswith("ACLPROF_") or k in ("PROFILING_MODE", "PROFILING_OPTIONS", "RANK_ID"):
            del e[k]
    e.update(ACLPROF_CLOCK="virtual", ACLPROF_DEVICE_COUNT="8", TZ="UTC", LC_ALL="C", NO_COLOR="1")
    return e


def masker():
    # (The host's name is in none of the compared files; masking it would also hit any
    # op name that happens to contain it.)
    rules = [
        (re.compile(r"PROF_\d{6}_\d{17}_\d{8}[A-R]{8}"), "PROF_<dir>"),
        (re.compile(re.escape(WORK)), "<work>"),
        (re.compile(re.escape(ROOT)), "<root>"),
    ]

    def mask(text):
        for pat, rep in rules:
            text = pat.sub(rep, text)
        return text
    return mask


# Timeline processes whose threads are the device's streams and lanes; the others' are the
# host's threads, whose ids differ from run to run.
DEVICE_PROCESSES = {"Ascend Hardware", "Overlap Analysis", "HCCL", "Step Trace"}


def mask_timeline(text):
    """The JSON timeline's pids are the host pid shifted, plus an index: keep the index.
    On the host's processes (not the device's), a thread's id is masked where the timeline
    gives it: the event's tid, its thread's name and sort index, the "Thread Id" argument."""
    host = set()
    for m in re.finditer(r'"name":"process_name","pid":(\d+),.*"args":\{"name":"([^"]*)"', text):
        if m.group(2) not in DEVICE_PROCESSES:
            host.add(m.group(1))

    def line(l):
        pm = re.search(r'"pid":(\d+)', l)
        if not pm:
            return l
        if pm.group(1) in host:
            l = re.sub(r'"tid":[1-9]\d*', '"tid":<tid>', l)
            l = re.sub(r'"Thread Id":\d+', '"Thread Id":<tid>', l)
            l = re.sub(r'"name":"Thread \d+"', '"name":"Thread <tid>"', l)
            if l.startswith('{"name":"thread_sort_index"'):
                l = re.sub(r'"sort_index":\d+', '"sort_index":<tid>', l)
        return l.replace(pm.group(0), f'"pid":"<pid>|{int(pm.group(1)) & 1023}"', 1)
    return "\n".join(line(l) for l in text.split("\n"))


def mask_tx(text):
    """msprof_tx's first two columns are the host's pid and tid."""
    rows = text.split("\n")
    return "\n".join([rows[0]] + [re.sub(r"^\d+,\d+,", "<pid>,<tid>,", r) for r in rows[1:]])


def varint(b, i):
    n = shift = 0
    while True:
        c = b[i]
        i += 1
        n |= (c & 0x7F) << shift
        shift += 7
        if c < 0x80:
            return n, i


def message(b):
    """Parses `b` as protobuf fields, or returns None when it is not one."""
    out, i = [], 0
    try:
        while i < len(b):
            key, i = varint(b, i)
            num, wire = key >> 3, key & 7
            if num == 0:
                return None
            if wire == 0:
                v, i = varint(b, i)
            elif wire == 1:
                v, i = b[i:i + 8], i + 8
            elif wire == 5:
                v, i = b[i:i + 4], i + 4
            elif wire == 2:
                n, i = varint(b, i)
                v, i = b[i:i + n], i + n
            else:
                return None
            if i > len(b):
                return None
            out.append((num, wire, v))
    except IndexError:
        return None
    return out


# Perfetto's paths (field numbers from the root) of what differs from run to run: the
# host's pid, TracePacket.track_descriptor(60).process(3).pid(1); a host thread's track (a
# TrackDescriptor named "Thread <tid>") and its sibling rank (12); a track event's (11)
# debug annotation (4) named by the interned (12) debug annotation name (3) "Thread Id".
PFTRACE_PID = (1, 60, 3, 1)
THREAD_NAME = re.compile(rb"Thread \d+")


def tree(b):
    """The protobuf message `b` as a list of (field, wire type, value or sub-tree)."""
    out = []
    for num, wire, v in message(b) or []:
        if wire == 2 and v and (not v.isascii() or v[0] < 32):
            sub = message(v)
            if sub is not None:
                out.append((num, wire, tree(v)))
                continue
        out.append((num, wire, v))
    return out


def thread_id_iids(t, path=()):
    """The iids the trace interns the debug annotation name "Thread Id" as."""
    found = set()
    for num, _, v in t:
        if isinstance(v, list):
            if path[-1:] == (12,) and num == 3:
                fields = {n: x for n, _, x in v}
                if fields.get(2) == b"Thread Id":
                    found.add(fields.get(1))
            found |= thread_id_iids(v, path + (num,))
    return found


def dump_pftrace(data):
    """The native trace as an indented tree of its protobuf fields, what differs from run to
    run masked (see PFTRACE_PID)."""
    root = tree(data)
    iids = thread_id_iids(root)
    lines = []

    def walk(t, path, depth):
        fields = {n: x for n, _, x in t}
        host_thread = path == (1, 60) and isinstance(fields.get(2), bytes) \
            and THREAD_NAME.fullmatch(fields[2]) is not None
        thread_arg = path == (1, 11, 4) and fields.get(1) in iids
        pad = "  " * depth
        for num, wire, v in t:
            p = path + (num,)
            if isinstance(v, list):
                lines.append(f"{pad}{num} {{")
                walk(v, p, depth + 1)
                lines.append(f"{pad}}}")
            elif p == PFTRACE_PID:
                lines.append(f"{pad}{num}: <pid>|{v & 1023}")
            elif host_thread and num == 2:
                lines.append(f"{pad}{num}: b'Thread <tid>'")
            elif (host_thread and num == 12) or (thread_arg and num == 3):
                lines.append(f"{pad}{num}: <tid>")
            elif wire == 2:
                lines.append(f"{pad}{num}: {v!r}")
            else:
                lines.append(f"{pad}{num}: {v.hex() if isinstance(v, bytes) else v}")
    walk(root, (), 0)
    return "\n".join(lines) + "\n"


# Columns of the database that hold the host's process or thread ids, or its name: they
# differ between runs and machines, and are masked by column, never by value.
DB_MASKED = {
    "TASK": {"globalPid"},
    "CANN_API": {"globalTid"},
    "MSTX_EVENTS": {"globalTid", "endGlobalTid"},
    "NPU_OP_MEM": {"globalTid"},
    "HOST_INFO": {"hostUid", "hostName"},
}


def dump_db(path):
    """The database as text: each table's schema, then its rows in rowid order."""
    con = sqlite3.connect(path)
    try:
        lines = []
        tables = con.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'table' ORDER BY name").fetchall()
        for name, sql in tables:
            lines.append(sql + ";")
            cols = [c[1] for c in con.execute(f'PRAGMA table_info("{name}")')]
            masked = DB_MASKED.get(name, set())
            for row in con.execute(f'SELECT * FROM "{name}" ORDER BY rowid'):
                cells = ["<masked>" if c in masked else repr(v) for c, v in zip(cols, row)]
                lines.append(f"{name}: " + ", ".join(cells))
        for (sql,) in con.execute("SELECT sql FROM sqlite_master WHERE type = 'index' ORDER BY name"):
            if sql:
                lines.append(sql + ";")
        return "\n".join(lines) + "\n"
    finally:
        con.close()


def collect(name, path, out, mask):
    """Adds one output file, as text, to `out` (a dict of golden name -> text)."""
    base = re.sub(r"_\d{14,17}", "_<stamp>", os.path.basename(path))
    if path.endswith(".db"):
        text = dump_db(path)
    elif path.endswith(".pftrace"):
        with open(path, "rb") as f:
            text = dump_pftrace(f.read())
    else:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        if re.fullmatch(r"msprof_\d+\.json", os.path.basename(path)):
            text = mask_timeline(text)
        elif re.fullmatch(r"msprof_tx_\d+\.csv", os.path.basename(path)):
            text = mask_tx(text)
    out[f"{name}/{base}"] = mask(text)


def produce():
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    aclprof, exe = build()
    e = env()
    mask = masker()
    out = {}
    runs = {}
    for name, model in (("sim", os.path.join(ROOT, "models", "resnet50.json")),
                        ("replay", os.path.join(REAL, REPLAY_CSV))):
        d = os.path.join(WORK, name)
        run([exe, d, "3" if name == "sim" else "1", model], env=e)
        (prof,) = glob.glob(os.path.join(d, "PROF_*"))
        runs[name] = prof
    run([aclprof, "export", os.path.join(REAL, DB), "-o", os.path.join(WORK, "db")], env=e)
    (runs["db"],) = glob.glob(os.path.join(WORK, "db", "PROF_*"))

    for name, prof in runs.items():
        outdir = os.path.join(prof, "mindstudio_profiler_output")
        for f in sorted(os.listdir(outdir)):
            collect(f"{name}/export", os.path.join(outdir, f), out, mask)
        # CANN's database sits beside mindstudio_profiler_output/.
        for f in sorted(glob.glob(os.path.join(prof, "msprof_*.db"))):
            collect(f"{name}/export", f, out, mask)
        for tag, args in (("table", []), ("type.csv", ["--aggregate-by", "type", "--format", "csv"]),
                          ("name.json", ["--aggregate-by", "name", "--format", "json", "--top", "0"]),
                          ("ops.md", ["--format", "markdown", "--top", "20"])):
            out[f"{name}/analyze.{tag}"] = mask(run([aclprof, "analyze", prof] + args, env=e))
        out[f"{name}/timeline.stdout"] = mask(run([aclprof, "timeline", prof], env=e))
        for f in sorted(glob.glob(os.path.join(outdir, "msprof_*"))):
            collect(f"{name}/timeline", f, out, mask)
        page = os.path.join(WORK, name + ".html")
        run([aclprof, "report", prof, "-o", page], env=e)
        collect(f"{name}/report", page, out, mask)
    for tag, args in (("table", []), ("json", ["--format", "json"])):
        out[f"diff/sim-replay.{tag}"] = mask(run([aclprof, "diff", runs["sim"], runs["replay"]] + args, env=e))
    site_in = os.path.join(WORK, "site-in")
    os.makedirs(site_in)
    for name, prof in runs.items():
        os.symlink(os.path.dirname(prof), os.path.join(site_in, name))
    site = os.path.join(WORK, "site")
    run([aclprof, "report", site_in, "-o", site], env=e)
    for f in sorted(glob.glob(os.path.join(site, "**", "*"), recursive=True)):
        if os.path.isfile(f):
            rel = os.path.relpath(f, site)
            text = open(f, encoding="utf-8", errors="replace").read()
            if re.search(r"\.timeline/index\.js$", rel):
                # The report's timeline names threads by id, as the JSON timeline does.
                text = re.sub(r"Thread \d+", "Thread <tid>", text)
                text = re.sub(r'\[\\"Thread Id\\",\d+\]', r'[\\"Thread Id\\",<tid>]', text)
            out[mask(f"site/{rel}")] = mask(text)
    return out


def main():
    bless = "--bless" in sys.argv[1:]
    out = produce()
    if bless:
        shutil.rmtree(GOLDEN, ignore_errors=True)
        for rel, text in out.items():
            p = os.path.join(GOLDEN, rel)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "w", encoding="utf-8") as f:
                f.write(text)
        print(f"golden: wrote {len(out)} files under tests/golden/")
        return
    have = {}
    for p in glob.glob(os.path.join(GOLDEN, "**", "*"), recursive=True):
        if os.path.isfile(p):
            with open(p, encoding="utf-8") as f:
                have[os.path.relpath(p, GOLDEN)] = f.read()
    bad = []
    for rel in sorted(set(have) | set(out)):
        if rel not in out:
            bad.append(f"missing from this build's output: {rel}")
        elif rel not in have:
            bad.append(f"new output, not in tests/golden/: {rel}")
        elif have[rel] != out[rel]:
            d = difflib.unified_diff(have[rel].splitlines(), out[rel].splitlines(),
                                     "golden/" + rel, "now/" + rel, lineterm="", n=1)
            bad.append("\n".join(list(d)[:40]))
    if bad:
        print("\n".join(bad))
        sys.exit(f"golden: {len(bad)} of {len(set(have) | set(out))} outputs differ "
                 "(tools/golden.py --bless after a deliberate change)")
    print(f"golden: {len(out)} outputs identical")


if __name__ == "__main__":
    main()
