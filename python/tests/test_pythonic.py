"""The Pythonic layer end to end: Model, Subscription, Profiler, Analysis, the extension API."""

from __future__ import annotations

import threading

import pytest

import acl
import aclprof
from aclprof import AclError, Analysis, Model, OpBatch, Profiler, Subscription
from conftest import RESNET50, TINY, model_ops, open_fds


def file_mode_running(tmp_path) -> bool:
    """Whether file mode is initialised, told by aclprofInit's repeated-init error."""
    ret = acl.prof.init(str(tmp_path / "probe"))
    if ret == 0:
        assert acl.prof.finalize() == 0
        return False
    assert ret == aclprof.ACL_ERROR_REPEAT_INITIALIZE
    return True


def test_ops_in_two_lines():
    with Model.simulate(RESNET50) as model:
        with Subscription(model.id) as sub:
            model.execute(times=3)
    ops = model_ops(RESNET50)
    assert len(sub.records) == 3 * len(ops)
    assert [(op.name, op.type) for op in sub.records] == [(o["name"], o["type"]) for o in ops] * 3
    assert all(op.model_id == model.id for op in sub.records)
    assert all(op.duration == op.end - op.start > 0 for op in sub.records)
    assert not model.loaded


def test_subscription_streams_batches_to_a_callback():
    seen = []
    with Model.simulate(TINY) as model:
        sub = Subscription(model.id, on_batch=lambda b: seen.append((threading.current_thread(), b)))
        sub.start()
        model.execute(times=4)
        records = sub.stop()
    assert sum(len(b) for _, b in seen) == len(records) == 4 * len(model_ops(TINY))
    assert all(isinstance(b, OpBatch) for _, b in seen)
    assert all(t is not threading.main_thread() for t, _ in seen)
    assert [b for _, b in seen] == sub.batches


def test_subscription_releases_everything():
    before = open_fds()
    with Model.simulate(TINY) as model:
        for _ in range(3):
            with Subscription(model.id):
                model.execute()
    assert open_fds() == before


def test_subscription_errors_leave_nothing_open():
    before = open_fds()
    with pytest.raises(AclError) as err:
        Subscription(999_999).start()
    assert err.value.code == aclprof.ACL_ERROR_INVALID_MODEL_ID
    assert err.value.message and "ACL_ERROR_INVALID_MODEL_ID" in str(err.value)
    # The function and the code are said once each; the library's reason once.
    text = str(err.value)
    assert text.count("aclprofModelSubscribe") == 1 and text.count("100011") == 1, text
    assert text.startswith("aclprofModelSubscribe failed with 100011 (ACL_ERROR_INVALID_MODEL_ID): ")
    assert err.value.message in text and not err.value.message.startswith("aclprofModelSubscribe")
    assert open_fds() == before
    with Model.simulate(TINY) as model, Subscription(model.id) as sub:
        with pytest.raises(RuntimeError):
            sub.start()


def test_callback_errors_are_raised_by_stop_and_the_pipe_is_drained():
    def fail(batch):
        raise ValueError("callback failed")

    with Model.simulate(RESNET50) as model:
        sub = Subscription(model.id, on_batch=fail, records_per_read=1)
        sub.start()
        model.execute(times=4)  # 500 records: more than the pipe holds, so they must be drained
        with pytest.raises(ValueError, match="callback failed"):
            sub.stop()
        assert not sub.active
        assert aclprof.stats().dropped == 0


