"""docker-compose.yml is what users run in production: Compose itself must accept it, with the services we document."""

import os
import shutil
import subprocess
import sys

import pytest

from tests.conftest import REPO


@pytest.fixture(scope="module")
def compose() -> dict:
    if shutil.which("docker-compose") is None:
        pytest.fail("docker-compose is not installed (scripts/test.sh installs Debian's docker-compose)")
    result = subprocess.run(
        ["docker-compose", "-f", "docker-compose.yml", "config"],
        cwd=REPO,
        env={**os.environ, "SECRET_KEY": "compose-test"},
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    import yaml

    return yaml.safe_load(result.stdout)


def test_compose_accepts_the_file_and_defines_every_service(compose):
    assert set(compose["services"]) == {"db", "redis", "web", "worker-generation", "worker-default"}


def test_the_generation_worker_reserves_a_gpu_and_listens_on_its_queue(compose):
    worker = compose["services"]["worker-generation"]
    devices = worker["deploy"]["resources"]["reservations"]["devices"]
    assert devices[0]["capabilities"] == ["gpu"]
    command = worker["command"] if isinstance(worker["command"], str) else " ".join(worker["command"])
    assert "-Q generation" in command


def test_every_app_service_talks_to_postgres_and_redis(compose):
    for name in ("web", "worker-generation", "worker-default"):
        env = compose["services"][name]["environment"]
        assert env["DATABASE_URL"].startswith("postgres://")
        assert env["CELERY_BROKER_URL"].startswith("redis://redis:6379")
        assert env["DEBUG"] == "0"


def test_compose_refuses_to_start_without_a_secret_key():
    env = {k: v for k, v in os.environ.items() if k != "SECRET_KEY"}
    result = subprocess.run(["docker-compose", "config", "-q"], cwd=REPO, env=env, capture_output=True, text=True)
    assert result.returncode != 0
    assert "SECRET_KEY" in result.stderr


def test_the_ci_script_runs_the_readme_test_command():
    readme = (REPO / "README.md").read_text()
    ci = (REPO / ".ci" / "run").read_text()
    assert "bash scripts/test.sh" in readme
    assert "bash scripts/test.sh" in ci


def gunicorn_config(**env) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "gunicorn", "-c", "config/gunicorn.py", "--print-config", "config.wsgi:application"],
        cwd=REPO,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
    )


def test_the_web_servers_settings_load_and_read_the_environment():
    lines = gunicorn_config(WEB_THREADS="6").stdout.splitlines()
    settings = {key.strip(): value.strip() for key, _, value in (line.partition(" = ") for line in lines)}
    assert settings["worker_class"] == "gthread"
    assert (settings["workers"], settings["threads"]) == ("4", "6")


def test_the_web_servers_settings_name_a_bad_variable():
    result = gunicorn_config(WEB_THREADS="many")
    assert result.returncode != 0
    assert "WEB_THREADS='many' is not an integer" in result.stderr


def test_every_way_to_start_the_web_server_uses_its_settings_file():
    for path in ("Dockerfile", "docker-compose.yml", "README.md"):
        assert "gunicorn -c config/gunicorn.py" in (REPO / path).read_text().replace('", "', " ").replace('["', "")
