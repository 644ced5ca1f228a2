"""The package's import boundaries: what importing a module loads, and how modules import each
other.

- No module outside ``autotune.trial`` (nor the ``autotune.trial`` package itself) imports
  TensorFlow or Keras when it is imported: they load in the trial process alone
  (docs/architecture.md). Reading a stored study loads neither Plotly nor Dash, and the read-only
  commands never load TensorFlow (docs/reports.md). Each case runs in a fresh
  interpreter, so nothing another test imported can hide a failure or cause one.
- The modules import each other without a cycle, and no import runs back up the layers
  (:data:`LAYER_IMPORTS`).
- No module is over :data:`MAX_LINES` lines.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import autotune
from tests.support.demo_study import DemoStudy
from tests.support.profiles import unpack_profile

PACKAGE = Path(autotune.__file__).resolve().parent
PACKAGE_PARENT = PACKAGE.parent
MAX_LINES = 500

TF = ("tensorflow", "keras")
TF_AND_PLOTTING = ("tensorflow", "keras", "plotly", "dash")


def module_name(path: Path, parent: Path = PACKAGE_PARENT) -> str:
    """``autotune/study/study.py`` -> ``autotune.study.study``; a package is its ``__init__``."""
    parts = path.relative_to(parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def importable_modules() -> list[str]:
    """Every module of the package: each file in a folder that is a package all the way up."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        folders = path.parent.relative_to(PACKAGE_PARENT).parts
        packages = (PACKAGE_PARENT.joinpath(*folders[: i + 1]) for i in range(len(folders)))
        if all((folder / "__init__.py").is_file() for folder in packages):
            found.append(module_name(path))
    return found


def light_modules() -> list[str]:
    """The modules that must import without TensorFlow: all but the submodules of
    ``autotune.trial`` (whose ``__init__`` must not import TensorFlow either)."""
    return [m for m in importable_modules() if not m.startswith("autotune.trial.")]


#: Modules that must be among :func:`light_modules` (a rename or a move fails loudly here).
NAMED_LIGHT = (
    "autotune",
    "autotune.store.schema",
    "autotune.store.records",
    "autotune.store.storage",
    "autotune.study",
    "autotune.study.study",
    "autotune.space",
    "autotune.config",
    "autotune.fidelity",
    "autotune.measure",
    "autotune.analysis.profile",
    "autotune.recipe",
    "autotune.store.result",
    "autotune.views.terminal",
    "autotune.cli",
    "autotune.views.report",
    "autotune.views.dashboard",
    "autotune.trial",
)


# --------------------------------------------------------------------------------------------
# What importing a module loads
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """Python code run in a fresh interpreter (from the package's parent folder); none of the
    ``forbidden`` top-level packages may be in ``sys.modules`` after it. The code may name
    ``{storage}`` (the demo study's storage URL, :mod:`tests.support.demo_study`), ``{profile}``
    (a folder holding the ``slow_input`` profile, :mod:`tests.support.profiles`) and
    ``{output}`` (a file that, with ``writes``, must exist afterwards)."""

    code: str
    forbidden: tuple[str, ...] = TF
    writes: bool = False


def _command(*args: str) -> str:
    """Code running ``autotune ARGS`` in the interpreter; it must exit 0."""
    return textwrap.dedent(
        f"""
        from autotune.cli import main
        try:
            main({list(args)!r})
        except SystemExit as stop:
            assert not stop.code, stop.code
        """
    )


CASES: dict[str, Case] = {
    **{f"import {m}": Case(f"import {m}") for m in light_modules()},
    # What the copies of this test in test_experiment.py and test_study.py imported, together.
    "import the core": Case(
        "import autotune, autotune.config, autotune.exceptions, autotune.experiment\n"
        "import autotune.measure"
    ),
    "import the study modules": Case(
        "import autotune.fidelity, autotune.recipe, autotune.space, autotune.store.storage\n"
        "import autotune.study"
    ),
    # Beyond importing: reading a stored study, analysing a profile, the read-only commands.
    "load_records": Case(
        "from autotune.store.records import load_records\n"
        "records = load_records({storage!r})\n"
        "assert records.pareto()",
        forbidden=TF_AND_PLOTTING,
    ),
    "analyse a profile": Case(
        "from autotune.analysis.profile import analyse\n"
        "import autotune.analysis.recompilation\n"
        "summary = analyse({profile!r})\n"
        "assert summary.steps > 0, summary"
    ),
    "autotune report": Case(
        _command("report", "--storage", "{storage}", "-o", "{output}"), writes=True
    ),
    "autotune status": Case(_command("status", "--storage", "{storage}")),
    "autotune best": Case(_command("best", "--storage", "{storage}")),
    "autotune export": Case(
        _command("export", "--storage", "{storage}", "-o", "{output}"), writes=True
    ),
    "autotune export --format python": Case(
        _command("export", "--storage", "{storage}", "--format", "python", "-o", "{output}"),
        writes=True,
    ),
}

