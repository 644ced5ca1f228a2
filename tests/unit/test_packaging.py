"""What a normal (not editable) install gets: the built wheel holds every module and subpackage
of autotune, the bundled experiments and the bundled search spaces, and the command; and every
package autotune imports is one pyproject.toml declares.

The wheel is built from a copy of pyproject.toml, README.md, autotune/ and search_spaces/ (the
bundled spaces, shipped as ``autotune/bundled/spaces/``) in a temporary folder
(setuptools writes build/ and *.egg-info beside the sources, and packs whatever a stale build/lib
holds), without build isolation, so nothing is downloaded. It skips only when the installed
setuptools cannot build this project (missing, or older than the SPDX ``license`` string needs).
"""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
import zipfile
from importlib import metadata
from pathlib import Path

import pytest

import autotune
from autotune.bundled import EXPERIMENTS, space_names

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

PACKAGE = Path(autotune.__file__).resolve().parent
ROOT = PACKAGE.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
#: The setuptools that the build-system table asks for (the SPDX license string needs it).
SETUPTOOLS_MIN = "77"


def _package_files() -> set[str]:
    """The files under autotune/ a wheel must hold (Python modules and package data), as
    wheel paths such as ``autotune/views/report/page.py``."""
    return {
        path.relative_to(ROOT).as_posix()
        for path in PACKAGE.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts and path.suffix in {".py", ".toml"}
    }


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> zipfile.ZipFile:
    pytest.importorskip("setuptools", minversion=SETUPTOOLS_MIN)
    source = tmp_path_factory.mktemp("source")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, source / name)
    shutil.copytree(PACKAGE, source / "autotune", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "search_spaces", source / "search_spaces")
    out = tmp_path_factory.mktemp("wheel")
    build = (
        "import sys, setuptools.build_meta as backend\nprint(backend.build_wheel(sys.argv[1]))\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", build, str(out)],
        cwd=source,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert completed.returncode == 0, completed.stdout[-4000:] + completed.stderr[-4000:]
    (built,) = out.glob("autotune-*.whl")
    return zipfile.ZipFile(built)


def test_the_wheel_holds_every_module_and_data_file_of_the_package(wheel) -> None:
    names = set(wheel.namelist())

    missing = sorted(_package_files() - names)

    assert not missing, f"files of autotune/ missing from the wheel: {missing}"


def test_the_wheel_holds_every_subpackage(wheel) -> None:
    names = set(wheel.namelist())
    subpackages = sorted(
        init.parent.relative_to(ROOT).as_posix() for init in PACKAGE.rglob("__init__.py")
    )

    assert {"autotune", "autotune/study", "autotune/trial", "autotune/views/report"} <= set(
        subpackages
    )
    assert "autotune/bundled" in subpackages
    assert [p for p in subpackages if f"{p}/__init__.py" not in names] == []


def test_the_wheel_holds_the_bundled_experiments_and_spaces(wheel) -> None:
    names = set(wheel.namelist())

    assert {f"autotune/bundled/{name}.py" for name in EXPERIMENTS} <= names
    assert space_names() == ["cpu", "gpu", "input", "keras3", "quick"]
    assert {f"autotune/bundled/spaces/{name}.toml" for name in space_names()} <= names
    assert not [n for n in names if not n.startswith(("autotune/", "autotune-"))], names


def test_the_wheel_declares_the_command_and_the_dependencies(wheel) -> None:
    info = next(n for n in wheel.namelist() if n.endswith(".dist-info/entry_points.txt"))
    meta = next(n for n in wheel.namelist() if n.endswith(".dist-info/METADATA"))
    requires = re.findall(r"^Requires-Dist: (.+)$", wheel.read(meta).decode(), re.MULTILINE)

    assert "autotune = autotune.cli:main" in wheel.read(info).decode()
    assert "License-Expression: Apache-2.0" in wheel.read(meta).decode()
    assert {r.split(";")[0].replace(" ", "") for r in requires} >= {
        "optuna<6,>=5.0",
        "xprof<3,>=2.20",
        "sqlalchemy>=2.0.14",
        "psycopg[binary]>=3.1",
    }


# --------------------------------------------------------------------------------------------
# pyproject.toml's dependencies against autotune's imports
# --------------------------------------------------------------------------------------------


def _normal(name: str) -> str:
    """A distribution name as PEP 503 compares them: ``Scikit_Learn`` -> ``scikit-learn``."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _declared(extra: str | None = None) -> set[str]:
    """The distributions ``[project] dependencies`` names (with ``extra``: that extra's)."""
    project = PYPROJECT["project"]
    requirements = project["optional-dependencies"][extra] if extra else project["dependencies"]
    return {
        _normal(re.split(r"[<>=!~;\[ ]", requirement, maxsplit=1)[0])
        for requirement in requirements
    }


def _imported_top_level() -> set[str]:
    """The top-level names of every module autotune/ imports, stdlib and autotune left out."""
    found: set[str] = set()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                found |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                found.add(node.module.split(".")[0])
    return {n for n in found if n not in sys.stdlib_module_names and n not in {"autotune"}}


def test_every_imported_package_is_a_declared_dependency() -> None:
    distributions = metadata.packages_distributions()
    declared = _declared() | _declared("jax")  # the JAX backend, imported only on it
    undeclared = {}
    for name in sorted(_imported_top_level()):
        providers = {_normal(d) for d in distributions.get(name, [name])}
        if not providers & declared:
            undeclared[name] = sorted(providers)

    assert {"sqlalchemy", "flask", "xprof", "sklearn"} <= _imported_top_level()
    assert not undeclared, f"imported but not in [project] dependencies: {undeclared}"
    assert "jax" in _declared("jax") and "jax" not in _declared()  # an optional extra


def test_majors_are_bounded_where_experimental_or_internal_apis_are_used() -> None:
    requirements = {
        _normal(re.split(r"[<>=!~;\[ ]", r, maxsplit=1)[0]): r
        for r in PYPROJECT["project"]["dependencies"]
    }

    assert requirements["optuna"] == "optuna>=5.0,<6"
    assert requirements["xprof"].endswith(",<3")
    assert requirements["tensorflow"].endswith(",<3")
    assert requirements["keras"].endswith(",<4")


def test_the_build_requirement_matches_the_spdx_license_field() -> None:
    assert PYPROJECT["project"]["license"] == "Apache-2.0"  # a string: setuptools >= 77 reads it
    assert PYPROJECT["build-system"]["requires"] == [f"setuptools>={SETUPTOOLS_MIN}"]
