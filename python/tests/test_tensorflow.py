"""aclprof.tensorflow: npu_bridge's ProfilingConfig/NPURunConfig and npu_device's
global_options()/open(), scripts written for them with only the import changed."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import pytest

import aclprof
import aclprof.tensorflow
from aclprof.tensorflow import NPURunConfig, ProfilingConfig

from conftest import TINY, model_ops


def run_tiny(times: int = 2) -> int:
    with aclprof.Model.simulate(TINY) as model:
        model.execute(times)
    return times * len(model_ops(TINY))


def result_dir(root: Path) -> Path:
    (found,) = [d for d in root.glob("PROF_*") if d.is_dir()]
    return found


def op_summary_rows(prof: Path) -> int:
    (f,) = (prof / "mindstudio_profiler_output").glob("op_summary_*.csv")
    return len(f.read_text().splitlines()) - 1


def test_npu_run_config_profiles_with_the_given_options(tmp_path: Path) -> None:
    # As in npu_bridge's documentation, the output directory and the switches:
    profiling_options = json.dumps({"output": str(tmp_path), "task_trace": "on",
                                    "training_trace": "on", "fp_point": "", "bp_point": ""})
    config = NPURunConfig(
        profiling_config=ProfilingConfig(enable_profiling=True, profiling_options=profiling_options),
        model_dir="/tmp/model", save_checkpoints_steps=100)
    assert config.profiling_config is not None and config.profiling_config.enable_profiling
    assert config.kwargs["save_checkpoints_steps"] == 100
    with config:
        ops = run_tiny()
    assert op_summary_rows(result_dir(tmp_path)) == ops


def test_host_sys_options_sample_the_host(tmp_path: Path) -> None:
    """npu_bridge's host_sys, host_sys_usage and their frequency are CANN's aclprofSetConfig
    values: the host is sampled into CANN's files; a bad item is refused, naming the key."""
    profiling_options = json.dumps({"output": str(tmp_path), "task_trace": "on",
                                    "host_sys": "cpu,mem", "host_sys_usage": "cpu,mem",
                                    "host_sys_usage_freq": "50"})
    with NPURunConfig(profiling_config=ProfilingConfig(enable_profiling=True,
                                                       profiling_options=profiling_options)):
        run_tiny()
    out = result_dir(tmp_path) / "mindstudio_profiler_output"
    for table in ("host_cpu_usage", "host_mem_usage", "cpu_usage", "sys_mem", "process_mem"):
        assert list(out.glob(f"{table}_*.csv")), table
    bad = json.dumps({"output": str(tmp_path), "host_sys": "cpu,gpu"})
    with pytest.raises(ValueError, match="host_sys"):
        ProfilingConfig(enable_profiling=True, profiling_options=bad)


def test_disabled_config_profiles_nothing(tmp_path: Path) -> None:
    config = NPURunConfig(profiling_config=ProfilingConfig())
    assert config.start_profiling() is False
    run_tiny(1)
    config.stop_profiling()
    assert aclprof.load().aclprofFinalize() == aclprof.ACL_ERROR_PROF_NOT_RUN


def test_defaults_when_enabled_without_options(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    options = json.loads(aclprof.tensorflow.resolve_options(None))
    assert options == {"training_trace": "on", "task_trace": "on", "hccl": "on", "aicpu": "on",
                       "aic_metrics": "PipeUtilization", "output": str(tmp_path)}
    with NPURunConfig(profiling_config=ProfilingConfig(enable_profiling=True)):
        ops = run_tiny()
    assert op_summary_rows(result_dir(tmp_path)) == ops  # saved in the working directory


@pytest.mark.parametrize("options, named", [
    ('{"output": "/tmp/x", "task_trace": "on"', "not JSON"),
    ('{"output": "/tmp/x", "trainig_trace": "on"}', '"trainig_trace"'),
    ('{"output": "/tmp/x", "aicpu": "yes"}', '"aicpu" must be "on" or "off"'),
    ('{"output": "/tmp/x", "aic_metrics": "Pipe"}', '"Pipe" is not a metric name'),
    ('["task_trace"]', "not a JSON object"),
])
def test_bad_options_raise_value_error_naming_them(options: str, named: str) -> None:
    with pytest.raises(ValueError, match=named.replace("(", r"\(")):
        ProfilingConfig(enable_profiling=True, profiling_options=options)
    # Not enabled: stored as given, as npu_bridge does, and never used.
    assert ProfilingConfig(profiling_options=options).profiling_options == options


def test_npu_device_open_applies_global_options(tmp_path: Path) -> None:
    npu_device = aclprof.tensorflow
    npu_device.global_options().profiling_config.enable_profiling = True
    npu_device.global_options().profiling_config.profiling_options = json.dumps(
        {"output": str(tmp_path), "task_trace": "on"})
    try:
        npu = npu_device.open().as_default()
        assert npu_device.open() is npu
        ops = run_tiny()
        # Profiling is process-wide while the device is open, like PROFILING_MODE.
        assert aclprof.load().aclprofInit(b"/tmp", 4) == aclprof.ACL_ERROR_PROF_ALREADY_RUN
    finally:
        npu_device.global_options().profiling_config.enable_profiling = False
        npu_device.open().close()
    assert op_summary_rows(result_dir(tmp_path)) == ops


def test_npu_device_option_checks() -> None:
    pc = aclprof.tensorflow.global_options().profiling_config
    with pytest.raises(TypeError, match="Expected bool, got str"):
        pc.enable_profiling = "on"  # type: ignore[assignment]
    with pytest.raises(ValueError, match="NpuProfilingConfig has no option enable_profilling"):
        pc.enable_profilling = True  # type: ignore[attr-defined]
    # As in npu_device, profiling_options takes any value; open() checks it.
    pc.profiling_options = '{"output": "/tmp/x", "trainig_trace": "on"}'
    pc.enable_profiling = True
    try:
        with pytest.raises(ValueError, match='"trainig_trace"'):
            aclprof.tensorflow.open(5)
        assert aclprof.load().aclprofFinalize() == aclprof.ACL_ERROR_PROF_NOT_RUN
    finally:
        pc.enable_profiling = False
        pc.profiling_options = None


def test_starting_twice_is_refused(tmp_path: Path) -> None:
    options = json.dumps({"output": str(tmp_path)})
    first = NPURunConfig(profiling_config=ProfilingConfig(True, options))
    second = NPURunConfig(profiling_config=ProfilingConfig(True, options))
    with first:
        with pytest.raises(aclprof.AclError) as e:
            second.start_profiling()
        assert e.value.code == aclprof.ACL_ERROR_PROF_ALREADY_RUN
    assert os.path.isdir(result_dir(tmp_path))


def test_a_failing_stop_does_not_mask_the_blocks_error(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    options = json.dumps({"output": str(tmp_path)})
    config = NPURunConfig(profiling_config=ProfilingConfig(True, options))
    with caplog.at_level(logging.WARNING, logger="aclprof"):
        with pytest.raises(KeyError, match="the block's error"):
            with config:
                aclprof.tensorflow._stop()  # so that leaving the block fails to stop it
                raise KeyError("the block's error")
    assert "NPURunConfig.stop_profiling failed while KeyError was propagating" in caplog.text
    assert "ACL_ERROR_PROF_NOT_RUN" in caplog.text
    with pytest.raises(aclprof.AclError):  # without an exception in flight, it raises
        with config:
            aclprof.tensorflow._stop()
