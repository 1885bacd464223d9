"""The bridges' tests: real PyTorch and ONNX Runtime models (scripts/test-bridges installs
them). Result directories are kept under $ACLPROF_BRIDGES_OUT (default: a temporary
directory) so that scripts/test-bridges can hand them to tools/check_filemode.py."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def out_root() -> Path:
    root = os.environ.get("ACLPROF_BRIDGES_OUT")
    path = Path(root) if root else Path(tempfile.mkdtemp(prefix="aclprof-bridges-"))
    path.mkdir(parents=True, exist_ok=True)
    return path