def test_reported_ops_from_threads():
    with Model.register("my-runtime") as model, Subscription(model.id) as sub:
        together = threading.Barrier(3)  # alive at once: one stream each

        def work(k):
            for i in range(50):
                t0 = aclprof.now_ns()
                model.report_op(f"t{k}/op{i}", "MatMul", t0, t0 + 100)
            together.wait()

        threads = [threading.Thread(target=work, args=(k,)) for k in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        aclprof.flush()
    assert len(sub.records) == 150
    streams = {}
    for op in sub.records:
        streams.setdefault(op.name.split("/")[0], set()).add(op.stream_id)
    assert len(streams) == 3 and all(len(s) == 1 for s in streams.values())
    assert len(set.union(*streams.values())) == 3  # one stream per reporting thread
    with pytest.raises(TypeError):
        model.execute()
    stats = aclprof.stats()
    assert stats.reported == stats.delivered + stats.dropped


def test_registered_ops_arrive_as_named_ones():
    conv = aclprof.register_op("layer1/conv", "Conv2D")
    assert conv != 0 and aclprof.register_op("layer1/conv", "Conv2D") == conv
    with Model.register("reg") as model:
        with Subscription(model.id) as sub:
            aclprof.report_registered(model.id, conv, 100, 250)
            model.report_op("layer1/conv", "Conv2D", 300, 450)
            aclprof.flush()
        with pytest.raises(AclError) as err:
            aclprof.report_registered(model.id, conv + 12345, 1, 2)
        assert err.value.code == aclprof.ACL_ERROR_INVALID_PARAM
    got = [(op.name, op.type, op.start, op.end) for op in sub.records]
    assert got == [("layer1/conv", "Conv2D", 100, 250), ("layer1/conv", "Conv2D", 300, 450)]


def test_report_op_errors():
    with Model.register("m") as model:
        with pytest.raises(AclError) as err:
            model.report_op("op", "T", 200, 100)  # ends before it starts
        assert err.value.code == aclprof.ACL_ERROR_INVALID_PARAM
    with pytest.raises(AclError):
        Model.register("m", device=99)
    with pytest.raises(AclError) as err:
        Model.simulate("/nonexistent.json")
    assert err.value.code == aclprof.ACL_ERROR_INVALID_FILE


def test_profiler_as_context_manager(tmp_path):
    out = tmp_path / "prof"
    with Model.simulate(TINY) as model:
        with Profiler(out) as profiler:
            assert profiler.running
            assert file_mode_running(tmp_path)
            model.execute()
    assert not profiler.running
    assert not file_mode_running(tmp_path)
    assert out.is_dir()


def test_profiler_as_decorator_runs_each_call_in_a_session(tmp_path):
    states = []

    @Profiler(tmp_path / "prof", data_types=aclprof.ACL_PROF_ACL_API | aclprof.ACL_PROF_TASK_TIME)
    def step():
        states.append(file_mode_running(tmp_path))
        return "result"

    assert step() == "result"
    assert step() == "result"
    assert states == [True, True]
    assert not file_mode_running(tmp_path)


def test_profiler_start_stop_analyse(tmp_path):
    out = tmp_path / "prof"
    (out / "PROF_000001_20200101000000000_00000001ABCDEFGH").mkdir(parents=True)  # an old run
    profiler = Profiler(out, options={aclprof.ACL_PROF_SYS_HARDWARE_MEM_FREQ: "15"})
    with Model.simulate(TINY) as model:
        for _ in range(2):
            profiler.start()
            model.execute()
            profiler.stop()
    analysis = profiler.analyse()
    new = sorted(d for d in out.glob("PROF_*") if "20200101" not in d.name)
    assert analysis.result_dirs == new  # only this profiler's sessions
    with pytest.raises(RuntimeError):
        profiler.stop()


def test_analyze_agrees_with_op_statistic_and_analyse_prints_it(tmp_path, capsys):
    out = tmp_path / "prof"
    profiler = Profiler(out)
    with Model.simulate(RESNET50) as model:
        with profiler:
            model.execute(times=2)
    analysis = profiler.analyse(top=3)
    printed = capsys.readouterr().out
    (prof,) = analysis.result_dirs
    stat = {r["OP Type"]: r for r in analysis.op_statistic}
    rows = aclprof.analyze(prof, aggregate_by="type", top=0)
    assert rows.ops == 2 * len(model_ops(RESNET50)) == sum(int(r["Count"]) for r in stat.values())
    assert {r["Type"]: r["Count"] for r in rows} == {t: int(r["Count"]) for t, r in stat.items()}
    for r in rows:
        assert r["Sum(us)"] == pytest.approx(float(stat[r["Type"]]["Total Time(us)"]), abs=1e-3)
    # The printed summary: the directory, then the top 3 types, longest first.
    assert str(prof) in printed and printed.count("\n") >= 6
    top3 = [r["Type"] for r in rows[:3]]
    assert [line.split()[0] for line in printed.splitlines()[3:6]] == top3
    # Filters and single ops.
    conv = aclprof.analyze(out, type="Conv2D", top=2)
    assert len(conv) == 2 and {r["Type"] for r in conv} == {"Conv2D"}
    assert conv[0]["Duration(us)"] >= conv[1]["Duration(us)"]
    assert aclprof.analyze(prof, name="^nothing$").ops == 0
    with pytest.raises(AclError) as err:
        aclprof.analyze(prof, aggregate_by="colour")
    assert err.value.code == aclprof.ACL_ERROR_INVALID_PARAM and "aggregate_by" in str(err.value)
    with pytest.raises(AclError) as err:
        aclprof.analyze(tmp_path / "missing")
    assert err.value.code == aclprof.ACL_ERROR_INVALID_FILE
    # Bytes that are not records are an error, not an empty table.
    noise = tmp_path / "noise.bin"
    noise.write_bytes(bytes(range(256)) * 400)
    with pytest.raises(AclError) as err:
        aclprof.analyze(noise)
    assert err.value.code == aclprof.ACL_ERROR_INVALID_FILE and "no valid op record" in str(err.value)
    # Single ops carry their start, so that one op's executions can be told apart.
    starts = [r["Start(us)"] for r in aclprof.analyze(prof, type="Conv2D", top=0)]
    assert len(set(starts)) == len(starts) > 1
    try:
        import pandas  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="pip install pandas"):
            rows.to_dataframe()
    else:
        frame = rows.to_dataframe()
        assert list(frame["Type"]) == [r["Type"] for r in rows]


