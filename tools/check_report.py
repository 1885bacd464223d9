#!/usr/bin/env python3
"""`aclprof report` in a real browser: Debian's Chromium, headless, driven over the DevTools
protocol (--remote-debugging-pipe; no extra packages).

1. A simulated ResNet-50 run in environment-variable mode (4 executions, one step each cut
   at FP_POINT, BP_POINT set) becomes a report page.
2. The page loads with no console errors or exceptions; the type-share and step charts are
   drawn (one bar per type, three phases per step); the summary, the per-type table and the
   per-op table (100 rows a page; every page together) agree with op_statistic; search
   filters by type; a header click sorts.
3. A screenshot goes to target/report-check/report.png (docs/report.png is one of these).
4. For the record, not a check: the page's size and load time at 100 000 ops.

Installs chromium with apt-get when it is missing. Usage: tools/check_report.py
"""
import base64
import glob
import json
import os
import select
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_filemode import build_c, check, csv_rows, finish, run  # noqa: E402  (shared helpers)

WORK = os.path.join(ROOT, "target", "report-check")
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
        b.eval("(() => { const s = document.getElementById('search'); s.value = 'relu';"
               " s.dispatchEvent(new Event('input')); })()")
        count = b.eval("document.getElementById('count').textContent")
        rows = b.eval("[...document.querySelectorAll('#op-table tbody tr')].map(r => r.cells[1].textContent)")
        check(count == "%d of %d ops match" % (relu, total) and rows and set(rows) == {"Relu"},
              "search 'relu' filters to the %d Relu ops (%s)" % (relu, count))
        b.eval("(() => { const s = document.getElementById('search'); s.value = '';"
               " s.dispatchEvent(new Event('input')); })()")
        b.eval("document.querySelector('#op-table th[data-k=\"6\"]').click()")
        first = b.eval("Number(document.querySelector('#op-table tbody tr').cells[6].textContent)")
        durs = b.eval("JSON.parse(document.getElementById('op-data').textContent).map(r => r[6])")
        check(abs(first - min(durs)) < 1e-9, "clicking Duration sorts ascending (first %.3f)" % first)
        b.eval("document.querySelector('#op-table th[data-k=\"6\"]').click()")
        b.eval("window.scrollTo(0, 0)")
        check(not b.errors(), "no console errors after using the table")
        shot = os.path.join(WORK, "report.png")
        b.screenshot(shot)
        check(os.path.getsize(shot) > 10000, "screenshot " + shot)
        print("page: %d bytes, loaded in %.2f s" % (os.path.getsize(page), secs))

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
