"""Smoke test of the embedded default: SQLite file, no broker, demo data and logins, a real server answering."""

from __future__ import annotations

import http.cookiejar
import json
import os
import re
import socket
import stat
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.db_template import sqlite_migrated

pytestmark = [pytest.mark.slow, pytest.mark.embedded]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def embedded_env(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "CELERY_BROKER_URL"}}
    # Same defaults as the README's run command, but a throwaway SQLite file instead of var/concord.sqlite3.
    env["DATABASE_URL"] = f"sqlite:///{tmp_path / 'concord.sqlite3'}"
    env["HF_HUB_OFFLINE"] = "1"
    # One torch thread for the demo job the server runs in the background: several threads would fight this test's
    # requests (and the other tests of a busy machine) for the cores.
    env["OMP_NUM_THREADS"] = "1"
    env["CONCORD_DEMO_LOGINS"] = str(tmp_path / "demo-logins.json")
    env.pop("CONCORD_DEMO", None)  # the embedded default installs the demo app by itself
    return env


def manage(env, *args, timeout=900) -> str:
    result = subprocess.run(
        [sys.executable, "manage.py", *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


def test_it_serves_the_demo_on_sqlite_with_printed_logins(embedded_env):
    # A copy of a migrated file (migrated once per set of migrations): `migrate` then has nothing to apply.
    sqlite_migrated(Path(embedded_env["DATABASE_URL"].removeprefix("sqlite:///")), embedded_env)
    manage(embedded_env, "migrate", "--no-input", "-v0")
    output = manage(embedded_env, "load_demo")
    logins = dict(re.findall(r"^\s+annotator\s+(annotator1)\s+(\S+)$", output, re.M))
    assert "annotator1" in logins, output
    assert stat.S_IMODE(os.stat(embedded_env["CONCORD_DEMO_LOGINS"]).st_mode) == 0o600

    # The hand-written pool is ready at once; the live demo job is only queued (the server runs it in the background).
    assert "pool demo: 48 hand-written items, 16 of them for both annotator1 and annotator2" in output
    assert re.search(r"^queued job \d+: 20 continuations of demo-misgendered", output, re.M), output
    assert "/generation/jobs/" in output

    # Loading the demo twice is harmless (a second start of the run command): no second job, no new items.
    again = manage(embedded_env, "load_demo")
    assert "demo-misgendered: 120 instances" in again
    assert re.search(r"^dataset demo-tango: \d+ instances", again, re.M), again
    assert "queued job" not in again and "hand-written items" not in again
    assert "pool demo: ready (48 items)" in again
    # The logins are kept (a restart logs nobody out) and printed again.
    assert dict(re.findall(r"^\s+annotator\s+(annotator1)\s+(\S+)$", again, re.M)) == logins

    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload"],
        cwd=REPO,
        env=embedded_env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        jar = http.cookiejar.CookieJar()
        opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
        deadline = time.monotonic() + 180  # a first start on a busy 2-core machine takes a minute or more
        while time.monotonic() < deadline:
            try:
                page = opener.open(f"{base}/login/", timeout=30).read().decode()
                break
            except OSError:
                time.sleep(0.5)
        else:
            pytest.fail("the server did not answer: " + server.stderr.read1().decode())
        csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
        password = logins["annotator1"]
        body = urllib.parse.urlencode({"username": "annotator1", "password": password, "csrfmiddlewaretoken": csrf})
        request = urllib.request.Request(f"{base}/login/", data=body.encode(), headers={"Referer": f"{base}/login/"})
        # An annotator lands on their queue: with one pool, its annotation page.
        home = opener.open(request, timeout=60)
        assert home.geturl() == f"{base}/annotate/"
        assert 'data-pool="demo"' in home.read().decode()
        assert opener.open(f"{base}/static/css/concord.css", timeout=5).status == 200
        # The demo pool is waiting for this annotator: half of 48 items plus half of the 16 doubled ones.
        assert opener.open(f"{base}/annotate/demo/", timeout=60).status == 200
        first = json.loads(opener.open(f"{base}/api/annotate/next/?pool=demo", timeout=60).read())
        assert first["position"] == 1 and first["total"] == 32
        assert first["context"] and first["generation"]
        # A save moves the queue on: SQLite's triggers keep each assignment's "annotated" flag.
        csrf_cookie = next(cookie.value for cookie in jar if cookie.name == "csrftoken")
        save = urllib.request.Request(
            f"{base}/api/annotations/",
            data=json.dumps({"item": first["item"], "label": "correct"}).encode(),
            headers={"Content-Type": "application/json", "X-CSRFToken": csrf_cookie, "Referer": f"{base}/annotate/"},
        )
        assert opener.open(save, timeout=60).status == 201
        second = json.loads(opener.open(f"{base}/api/annotate/next/?pool=demo", timeout=60).read())
        assert (second["position"], second["done"], second["previous"]) == (2, 1, first["item"])
        # A refused page is a one-line warning in the terminal, not a traceback.
        with pytest.raises(urllib.error.HTTPError) as refused:
            opener.open(f"{base}/pools/", timeout=60)
        assert refused.value.code == 403
    finally:
        server.terminate()
        server.wait(timeout=30)
    terminal = server.stderr.read().decode()
    assert "Forbidden" in terminal and "Traceback" not in terminal, terminal[-3000:]
    # The job load_demo queued is started, not "resumed": nothing was left unfinished before this first start.
    assert "left unfinished" not in terminal, terminal[-3000:]
