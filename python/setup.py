"""Builds the aclprof shared library from source and bundles it into the package.

``pip install ./python`` (and building the sdist or a wheel) compiles the Rust crate with
setuptools-rust, which runs cargo on ``native/Cargo.toml`` (links to the repository's
crate; real files in an sdist), and puts ``libaclprof.so`` into ``aclprof/_native/``,
where the package looks first. The library is a plain C library loaded through ctypes,
not a CPython extension, so the wheel is tagged ``py3-none-<platform>``: one wheel serves
every Python version. An editable install (``pip install -e``) bundles nothing; the
package then finds the library in the repository's ``target/`` directory at import time.

The ``aclprof`` command line is built too and installed as a script, so ``pip install``
puts ``aclprof`` on PATH.

Built from a checkout (``native/`` links into the repository), pip runs the checkout's own
``cargo build --release`` in its ``target/`` directory (or ``CARGO_TARGET_DIR``): cargo
rebuilds nothing when the checkout has already built unchanged sources. ``CARGO`` or
``CARGO_BUILD_TARGET`` in the environment (``scripts/wheel``), or an sdist, build with
setuptools-rust as usual.

For a wheel that runs on older Linux systems than the build machine, build with
cargo-zigbuild against an older glibc (see the repository's ``scripts/wheel``).
"""

import os
import subprocess
from pathlib import Path
from typing import Any, List, Optional, Tuple

from setuptools import setup
from setuptools.command.bdist_wheel import bdist_wheel
from setuptools_rust import Binding, RustBin, RustExtension, Strip
from setuptools_rust.build import build_rust

LIBRARY = "libaclprof.so"
COMMAND = "aclprof"


def checkout() -> Optional[Path]:
    """The repository this package is built from, if pip builds from a checkout and nothing
    asks for another toolchain or target."""
    src = Path(__file__).resolve().parent / "native" / "src"
    if not src.is_symlink() or os.environ.get("CARGO") or os.environ.get("CARGO_BUILD_TARGET"):
        return None
    return src.resolve().parent


class BuildLibrary(build_rust):
    """setuptools-rust names a no-binding library like a CPython extension
    (``libaclprof.cpython-311-x86_64-linux-gnu.so``); it is not one, so keep its name."""

    def get_dylib_ext_path(self, ext: RustExtension, target_fname: str) -> str:
        path = Path(super().get_dylib_ext_path(ext, target_fname))
        return str(path.with_name(LIBRARY))

    def build_extension(self, ext: RustExtension, *args: Any) -> Tuple[List[Any], Optional[Path]]:
        root = checkout()
        if root is None:
            return super().build_extension(ext, *args)
        target = Path(os.environ.get("CARGO_TARGET_DIR") or root / "target")
        # The checkout's own build command, the same for the library and the command line
        # (both crates: building one crate alone would resolve shared dependencies' features
        # differently and rebuild the library), so that cargo finds what the checkout built
        # and rebuilds only what changed.
        subprocess.run(
            ["cargo", "build", "--release", "--manifest-path", str(root / "Cargo.toml"),
             "--target-dir", str(target)],
            check=True,
        )
        built = target / "release" / (COMMAND if isinstance(ext, RustBin) else LIBRARY)
        return [(ext.name, str(built))], None


class PlatformWheel(bdist_wheel):
    def finalize_options(self) -> None:
        super().finalize_options()
        self.root_is_pure = False

    def get_tag(self) -> tuple:
        _, _, platform = super().get_tag()
        return "py3", "none", platform


setup(
    rust_extensions=[
        RustExtension(
            "aclprof._native.libaclprof",
            path="native/Cargo.toml",
            binding=Binding.NoBinding,
            # The library's crate only (the workspace's other crate is the command line).
            args=["-p", "aclprof"],
            # Debug info would triple the wheel; what is left keeps symbol names for
            # backtraces and profilers.
            strip=Strip.Debug,
        ),
        # The command line, installed as a script: `aclprof` on PATH.
        RustBin(COMMAND, path="native/cli/Cargo.toml", strip=Strip.Debug),
    ],
    cmdclass={"build_rust": BuildLibrary, "bdist_wheel": PlatformWheel},
    zip_safe=False,
)