_CHECK = """
import sys
loaded = sorted(m for m in sys.modules if m.split(".")[0] in {forbidden!r})
print("loaded:", loaded)
sys.exit(1 if loaded else 0)
"""


def test_every_named_module_has_an_import_case() -> None:
    missing = sorted(set(NAMED_LIGHT) - set(light_modules()))

    assert not missing, f"modules named in NAMED_LIGHT that are not in the package: {missing}"
    assert all(f"import {m}" in CASES for m in NAMED_LIGHT)


@pytest.mark.parametrize("case", list(CASES.values()), ids=list(CASES))
def test_no_forbidden_package_is_loaded(
    case: Case, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    values = {"output": str(tmp_path / "output"), "storage": "", "profile": ""}
    if "{storage" in case.code:
        demo: DemoStudy = request.getfixturevalue("demo")
        values["storage"] = demo.storage
    if "{profile" in case.code:
        unpack_profile("slow_input", tmp_path / "profile")
        values["profile"] = str(tmp_path / "profile")
    code = case.code.format(**values) + _CHECK.format(forbidden=case.forbidden)

    completed = subprocess.run(
        [sys.executable, "-c", code],
        cwd=PACKAGE_PARENT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )

    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "loaded: []" in completed.stdout, completed.stdout
    if case.writes:
        assert Path(values["output"]).is_file()


# --------------------------------------------------------------------------------------------
# How the modules import each other
# --------------------------------------------------------------------------------------------


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(nodes: list[ast.AST]) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement among ``nodes`` and inside them (functions, classes, branches),
    except those under ``if TYPE_CHECKING:``: they never run, so they cannot make an import
    cycle (that ``if``'s ``else:`` does run and is walked)."""
    for node in nodes:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            yield from _imports(list(node.orelse))
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        yield from _imports(list(ast.iter_child_nodes(node)))


def import_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    """Each module of ``package`` -> the modules of ``package`` it imports.
    ``from autotune.pkg import name`` is an import of ``autotune.pkg.name`` when that is a module
    (a file or a package), else of ``autotune.pkg``; relative imports are resolved the same way;
    a package's ``__init__`` importing its own submodules is an edge like any other. Imports
    through :func:`importlib.import_module` (the lazy attributes of ``autotune``) are not seen."""
    files = {module_name(path, package.parent): path for path in sorted(package.rglob("*.py"))}
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        here = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets = set()
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in _imports(list(tree.body)):
            if isinstance(node, ast.Import):
                targets |= {alias.name for alias in node.names}
                continue
            base = node.module or ""
            if node.level:  # from . import x, from ..pkg import y
                parts = here.split(".")
                anchor = ".".join(parts[: len(parts) - node.level + 1])
                base = f"{anchor}.{base}" if base else anchor
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                targets.add(submodule if submodule in files else base)
        graph[name] = {t for t in targets if t == package.name or t.startswith(package.name + ".")}
    return graph


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle per edge back to a module still being visited, each as ``[a, b, ..., a]``."""
    cycles: list[list[str]] = []
    done: set[str] = set()
    path: list[str] = []

    def visit(module: str) -> None:
        path.append(module)
        for target in sorted(graph.get(module, ())):
            if target in path:
                cycles.append([*path[path.index(target) :], target])
            elif target not in done:
                visit(target)
        path.pop()
        done.add(module)

    for module in sorted(graph):
        if module not in done:
            visit(module)
    return cycles


def test_find_cycles_finds_and_prints_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}

    assert [" -> ".join(c) for c in find_cycles(graph)] == ["a -> b -> c -> a"]
    assert find_cycles({"a": {"b"}, "b": set(), "c": {"a", "b"}}) == []


def test_the_import_graph_resolves_every_kind_of_import(tmp_path: Path) -> None:
    files = {
        "__init__.py": "from pkg.a import thing\nfrom pkg import sub\n",
        "a.py": "import os\nimport pkg.sub.deep\nthing = 1\n",
        "sub/__init__.py": "from . import deep\nfrom ..a import thing\n",
        "sub/deep.py": (
            "from typing import TYPE_CHECKING\n"
            "if TYPE_CHECKING:\n    from pkg import b\nelse:\n    from pkg import c\n"
            "def late():\n    from pkg.b import name\n"
        ),
        "b.py": "class B:\n    def method(self):\n        import pkg.c as c\n",
        "c.py": "",
    }
    for name, text in files.items():
        (tmp_path / "pkg" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "pkg" / name).write_text(text, encoding="utf-8")

    assert import_graph(tmp_path / "pkg") == {
        "pkg": {"pkg.a", "pkg.sub"},
        "pkg.a": {"pkg.sub.deep"},
        "pkg.sub": {"pkg.sub.deep", "pkg.a"},
        "pkg.sub.deep": {"pkg.c", "pkg.b"},
        "pkg.b": {"pkg.c"},
        "pkg.c": set(),
    }


def test_the_import_graph_covers_the_package() -> None:
    graph = import_graph()

    assert set(importable_modules()) <= set(graph)
    assert "autotune.config" in graph["autotune"]


def test_modules_import_each_other_without_a_cycle() -> None:
    cycles = find_cycles(import_graph())

    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


# --------------------------------------------------------------------------------------------
# The layers: data flows down, no import runs back up
# --------------------------------------------------------------------------------------------

#: Each layer and the layers its modules may import (their own included). The core (the flat
#: modules and ``analysis/``) imports only itself; ``bundled`` (the short names of the bundled
#: experiments and spaces) sits on the core; ``store`` (the storage contract, the result type
#: included) on the core, the trial on both; read-only ``views`` read ``store`` alone, never
#: ``study`` or ``trial``; ``cli`` is the edge. ``autotune`` itself (the public API) and
#: ``__main__`` may import anything; the bundled experiment modules are written as a user's,
#: against the public API, and are not checked.
LAYER_IMPORTS: dict[str, set[str]] = {
    "core": {"core"},
    "bundled": {"core", "bundled"},
    "store": {"core", "store"},
    "trial": {"core", "bundled", "store", "trial"},
    "views": {"core", "store", "views"},
    "study": {"core", "bundled", "store", "trial", "study"},
    "cli": {"core", "bundled", "store", "trial", "study", "views", "cli"},
}
#: The folders of the package and their layer.
FOLDER_LAYERS = {
    "analysis": "core",
    "bundled": "bundled",
    "store": "store",
    "trial": "trial",
    "views": "views",
    "study": "study",
    "cli": "cli",
}


def layer_of(module: str) -> str | None:
    """``module``'s layer; None for the public API and the bundled experiment modules."""
    parts = module.split(".")[1:]
    if not parts or parts == ["__main__"]:
        return None
    if len(parts) == 1 and parts[0] not in FOLDER_LAYERS:
        return "core"  # a flat module
    if parts[0] == "bundled" and len(parts) > 1:
        return None
    return FOLDER_LAYERS.get(parts[0], f"unplaced folder {parts[0]!r}")


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """Each import in ``graph`` from a module into a layer its own may not import."""
    found = []
    for module, targets in sorted(graph.items()):
        here = layer_of(module)
        if here is None:
            continue
        for target in sorted(targets):
            there = layer_of(target) or "the public API"
            if there not in LAYER_IMPORTS.get(here, set()):
                found.append(f"{module} ({here}) imports {target} ({there})")
    return found


def test_every_folder_of_the_package_has_a_layer() -> None:
    folders = {path.parent.name for path in PACKAGE.glob("*/__init__.py")}

    assert folders == set(FOLDER_LAYERS)


def test_no_import_runs_back_up_the_layers() -> None:
    found = upward_imports(import_graph())

    assert not found, "imports against the layers:\n" + "\n".join(found)


def test_the_layer_check_finds_an_import_back_up() -> None:
    graph = {
        "autotune.config": {"autotune.views.terminal"},
        "autotune.views.terminal": {"autotune.study.study", "autotune.store.records"},
        "autotune.store.records": {"autotune.config"},
        "autotune.cli.commands": {"autotune.study.study", "autotune.views.terminal"},
        "autotune": {"autotune.study"},
    }

    assert upward_imports(graph) == [
        "autotune.config (core) imports autotune.views.terminal (views)",
        "autotune.views.terminal (views) imports autotune.study.study (study)",
    ]


def test_no_module_is_over_the_line_limit() -> None:
    lengths = {
        str(path.relative_to(PACKAGE_PARENT)): len(path.read_text(encoding="utf-8").splitlines())
        for path in sorted(PACKAGE.rglob("*.py"))
    }
    over = {path: lines for path, lines in lengths.items() if lines > MAX_LINES}

    assert not over, f"modules over {MAX_LINES} lines: {over}"