def test_profiler_errors_leave_file_mode_clean(tmp_path):
    with pytest.raises(AclError) as err:
        Profiler(tmp_path, devices=[99]).start()
    assert err.value.func == "aclprofCreateConfig"
    with pytest.raises(AclError) as err:
        Profiler(tmp_path, options={aclprof.ACL_PROF_ARGS_MAX: "1"}).start()
    assert err.value.code == aclprof.ACL_ERROR_INVALID_PARAM
    with Model.simulate(TINY) as model, Subscription(model.id):
        with pytest.raises(AclError) as err:
            Profiler(tmp_path).start()
        assert err.value.code == aclprof.ACL_ERROR_PROF_API_CONFLICT
    profiler = Profiler(tmp_path)
    profiler.start()
    with pytest.raises(RuntimeError):
        profiler.start()
    profiler.stop()


def test_analysis_reads_exported_tables(tmp_path):
    out = tmp_path / "PROF_000001_20260101000000000_00000001ABCDEFGH" / "mindstudio_profiler_output"
    out.mkdir(parents=True)
    (out / "op_summary_20260101000000.csv").write_text(
        "Device_id,Op Name,OP Type,Task Duration(us)\n0,conv,Conv2D,12.5\n0,relu,Relu,1.0\n"
    )
    (out / "op_summary_notes.csv").write_text("not,a,table\n")  # not <table>_<timestamp>.csv
    (out / "op_statistic_20260101000000.csv").write_text("OP Type,Count\nConv2D,1\nRelu,1\n")
    analysis = Analysis([out.parent])
    assert [r["Op Name"] for r in analysis.op_summary] == ["conv", "relu"]
    assert analysis.op_summary[0]["Task Duration(us)"] == "12.5"
    assert [r["OP Type"] for r in analysis.op_statistic] == ["Conv2D", "Relu"]
    assert analysis.table("task_time") == []


def test_diff_finds_the_type_made_twice_as_slow(tmp_path):
    import json

    slow = json.loads(RESNET50.read_text())
    for op in slow["ops"]:
        if op["type"] == "Conv2D":
            op["duration_us"] *= 2
    slow_path = tmp_path / "slow.json"
    slow_path.write_text(json.dumps(slow))
    runs = {}
    for name, model_path in [("base", RESNET50), ("new", slow_path)]:
        with Model.simulate(model_path) as model, Profiler(tmp_path / name):
            model.execute(times=2)
        runs[name] = tmp_path / name
    rows = aclprof.diff(runs["base"], runs["new"], fail_above=50)
    assert (rows.base, rows.new) == ("base", "new")
    types = rows.section("type")
    conv = types[0]
    assert conv["Name"] == "Conv2D" and conv["Ratio"] == pytest.approx(2.0)
    assert conv["New(us)"] - conv["Base(us)"] == pytest.approx(conv["Diff(us)"])
    assert all(r["Ratio"] == pytest.approx(1.0) for r in types[1:])
    overall = {r["Name"]: r for r in rows.section("overall")}
    assert list(overall)[0] == "E2E time"
    # Conv2D is most of the computing time: computing is more than 50 % slower too. (End to
    # end also holds the host's time between the executions, which a loaded machine
    # stretches: it is a regression here only as a rule, not on every machine.)
    assert overall["Computing time"]["Ratio"] > 1.5
    regressed = [r.split(":")[0] for r in rows.regressions]
    assert "type Conv2D" in regressed
    assert set(regressed) <= {"overall E2E time", "type Conv2D"}
    assert aclprof.diff(runs["base"], runs["base"], fail_above=0).regressions == []
    assert len(aclprof.diff(runs["base"], runs["new"], top=2).section("op")) == 2
    with pytest.raises(AclError) as err:
        aclprof.diff(runs["base"], tmp_path / "missing")
    assert err.value.code == aclprof.ACL_ERROR_INVALID_FILE
    with pytest.raises(AclError) as err:  # the process's standard input is not a run
        aclprof.diff("-", runs["base"])
    assert err.value.code == aclprof.ACL_ERROR_INVALID_PARAM and "standard input" in str(err.value)
    try:
        import pandas  # noqa: F401
    except ImportError:
        return
    frame = rows.to_dataframe()
    assert list(frame["Name"]) == [r["Name"] for r in rows]
