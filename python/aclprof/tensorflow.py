"""TensorFlow's Ascend adapter profiling switches (npu_bridge for TF1, npu_device for TF2),
driving aclprof; TensorFlow itself is not needed. A script changes its import only::

    from aclprof.tensorflow import NPURunConfig, ProfilingConfig      # was npu_bridge.estimator.npu.npu_config
    config = NPURunConfig(profiling_config=ProfilingConfig(
        enable_profiling=True,
        profiling_options='{"output": "./prof", "task_trace": "on", "training_trace": "on"}'))

    import aclprof.tensorflow as npu_device                           # was: import npu_device
    npu_device.global_options().profiling_config.enable_profiling = True
    npu = npu_device.open().as_default()

``profiling_options`` is the JSON of ``PROFILING_OPTIONS``, checked by the library's own parser
(``aclprofExtOptionsCheck``): bad JSON, an unknown key or a switch that is not "on"/"off"
raise ``ValueError`` naming it. Profiling enabled with no options uses npu_bridge's defaults
(:data:`DEFAULT_OPTIONS`, results in the working directory). While profiling runs, every model
in the process is profiled, as ``PROFILING_MODE=true`` would; the result directory is written
when profiling stops (:meth:`NPURunConfig.stop_profiling`, :meth:`NpuDevice.close`) or at exit.
"""

from __future__ import annotations

import json
import os
from types import TracebackType
from typing import Any, Dict, Optional, Type

from . import _common
from ._lib import load, recent_error
from .errors import AclError

__all__ = ["DEFAULT_OPTIONS", "NPURunConfig", "NpuDevice", "ProfilingConfig", "global_options",
           "open", "resolve_options"]

#: What npu_bridge profiles when profiling is enabled without options ("output" is added:
#: the working directory at the time profiling starts).
DEFAULT_OPTIONS: Dict[str, str] = {
    "training_trace": "on",
    "task_trace": "on",
    "hccl": "on",
    "aicpu": "on",
    "aic_metrics": "PipeUtilization",
}


def resolve_options(profiling_options: Optional[str]) -> str:
    """The ``PROFILING_OPTIONS`` JSON profiling starts with: ``profiling_options``, or
    npu_bridge's defaults when it is empty, with "output" set to the working directory when
    absent. Raises ``ValueError`` with the library's reason when it is not valid."""
    if profiling_options is not None and not isinstance(profiling_options, str):
        raise ValueError(f"profiling_options must be a JSON string, not "
                         f"{type(profiling_options).__name__}")
    if not profiling_options or not profiling_options.strip():
        options: Dict[str, Any] = dict(DEFAULT_OPTIONS)
    else:
        try:
            options = json.loads(profiling_options)
        except ValueError as e:
            raise ValueError(f"profiling_options is not JSON: {e}") from None
        if not isinstance(options, dict):
            raise ValueError("profiling_options is not a JSON object")
    if not options.get("output"):
        options["output"] = os.getcwd()
    text = json.dumps(options)
    if load().aclprofExtOptionsCheck(text.encode()) != 0:
        raise ValueError(recent_error())
    return text


def _start(profiling_options: Optional[str]) -> None:
    text = resolve_options(profiling_options)
    ret = load().aclprofExtOptionsStart(text.encode())
    if ret != 0:
        raise AclError("aclprofExtOptionsStart", ret, recent_error())


def _stop() -> None:
    ret = load().aclprofExtOptionsStop()
    if ret != 0:
        raise AclError("aclprofExtOptionsStop", ret, recent_error())


class ProfilingConfig:
    """npu_bridge's ``ProfilingConfig``: whether to profile, and the options (checked here,
    so a mistake shows where it is made)."""

    def __init__(self, enable_profiling: bool = False, profiling_options: Optional[str] = None):
        if not isinstance(enable_profiling, bool):
            raise ValueError(f"enable_profiling must be a bool, not {enable_profiling!r}")
        self._enable_profiling = enable_profiling
        self._profiling_options = profiling_options
        if enable_profiling:
            resolve_options(profiling_options)

    @property
    def enable_profiling(self) -> bool:
        return self._enable_profiling

    @property
    def profiling_options(self) -> Optional[str]:
        return self._profiling_options


