"""Configuration comes from the environment; a malformed value stops start-up naming the variable."""

import json
import os
import stat
import subprocess
import sys

import environ
import pytest
from django.core.exceptions import ImproperlyConfigured

from config.env import env, secret_key
from tests.conftest import REPO

# Variables these tests set themselves; the rest of the environment is passed on.
OWN = {
    "DATABASE_URL",
    "CELERY_BROKER_URL",
    "DEBUG",
    "SECRET_KEY",
    "SECURE_COOKIES",
    "SECURE_SSL_REDIRECT",
    "SECURE_HSTS_SECONDS",
    "SECURE_PROXY_SSL_HEADER",
    "API_TOKEN_TTL_DAYS",
    "LOGIN_FAILURE_LIMIT",
    "LOGIN_COOLOFF_MINUTES",
}
GOOD_KEY = "settings-test-key-" + "0123456789abcdef" * 2  # 50 characters, as DEBUG=0 demands
# A PostgreSQL address that is never connected to: `check` without --database does not touch the database.
POSTGRES = "postgres://concord@127.0.0.1:1/concord"


def start(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if k not in OWN}
    return subprocess.run(
        [sys.executable, "manage.py", "check", *args], cwd=REPO, env={**base, **env}, capture_output=True, text=True
    )


def settings_under(env: dict[str, str], *names: str) -> dict:
    """The named settings as a process started with `env` (and nothing else of ours) sees them."""
    base = {k: v for k, v in os.environ.items() if k not in OWN}
    probe = (
        "import json, django; from django.conf import settings; django.setup(); "
        f"print(json.dumps({{n: getattr(settings, n, None) for n in {list(names)!r}}}, default=str))"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=REPO,
        env={**base, "DJANGO_SETTINGS_MODULE": "config.settings", **env},
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(result.stdout.splitlines()[-1])


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"DEBUG": "maybe"}, "DEBUG='maybe' is not a boolean"),
        (
            {"DATABASE_URL": "mysql://root@localhost/concord"},
            "DATABASE_URL='mysql://root@localhost/concord' is not a database URL",
        ),
        (
            {"DATABASE_URL": "postgres://postgres@127.0.0.1:5432"},
            "DATABASE_URL='postgres://postgres@127.0.0.1:5432' names no database",
        ),
        ({"CELERY_BROKER_URL": "localhost:6379"}, "CELERY_BROKER_URL='localhost:6379' is not a broker URL"),
        (
            {"DEBUG": "0", "SECRET_KEY": "short-key"},
            "SECRET_KEY has 9 characters; with DEBUG off it must have at least 50",
        ),
        ({"SECRET_KEY": "k" * 49}, "SECRET_KEY has 49 characters"),  # DEBUG is off unless set
        ({"SECRET_KEY": "k" * 50}, "SECRET_KEY is not random enough"),
        ({"API_TOKEN_TTL_DAYS": "0"}, "API_TOKEN_TTL_DAYS='0' must be at least 1"),
        ({"LOGIN_FAILURE_LIMIT": "many"}, "LOGIN_FAILURE_LIMIT='many' is not an integer"),
        ({"ALLOWED_HOSTS": "a.org,,b.org"}, "ALLOWED_HOSTS='a.org,,b.org' has an empty entry"),
    ],
)
@pytest.mark.slow  # starts Django in a process for each case; the full suite runs it
def test_it_refuses_to_start_with_a_malformed_variable(env, message):
    result = start(env)
    assert result.returncode != 0
    assert message in result.stderr


@pytest.mark.slow  # starts Django in a process; the full suite runs it
def test_it_starts_on_the_embedded_default_with_nothing_set(tmp_path):
    result = start({"DATABASE_URL": f"sqlite:///{tmp_path / 'x.sqlite3'}"})
    assert result.returncode == 0, result.stderr


