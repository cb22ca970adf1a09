"""Configuration comes from the environment; a malformed value stops start-up naming the variable."""

import os
import subprocess
import sys

import pytest
from django.core.exceptions import ImproperlyConfigured

from config.env import broker_from_url, database_from_url, env_bool, env_int, env_list
from tests.conftest import REPO


def start(env: dict[str, str]) -> subprocess.CompletedProcess:
    base = {
        k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "CELERY_BROKER_URL", "DEBUG", "SECRET_KEY"}
    }
    return subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=REPO, env={**base, **env}, capture_output=True, text=True
    )


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
        ({"DEBUG": "0"}, "SECRET_KEY must be set when DEBUG is off"),
        ({"ALLOWED_HOSTS": "a.org,,b.org"}, "ALLOWED_HOSTS='a.org,,b.org' has an empty entry"),
    ],
)
def test_it_refuses_to_start_with_a_malformed_variable(env, message):
    result = start(env)
    assert result.returncode != 0
    assert message in result.stderr


def test_it_starts_on_the_embedded_default_with_nothing_set(tmp_path):
    result = start({"DATABASE_URL": f"sqlite:///{tmp_path / 'x.sqlite3'}"})
    assert result.returncode == 0, result.stderr


def test_the_helpers_parse_good_values(monkeypatch):
    monkeypatch.setenv("FLAG", "Yes")
    monkeypatch.setenv("NUMBER", "12")
    monkeypatch.setenv("HOSTS", "a.org, b.org")
    monkeypatch.setenv("DB", "postgres://u@db:5432/concord")
    monkeypatch.setenv("BROKER", "redis://redis:6379/0")

    assert env_bool("FLAG", default=False) is True
    assert env_int("NUMBER", 1, minimum=1) == 12
    assert env_list("HOSTS", []) == ["a.org", "b.org"]
    db = database_from_url("DB", default="sqlite:///x")
    assert (db["ENGINE"], db["NAME"], db["HOST"], db["PORT"]) == (
        "django.db.backends.postgresql",
        "concord",
        "db",
        5432,
    )
    assert broker_from_url("BROKER") == "redis://redis:6379/0"
    monkeypatch.delenv("BROKER")
    assert broker_from_url("BROKER") is None


def test_the_helpers_name_the_variable_in_errors(monkeypatch):
    monkeypatch.setenv("NUMBER", "twelve")
    with pytest.raises(ImproperlyConfigured, match="NUMBER='twelve' is not an integer"):
        env_int("NUMBER", 1)
    monkeypatch.setenv("NUMBER", "0")
    with pytest.raises(ImproperlyConfigured, match="NUMBER='0' must be at least 1"):
        env_int("NUMBER", 1, minimum=1)
