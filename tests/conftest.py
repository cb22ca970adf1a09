"""Shared people and data for every test: an admin, a researcher, two annotators and an outsider (no role)."""

from __future__ import annotations

import gc
import os
from pathlib import Path

import pytest
from rest_framework.test import APIClient

from accounts.roles import ADMIN, ANNOTATOR, RESEARCHER
from accounts.services import user_create_or_update

if os.environ.get("PYTEST_XDIST_WORKER"):
    # Parallel workers (scripts/test.sh runs one per core): one torch/BLAS thread each, or the workers' threads fight
    # over the cores and the model tests take twice as long. Set before torch or numpy are first imported.
    for variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(variable, "1")

REPO = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("CONCORD_SHARED", REPO.parent / "shared"))
DATASETS = SHARED / "datasets"
DEMO = REPO / "demo"
PASSWORD = "correct-horse-battery"


def _person(username: str, role: str | None):
    if role is None:
        from django.contrib.auth import get_user_model

        user = get_user_model().objects.create_user(username=username, password=PASSWORD)
        return user
    user, _ = user_create_or_update(username=username, role=role, password=PASSWORD)
    return user


@pytest.fixture
def admin_user(db):
    return _person("ada_admin", ADMIN)


@pytest.fixture
def researcher(db):
    return _person("rui_researcher", RESEARCHER)


@pytest.fixture
def annotator(db):
    return _person("ana", ANNOTATOR)


@pytest.fixture
def second_annotator(db):
    return _person("bo", ANNOTATOR)


@pytest.fixture
def stranger(db):
    """A researcher of another project (docs/domain.md, "Projects"): none of the default project's pools are theirs."""
    user, _ = user_create_or_update(username="sam_stranger", role=RESEARCHER, password=PASSWORD, project="elsewhere")
    return user


@pytest.fixture
def outsider(db):
    return _person("otto_outsider", None)


@pytest.fixture
def people(admin_user, researcher, annotator, second_annotator, outsider):
    return {
        "admin": admin_user,
        "researcher": researcher,
        "annotator": annotator,
        "second_annotator": second_annotator,
        "outsider": outsider,
    }


@pytest.fixture
def api():
    """An API client; `api.force_authenticate(user)` logs in a person."""
    return APIClient()


@pytest.fixture
def csrf_client():
    """A browser-like client that enforces CSRF, as real browsers face it."""
    from django.test import Client

    return Client(enforce_csrf_checks=True)


# Fixtures that build or load a model with transformers: the first of them in a process imports the library and its
# model classes (seconds), so the modules that use them are run together, where one worker pays for it.
MODEL_FIXTURES = frozenset({"loaded_model", "two_layer_model", "two_layer_row", "tiny_bert_dir", "tiny_gpt2_dir"})


def pytest_collection_modifyitems(items):
    """The modules that start processes (workers, servers) first, then the other modules with slow tests, then those
    with a model (`MODEL_FIXTURES`, or marked `models`), then the rest, each module's tests together and in their own order. pytest-xdist
    hands each worker a run of the list and a worker that runs out takes half of what another has left (from the end
    of its run): with the minute-long tests at the start, the run ends on short tests that both workers share, not on
    one worker's long test while the other core waits, and the model modules stay in one worker's run."""

    def module(item) -> str:
        return getattr(getattr(item, "module", None), "__name__", "")

    ranks: dict[str, int] = {}
    for item in items:
        if item.get_closest_marker("worker") or item.get_closest_marker("embedded"):
            ranks[module(item)] = 0
        elif item.get_closest_marker("slow"):
            ranks[module(item)] = min(ranks.get(module(item), 1), 1)
        elif item.get_closest_marker("models") or MODEL_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            ranks.setdefault(module(item), 2)
    items.sort(key=lambda item: ranks.get(module(item), 3))


def pytest_configure(config):
    """No garbage collection while the test modules are imported (see `pytest_collection_finish`), except in the
    process that only hands tests to pytest-xdist's workers, which collects none."""
    handing_out = not os.environ.get("PYTEST_XDIST_WORKER") and config.getoption("numprocesses", None) not in (None, 0)
    if not handing_out:
        gc.disable()


def pytest_collection_finish(session):
    """Python's garbage collector, tuned for a test process. By the end of collection a worker holds millions of
    long-lived objects (Django, pandas, scipy, matplotlib, the test modules), and each full collection walked them all
    again: about 0.2 s, several times a minute. They are frozen out of its reach (`gc.freeze`, as a forking server
    does before its workers start), and collections run after 50,000 allocations instead of 700: what the tests make
    is still collected, less often. While they were being imported, the collector was off (`pytest_configure`): each
    full collection then walked a heap still growing towards those millions, for objects that all stay. Timings:
    benchmarks/README.md, "Test suite"."""
    gc.freeze()
    gc.set_threshold(50_000, 20, 20)
    gc.enable()


