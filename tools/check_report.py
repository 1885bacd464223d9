#!/usr/bin/env python3
"""`aclprof report` and `aclprof diff`, the report in a real browser: Debian's Chromium,
headless, driven over the DevTools protocol (--remote-debugging-pipe; no extra packages).

1. A simulated ResNet-50 run in environment-variable mode (4 executions, one step each cut
   at FP_POINT, BP_POINT set) becomes a report page.
2. The page loads with no console errors or exceptions; the type-share and step charts are
   drawn (one bar per type, three phases per step; the pie on demand); the summary, the
   per-type table and the per-op table (100 rows a page; every page together) agree with
   op_statistic; search filters by type, fuzzy search finds ops by the starts of their
   words; a header click sorts; clicking a type lists exactly that type's ops; the step
   selector moves the curves' highlighted step, and a step's ops are those in its window.
3. `aclprof diff` on simulated runs with known differences (tools/report_runs.py: a type
   twice as slow, a type added, an op and its type removed, a step slowed): the rows, the
   formats, and --fail-above's exit codes.
4. A folder of simulated runs becomes a site: the index lists every run; the compare page
   shows the type made twice as slow as the top regression with aclprof diff's numbers,
   both ways round; each assistant rule fires on the run built to trigger it, and no rule
   fires on the balanced run; a suggestion's link lists the ops it is about.
5. Screenshots go to target/report-check/ (docs/report.png and docs/site.png are these).
6. Memory and host data (ctests/memory_app.c): the Memory section's summary, curves and
   peak marker agree with aclprof analyze --memory; its table of memory per op sorts and
   searches; what was never released and the static plan are listed; the Host section
   draws the process's CPU and memory (screenshot target/report-check/memory.png).
7. For the record, not a check: the page's size and load time at 100 000 ops.
8. The page's timeline (ResNet-50 run and the memory run): every track of the run's JSON
   timeline with every slice; search finds the 4 executions of conv1; the selected slice's
   details are op_summary's (name, task type, duration) and name its API call; pixels: the
   slice is filled with its colour, the gap before it is empty, the selection is outlined and
   the flow from its API call is drawn; W/S and A/D zoom and pan; a click selects; an op's
   name in the table and a step's link take the timeline there (screenshot
   target/report-check/timeline.png, docs/timeline.png).
9. A simulated cluster (tools/comm_runs.py: 4 ranks, rank 2 computing 3x as long, the link
   3 -> 0 at a fifth of the others' bandwidth): `aclprof analyze --communication` agrees with
   msprof-analyze's communication_matrix (every link's size, time and bandwidth) and hccl_sum
   (each rank's count and time); the cluster view's figures are msprof-analyze's cluster step
   trace's, it names rank 2 and why, its bars follow the step selector and the heat map, and
   each rank links to its own page; the communication view marks the link 3 -> 0 in its
   matrix and the rank that waits most, as analyze does (docs/cluster.png,
   docs/communication.png).

Installs chromium with apt-get when it is missing. Usage: tools/check_report.py
"""
import base64
import glob
import json
import os
import select
import shutil
import sqlite3
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_filemode import build_c, check, csv_rows, finish, load_json, one, run  # noqa: E402  (shared helpers)
import check_filemode  # noqa: E402
import comm_runs  # noqa: E402
import report_runs  # noqa: E402

WORK = os.path.join(ROOT, "target", "report-check")
ACLPROF = os.path.join(ROOT, "target", "release", "aclprof")
EXECUTIONS = 4
def chromium():
    exe = shutil.which("chromium")
    if not exe:
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        sudo = [] if os.geteuid() == 0 else ["sudo"]
        run(sudo + ["apt-get", "update", "-qq"], env=env)
        run(sudo + ["apt-get", "install", "-y", "-qq", "chromium"], env=env, stdout=subprocess.DEVNULL)
        exe = shutil.which("chromium")
    return exe