class NPURunConfig:
    """A holder for npu_bridge's ``NPURunConfig`` arguments: ``profiling_config`` is used,
    the other keyword arguments are kept (:attr:`kwargs`) and ignored. Where an
    ``NPUEstimator`` would open its session, call :meth:`start_profiling` (or use the config
    as a ``with`` block)."""

    def __init__(self, profiling_config: Optional[ProfilingConfig] = None, **kwargs: Any):
        if profiling_config is not None and not isinstance(profiling_config, ProfilingConfig):
            raise ValueError("profiling_config must be a ProfilingConfig")
        self._profiling_config = profiling_config
        self.kwargs = kwargs
        self._profiling = False

    @property
    def profiling_config(self) -> Optional[ProfilingConfig]:
        return self._profiling_config

    def start_profiling(self) -> bool:
        """Starts profiling if the config enables it; returns whether it did."""
        pc = self._profiling_config
        if pc is None or not pc.enable_profiling or self._profiling:
            return False
        _start(pc.profiling_options)
        self._profiling = True
        return True

    def stop_profiling(self) -> None:
        """Stops what :meth:`start_profiling` started and writes the result directory."""
        if self._profiling:
            self._profiling = False
            _stop()

    def __enter__(self) -> "NPURunConfig":
        self.start_profiling()
        return self

    def __exit__(self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        _common.exit_cleanup(self.stop_profiling, exc_type)


class _ProfilingOptions:
    """``global_options().profiling_config``: set before :func:`open`, as npu_device's
    ``NpuProfilingConfig`` (a non-bool ``enable_profiling`` is a ``TypeError``, an unknown
    option a ``ValueError``; ``profiling_options`` is checked when :func:`open` uses it)."""

    _OPTIONS = ("enable_profiling", "profiling_options")

    def __init__(self) -> None:
        self._enable = False
        self.profiling_options: Optional[str] = None

    @property
    def enable_profiling(self) -> bool:
        return self._enable

    @enable_profiling.setter
    def enable_profiling(self, value: bool) -> None:
        if not isinstance(value, bool):
            raise TypeError(f"Expected bool, got {type(value).__name__}")
        self._enable = value

    def __setattr__(self, name: str, value: Any) -> None:
        if not name.startswith("_") and name not in self._OPTIONS:
            raise ValueError(f"NpuProfilingConfig has no option {name}")
        super().__setattr__(name, value)


class GlobalOptions:
    """npu_device's global options; only ``profiling_config`` means anything here."""

    def __init__(self) -> None:
        self.profiling_config = _ProfilingOptions()


_GLOBAL = GlobalOptions()
_DEVICES: Dict[int, "NpuDevice"] = {}


def global_options() -> GlobalOptions:
    """The process's options, read by :func:`open`."""
    return _GLOBAL


class NpuDevice:
    """What :func:`open` returns: ``as_default()`` returns it; :meth:`close` stops profiling
    and writes the result directory (also done at process exit)."""

    def __init__(self, device_id: int, profiling: bool):
        self.device_id = device_id
        self.profiling = profiling

    def as_default(self) -> "NpuDevice":
        return self

    def close(self) -> None:
        _DEVICES.pop(self.device_id, None)
        if self.profiling:
            self.profiling = False
            _stop()


def open(device_id: Optional[int] = None) -> NpuDevice:  # noqa: A001 - npu_device's name
    """npu_device's ``open``: applies :func:`global_options` (starts profiling when enabled)
    and returns the device handle; the device defaults to ``$ASCEND_DEVICE_ID``, else 0.
    Opening a device again returns the same handle."""
    dev = int(os.environ.get("ASCEND_DEVICE_ID", "0") or 0) if device_id is None else device_id
    if dev in _DEVICES:
        return _DEVICES[dev]
    pc = _GLOBAL.profiling_config
    profiling = False
    if pc.enable_profiling:
        _start(pc.profiling_options)
        profiling = True
    handle = _DEVICES[dev] = NpuDevice(dev, profiling)
    return handle
