"""The dependency rules of the code base, checked by reading every module's imports (no module is executed).

Apps depend one way only: common <- accounts <- generation <- annotation <- judging <- analysis <- demo (a later app
may import an earlier one, never the reverse, not even inside a function). `config` is the composition root
(settings, URLs, the Celery app): it may import any app, and no app imports it. No imports form a cycle, counting
the imports inside functions and those under `if TYPE_CHECKING:`: where two modules would need each other, the part
both need moves to a third, lower module (the HackSoft way for Celery: a task imports the service that runs its work
at module level, and the service that queues the task imports it inside the function that queues it; the two are
different modules). Code and tests cite no issue numbers: they say what they hold.
"""

from __future__ import annotations

import ast
import itertools
import re
from collections import defaultdict
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.source_trees import source_tree

LAYERS = {
    "common": -1,
    "accounts": 0,
    "generation": 1,
    "annotation": 2,
    "judging": 3,
    "analysis": 4,
    "demo": 5,
    "config": 6,
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _project_modules() -> dict[str, Path]:
    modules = {}
    for top in LAYERS:
        for path in (REPO / top).rglob("*.py"):
            if "migrations" in path.parts:
                continue
            modules[_module_name(path)] = path
    return modules


def _imports(path: Path, module: str) -> list[tuple[str, bool, int]]:
    """(imported module, at module level?, line) for every import of a project module in the file."""
    tree = source_tree(path)
    top_level = {id(node) for node in tree.body}
    for node in tree.body:  # imports guarded by `if TYPE_CHECKING:` never run
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            top_level |= {id(child) for child in node.body}
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            # `from pkg import module` imports the submodule when there is one.
            names = [base] + [f"{base}.{alias.name}" for alias in node.names]
        for name in names:
            if name.split(".")[0] in LAYERS:
                found.append((name, id(node) in top_level, node.lineno))
    return found


def _graph(modules: dict[str, Path]) -> tuple[dict[str, set[str]], set[tuple[str, str, int]]]:
    """(module-level imports: module -> modules, every import: (module, imported module, line))."""
    edges: dict[str, set[str]] = defaultdict(set)
    arrows: set[tuple[str, str, int]] = set()
    for module, path in modules.items():
        for name, module_level, line in _imports(path, module):
            target = name if name in modules else name.rpartition(".")[0]
            if target not in modules or target == module:
                continue
            arrows.add((module, target, line))
            if module_level:
                edges[module].add(target)
    return edges, arrows


def _cycles(arrows: set[tuple[str, str, int]]) -> list[str]:
    """Each cycle a depth-first walk over the imports finds, as `a (line 3) -> b (line 9) -> a`."""
    targets: dict[str, set[str]] = defaultdict(set)
    line_of: dict[tuple[str, str], int] = {}
    for source, target, line in sorted(arrows):
        targets[source].add(target)
        line_of.setdefault((source, target), line)
    state: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for target in sorted(targets[node]):
            if state.get(target) == 1:
                around = [*stack[stack.index(target) :], target]
                hops = [f"{source} (line {line_of[source, after]})" for source, after in itertools.pairwise(around)]
                cycles.append(" -> ".join([*hops, target]))
            elif target not in state:
                visit(target)
        stack.pop()
        state[node] = 2

    for module in sorted(targets):
        if module not in state:
            visit(module)
    return cycles


@pytest.fixture(scope="module")
def graph():
    modules = _project_modules()
    edges, arrows = _graph(modules)
    return modules, edges, arrows


def test_it_finds_the_apps_modules(graph):
    modules, _, arrows = graph
    assert "generation.jobs.services" in modules and "analysis.report.build" in modules
    assert any(source.startswith("annotation") and target.startswith("generation") for source, target, _ in arrows)


def test_it_has_no_upward_imports(graph):
    _, _, arrows = graph
    upward = [
        f"{source} (line {line}) imports {target}"
        for source, target, line in arrows
        if LAYERS[source.split(".")[0]] < LAYERS[target.split(".")[0]]
    ]
    assert not upward, "dependencies go generation -> annotation -> analysis only:\n" + "\n".join(upward)


def test_it_has_no_import_cycles_not_even_through_imports_inside_functions(graph):
    _, _, arrows = graph
    cycles = _cycles(arrows)
    assert not cycles, "import cycles (imports inside functions count):\n" + "\n".join(cycles)


def test_generation_tasks_import_services_and_services_import_tasks_only_inside_functions(graph):
    """The HackSoft rule that keeps chunks -> runner -> tasks -> chunks from closing: tasks import the services (and
    the job machinery of generation/jobs/) at module level; a service that queues a task imports it inside the
    function that queues it."""
    services = ("generation.services", "generation.jobs")
    _, edges, arrows = graph
    assert "generation.jobs.chunks" in edges["generation.tasks"]
    queued_by = {source for source, target, _ in arrows if target == "generation.tasks"}
    assert any(source.startswith(services) for source in queued_by)  # the rule has something to check
    at_module_level = sorted(
        source for source in queued_by if source.startswith(services) and "generation.tasks" in edges[source]
    )
    assert at_module_level == [], "services import generation.tasks at module level"


def test_the_cycle_finder_finds_a_planted_cycle_closed_inside_a_function(tmp_path):
    """The walker itself: a module-level import one way and an import inside a function the other way are a cycle."""
    first, second = tmp_path / "first.py", tmp_path / "second.py"
    first.write_text("from generation import second\n")
    second.write_text("def queue():\n    import generation.first\n")
    edges, arrows = _graph({"generation.first": first, "generation.second": second})
    assert edges == {"generation.first": {"generation.second"}}  # the import inside the function is not module-level
    assert arrows == {("generation.first", "generation.second", 1), ("generation.second", "generation.first", 2)}
    assert _cycles(arrows) == ["generation.first (line 1) -> generation.second (line 2) -> generation.first"]


def test_no_module_or_test_cites_an_issue_number():
    """Code and tests say what they hold; an issue number says nothing to a reader without the tracker."""
    cited = re.compile(r"\bissues? #?\d+", re.IGNORECASE)
    paths = [*_project_modules().values(), *(REPO / "tests").rglob("*.py")]
    found = [
        f"{path.relative_to(REPO)}:{number}: {line.strip()}"
        for path in paths
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if cited.search(line)
    ]
    assert not found, "issue numbers in code or tests:\n" + "\n".join(found)


def test_app_modules_import_pandas_through_common_frames():
    """pandas' string storage is set in common/frames.py; a module importing pandas itself could make frames before
    that setting, in a process where no other module has imported common.frames yet."""
    direct = []
    for module, path in _project_modules().items():
        if module == "common.frames":
            continue
        for node in ast.walk(source_tree(path)):
            names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            if any(name == "pandas" or name.startswith("pandas.") for name in names):
                direct.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert not direct, "import pandas through common.frames (`from common.frames import pd`):\n" + "\n".join(direct)


def test_common_frames_keeps_strings_as_python_objects():
    from common.frames import pd

    column = pd.DataFrame({"label": ["correct", "misgendering", None]})["label"]
    assert column.dtype == pd.StringDtype("python", na_value=float("nan"))
    assert column.isna().tolist() == [False, False, True]


def test_only_common_audit_writes_the_audit_trail():
    """`common.audit.audit_record` is the one writer of django-auditlog's table: it keeps secrets out of audit rows, so
    no module creates LogEntry rows itself or names the table in its own SQL."""
    writes = re.compile(
        r"LogEntry\.objects\.(create|bulk_create|get_or_create|update_or_create)|LogEntry\(|"
        r"LogEntry\._meta\.db_table|auditlog_logentry"
    )
    found = [
        f"{path.relative_to(REPO)}:{number}: {line.strip()}"
        for module, path in _project_modules().items()
        if module != "common.audit" and ".migrations." not in module
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if writes.search(line)
    ]
    assert not found, "write audit rows through common.audit.audit_record:\n" + "\n".join(found)


def test_code_and_tests_cite_the_projects_own_docs_not_the_shared_definitions_by_number():
    """A reader of the repository has docs/domain.md, named by its section titles; the shared definitions file and its
    section numbers are not part of the repository."""
    cited = re.compile(r"\bDOMAIN(\.md| section|'s)|shared/docs|\b[Ss]ection \d+\b")
    paths = [*_project_modules().values(), *(REPO / "tests").rglob("*.py"), *(REPO / "benchmarks").rglob("*.py")]
    found = [
        f"{path.relative_to(REPO)}:{number}: {line.strip()}"
        for path in paths
        if path.name != "test_architecture.py"
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if cited.search(line)
    ]
    assert not found, "cite docs/domain.md by its section's title:\n" + "\n".join(found)