@pytest.mark.slow  # starts Django in a process; the full suite runs it
def test_debug_is_off_unless_set_and_the_embedded_default_keeps_plain_http_cookies(tmp_path):
    names = ("DEBUG", "SESSION_COOKIE_SECURE", "CSRF_COOKIE_SECURE", "SECURE_HSTS_SECONDS", "CSRF_COOKIE_HTTPONLY")
    embedded = settings_under({"DATABASE_URL": f"sqlite:///{tmp_path / 'x.sqlite3'}"}, *names)
    assert embedded == {
        "DEBUG": False,
        "SESSION_COOKIE_SECURE": False,  # served over plain HTTP on loopback by `manage.py runserver`
        "CSRF_COOKIE_SECURE": False,
        "SECURE_HSTS_SECONDS": 0,
        "CSRF_COOKIE_HTTPONLY": True,
    }
    production = settings_under({"DATABASE_URL": POSTGRES, "SECRET_KEY": GOOD_KEY}, *names)
    assert production == {
        "DEBUG": False,
        "SESSION_COOKIE_SECURE": True,
        "CSRF_COOKIE_SECURE": True,
        "SECURE_HSTS_SECONDS": 31_536_000,
        "CSRF_COOKIE_HTTPONLY": True,
    }
    assert settings_under({"DATABASE_URL": POSTGRES, "DEBUG": "1"}, "DEBUG", "SESSION_COOKIE_SECURE") == {
        "DEBUG": True,
        "SESSION_COOKIE_SECURE": False,
    }


@pytest.mark.slow  # starts Django in a process; the full suite runs it
def test_the_deployment_check_is_clean_with_the_documented_production_settings():
    env = {"DATABASE_URL": POSTGRES, "DEBUG": "0", "SECRET_KEY": GOOD_KEY, "SECURE_SSL_REDIRECT": "1"}
    result = start(env, "--deploy", "--fail-level", "WARNING")
    assert result.returncode == 0, result.stderr
    assert "no issues" in result.stdout


@pytest.mark.slow  # starts Django in a process; the full suite runs it
def test_the_token_lifetime_and_the_login_lockout_come_from_the_environment():
    values = settings_under(
        {"API_TOKEN_TTL_DAYS": "7", "LOGIN_FAILURE_LIMIT": "3", "LOGIN_COOLOFF_MINUTES": "30"},
        "API_TOKEN_TTL",
        "AXES_FAILURE_LIMIT",
        "AXES_COOLOFF_TIME",
    )
    assert values == {"API_TOKEN_TTL": "7 days, 0:00:00", "AXES_FAILURE_LIMIT": 3, "AXES_COOLOFF_TIME": "0:30:00"}
    defaults = settings_under({}, "API_TOKEN_TTL", "AXES_FAILURE_LIMIT", "AXES_COOLOFF_TIME")
    assert defaults == {"API_TOKEN_TTL": "30 days, 0:00:00", "AXES_FAILURE_LIMIT": 5, "AXES_COOLOFF_TIME": "0:15:00"}


class TestSecretKey:
    def test_it_makes_a_key_file_once_readable_by_its_owner_only_and_keeps_it(self, tmp_path, monkeypatch):
        monkeypatch.delenv("SECRET_KEY", raising=False)
        key_file = tmp_path / "var" / "secret_key"

        first = secret_key("SECRET_KEY", key_file=key_file, debug=False)
        second = secret_key("SECRET_KEY", key_file=key_file, debug=False)

        assert first == second == key_file.read_text().strip()
        assert len(first) >= 50
        assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
        assert [path.name for path in key_file.parent.iterdir()] == ["secret_key"]  # no temporary file left

    def test_a_key_from_the_environment_wins_and_must_be_long_without_debug(self, tmp_path, monkeypatch):
        key_file = tmp_path / "secret_key"
        monkeypatch.setenv("SECRET_KEY", GOOD_KEY)
        assert secret_key("SECRET_KEY", key_file=key_file, debug=False) == GOOD_KEY
        assert not key_file.exists()
        monkeypatch.setenv("SECRET_KEY", "dev")
        assert secret_key("SECRET_KEY", key_file=key_file, debug=True) == "dev"
        with pytest.raises(ImproperlyConfigured, match="SECRET_KEY has 3 characters"):
            secret_key("SECRET_KEY", key_file=key_file, debug=False)

    def test_a_key_file_that_cannot_be_made_names_the_file_and_the_variable(self, tmp_path, monkeypatch):
        monkeypatch.delenv("SECRET_KEY", raising=False)
        blocker = tmp_path / "not-a-folder"
        blocker.write_text("")
        with pytest.raises(
            ImproperlyConfigured, match=r"key file .*not-a-folder/secret_key could not be made.*set SECRET_KEY"
        ):
            secret_key("SECRET_KEY", key_file=blocker / "secret_key", debug=False)


