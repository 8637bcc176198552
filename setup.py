"""Builds the C++ extension ``exactplace._native`` from ``dp_native/`` with pybind11.

It also maps the top-level folder ``formulations/`` to the package ``exactplace.formulations``:
the models live in their own folder, but install under exactplace's name (a distribution
called ``formulations`` already exists on the package index). Everything else (metadata,
dependencies) lives in pyproject.toml.
"""

import os
import sys

from pybind11.setup_helpers import Pybind11Extension, build_ext
from setuptools import find_packages, setup

# Warnings are errors in CI (CI=true) so new C++ warnings cannot slip in.
strict = ["-Werror"] if os.environ.get("CI") else []
compile_args = ["-O3", "-Wall", "-Wextra", *strict] if sys.platform != "win32" else ["/O2"]

native = Pybind11Extension(
    "exactplace._native",
    sorted(os.path.join("dp_native", f) for f in os.listdir("dp_native") if f.endswith(".cpp")),
    include_dirs=["dp_native"],
    cxx_std=17,
    extra_compile_args=compile_args,
)

setup(
    packages=[*find_packages(include=["exactplace", "exactplace.*"]), "exactplace.formulations"],
    package_dir={"exactplace.formulations": "formulations"},
    ext_modules=[native],
    cmdclass={"build_ext": build_ext},
)
