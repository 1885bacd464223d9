"""Builds the aclprof shared library from source and bundles it into the package.

``pip install ./python`` (and building the sdist or a wheel) compiles the Rust crate with
setuptools-rust, which runs cargo on ``native/Cargo.toml`` (links to the repository's
crate; real files in an sdist), and puts ``libaclprof.so`` into ``aclprof/_native/``,
where the package looks first. The library is a plain C library loaded through ctypes,
not a CPython extension, so the wheel is tagged ``py3-none-<platform>``: one wheel serves
every Python version. An editable install (``pip install -e``) bundles nothing; the
package then finds the library in the repository's ``target/`` directory at import time.

For a wheel that runs on older Linux systems than the build machine, build with
cargo-zigbuild against an older glibc (see the repository's ``scripts/wheel``).
"""

from pathlib import Path

from setuptools import setup
from setuptools.command.bdist_wheel import bdist_wheel
from setuptools_rust import Binding, RustExtension, Strip
from setuptools_rust.build import build_rust

LIBRARY = "libaclprof.so"


class BuildLibrary(build_rust):
    """setuptools-rust names a no-binding library like a CPython extension
    (``libaclprof.cpython-311-x86_64-linux-gnu.so``); it is not one, so keep its name."""

    def get_dylib_ext_path(self, ext: RustExtension, target_fname: str) -> str:
        path = Path(super().get_dylib_ext_path(ext, target_fname))
        return str(path.with_name(LIBRARY))


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
            # The library only: the `aclprof` command line's argument parser stays out.
            args=["--no-default-features"],
            # Debug info would triple the wheel; what is left keeps symbol names for
            # backtraces and profilers.
            strip=Strip.Debug,
        )
    ],
    cmdclass={"build_rust": BuildLibrary, "bdist_wheel": PlatformWheel},
    zip_safe=False,
)
