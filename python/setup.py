"""Bundles the aclprof shared library into the package at build time.

``pip install ./python`` copies ``libaclprof.so`` from ``$ACLPROF_LIB`` or the repository's
``target/release`` (build it first with ``cargo build --release``) into
``aclprof/_native/``, where the package looks first. The wheel is therefore tagged for this
platform (``py3-none-<platform>``): it holds native code but no CPython extension.
An editable install (``pip install -e``) bundles nothing; the package then finds the
library in the repository's ``target/`` directory at import time.
"""

import os
import shutil
import sysconfig
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.bdist_wheel import bdist_wheel

HERE = Path(__file__).resolve().parent
LIBRARY = "libaclprof.so"


def built_library() -> Path:
    explicit = os.environ.get("ACLPROF_LIB")
    target = Path(os.environ.get("CARGO_TARGET_DIR") or HERE.parent / "target")
    path = Path(explicit) if explicit else target / "release" / LIBRARY
    if not path.is_file():
        raise SystemExit(
            f"aclprof: {path} not found. Build the library first: "
            f"(cd {HERE.parent} && cargo build --release), or set ACLPROF_LIB to it."
        )
    return path


class BuildWithLibrary(build_py):
    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return
        dest = Path(self.build_lib) / "aclprof" / "_native"
        dest.mkdir(parents=True, exist_ok=True)
        shutil.copy2(built_library(), dest / LIBRARY)


class PlatformWheel(bdist_wheel):
    def finalize_options(self):
        super().finalize_options()
        self.root_is_pure = False

    def get_tag(self):
        return "py3", "none", sysconfig.get_platform().replace("-", "_").replace(".", "_")


setup(cmdclass={"build_py": BuildWithLibrary, "bdist_wheel": PlatformWheel})