def test_the_readers_are_django_environs_and_parse_good_values(monkeypatch):
    monkeypatch.setenv("FLAG", "Yes")
    monkeypatch.setenv("OFF", "")
    monkeypatch.setenv("NUMBER", "12")
    monkeypatch.setenv("HOSTS", "a.org, b.org")
    monkeypatch.setenv("DB", "postgres://u@db:5432/concord")
    monkeypatch.setenv("BROKER", "redis://redis:6379/0")
    monkeypatch.setenv("KEY", "$NUMBER-is-not-a-reference")

    assert isinstance(env, environ.Env)
    assert env.bool("FLAG", default=False) is True
    assert env.bool("OFF", default=True) is False
    assert env.bool("UNSET_FLAG", default=True) is True
    assert env.int("NUMBER", 1, minimum=1) == 12
    assert env.int("UNSET_NUMBER", 7) == 7
    assert env.list("HOSTS", default=[]) == ["a.org", "b.org"]
    assert env.str("KEY", default=None) == "$NUMBER-is-not-a-reference"  # django-environ would read it as a proxy
    db = env.db_url("DB", default="sqlite:///x")
    assert (db["ENGINE"], db["NAME"], db["HOST"], db["PORT"], db["CONN_MAX_AGE"]) == (
        "django.db.backends.postgresql",
        "concord",
        "db",
        5432,
        60,
    )
    assert env.db_url("UNSET_DB", default="sqlite:///var/x.sqlite3")["NAME"] == "var/x.sqlite3"
    assert env.broker_url("BROKER") == "redis://redis:6379/0"
    monkeypatch.delenv("BROKER")
    assert env.broker_url("BROKER") is None


def test_the_readers_name_the_variable_in_errors(monkeypatch):
    monkeypatch.setenv("NUMBER", "twelve")
    with pytest.raises(ImproperlyConfigured, match="NUMBER='twelve' is not an integer"):
        env.int("NUMBER", 1)
    monkeypatch.setenv("NUMBER", "0")
    with pytest.raises(ImproperlyConfigured, match="NUMBER='0' must be at least 1"):
        env.int("NUMBER", 1, minimum=1)
    monkeypatch.setenv("FLAG", "maybe")  # django-environ alone reads it as False
    with pytest.raises(ImproperlyConfigured, match="FLAG='maybe' is not a boolean"):
        env.bool("FLAG", default=True)
    monkeypatch.setenv("HOSTS", "a.org,,b.org")
    with pytest.raises(ImproperlyConfigured, match="HOSTS='a.org,,b.org' has an empty entry"):
        env.list("HOSTS", default=[])
    monkeypatch.setenv("DB", "mysql://root@localhost/concord")
    with pytest.raises(ImproperlyConfigured, match="DB='mysql://root@localhost/concord' is not a database URL"):
        env.db_url("DB", default="sqlite:///x")
    monkeypatch.setenv("DB", "postgres://postgres@127.0.0.1:5432")
    with pytest.raises(ImproperlyConfigured, match="names no database"):
        env.db_url("DB", default="sqlite:///x")
    monkeypatch.setenv("BROKER", "localhost:6379")
    with pytest.raises(ImproperlyConfigured, match="BROKER='localhost:6379' is not a broker URL"):
        env.broker_url("BROKER")


@pytest.mark.slow  # starts Django in a process; the full suite runs it
def test_the_embedded_sqlite_runs_in_wal_mode_with_a_busy_timeout(tmp_path):
    """Readers never wait for a writer, and a writer waits for the lock (never 'database is locked' at once): an
    import writing next to an annotator's save."""
    base = {k: v for k, v in os.environ.items() if k not in OWN}
    probe = (
        "import json, django; django.setup(); from django.db import connection; cursor = connection.cursor(); "
        "print(json.dumps([cursor.execute(f'PRAGMA {p}').fetchone()[0] for p in ('journal_mode', 'busy_timeout')]))"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=REPO,
        env={
            **base,
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "DATABASE_URL": f"sqlite:///{tmp_path / 'x.sqlite3'}",
        },
        capture_output=True,
        text=True,
        check=True,
    )
    journal_mode, busy_timeout_ms = json.loads(result.stdout.splitlines()[-1])
    assert journal_mode == "wal"
    assert busy_timeout_ms >= 5000
