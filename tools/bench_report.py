#!/usr/bin/env python3
"""How fast the report is at 1 M ops: the time `aclprof report` takes to write a run's page
(and a site of two such runs), and, in headless Chromium, the page's first paint and load,
and each interaction (search, fuzzy search, sort, drill-down to a type, step selection) from
the event to the table redrawn; the timeline's time to load every piece and to draw a frame
(whole run and zoomed in; the goal: well under 50 ms at 1 M ops). Goals (docs/performance.md): pages written in <= 3 s,
every interaction <= 1 s. A benchmark, not a test: it prints figures and asserts nothing.

Usage: tools/bench_report.py [OPS]   (default 1000000; rounded to whole ResNet-50 runs of 125)
"""
import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_filemode import build_c, run  # noqa: E402
from check_report import ACLPROF, Browser, chromium  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORK = os.path.join(ROOT, "target", "report-bench")


def record(out, executions, fp="resnet50/conv1/Conv2D"):
    exe = build_c("ctests/env_mode_app.c", "env_mode_app")
    os.makedirs(out)
    options = {"output": out, "task_trace": "on", "training_trace": "on", "fp_point": fp,
               "bp_point": "resnet50/fc/MatMul"}
    env = dict(os.environ, PROFILING_MODE="true", PROFILING_OPTIONS=json.dumps(options))
    env.pop("ACLPROF_DEVICE_COUNT", None)
    subprocess.run([exe, os.path.join(ROOT, "models", "resnet50.json"), str(executions)],
                   env=env, check=True, stdout=subprocess.DEVNULL)


def timed(cmd):
    t0 = time.monotonic()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return time.monotonic() - t0


def interaction(b, js):
    """Runs `js` (which changes the page synchronously) and returns its ms."""
    return b.eval("(() => { const t0 = performance.now(); %s; return performance.now() - t0; })()" % js)


def main():
    ops = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    executions = max(1, ops // 125)
    run(["cargo", "build", "--release", "-q"], cwd=ROOT)
    shutil.rmtree(WORK, ignore_errors=True)
    runs = os.path.join(WORK, "runs")
    record(os.path.join(runs, "a"), executions)
    record(os.path.join(runs, "b"), executions)
    page = os.path.join(WORK, "page.html")
    write = [timed([ACLPROF, "report", os.path.join(runs, "a"), "-o", page]) for _ in range(3)]
    site = [timed([ACLPROF, "report", runs, "-o", os.path.join(WORK, "site%d" % i)]) for i in range(3)]
    print("report at %d ops: page written in %.2f s (median of 3: %s); site of two such runs in "
          "%.2f s (%s); page %.1f MB" % (executions * 125, sorted(write)[1],
                                         " ".join("%.2f" % t for t in write), sorted(site)[1],
                                         " ".join("%.2f" % t for t in site), os.path.getsize(page) / 1e6))
    b = Browser(chromium())
    try:
        loads, paints, rows, tl = [], [], {}, {}
        for _ in range(3):
            loads.append(b.load("file://%s?round=%d" % (page, len(loads))))
            # Time from navigation to the first frame drawn after the load event (headless
            # Chromium does not always record a first-contentful-paint entry).
            r = b.call("Runtime.evaluate", {"expression": "new Promise(r => requestAnimationFrame(() => "
                       "requestAnimationFrame(() => r(performance.now()))))", "awaitPromise": True,
                       "returnByValue": True}, session=True)
            paints.append(r["result"]["value"] / 1000)
            # The timeline: every piece loaded, then frames at the whole run and zoomed in.
            t_ready = b.call("Runtime.evaluate", {"expression": "new Promise(r => { const t0 = performance.now();"
                             " (function w() { if (document.getElementById('tl').getAttribute('data-ready') === '1')"
                             " r(performance.now()); else setTimeout(w, 20); })(); })", "awaitPromise": True,
                             "returnByValue": True}, session=True)["result"]["value"]
            tl.setdefault("every piece loaded (s after navigation)", []).append(t_ready / 1000)
            b.eval("document.getElementById('timeline').scrollIntoView()")
            span = b.eval("aclprofTimeline.view()")[1]
            for label, frac in [("whole run", None), ("1/10 of the run", 0.1), ("1/1000 of the run", 0.001)]:
                if frac:
                    b.eval("aclprofTimeline.setView(%f, %f)" % (span * 0.4, span * (0.4 + frac)))
                else:
                    b.eval("aclprofTimeline.setView(0, %f)" % span)
                frames = [b.eval("aclprofTimeline.timeFrame()") for _ in range(10)]
                tl.setdefault("frame, %s (ms, worst of 10)" % label, []).append(max(frames))
            for name, js in [
                ("search 'conv'", "const s = document.getElementById('search'); s.value = 'conv';"
                                  " s.dispatchEvent(new Event('input'))"),
                # Nothing matches exactly: every op is tried fuzzily (the slowest search).
                ("fuzzy search 'l9b9c9'", "const s = document.getElementById('search'); s.value = 'l9b9c9';"
                                          " s.dispatchEvent(new Event('input'))"),
                ("search 'layer4 conv2'", "const s = document.getElementById('search');"
                                          " s.value = 'layer4 conv2'; s.dispatchEvent(new Event('input'))"),
                ("clear search", "const s = document.getElementById('search'); s.value = '';"
                                 " s.dispatchEvent(new Event('input'))"),
                ("sort by name", "document.querySelector('#op-table th[data-k=\"0\"]').click()"),
                ("sort by duration", "document.querySelector('#op-table th[data-k=\"6\"]').click()"),
                ("drill down to Relu", "history.replaceState(null, '', '#type=Relu');"
                                       " window.dispatchEvent(new HashChangeEvent('hashchange'))"),
                ("select step 50", "const s = document.getElementById('step-select'); s.value = '50';"
                                    " s.dispatchEvent(new Event('change'))"),
                ("next page", "document.getElementById('next').click()"),
            ]:
                rows.setdefault(name, []).append(interaction(b, js) / 1000)
        errors = b.errors()
    finally:
        b.close()
    med = lambda v: sorted(v)[len(v) // 2]  # noqa: E731
    print("Chromium, median of 3 loads: first frame drawn %.2f s after navigation (load event %.2f s)" % (med(paints), med(loads)))
    for name, v in rows.items():
        print("  %-24s %.3f s  (%s)" % (name, med(v), " ".join("%.3f" % x for x in v)))
    print("timeline at %d ops (median of 3 loads):" % (executions * 125))
    for name, v in tl.items():
        print("  %-44s %.3f  (%s)" % (name, med(v), " ".join("%.3f" % x for x in v)))
    if errors:
        print("console errors: %s" % errors[:3])


if __name__ == "__main__":
    main()