@pytest.hookimpl(tryfirst=True)
def pytest_unconfigure(config):
    """What the tests left behind is frozen before pytest's last full collection (its `unraisableexception` plugin
    collects once more as a process ends, to report an exception raised in a finalizer then): in a worker that ran a
    thousand tests it walked every object they kept (caches, models, figures), as the process was about to
    exit and free them all anyway. An exception in a finalizer during a test is still reported with that test."""
    gc.freeze()


@pytest.fixture(scope="session", autouse=True)
def _api_statuses_recorded():
    """Each API view's answers are recorded, to be checked against the schema at the end (tests/api_statuses.py)."""
    from tests import api_statuses

    api_statuses.record()


def pytest_sessionfinish(session, exitstatus):
    """Every status an API view answered in this run must be declared in the schema (tests/api_statuses.py): a worker
    hands what it saw to the process that started it, which checks it all and fails the run on an undeclared one."""
    from tests import api_statuses

    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker:
        api_statuses.worker_write(worker)
        return
    undeclared = api_statuses.check(api_statuses.gathered())
    if undeclared:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        message = "API statuses answered in the tests but not declared in the schema (declare them with extend_schema):"
        if reporter is not None:
            reporter.write_line(message + "\n  " + "\n  ".join(undeclared), red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture(scope="session", autouse=True)
def _fast_password_hasher():
    """Tests hash passwords with MD5: PBKDF2's deliberate slowness is worth nothing here and costs minutes."""
    from django.conf import settings

    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def _fresh_cache():
    """Every test starts with an empty cache: cached reports and roles of one test never answer another's."""
    from django.core.cache import cache

    cache.clear()
    yield
    cache.clear()


@pytest.fixture(scope="module")
def once():
    """`once(key, build)`: what `build()` returns, built once per module and key, handed to each test as its own copy.

    For tests that only read a built report. The fixture that calls it asks for `db` (so pytest-django sets the test
    database up even for a run of only such tests); the build runs inside that test's transaction, in a savepoint
    rolled back at once, and the report cache is emptied after it, so every test's database and cache start as they
    would without it.
    """
    import copy

    from django.core.cache import cache
    from django.db import transaction

    made: dict[str, object] = {}

    def get(key: str, build):
        if key not in made:
            with transaction.atomic():
                made[key] = build()
                transaction.set_rollback(True)
            cache.clear()
        return copy.deepcopy(made[key])

    return get


def _rolled_back_transaction(django_db_blocker):
    """A transaction held open until the generator is closed, then rolled back; yields the blocker's `unblock`, inside
    which a fixture writes what the tests it serves will see."""
    from django.db import transaction

    with django_db_blocker.unblock():
        outer = transaction.atomic()
        outer.__enter__()
    try:
        yield django_db_blocker.unblock
    finally:
        with django_db_blocker.unblock():
            transaction.set_rollback(True)
            outer.__exit__(None, None, None)


@pytest.fixture(scope="module")
def module_db(django_db_setup, django_db_blocker):
    """One transaction around a module's tests, rolled back after its last: what a module-scoped fixture writes
    inside `with module_db():` is built once and seen by every test of the module, while each test's own writes still
    roll back at its end (its transaction is a savepoint inside this one). For modules of `db` tests only: a
    transactional test would wait on this transaction's locks."""
    yield from _rolled_back_transaction(django_db_blocker)


@pytest.fixture(scope="class")
def class_db(django_db_setup, django_db_blocker):
    """`module_db` for one class: what a class-scoped fixture writes inside `with class_db():` is seen by that class's
    tests only, and rolled back after its last, so the module's other tests never see it."""
    yield from _rolled_back_transaction(django_db_blocker)


@pytest.fixture(autouse=True)
def _job_threads_end_with_their_test():
    """A test that queued a job in-process (the embedded default runs it in a thread) may end before the thread does:
    the thread is let finish here, so that it neither writes into the next test's data nor holds a connection to the
    test database when that is dropped."""
    yield
    import threading

    for thread in threading.enumerate():
        if thread.name.startswith("concord-job-"):
            thread.join(timeout=60)


@pytest.fixture(scope="session")
def django_db_modify_db_settings(django_db_modify_db_settings_parallel_suffix):
    """pytest-django's (a suffix per xdist worker), and on PostgreSQL each test database is a copy of a template
    migrated once per set of migration files (tests/db_template.py), not migrated on its own."""
    from django.conf import settings

    from tests.db_template import template_ensure

    database = settings.DATABASES["default"]
    if database["ENGINE"].endswith("postgresql"):
        database.setdefault("TEST", {})["TEMPLATE"] = template_ensure(database)


@pytest.fixture(scope="session", autouse=True)
def _static_files_indexed_once():
    """Django's test client builds the middleware anew for every client, and WhiteNoise's then stats and indexes every
    static file again: about 9 ms, 600 times a run. The files do not change during a run, so each process indexes them
    once for each set of the settings the index depends on (a test that overrides one gets its own)."""
    from django.conf import settings
    from whitenoise.middleware import WhiteNoiseMiddleware

    index = WhiteNoiseMiddleware.add_files_from_finders
    indexed: dict[tuple, dict] = {}

    def add_files_from_finders(self) -> None:
        key = (
            self.static_prefix,
            self.max_age,
            self.allow_all_origins,
            self.charset,
            self.index_file,
            repr(self.add_headers_function),
            repr(getattr(settings, "WHITENOISE_IMMUTABLE_FILE_TEST", None)),
            repr(getattr(settings, "WHITENOISE_MIMETYPES", None)),
            repr(settings.STATICFILES_DIRS),
            repr(settings.STATICFILES_FINDERS),
            repr(settings.STORAGES),
            tuple(settings.INSTALLED_APPS),
        )
        if key not in indexed:
            before = set(self.files)
            index(self)
            indexed[key] = {url: file for url, file in self.files.items() if url not in before}
        self.files.update(indexed[key])

    WhiteNoiseMiddleware.add_files_from_finders = add_files_from_finders
    yield
    WhiteNoiseMiddleware.add_files_from_finders = index


_FIGURES_KEPT = 256  # about 30 MB of drawings at most: the whole suite draws fewer distinct figures


@pytest.fixture(scope="session", autouse=True)
def _figures_drawn_once_per_process():
    """A figure is drawn once per pytest process for the same declaration, format and data: many tests render the
    figures of the same hand-built study, and drawing them again took about 10 of the quick loop's 125 CPU-s. The
    drawing is a function of these three (`analysis.plots.figure_digest` is what the report's own cache keys it by),
    so a test gets the bytes it would have drawn. The declaration is the `FIGURES` entry itself, so a test that swaps
    one draws afresh. Calls still reach `plot_render` (a test's spy on it counts every one). A test that compares two
    drawings with each other asks for `figures_drawn_afresh`."""
    import functools

    from analysis import plots

    draw = plots.plot_render
    # Each entry keeps its declaration alive, so no other declaration can take its id while the entry is kept.
    drawn: dict[tuple, tuple[object, bytes]] = {}

    @functools.wraps(draw)
    def plot_render(*, report: dict, name: str, fmt: str) -> bytes:
        figure = plots.FIGURES[name]
        key = (id(figure), fmt, plots.figure_digest(report=report, name=name))
        if key not in drawn:
            if len(drawn) >= _FIGURES_KEPT:
                drawn.pop(next(iter(drawn)))
            drawn[key] = (figure, draw(report=report, name=name, fmt=fmt))
        return drawn[key][1]

    plots.plot_render = plot_render
    yield
    plots.plot_render = draw


@pytest.fixture
def figures_drawn_afresh(monkeypatch):
    """`plot_render` itself, without the drawings kept in the process."""
    from analysis import plots

    monkeypatch.setattr(plots, "plot_render", getattr(plots.plot_render, "__wrapped__", plots.plot_render))


@pytest.fixture
def page_without_figures(monkeypatch):
    """The standalone HTML page (`report_render(fmt="html")`) built without its figures, for tests that read only its
    tables and notes: drawing every figure as SVG and as PNG is most of what the page costs, and such a test checks
    none of it. The tables, notes and template are the page's own."""
    from analysis.report.exports import html

    monkeypatch.setattr(html, "report_figures_inline", lambda *, report: [])


@pytest.fixture(scope="session")
def loaded_model():
    """The default model, loaded once; jobs that use the same registry fields find it in the process cache."""
    from generation.engines.hf.loading import model_load
    from generation.models import DEFAULT_MODEL_FIELDS, DEFAULT_MODEL_NAME, LanguageModel

    return model_load(language_model=LanguageModel(name=DEFAULT_MODEL_NAME, **DEFAULT_MODEL_FIELDS))


@pytest.fixture(scope="session")
def two_layer_model(loaded_model):
    """The default model cut to its first two decoder layers, for the tests that compare two ways of computing the
    same numbers (batched and one at a time, groups together and apart, a tree pass and the plain loop, the own
    sampling loop and `generate`). What those paths depend on is kept: the tokenizer, the embeddings and the head,
    the attention and its cache, and the shape of every product (a layer's weights are the default's own), so a
    shape on which the CPU's library rounds a batch's rows apart differs here as it would there. A decoding step
    reads a quarter of the weights. Tests about the default model itself (its loading, its checks passing, its
    texts, the jobs that load it) keep `loaded_model`."""
    import copy
    import dataclasses

    model = copy.deepcopy(loaded_model.model)
    model.model.layers = model.model.layers[:2]
    model.config.num_hidden_layers = 2
    if getattr(model.config, "layer_types", None):
        model.config.layer_types = model.config.layer_types[:2]
    return dataclasses.replace(loaded_model, name=f"{loaded_model.name} (first 2 layers)", model=model)


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker):
    """pytest-django's, and before it drops the test database, the sessions still connected to it are ended: one left
    idle after a browser test (seen after the quality dashboard's, whose origin was not found) would otherwise make
    PostgreSQL refuse the drop, and the database stay behind."""
    yield
    from django.db import connection

    if connection.vendor != "postgresql":
        return
    with django_db_blocker.unblock(), connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )


