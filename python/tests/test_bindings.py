"""The ctypes bindings are generated from the committed headers and cannot drift; the shared
library is found without the user setting a path."""

from __future__ import annotations

import ctypes
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import aclprof
from aclprof import _bindings, _lib
from conftest import REPO

GENERATOR = REPO / "python" / "tools" / "gen_bindings.py"
COMMITTED = REPO / "python" / "aclprof" / "_bindings.py"
HEADERS = REPO / "include" / "acl"


@pytest.fixture(scope="module")
def gen():
    spec = importlib.util.spec_from_file_location("gen_bindings", GENERATOR)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_committed_bindings_match_the_headers(gen):
    assert gen.render(HEADERS) == COMMITTED.read_text(), (
        "python/aclprof/_bindings.py is out of date: run python3 python/tools/gen_bindings.py"
    )


def test_imported_bindings_are_the_committed_ones():
    assert Path(_bindings.__file__).read_text() == COMMITTED.read_text(), (
        "the installed package is stale: reinstall it (pip install ./python)"
    )


def test_every_declared_function_is_bound():
    declared = set()
    for header in HEADERS.glob("*.h"):
        text = re.sub(r"/\*.*?\*/", "", header.read_text(), flags=re.S)
        declared |= set(re.findall(r"\b(acl\w+)\s*\(", text))
    assert declared == set(_bindings.FUNCTIONS)
    lib = aclprof.load()
    for name, (restype, argtypes) in _bindings.FUNCTIONS.items():
        fn = getattr(lib, name)
        fn = getattr(fn, "__wrapped__", fn)  # behind the integer range check, if any
        assert fn.restype is restype and fn.argtypes == argtypes, name


@pytest.mark.parametrize("value", [2**64 + 1000, -5000, 2**64])
def test_out_of_range_integers_are_refused_naming_the_parameter(value):
    """ctypes wraps integers silently (2**64 + 1000 would become 1000): refused instead."""
    model = aclprof.Model.register("ranges")
    try:
        with pytest.raises(OverflowError, match="startNs"):
            model.report_op("op", "Add", value, 10)
        with pytest.raises(OverflowError, match="endNs"):
            model.report_op("op", "Add", 0, value)
        with pytest.raises(OverflowError, match="modelId"):
            aclprof.runtime.report_op(value, "op", "Add", 0, 10)
        model.report_op("op", "Add", 0, 2**64 - 1)  # the largest value is fine
    finally:
        model.unload()


def test_out_of_range_integers_through_pyacl_are_error_codes_never_wrapped():
    """pyACL's convention is a return code: out of range is ACL_ERROR_INVALID_PARAM (or 0
    for a time), never the call made on a wrapped value (2**32 + 5 is not model 5)."""
    import acl

    model = aclprof.Model.register("pyacl-ranges")
    try:
        assert model.id < 2**32
        assert acl.prof.model_un_subscribe(2**32 + model.id) == _bindings.ACL_ERROR_INVALID_PARAM
        assert acl.prof.model_un_subscribe(-1) == _bindings.ACL_ERROR_INVALID_PARAM
        assert acl.prof.get_op_start(0, 512, 2**32 + 1) == 0
    finally:
        model.unload()