class Browser:
    """Chromium over --remote-debugging-pipe: JSON messages ending in NUL on fds 3 and 4."""

    def __init__(self, exe):
        self.to_r, self.to_w = os.pipe()
        self.from_r, self.from_w = os.pipe()
        os.set_inheritable(self.to_r, True)
        os.set_inheritable(self.from_w, True)
        # The child's fds 3 and 4 must be exactly these: dup them there in the child.
        to_r, from_w = self.to_r, self.from_w

        def child():
            # Through fds above 4 first, so neither dup2 clobbers the other's source.
            a, b = os.dup(to_r) + 100, os.dup(from_w) + 100
            os.dup2(to_r, a)
            os.dup2(from_w, b)
            os.dup2(a, 3)
            os.dup2(b, 4)

        self.p = subprocess.Popen(
            [exe, "--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe",
             "--user-data-dir=" + os.path.join(WORK, "chromium-profile"), "about:blank"],
            preexec_fn=child, close_fds=False, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL)
        os.close(self.to_r)
        os.close(self.from_w)
        self.buf = b""
        self.id = 0
        self.events = []
        try:  # a browser that fails to set up is not left running
            target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
            self.session = self.call("Target.attachToTarget",
                                     {"targetId": target, "flatten": True})["sessionId"]
            for domain in ["Runtime", "Log", "Page"]:
                self.call(domain + ".enable", session=True)
            self.call("Emulation.setDeviceMetricsOverride",
                      {"width": 1280, "height": 1600, "deviceScaleFactor": 1, "mobile": False},
                      session=True)
        except BaseException:
            self.close()
            raise

    def _read(self, timeout=120):
        deadline = time.monotonic() + timeout
        while b"\0" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.from_r], [], [], left)[0]:
                raise TimeoutError("no answer from chromium")
            chunk = os.read(self.from_r, 1 << 20)
            if not chunk:
                raise EOFError("chromium closed its pipe")
            self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def call(self, method, params=None, session=False, timeout=120):
        self.id += 1
        msg = {"id": self.id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = self.session
        os.write(self.to_w, json.dumps(msg).encode() + b"\0")
        while True:
            m = self._read(timeout)
            if m.get("id") == self.id:
                if "error" in m:
                    raise RuntimeError("%s: %s" % (method, m["error"]))
                return m.get("result", {})
            self.events.append(m)

    def wait_event(self, name):
        for i, e in enumerate(self.events):
            if e.get("method") == name:
                return self.events.pop(i)
        while True:
            m = self._read()
            if m.get("method") == name:
                return m
            self.events.append(m)

    def eval(self, expr):
        r = self.call("Runtime.evaluate", {"expression": expr, "returnByValue": True}, session=True)
        if "exceptionDetails" in r:
            raise RuntimeError("%s: %s" % (expr, r["exceptionDetails"]))
        return r["result"].get("value")

    def load(self, url):
        t0 = time.time()
        self.call("Page.navigate", {"url": url}, session=True)
        self.wait_event("Page.loadEventFired")
        return time.time() - t0

    def errors(self):
        out = []
        for e in self.events:
            m, p = e.get("method"), e.get("params", {})
            if m == "Runtime.exceptionThrown":
                out.append(json.dumps(p.get("exceptionDetails", {}))[:300])
            elif m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert", "warning"):
                out.append(json.dumps(p.get("args", []))[:300])
            elif m == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
                out.append(p["entry"].get("text", "")[:300])
        return out

    def screenshot(self, path):
        r = self.call("Page.captureScreenshot", {"format": "png"}, session=True)
        with open(path, "wb") as f:
            f.write(base64.b64decode(r["data"]))

    def close(self):
        try:
            self.call("Browser.close", timeout=30)
        except (EOFError, OSError, TimeoutError, RuntimeError):
            pass
        try:
            self.p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
        finally:
            for fd in (self.to_w, self.from_r):
                if fd >= 0:
                    os.close(fd)
            self.to_w = self.from_r = -1


def profile(out, executions, extra=None):
    """Runs the simulated ResNet-50 in environment-variable mode into `out`."""
    exe = build_c("ctests/env_mode_app.c", "env_mode_app")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    options = {"output": out, "task_trace": "on", "training_trace": "on"}
    options.update(extra or {})
    env = dict(os.environ, PROFILING_MODE="true", PROFILING_OPTIONS=json.dumps(options))
    env.pop("ACLPROF_DEVICE_COUNT", None)
    run([exe, os.path.join(ROOT, "models", "resnet50.json"), str(executions)], env=env, stdout=subprocess.DEVNULL)
    return glob.glob(os.path.join(out, "PROF_*"))[0]


def diff_json(base, new, *extra):
    out = subprocess.run([ACLPROF, "diff", base, new, "--format", "json", "--top", "0"] + list(extra),
                         check=True, capture_output=True, text=True).stdout
    rows = json.loads(out)["rows"]
    return {(r["Section"], r["Name"]): r for r in rows}


def check_diff(runs, folder):
    """aclprof diff on runs with known differences."""
    changed = report_runs.record(os.path.join(folder, "changed"),
                                 report_runs.table(os.path.join(folder, ".models", "changed.csv"),
                                                   report_runs.changed))
    base = runs["balanced"]
    d = diff_json(base, changed)
    conv = d[("type", "Conv2D")]
    check((conv["Base(us)"], conv["New(us)"], conv["Diff(us)"], conv["Ratio"]) == (200.0, 400.0, 200.0, 2.0),
          "diff: Conv2D 200 -> 400 us, ratio 2 (%s)" % conv)
    check(d[("type", "Gelu")]["Status"] == "added" and d[("type", "Gelu")]["Base(us)"] is None,
          "diff: the added type Gelu is listed as added")
    check(d[("type", "Add")]["Status"] == "removed" and d[("op", "add")]["Status"] == "removed",
          "diff: the removed op add (and its type) are listed as removed")
    check(d[("op", "gelu")]["Status"] == "added", "diff: the added op gelu is listed as added")
    steps = {k[1]: r["Diff(us)"] for k, r in d.items() if k[0] == "step"}
    check(abs(steps["step 3"] - steps["step 1"] - 100.0) < 1e-6 and max(steps, key=lambda k: steps[k]) == "step 3",
          "diff: step 3 is the slowed step, 100 us slower than step 1's change (%s)" % steps)
    order = [k[1] for k in d if k[0] == "type"]
    check(order[0] == "Conv2D", "diff: types sorted by absolute change, Conv2D first (%s)" % order[:3])
    overall = [k[1] for k in d if k[0] == "overall"]
    check(overall[:2] == ["E2E time", "Computing time"] and overall[-2:] == ["Communication not overlapped", "Free time"],
          "diff: the overall breakdown comes first, E2E to free (%s)" % overall)
    e2e = d[("overall", "E2E time")]
    comp = d[("overall", "Computing time")]
    free = d[("overall", "Free time")]
    check(abs(e2e["New(us)"] - comp["New(us)"] - free["New(us)"] - d[("overall", "Communication not overlapped")]["New(us)"]) < 1e-6,
          "diff: E2E = computing + communication not overlapped + free")

    def code(*args):
        p = subprocess.run([ACLPROF, "diff"] + list(args), capture_output=True, text=True)
        return p.returncode, p.stdout, p.stderr

    rc, _, err = code(base, changed, "--fail-above", "50")
    check(rc == 3 and "Conv2D" in err, "diff --fail-above 50: exit 3 naming Conv2D (%d: %s)" % (rc, err.strip()[:120]))
    rc, _, _ = code(base, changed, "--fail-above", "150")
    check(rc == 0, "diff --fail-above 150: exit 0 (Conv2D is +100%%) (%d)" % rc)
    rc, _, _ = code(base, base, "--fail-above", "0")
    check(rc == 0, "diff of a run with itself --fail-above 0: exit 0 (%d)" % rc)
    rc, out, _ = code(base, changed, "--format", "csv")
    check(rc == 0 and out.startswith("Section,Name,Base Count,New Count,Base(us),New(us),Diff(us),Ratio,Status\n")
          and "type,Conv2D,5,5,200.000,400.000,+200.000,2.000," in out, "diff --format csv")
    rc, out, _ = code(base, changed, "--format", "markdown")
    check(rc == 0 and "### Op types" in out and "| Conv2D | 5 | 5 | 200.000 | 400.000 | +200.000 | 2.000 |" in out,
          "diff --format markdown")
    rc, out, _ = code(base, changed)
    check(rc == 0 and out.splitlines()[0] == "base: balanced" and "Gelu" in out and "added" in out, "diff table")
    empty = os.path.join(folder, ".empty")
    os.makedirs(empty, exist_ok=True)
    rc, out, err = code(base, empty)
    check(rc == 1 and out == "" and len(err.strip().splitlines()) == 1,
          "diff with no data: exit 1 with one line (%s)" % err.strip())


def wait_for(b, expr, what, secs=10):
    deadline = time.time() + secs
    while time.time() < deadline:
        if b.eval(expr):
            return True
        time.sleep(0.05)
    check(False, "timed out waiting for " + what)
    return False


def check_site(b, runs, folder):
    """The site of a folder of runs: index, compare, assistant."""
    site = os.path.join(WORK, "site")
    shutil.rmtree(site, ignore_errors=True)
    run([ACLPROF, "report", folder, "-o", site])
    b.load("file://" + os.path.join(site, "index.html"))
    names = b.eval("[...document.querySelectorAll('#run-table tbody tr td:first-child')].map(c => c.textContent)")
    check(sorted(names) == sorted(list(runs) + ["changed"]), "index: one row per run (%s)" % names)
    cluster = b.eval("[...document.querySelectorAll('#run-table tbody tr')].filter(r => r.cells[0].textContent == 'cluster')"
                     ".map(r => [Number(r.cells[2].textContent), Number(r.cells[5].textContent)])[0]")
    check(cluster == [4 * 35, 4], "index: the cluster run has 140 ops over 4 ranks (%s)" % cluster)
    b.eval("document.querySelector('#run-table th[data-k=\"2\"]').click()")
    ops = b.eval("[...document.querySelectorAll('#run-table tbody tr')].map(r => Number(r.cells[2].textContent))")
    check(ops == sorted(ops, reverse=True), "index: a header click sorts the runs (%s)" % ops)
    check(not b.errors(), "index: no console errors %s" % b.errors()[:3])
    b.screenshot(os.path.join(WORK, "site.png"))

    order = [r for r in names]
    bi, si = order.index("balanced"), order.index("slow-conv")
    want = diff_json(runs["balanced"], runs["slow-conv"])[("type", "Conv2D")]
    b.load("file://%s#%d-%d" % (os.path.join(site, "compare.html"), bi, si))
    wait_for(b, "document.getElementById('top-regression').dataset.type !== undefined", "the comparison")
    top = b.eval("document.getElementById('top-regression').dataset.type")
    first = b.eval("[...document.querySelector('#type-table tbody tr').cells].map(c => c.textContent)")
    check(top == "Conv2D", "compare: Conv2D, made twice as slow, is the top regression (%s)" % top)
    check(first[:7] == ["Conv2D", "5", "5", "%.3f" % want["Base(us)"], "%.3f" % want["New(us)"],
                        "+%.3f" % want["Diff(us)"], "%.3f" % want["Ratio"]],
          "compare: its row has aclprof diff's numbers (%s)" % first)
    b.eval("document.getElementById('swap').click()")
    wait_for(b, "document.querySelector('#type-table tbody tr').cells[0].textContent == 'Conv2D'"
                " && document.querySelector('#type-table tbody tr').cells[6].textContent == '0.500'", "the swapped comparison")
    swapped = b.eval("[document.getElementById('top-regression').textContent,"
                     " document.querySelector('#type-table tbody tr').cells[5].textContent]")
    check(swapped == ["No op type is slower in the new run.", "-200.000"],
          "compare, swapped: Conv2D -200 us and no regression (%s)" % swapped)
    check(not b.errors(), "compare: no console errors %s" % b.errors()[:3])
    b.eval("document.getElementById('swap').click()")
    wait_for(b, "document.querySelector('#type-table tbody tr').cells[6].textContent == '2.000'", "the comparison again")
    b.eval("window.scrollTo(0, 0)")
    b.screenshot(os.path.join(WORK, "compare.png"))

    for name, (what, _, rule) in list(report_runs.VARIANTS.items()) + [("cluster", ("rank 2 twice as slow", None, "slow-rank"))]:
        page = os.path.join(site, "run-%s.html" % name)
        b.load("file://" + page)
        rules = b.eval("[...document.querySelectorAll('#assistant .advice')].map(a => a.dataset.rule)")
        if rule is None:
            check(rules == [] and b.eval("!!document.getElementById('no-advice')"),
                  "assistant: no rule fires on %s (%s): %s" % (name, what, rules))
        else:
            links = b.eval("[...document.querySelectorAll('#assistant .advice[data-rule=\"%s\"] a.target')]"
                           ".map(a => a.getAttribute('href'))" % rule)
            check(rule in rules and links, "assistant: %s fires on %s (%s), with links %s" % (rule, name, what, links[:3]))
            # The balanced run is silent on this rule: checked above (no rule fires there).
    # A suggestion's link lists what it is about.
    b.load("file://" + os.path.join(site, "run-transdata.html"))
    b.eval("document.querySelector('#assistant .advice[data-rule=\"transdata\"] a.target').click()")
    wait_for(b, "document.getElementById('count').textContent.startsWith('5 of')", "the TransData ops")
    types = b.eval("[...document.querySelectorAll('#op-table tbody tr')].map(r => r.cells[1].textContent)")
    check(types == ["TransData"] * 5, "assistant link: lists the 5 TransData ops (%s)" % types)
    b.load("file://" + os.path.join(site, "run-slow-step.html"))
    b.eval("document.querySelector('#assistant .advice[data-rule=\"slow-step\"] a.target').click()")
    wait_for(b, "document.getElementById('step-select').value == '3'", "step 3 selected")
    check(b.eval("document.querySelector('#step-curves circle.hl').dataset.step") == "3",
          "assistant link: the slow step (3) is highlighted")
    check(not b.errors(), "run pages: no console errors %s" % b.errors()[:3])


def set_field(b, element_id, value, event):
    """Sets a field's value as a user would, then fires `event` ('input', 'change') on it."""
    b.eval("(() => { const s = document.getElementById(%s); s.value = %s;"
           " s.dispatchEvent(new Event(%s)); })()" % (json.dumps(element_id), json.dumps(value), json.dumps(event)))


def search_for(b, text):
    set_field(b, "search", text, "input")


def all_rows(b):
    """Every row of the op table's pages, from the first page on."""
    return b.eval("""(() => { const out = []; let guard = 0;
        while (!document.getElementById('prev').disabled && ++guard < 1000) document.getElementById('prev').click();
        while (true) { document.querySelectorAll('#op-table tbody tr').forEach(r => out.push([...r.cells].map(c => c.textContent)));
          const next = document.getElementById('next'); if (next.disabled || ++guard > 2000) break; next.click(); }
        return out; })()""")


def single_page_features(b, want, total):
    """Pie, drill-down, fuzzy search, step selector and a step's ops on the ResNet-50 page."""
    b.eval("document.getElementById('show-pie').click()")
    pie = b.eval("[getComputedStyle(document.getElementById('type-pie')).display,"
                 " getComputedStyle(document.getElementById('type-chart')).display,"
                 " document.querySelectorAll('#type-pie .slice').length]")
    check(pie == ["inline", "none", len(want)], "pie: shown instead of the bars, one slice per type (%s)" % pie)
    b.eval("document.getElementById('show-bar').click()")
    # Drill-down: a type's row lists exactly its ops.
    b.eval("document.querySelector('#type-table tr[data-type=\"Conv2D\"]').click()")
    wait_for(b, "location.hash == '#type=Conv2D'", "the drill-down")
    rows = all_rows(b)
    check(len(rows) == want["Conv2D"] and {r[1] for r in rows} == {"Conv2D"},
          "drill-down: Conv2D lists its %d ops and only those (%d, %s)" % (want["Conv2D"], len(rows), {r[1] for r in rows}))
    check(b.eval("document.getElementById('count').textContent") == "%d of %d ops match" % (want["Conv2D"], total),
          "drill-down: the count says so")
    b.eval("document.querySelector('#filters .chip button').click()")
    check(b.eval("document.getElementById('count').textContent") == "%d of %d ops match" % (total, total),
          "drill-down: clearing the type lists every op again")
    # Fuzzy: word starts.
    search_for(b, "l1b2c3")
    names = {r[0] for r in all_rows(b)}
    check(names == {"resnet50/layer1/block2/conv3/Conv2D"},
          "fuzzy search 'l1b2c3' finds layer1/block2/conv3 (%s)" % sorted(names)[:4])
    search_for(b, "layer4 relu")
    names = {r[0] for r in all_rows(b)}
    check(len(names) == 9 and all("layer4" in n and n.endswith("Relu") for n in names),
          "search: every term matches, exactly when some op matches so: 'layer4 relu' (%d names)" % len(names))
    search_for(b, "")
    # Step selector: the curves' highlighted step follows it.
    set_field(b, "step-select", "3", "change")
    hl = b.eval("[...document.querySelectorAll('#step-curves circle.hl')].map(c => c.dataset.step)")
    cursor = b.eval("[document.getElementById('step-cursor').getAttribute('x1'),"
                    " document.querySelector('#step-curves circle[data-step=\"3\"]').getAttribute('cx')]")
    check(hl == ["3", "3", "3"] and cursor[0] == cursor[1],
          "step selector: step 3's three points and the cursor are highlighted (%s, %s)" % (hl, cursor))
    curves = b.eval("document.querySelectorAll('#step-curves polyline').length")
    check(curves == 3, "step curves: iteration gap, FP to BP and tail (%d)" % curves)
    # A step's ops are those starting in its window.
    b.eval("location.hash = '#ops-step=2'")
    wait_for(b, "document.querySelector('#filters .chip') !== null", "the step filter")
    step = b.eval("JSON.parse(document.getElementById('step-data').textContent).find(s => s[0] == 2)")
    ops = b.eval("JSON.parse(document.getElementById('op-data').textContent)")
    inside = [o for o in ops if step[1] <= o[5] < step[2]]
    rows = all_rows(b)
    check(len(rows) == len(inside) > 100, "step 2's ops: the %d that start in its window (%d)" % (len(inside), len(rows)))
    b.eval("document.querySelector('#filters .chip button').click()")


def timeline_tracks(prof):
    """(process, track) -> slices (or counter samples) in the run's JSON timeline."""
    events = load_json(one(prof, "msprof_*.json"))
    pname = {e["pid"]: e["args"]["name"] for e in events if e.get("ph") == "M" and e["name"] == "process_name"}
    tname = {(e["pid"], e["tid"]): e["args"]["name"] for e in events
             if e.get("ph") == "M" and e["name"] == "thread_name"}
    want = {}
    for e in events:
        if e.get("ph") == "X":
            k = pname[e["pid"]] + "\0" + tname[(e["pid"], e["tid"])]
        elif e.get("ph") == "C":
            k = pname[e["pid"]] + "\0" + e["name"]
        else:
            continue
        want[k] = want.get(k, 0) + 1
    return want


def timeline_ready(b, what):
    b.eval("document.getElementById('timeline').scrollIntoView()")
    return wait_for(b, "document.getElementById('tl').getAttribute('data-ready') === '1'", what, 60)


def check_tracks(b, prof, what):
    """Every track of the run's JSON timeline is on the page's, with every slice."""
    want = timeline_tracks(prof)
    have = b.eval("aclprofTimeline.tracks()")
    check(have == want, "%s timeline: every track of the JSON timeline with its slices (%d tracks, %d slices)%s"
          % (what, len(want), sum(want.values()),
             "" if have == want else " missing %s, extra %s" % (sorted(set(want) - set(have))[:4],
                                                                sorted(set(have) - set(want))[:4])))


def key(b, k):
    for t in ("keyDown", "keyUp"):
        b.call("Input.dispatchKeyEvent", {"type": t, "key": k, "text": k if t == "keyDown" else "",
                                          "code": "Key" + k.upper()}, session=True)


def click(b, x, y):
    for t in ("mousePressed", "mouseReleased"):
        b.call("Input.dispatchMouseEvent", {"type": t, "x": x, "y": y, "button": "left", "clickCount": 1},
               session=True)


def check_timeline(b, prof):
    """Section 8 on the ResNet-50 page (already loaded)."""
    if not timeline_ready(b, "the timeline's pieces"):
        return
    check_tracks(b, prof, "ResNet-50")
    summary = csv_rows(one(prof, "op_summary_*.csv"))
    conv1 = [r for r in summary if r["Op Name"] == "resnet50/conv1/Conv2D"]
    check(len(conv1) == EXECUTIONS, "op_summary has conv1 once per execution")
    # Search, next.
    b.eval("document.getElementById('tl-search').value = 'resnet50/conv1/Conv2D'")
    b.eval("document.getElementById('tl-next').click()")
    found = b.eval("document.getElementById('tl-found').textContent")
    check(found == "1 of %d" % EXECUTIONS, "timeline search: conv1's %d executions (%s)" % (EXECUTIONS, found))
    b.eval("document.getElementById('tl-next').click()")
    check(b.eval("document.getElementById('tl-found').textContent") == "2 of %d" % EXECUTIONS,
          "timeline search: next moves to the second")
    b.eval("document.getElementById('tl-prev').click()")
    sel = b.eval("aclprofTimeline.selected()")
    check(sel and sel["name"] == "resnet50/conv1/Conv2D" and sel["api"],
          "timeline: the match is selected and has its API call (%s)" % sel)
    details = b.eval("[...document.querySelectorAll('#tl-args tr')].map(r => [r.cells[0].textContent, r.cells[1].textContent])")
    d = dict(details)
    first = conv1[0]
    check(b.eval("document.querySelector('#tl-details h3').textContent") == "resnet50/conv1/Conv2D"
          and d.get("Task Type") == first["Task Type"]
          and d.get("Duration") == "%.3f us" % float(first["Task Duration(us)"])
          and d.get("API call", "").startswith("AscendCL@aclmdlExecute"),
          "timeline details: name, task type, duration as op_summary's, and its API call (%s)" % d)
    # Pixels, zoomed to the slice with room either side.
    g = b.eval("aclprofTimeline.geometry()")
    b.eval("aclprofTimeline.setView(%f, %f)" % (g["start"] - 4000, g["start"] + g["dur"] + 4000))
    g = b.eval("aclprofTimeline.geometry()")
    mid = g["y"] + g["h"] / 2
    inside = b.eval("aclprofTimeline.pixel(%f, %f)" % ((g["x0"] + g["x1"]) / 2, mid + 3))
    check(inside == g["fill"], "timeline pixels: conv1 is filled with its colour (%s, %s)" % (inside, g["fill"]))
    gap = b.eval("aclprofTimeline.pixel(aclprofTimeline.pixelOf(%f), %f)" % (g["start"] - 700, mid))
    check(gap == "#ffffff", "timeline pixels: the 1.5 us before it, between two ops, is empty (%s)" % gap)
    edge = b.eval("aclprofTimeline.pixel(%f, %f)" % ((g["x0"] + g["x1"]) / 2, g["y"]))
    check(edge == "#000000", "timeline pixels: the selection is outlined (%s)" % edge)
    tip = b.eval("aclprofTimeline.pixel(%f, %f)" % (g["x0"] - 3, mid))
    check(tip == "#c0392b", "timeline pixels: the flow from its API call ends at it (%s)" % tip)
    # (The call began before the view: its outline's top edge.)
    api_edge = b.eval("aclprofTimeline.pixel(600, %f)" % g["api"]["y"]) if g.get("api") else None
    check(api_edge == "#c0392b", "timeline pixels: its API call is outlined in the flow's colour (%s)" % api_edge)
    # Keys: W zooms in around the pointer (none here: the middle), D pans right.
    v = b.eval("aclprofTimeline.view()")
    b.eval("document.getElementById('tl-canvas').focus()")
    key(b, "w")
    w = b.eval("aclprofTimeline.view()")
    check(abs((w[1] - w[0]) - 0.8 * (v[1] - v[0])) < 1e-6 * (v[1] - v[0]), "timeline: W zooms in (%s -> %s)" % (v, w))
    key(b, "d")
    dd = b.eval("aclprofTimeline.view()")
    check(abs((dd[0] - w[0]) - 0.1 * (w[1] - w[0])) < 1e-6 * (w[1] - w[0]), "timeline: D pans right (%s)" % dd)
    key(b, "s")
    key(b, "a")
    # The ruler's labels fit, the last one too when its tick is at the right edge: a view
    # of 8 tick steps (200 us) starting on a tick.
    t0 = (int(g["start"]) // 200_000) * 200_000
    b.eval("aclprofTimeline.setView(%d, %d)" % (t0, t0 + 800_000))
    ruler = b.eval("aclprofTimeline.ruler()")
    labels = ruler["labels"]
    check(len(labels) >= 5 and all(0 <= l and r <= ruler["width"] for l, r in labels),
          "timeline ruler: every label inside the canvas (%d labels, width %s, last %s)"
          % (len(labels), ruler["width"], labels[-1] if labels else None))
    # A click on a slice selects it: the first op of the run, zoomed to.
    b.eval("aclprofTimeline.setView(%f, %f)" % (g["start"] - 4000, g["start"] + g["dur"] + 4000))
    g = b.eval("aclprofTimeline.geometry()")
    rect = b.eval("(() => { const r = document.getElementById('tl-canvas').getBoundingClientRect(); return [r.left, r.top]; })()")
    b.eval("document.getElementById('tl-search').value = ''")
    click(b, rect[0] + (g["x0"] + g["x1"]) / 2, rect[1] + g["y"] + g["h"] / 2)
    sel = b.eval("aclprofTimeline.selected()")
    check(sel and sel["name"] == "resnet50/conv1/Conv2D", "timeline: a click on conv1 selects it (%s)" % sel)
    # The op table's names and the step trace's link lead to the timeline.
    b.eval("document.querySelector('#op-table th[data-k=\"6\"]').click()")
    b.eval("document.querySelector('#op-table th[data-k=\"6\"]').click()")
    name = b.eval("document.querySelector('#op-table tbody tr a.to-tl').textContent")
    b.eval("document.querySelector('#op-table tbody tr a.to-tl').click()")
    sel = b.eval("aclprofTimeline.selected()")
    check(sel and sel["name"] == name, "op table: clicking %s selects it on the timeline (%s)" % (name, sel))
    step = b.eval("JSON.parse(document.getElementById('step-data').textContent)[1]")
    set_field(b, "step-select", str(step[0]), "change")
    b.eval("document.getElementById('step-tl').click()")
    v = b.eval("aclprofTimeline.view()")
    first = b.eval("aclprofTimeline.firstTask()")
    want = [first + step[1] * 1000, first + step[2] * 1000]
    pad = (want[1] - want[0]) * 0.05
    check(abs(v[0] - (want[0] - pad)) < 1 and abs(v[1] - (want[1] + pad)) < 1,
          "step trace: 'on the timeline' shows step %s's span (%s vs %s)" % (step[0], v, want))
    b.eval("document.getElementById('timeline').scrollIntoView()")
    b.eval("aclprofTimeline.setView(%f, %f)" % (want[0] - pad, want[1] + pad))
    shot = os.path.join(WORK, "timeline.png")
    b.screenshot(shot)
    check(not b.errors(), "timeline: no console errors %s" % b.errors()[:3])


def check_cluster(b):
    """Section 9."""
    folder = os.path.join(WORK, "cluster")
    comm_runs.make_cluster(folder)
    os.makedirs(check_filemode.WORK, exist_ok=True)
    ours = json.loads(subprocess.run([ACLPROF, "analyze", folder, "--communication", "--format", "json"],
                                     check=True, capture_output=True, text=True).stdout)
    links = {(l["src_rank"], l["dst_rank"]): l for l in ours["links"]}
    ring = {(r, (r + 1) % comm_runs.RANKS) for r in range(comm_runs.RANKS)}
    check(set(links) == ring, "analyze --communication: the ring's %d links (%s)" % (len(ring), sorted(links)))
    slow = ours["slowest_link"]
    check(slow and (slow["src_rank"], slow["dst_rank"]) == comm_runs.SLOW_LINK
          and abs(slow["of_median"] - comm_runs.TRANSIT_US / comm_runs.SLOW_TRANSIT_US) < 1e-9,
          "analyze --communication: the slowest link is 3 -> 0 at a fifth of the median (%s)" % slow)
    # msprof-analyze on the same folder.
    out = os.path.join(WORK, "cluster-msprof")
    shutil.rmtree(out, ignore_errors=True)
    for recipe in ["communication_matrix", "hccl_sum"]:
        r = run([check_filemode.msprof_exe(), "cluster", "-d", folder, "-o", out, "-m", recipe],
                capture_output=True, cwd=check_filemode.WORK)
        check_filemode.no_errors("msprof-analyze cluster -m " + recipe, r.stdout + r.stderr)
    db = sqlite3.connect(os.path.join(out, "cluster_analysis_output", "cluster_analysis.db"))
    theirs = {(int(s), int(d)): (size, t, bw) for s, d, size, t, bw in db.execute(
        "SELECT src_rank, dst_rank, transit_size, transit_time, bandwidth FROM ClusterCommunicationMatrix "
        "WHERE hccl_op_name = 'Total Op Info' AND src_rank != dst_rank")}
    same = set(theirs) == set(links) and all(
        abs(theirs[k][0] - links[k]["transit_size_mb"]) < 1e-9 and abs(theirs[k][1] - links[k]["transit_time_ms"]) < 1e-9
        and abs(theirs[k][2] - links[k]["bandwidth_gb_s"]) < 1e-6 for k in links)
    check(same, "every link's size, time and bandwidth == msprof-analyze's communication_matrix (%s)" % theirs)
    hccl = {(int(r), t): (n, s) for r, t, n, s in db.execute("SELECT Rank, OpType, Count, SumNs FROM HcclPerRankStats")}
    mine = {(o["rank"], o["op_type"]): (o["count"], o["total_us"] * 1000) for o in ours["rank_ops"]}
    check(set(hccl) == set(mine) and all(hccl[k][0] == mine[k][0] and abs(hccl[k][1] - mine[k][1]) < 1 for k in mine),
          "each rank's communication count and time == msprof-analyze's hccl_sum (%s vs %s)" % (hccl, mine))
    steps = check_filemode.cluster_step_trace(folder, os.path.join(WORK, "cluster-steps"), "the cluster")
    # The page.
    page = os.path.join(WORK, "cluster.html")
    run([ACLPROF, "report", folder, "-o", page])
    b.load("file://" + page)
    check(not b.errors(), "cluster page: loads with no console errors %s" % b.errors()[:3])
    table = b.eval("[...document.querySelectorAll('#cluster-table tbody tr')].map(r => [r.dataset.rank,"
                   " ...[1, 2, 3].map(k => Number(r.cells[k].textContent))])")
    if steps:
        want = {r["Index"]: [float(r["Computing"]), float(r["Communication(Not Overlapped)"]), float(r["Free"])]
                for r in steps if r["Type"] == "rank"}
        got = {r[0]: r[1:] for r in table}
        check(set(want) == set(got) and all(abs(a - b2) < 0.002 for k in want for a, b2 in zip(want[k], got[k])),
              "cluster view: each rank's computing, communication not overlapped and free == msprof-analyze's"
              " cluster step trace (%s vs %s)" % (got, want))
    agg = json.loads(subprocess.run([ACLPROF, "analyze", folder, "--aggregate-by", "rank", "--format", "json"],
                                    check=True, capture_output=True, text=True).stdout)["rows"]
    ops = b.eval("[...document.querySelectorAll('#cluster-table tbody tr')].map(r => [r.dataset.rank,"
                 " Number(r.cells[4].textContent), Number(r.cells[5].textContent)])")
    check(sorted(ops) == sorted([str(r["Rank"]), r["Count"], r["Sum(us)"]] for r in agg),
          "cluster view: each rank's ops and op time == analyze --aggregate-by rank (%s)" % ops)
    slow_rank = b.eval("document.getElementById('slow-rank').dataset.rank")
    why = b.eval("document.querySelector('#slow-rank p').textContent")
    check(slow_rank == str(comm_runs.SLOW_RANK) and why.startswith("its computing is the longest"),
          "cluster view: rank %d is the slow rank, computing longest (%s: %s)" % (comm_runs.SLOW_RANK, slow_rank, why))
    check(b.eval("document.querySelectorAll('#cluster-bars g[data-step=\"all\"] rect.seg').length") == 3 * comm_runs.RANKS,
          "cluster view: three segments per rank")
    check(b.eval("document.querySelector('#cluster-bars text.slow-label').textContent") == "rank %d (slow)" % comm_runs.SLOW_RANK,
          "cluster view: the slow rank's bar is marked")
    set_field(b, "cluster-step", "3", "change")
    shown = b.eval("[...document.querySelectorAll('#cluster-bars g[data-step]')].filter(g => g.style.display !== 'none')"
                   ".map(g => g.dataset.step)")
    check(shown == ["3"], "cluster view: the selector shows step 3's bars (%s)" % shown)
    cells = b.eval("document.querySelectorAll('#cluster-heat rect').length")
    check(cells == comm_runs.RANKS * comm_runs.EXECUTIONS, "heat map: a cell per rank and step (%d)" % cells)
    b.eval("document.querySelector('#cluster-heat rect[data-step=\"5\"]').dispatchEvent(new MouseEvent('click'))")
    check(b.eval("document.getElementById('cluster-step').value") == "5", "heat map: a click shows its step")
    href = b.eval("document.querySelector('#cluster-table tr[data-rank=\"%d\"] a').getAttribute('href')" % comm_runs.SLOW_RANK)
    # Communication.
    marked = b.eval("[...document.querySelectorAll('#comm-matrix-0 g.link.slow')].map(g => [g.dataset.src, g.dataset.dst])")
    check(marked == [[str(x) for x in comm_runs.SLOW_LINK]], "communication view: the matrix marks link 3 -> 0 (%s)" % marked)
    bws = b.eval("Object.fromEntries([...document.querySelectorAll('#comm-matrix-0 g.link')].map(g => "
                 "[g.dataset.src + '-' + g.dataset.dst, Number(g.dataset.bw)]))")
    check(bws == {"%d-%d" % k: round(v["bandwidth_gb_s"], 4) for k, v in links.items()},
          "communication view: the matrix's bandwidths are analyze's (%s)" % bws)
    waits = b.eval("document.querySelector('#comm-ranks tr.hl').dataset.rank")
    check(waits == str(ours["waits_most"]["rank"]), "communication view: the rank that waits most is analyze's (%s)" % waits)
    b.eval("document.getElementById('cluster').scrollIntoView()")
    b.screenshot(os.path.join(WORK, "cluster.png"))
    b.eval("document.getElementById('communication').scrollIntoView()")
    b.screenshot(os.path.join(WORK, "communication.png"))
    # A rank's own page, and back.
    b.load("file://" + os.path.join(WORK, href))
    check(not b.errors() and b.eval("document.getElementById('total-ops').textContent") == str(6 * comm_runs.EXECUTIONS)
          and b.eval("document.querySelector('nav a').getAttribute('href')") == "cluster.html",
          "rank %d's own page: its %d ops, and a link back to the cluster" % (comm_runs.SLOW_RANK, 6 * comm_runs.EXECUTIONS))


def check_shapes(b):
    """A run whose ops carry shapes (a real torch_npu database, exported by aclprof): the op
    table shows them, and search finds ops by an input shape."""
    db = os.path.join(ROOT, "tests", "data", "real", "ascend_pytorch_profiler_level2_910B_msinsight.db")
    out = os.path.join(WORK, "db-export")
    shutil.rmtree(out, ignore_errors=True)
    run([os.path.join(ROOT, "target", "release", "aclprof"), "export", db, "-o", out])
    (prof,) = glob.glob(os.path.join(out, "PROF_*"))
    page = os.path.join(WORK, "report-shapes.html")
    run([os.path.join(ROOT, "target", "release", "aclprof"), "report", prof, "-o", page])
    b.load("file://" + page)
    heads = b.eval("[...document.querySelectorAll('#op-table thead th')].map(t => t.textContent)")
    check(heads[7:] == ["Input shapes", "Output shapes", "FLOPs", "Memory (bytes)"],
          "op table: shape and cost columns for ops that carry them (%s)" % heads)
    ops = b.eval("JSON.parse(document.getElementById('op-data').textContent)")
    want = {tuple(o[:2]) for o in ops if "32,3,224,224" in (o[7] or "")}
    search_for(b, "32,3,224,224")
    rows = all_rows(b)
    check(want and {(r[0], r[1]) for r in rows} == want and all("32,3,224,224" in r[7] for r in rows),
          "search '32,3,224,224' finds the ops with that input shape (%d)" % len(rows))
    check(not b.errors(), "the shapes page has no console errors %s" % b.errors()[:3])


def check_memory_page(b):
    exe = build_c("ctests/memory_app.c", "memory_app")
    out = os.path.join(WORK, "memory")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    env = dict(os.environ)
    env.pop("ACLPROF_DEVICE_COUNT", None)
    run([exe, out, os.path.join(ROOT, "ctests", "data", "memory_model.json")], env=env)
    (prof,) = glob.glob(os.path.join(out, "PROF_*"))
    page = os.path.join(WORK, "memory.html")
    run([ACLPROF, "report", prof, "-o", page])
    mem = json.loads(subprocess.run([ACLPROF, "analyze", prof, "--memory", "--format", "json"],
                                    check=True, capture_output=True, text=True).stdout)
    (dev,) = mem["devices"]
    b.load("file://" + page)
    check(not b.errors(), "memory page: loads with no console errors %s" % b.errors()[:3])
    if timeline_ready(b, "the memory run's timeline"):
        check_tracks(b, prof, "memory run")
    peak = b.eval("document.querySelector('#memory-peak-0 .peak-allocated').textContent")
    check(peak == "%.3f" % (dev["peak_allocated"] / 1024), "memory page: the peak is analyze's (%s KB)" % peak)
    marked = b.eval("document.querySelector('#memory-chart-0 circle.peak').dataset.value")
    check(marked == peak, "memory page: the chart marks the peak (%s)" % marked)
    series = b.eval("[...document.querySelectorAll('#memory-chart-0 path')].map(p => "
                    "[p.dataset.series, p.getBBox().width > 0, Number(p.dataset.last)])")
    check([s[0] for s in series] == ["Operator allocated", "Operator reserved", "Application and models"]
          and all(s[1] for s in series), "memory page: three curves drawn (%s)" % series)
    check(series[2][2] == dev["held_at_end"] / 1024,
          "memory page: the application's curve ends at what was held (%s KB)" % series[2][2])
    ops = b.eval("[...document.querySelectorAll('#memory-ops tbody tr')].map(r => r.cells[1].textContent)")
    check(sorted(ops) == sorted(o["name"] for o in dev["ops"]), "memory page: a row per op (%s)" % ops)
    b.eval("document.querySelector('#memory-ops th[data-k=\"1\"]').click()")
    names = b.eval("[...document.querySelectorAll('#memory-ops tbody tr')].map(r => r.cells[1].textContent)")
    check(names == sorted(names, key=str.lower, reverse=True), "memory page: a header click sorts (%s)" % names)
    set_field(b, "memory-search", "conv", "input")
    shown = b.eval("[...document.querySelectorAll('#memory-ops tbody tr')].filter(r => r.style.display !== 'none')"
                   ".map(r => r.cells[1].textContent)")
    check(shown == ["conv1"], "memory page: search finds conv1 only (%s)" % shown)
    unreleased = b.eval("[...document.querySelectorAll('#memory-unreleased tbody tr')].map(r => r.cells[3].textContent)")
    check(unreleased == ["256.000"], "memory page: the leaked 256 KB is listed (%s)" % unreleased)
    plan = b.eval("document.querySelectorAll('#memory-plan tbody tr').length")
    check(plan == 3, "memory page: the static plan's 3 entries (%s)" % plan)
    host = b.eval("[...document.querySelectorAll('#host svg path')].filter(p => p.getBBox().width > 0).length")
    check(host == 2, "memory page: the Host section draws CPU and memory (%s)" % host)
    b.eval("document.getElementById('memory').scrollIntoView()")
    shot = os.path.join(WORK, "memory.png")
    b.screenshot(shot)
    check(os.path.getsize(shot) > 10000, "screenshot " + shot)


def main():
    run(["cargo", "build", "--release", "-q"], cwd=ROOT)
    run([os.path.join(ROOT, "scripts", "build-lib"), "--release"], cwd=ROOT, stdout=subprocess.DEVNULL)
    exe = chromium()
    check(exe is not None, "chromium is installed")
    if not exe:
        sys.exit(1)
    os.makedirs(WORK, exist_ok=True)
    prof = profile(os.path.join(WORK, "run"), EXECUTIONS,
                   {"fp_point": "resnet50/conv1/Conv2D", "bp_point": "resnet50/fc/MatMul"})
    page = os.path.join(WORK, "report.html")
    run([os.path.join(ROOT, "target", "release", "aclprof"), "report", prof, "-o", page])
    stat = csv_rows(glob.glob(os.path.join(prof, "mindstudio_profiler_output", "op_statistic_*.csv"))[0])
    want = {r["OP Type"]: int(r["Count"]) for r in stat}
    total = sum(want.values())
    check(total == 125 * EXECUTIONS, "op_statistic has the run's %d ops" % total)

    b = Browser(exe)
    try:
        secs = b.load("file://" + page)
        heading = b.eval("document.querySelector('h1').textContent")
        check(heading == "aclprof report: " + os.path.basename(prof),
              "the heading names the run, not this machine's path (%s)" % heading)
        check(not b.errors(), "the page loads with no console errors or exceptions %s" % b.errors()[:3])
        check(b.eval("document.getElementById('total-ops').textContent") == str(total), "summary: %d ops" % total)
        bars = b.eval("[...document.querySelectorAll('#type-chart rect')].map(r => r.getBBox().width)")
        check(len(bars) == len(want) and all(w > 0 for w in bars),
              "type chart: one drawn bar per type (%d)" % len(bars))
        types = b.eval("[...document.querySelectorAll('#type-table tbody tr')].map(r => "
                       "[r.cells[0].textContent, Number(r.cells[1].textContent)])")
        check(dict(types) == want, "per-type table == op_statistic")
        steps = b.eval("[...document.querySelectorAll('#step-chart rect')].filter(r => r.getBBox().height > 0)"
                       ".map(r => r.querySelector('title').textContent)")
        fpbp = [s for s in steps if "FP to BP" in s]
        check(len(fpbp) == EXECUTIONS, "step chart: an FP-to-BP bar for each of %d steps (%d)" % (EXECUTIONS, len(fpbp)))
        check(b.eval("document.querySelectorAll('#op-table tbody tr').length") == 100, "op table: 100 rows a page")
        check(b.eval("document.getElementById('count').textContent") == "%d of %d ops match" % (total, total),
              "op table: all ops match with no search")
        seen = b.eval("""(() => { let n = 0, guard = 0;
            while (true) { n += document.querySelectorAll('#op-table tbody tr').length;
              const next = document.getElementById('next'); if (next.disabled || ++guard > 1000) break; next.click(); }
            return n; })()""")
        check(seen == total, "op table: the pages together have one row per op (%d)" % seen)
        relu = want.get("Relu", 0)
        set_field(b, "search", "relu", "input")
        count = b.eval("document.getElementById('count').textContent")
        rows = b.eval("[...document.querySelectorAll('#op-table tbody tr')].map(r => r.cells[1].textContent)")
        check(count == "%d of %d ops match" % (relu, total) and rows and set(rows) == {"Relu"},
              "search 'relu' filters to the %d Relu ops (%s)" % (relu, count))
        set_field(b, "search", "", "input")
        b.eval("document.querySelector('#op-table th[data-k=\"6\"]').click()")
        first = b.eval("Number(document.querySelector('#op-table tbody tr').cells[6].textContent)")
        durs = b.eval("JSON.parse(document.getElementById('op-data').textContent).map(r => r[6])")
        check(abs(first - min(durs)) < 1e-9, "clicking Duration sorts ascending (first %.3f)" % first)
        b.eval("document.querySelector('#op-table th[data-k=\"6\"]').click()")
        single_page_features(b, want, total)
        check_timeline(b, prof)
        b.eval("location.hash = ''; window.scrollTo(0, 0)")
        check(not b.errors(), "no console errors after using the table %s" % b.errors()[:3])
        shot = os.path.join(WORK, "report.png")
        b.screenshot(shot)
        check(os.path.getsize(shot) > 10000, "screenshot " + shot)
        print("page: %d bytes, loaded in %.2f s" % (os.path.getsize(page), secs))

        check_shapes(b)
        check_memory_page(b)
        check_cluster(b)

        folder = os.path.join(WORK, "runs")
        runs = report_runs.make_runs(folder)
        check_diff(runs, folder)
        check_site(b, runs, folder)

        # The same at 100 000 ops, measured for the record.
        big = profile(os.path.join(WORK, "run-100k"), 800)
        big_page = os.path.join(WORK, "report-100k.html")
        t0 = time.time()
        run([os.path.join(ROOT, "target", "release", "aclprof"), "report", big, "-o", big_page])
        made = time.time() - t0
        secs = b.load("file://" + big_page)
        shown = b.eval("document.getElementById('count').textContent")
        check(shown == "100000 of 100000 ops match" and not b.errors(),
              "100 000 ops: the page loads with every op (%s)" % shown)
        print("100 000 ops: written in %.2f s, %.1f MB, loaded in Chromium in %.2f s"
              % (made, os.path.getsize(big_page) / 1e6, secs))
    finally:
        b.close()
    finish("report checks")


if __name__ == "__main__":
    main()