@pytest.fixture(scope="session", autouse=True)
def _transactional_tests_leave_the_database_as_migrated():
    """A transactional test (live server, worker processes) ends with the database as the migrations left it: its
    tables emptied with a DELETE each, then the rows the data migrations wrote (the roles, the default model) put back,
    as the first transactional test of the process found them.

    Django's `flush` empties them with one TRUNCATE of every table and re-creates the content types and permissions
    (post_migrate): 0.2 s a test on PostgreSQL, where TRUNCATE makes new files for each table, against 0.01 s for the
    DELETEs on the few rows a test leaves. It also loses the migrations' rows, so a test that needs them passed only
    when it ran before every transactional test of its pytest worker. Content types and permissions are kept
    (post_migrate would make them again, under new ids). Django's foreign keys are deferred: the order of the
    statements inside the one transaction does not matter."""
    from django.apps import apps
    from django.contrib.auth.models import Permission
    from django.contrib.contenttypes.models import ContentType
    from django.core import serializers
    from django.db import connections, transaction
    from django.test import TransactionTestCase

    kept = {ContentType._meta.db_table, Permission._meta.db_table}
    models = [model for model in apps.get_models() if model._meta.db_table not in kept and model._meta.managed]
    migrated: dict[str, str] = {}
    setup = TransactionTestCase.__dict__["_fixture_setup"]  # a classmethod
    flush = TransactionTestCase._fixture_teardown

    def keep_the_migrated_rows(cls) -> None:
        for alias in cls._databases_names(include_mirrors=False):
            if alias not in migrated:  # the first transactional test: the database is as migrated
                rows = [row for model in models for row in model._default_manager.using(alias)]
                migrated[alias] = serializers.serialize("json", rows)
        setup.__func__(cls)

    def empty_tables(self) -> None:
        if self.available_apps is not None or self.serialized_rollback:
            flush(self)  # Django's own ways, unused here: left to Django
            return
        for alias in self._databases_names(include_mirrors=False):
            connection = connections[alias]
            tables = connection.introspection.django_table_names(only_existing=True, include_views=False)
            with transaction.atomic(using=alias):
                with connection.cursor() as cursor:
                    for table in sorted(set(tables) - kept):
                        cursor.execute(f"DELETE FROM {connection.ops.quote_name(table)}")
                for row in serializers.deserialize("json", migrated[alias], using=alias):
                    row.save(using=alias)

    TransactionTestCase._fixture_setup = classmethod(keep_the_migrated_rows)  # type: ignore[method-assign,assignment]
    TransactionTestCase._fixture_teardown = empty_tables  # type: ignore[method-assign]
    yield
    TransactionTestCase._fixture_setup = setup  # type: ignore[method-assign]
    TransactionTestCase._fixture_teardown = flush  # type: ignore[method-assign]


@pytest.fixture(scope="session", autouse=True)
def _connections_close_after_each_request():
    """Live-server and worker threads would otherwise keep persistent connections open past the test database's
    teardown. The settings dict is shared by every thread's connection, so this reaches them all."""
    from django.conf import settings

    settings.DATABASES["default"]["CONN_MAX_AGE"] = 0


# Headless Chromium for the browser tests (tests/browser_support.py).
from tests.browser_support import _chromium, browser, page  # noqa: E402, F401
