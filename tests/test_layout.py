"""The package's shape (issue 39): layered subpackages, small modules and functions, no import cycles, and one
module that opens metrics.json. The layers themselves are import-linter's contract in pyproject.toml (`lint-imports`,
run by .ci/run); these are the rules it does not check."""

from __future__ import annotations

import ast
import importlib
import sys
from pathlib import Path

import grimp
import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "pipeline"
ENTRY_POINTS = {"__init__.py", "evaluate.py"}
MAX_MODULE_LINES, MAX_FUNCTION_LINES = 500, 60
MODULES = sorted(PACKAGE.rglob("*.py"))


def _relative(path: Path) -> str:
    return str(path.relative_to(PACKAGE.parent))


def test_the_package_root_holds_only_entry_points_and_subpackages():
    loose = sorted(path.name for path in PACKAGE.glob("*.py") if path.name not in ENTRY_POINTS)
    assert not loose, f"modules in pipeline/ that belong in a subpackage: {loose}"
    for folder in (path for path in PACKAGE.iterdir() if path.is_dir() and path.name != "__pycache__"):
        init = folder / "__init__.py"
        if folder.name == "metrics":
            continue
        assert init.exists(), f"{_relative(folder)} is not a package"
        assert ast.get_docstring(ast.parse(init.read_text())), f"{_relative(init)} does not say its job"


SUBPACKAGES = sorted(path.parent.name for path in PACKAGE.glob("*/__init__.py"))


@pytest.mark.parametrize("name", SUBPACKAGES)
def test_each_subpackage_exports_public_names_that_resolve(name):
    package = importlib.import_module(f"pipeline.{name}")
    assert package.__all__, f"pipeline.{name} exports nothing"
    for public in package.__all__:
        assert getattr(package, public) is not None, f"pipeline.{name}.{public}"
    assert set(package.__all__) <= set(dir(package))


def test_a_lazy_export_loads_its_module_on_first_use_only(tmp_path, monkeypatch):
    package = tmp_path / "lazy_package"
    package.mkdir()
    (package / "__init__.py").write_text(
        "from pipeline.common.lazy import lazy_exports\n\n"
        "__getattr__, __dir__, __all__ = lazy_exports(__name__, {'heavy': 'answer'})\n"
    )
    (package / "heavy.py").write_text("answer = 42\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    lazy = importlib.import_module("lazy_package")
    assert "lazy_package.heavy" not in sys.modules and lazy.__all__ == ["answer"] == dir(lazy)
    assert lazy.answer == 42 and "lazy_package.heavy" in sys.modules
    with pytest.raises(AttributeError, match="'lazy_package' has no attribute 'nothing'"):
        assert lazy.nothing is None


@pytest.mark.parametrize("path", MODULES, ids=_relative)
def test_modules_and_functions_stay_small(path):
    text = path.read_text()
    lines = len(text.splitlines())
    assert lines <= MAX_MODULE_LINES, f"{_relative(path)}: {lines} lines, over {MAX_MODULE_LINES}: split it by job"
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            first = min([node.lineno] + [decorator.lineno for decorator in node.decorator_list])
            length = node.end_lineno - first + 1
            assert length <= MAX_FUNCTION_LINES, f"{_relative(path)}:{node.lineno} {node.name}: {length} lines"


def _cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            module, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.find_modules_directly_imported_by(child)))))
                elif child in on_stack:
                    low[module] = min(low[module], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[module])
            if low[module] == index[module]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == module:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_module_imports_in_a_cycle():
    graph = grimp.build_graph("pipeline", cache_dir=None)
    # A package's __init__ that re-exports its modules' names imports its own children: not a cycle of jobs.
    for module in list(graph.modules):
        for child in graph.find_children(module):
            if graph.direct_import_exists(importer=module, imported=child):
                graph.remove_import(importer=module, imported=child)
    assert _cycles(graph) == []


def test_the_cycle_finder_finds_a_cycle():
    graph = grimp.ImportGraph()
    for name in ("a", "a.x", "a.y", "a.z"):
        graph.add_module(name)
    graph.add_import(importer="a.x", imported="a.y")
    graph.add_import(importer="a.y", imported="a.x")
    graph.add_import(importer="a.z", imported="a.x")
    assert _cycles(graph) == [["a.x", "a.y"]]


def _project_imports_inside_functions(tree: ast.AST) -> list[int]:
    lines = []
    for function in ast.walk(tree):
        if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for node in ast.walk(function):
                if (isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "pipeline") or (
                    isinstance(node, ast.Import) and any(a.name.split(".")[0] == "pipeline" for a in node.names)
                ):
                    lines.append(node.lineno)
    return sorted(set(lines))


@pytest.mark.parametrize("path", MODULES, ids=_relative)
def test_project_modules_are_imported_at_the_top(path):
    """A lazy import of another project module hides a dependency (often one that points up a layer, or closes a
    cycle); optional extras and heavy libraries may still be imported where they are used."""
    assert _project_imports_inside_functions(ast.parse(path.read_text())) == [], _relative(path)


def test_the_lazy_import_finder_finds_one():
    tree = ast.parse("import os\n\ndef f():\n    import json\n    from pipeline.data import load\n")
    assert _project_imports_inside_functions(tree) == [5]


OPENERS = ("open(", "read_text(", "write_text(", "read_bytes(", "atomic_write", "atomic_path(", "json.load")


METRICS_NAMES = ("metrics_path", "METRICS_FILE", "metrics.json")


def _metrics_file_opened(path: Path) -> list[int]:
    text = path.read_text()
    if not any(name in text for name in METRICS_NAMES):
        return []
    # Each call's source, sliced by its byte offsets (ast.get_source_segment splits the whole text at every call).
    source = text.encode()
    starts = [0]
    for line in source.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    lines = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Call):
            begin, end = starts[node.lineno - 1] + node.col_offset, starts[node.end_lineno - 1] + node.end_col_offset
            call = source[begin:end].decode()
            names_file = any(name in call for name in METRICS_NAMES)
            if names_file and any(opener in call for opener in OPENERS):
                lines.append(node.lineno)
    return lines


def test_metrics_json_is_opened_by_run_record_alone():
    """Every other module goes through run.record's read_record and write_record, and reads attributes."""
    record = PACKAGE / "run" / "record.py"
    source = record.read_text()
    assert "def read_record(" in source and "def write_record(" in source and 'METRICS_FILE = "metrics.json"' in source
    elsewhere = {_relative(path): _metrics_file_opened(path) for path in MODULES if path != record}
    assert {name: lines for name, lines in elsewhere.items() if lines} == {}


def test_the_metrics_opener_finder_finds_one(tmp_path):
    module = tmp_path / "reader.py"
    module.write_text("import json\n\n\ndef read(run):\n    return json.loads(run.metrics_path.read_text())\n")
    assert _metrics_file_opened(module) == [5, 5]
