"""Where a test run's CPU goes: the CPU seconds (user + sys, this process's threads included) of each test, setup and
teardown with it, of the report builds inside it and of the processes it started and waited for (a `manage.py`
command, a server); pytest's `--durations` gives wall seconds, which count the database server's time and every wait.

As a pytest plugin (in each xdist worker too), writing one JSON file per process into CPU_PER_TEST_DIR:
    CPU_PER_TEST_DIR=/tmp/cpu .venv/bin/python -m pytest -p benchmarks.cpu_per_test -n 2 -m "not slow"
Then the totals by module, the dearest first, and the dearest tests:
    .venv/bin/python benchmarks/cpu_per_test.py /tmp/cpu [MODULES] [TESTS]
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
from collections import defaultdict
from pathlib import Path

import pytest

_tests: dict[str, float] = {}
_reports: dict[str, float] = defaultdict(float)
_children: dict[str, float] = {}
_running: list[str] = []  # the test being run, while one is


def _count_report_builds() -> None:
    """Each report build's CPU goes to the test it runs in."""
    from analysis.report import build

    original = getattr(build, "_report_data", None)
    if original is None:  # an older checkout: its tests' CPU only
        return

    def counted(**arguments):
        started = time.process_time()
        try:
            return original(**arguments)
        finally:
            if _running:
                _reports[_running[0]] += time.process_time() - started

    build._report_data = counted


def pytest_sessionstart(session):
    if session.config.pluginmanager.hasplugin("django"):
        import django

        django.setup()
        _count_report_builds()


def _children_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    _running.append(item.nodeid)
    started, children = time.process_time(), _children_seconds()
    yield
    _tests[item.nodeid] = time.process_time() - started
    if spent := _children_seconds() - children:
        _children[item.nodeid] = spent
    _running.clear()


def pytest_unconfigure(config):
    folder = os.environ.get("CPU_PER_TEST_DIR")
    if not folder:
        return
    Path(folder).mkdir(parents=True, exist_ok=True)
    # "main": the process that started the workers (its children are the workers), or the only one
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    record = {
        "process": time.process_time(),
        "children": _children_seconds(),
        "tests": _tests,
        "reports": dict(_reports),
        "test_children": _children,
    }
    (Path(folder) / f"{worker}.json").write_text(json.dumps(record), encoding="utf-8")


def main(folder: str, modules: int = 40, tests: int = 20) -> None:
    process = 0.0
    per_test: dict[str, float] = {}
    reports: dict[str, float] = {}
    children: dict[str, float] = {}
    for path in sorted(Path(folder).glob("*.json")):
        record = json.loads(path.read_text(encoding="utf-8"))
        process += record["process"]
        finished = record.get("children", 0.0)
        print(f"{path.stem}: {record['process']:.1f} CPU-s, the child processes it waited for {finished:.1f}")
        per_test.update(record["tests"])
        reports.update(record["reports"])
        children.update(record.get("test_children", {}))
    by_module: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0, 0.0])
    for nodeid, seconds in per_test.items():
        row = by_module[nodeid.split("::")[0]]
        row[0] += seconds
        row[1] += reports.get(nodeid, 0.0)
        row[2] += 1
        row[3] += children.get(nodeid, 0.0)
    print(
        f"processes {process:.1f} CPU-s, of which in tests {sum(per_test.values()):.1f} ({len(per_test)} tests), "
        f"in report builds {sum(reports.values()):.1f}; in the processes tests started {sum(children.values()):.1f}"
    )
    print(f"{'CPU-s':>7} {'reports':>7} {'started':>7} {'tests':>5}  module")
    for module, (seconds, in_reports, count, started) in sorted(
        by_module.items(), key=lambda row: -(row[1][0] + row[1][3])
    )[:modules]:
        print(f"{seconds:7.2f} {in_reports:7.2f} {started:7.2f} {count:5d}  {module}")
    print(f"{'CPU-s':>7} {'reports':>7} {'started':>7}  test")
    for nodeid, seconds in sorted(per_test.items(), key=lambda row: -(row[1] + children.get(row[0], 0.0)))[:tests]:
        print(f"{seconds:7.2f} {reports.get(nodeid, 0.0):7.2f} {children.get(nodeid, 0.0):7.2f}  {nodeid}")


if __name__ == "__main__":
    main(sys.argv[1], *(int(number) for number in sys.argv[2:4]))