def test_types_follow_the_declarations():
    f = _bindings.FUNCTIONS
    assert f["aclprofGetOpStart"] == (ctypes.c_uint64, [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_uint32])
    assert f["aclprofCreateSubscribeConfig"][1][0] is ctypes.c_int8
    assert f["aclprofGetOpName"][1][3] == ctypes.POINTER(ctypes.c_char)  # an output buffer
    assert f["aclprofInit"][1][0] is ctypes.c_char_p  # an input string
    assert f["aclprofDestroyStamp"][0] is None
    assert _bindings.ACL_PROF_API_STATS == 0x400000000
    assert _bindings.ACL_SUBSCRIBE_NONE == 0xFF
    assert [name for name, _ in _bindings.aclprofExtStats._fields_] == [
        "recordsReported", "recordsDelivered", "recordsDropped", "bytesWritten"]
    # The emulated runtime: a pointer to a handle typedef is an out-parameter for a handle;
    # an enum is passed as an int, and a pointer to one is a pointer to an int.
    assert f["aclrtCreateContext"] == (
        ctypes.c_int, [ctypes.POINTER(ctypes.c_void_p), ctypes.c_int32])
    assert f["aclrtCreateStream"][1] == [ctypes.POINTER(ctypes.c_void_p)]
    assert f["aclrtMalloc"][1] == [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t, ctypes.c_int]
    assert f["aclrtGetRunMode"][1] == [ctypes.POINTER(ctypes.c_int)]
    assert f["aclmdlCreateDataset"] == (ctypes.c_void_p, [])
    assert f["aclmdlGetInputSizeByIndex"] == (ctypes.c_size_t, [ctypes.c_void_p, ctypes.c_size_t])
    assert f["aclInit"] == (ctypes.c_int, [ctypes.c_char_p])
    assert _bindings.ACL_ERROR_RT_CONTEXT_NULL == 107002
    assert _bindings.ACL_MEMCPY_DEVICE_TO_HOST == 2


def test_the_typed_library_is_the_bound_one():
    lib = aclprof.load()
    assert _bindings.typed(lib) is lib
    assert set(_bindings.FUNCTIONS) <= set(vars(_bindings.Library))  # every function declared
    with pytest.raises(TypeError, match="not bound"):
        _bindings.typed(ctypes.CDLL(None))  # this process, never passed to bind()


def test_generator_refuses_what_it_does_not_understand(gen, tmp_path):
    for header in gen.HEADERS:
        (tmp_path / header).write_text((HEADERS / header).read_text())
    with open(tmp_path / "acl_prof_ext.h", "a") as f:
        f.write("\nMSVP_PROF_API aclError aclprofExtNew(struct timespec *ts);\n")
    with pytest.raises(gen.HeaderError, match="timespec"):
        gen.render(tmp_path)


def touch(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"")
    return path


def test_library_search_order(tmp_path):
    package = tmp_path / "repo" / "python" / "aclprof"
    package.mkdir(parents=True)
    env = {}
    with pytest.raises(_lib.LibraryNotFound, match="cargo build --release"):
        _lib.find_library(env, package)
    debug = touch(tmp_path / "repo" / "target" / "debug" / "libaclprof.so")
    assert _lib.find_library(env, package) == debug
    release = touch(tmp_path / "repo" / "target" / "release" / "libaclprof.so")
    assert _lib.find_library(env, package) == release
    custom = touch(tmp_path / "custom-target" / "release" / "libaclprof.so")
    assert _lib.find_library({"CARGO_TARGET_DIR": str(custom.parent.parent)}, package) == custom
    bundled = touch(package / "_native" / "libaclprof.so")
    assert _lib.find_library(env, package) == bundled
    explicit = touch(tmp_path / "elsewhere.so")
    assert _lib.find_library({"ACLPROF_LIB": str(explicit)}, package) == explicit
    with pytest.raises(_lib.LibraryNotFound, match="ACLPROF_LIB"):
        _lib.find_library({"ACLPROF_LIB": str(tmp_path / "missing.so")}, package)


def test_the_library_is_found_without_configuration():
    path = Path(aclprof.load().path)
    assert path == _lib.find_library()
    if _lib.PACKAGE_DIR != (REPO / "python" / "aclprof").resolve():
        assert path == _lib.BUNDLED  # an installed package uses the copy pip bundled


def test_a_library_missing_declared_functions_is_refused():
    """Point ACLPROF_LIB at a library that is not aclprof (this process's libc)."""
    maps = Path("/proc/self/maps").read_text().split()
    libc = next(p for p in maps if re.search(r"/libc[.-][^/]*so", p))
    proc = subprocess.run(
        [sys.executable, "-c", "import aclprof; aclprof.load()"],
        env=dict(os.environ, ACLPROF_LIB=libc),
        capture_output=True, text=True, timeout=60,
    )
    assert proc.returncode != 0
    missing = re.search(
        r"does not export ((?:acl\w+, )*acl\w+), which the headers declare", proc.stderr)
    assert missing, proc.stderr
    assert set(missing.group(1).split(", ")) == set(_bindings.FUNCTIONS)
    assert "rebuild it" in proc.stderr
