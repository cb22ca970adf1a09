"""A tiny WSGI app for the web server's own tests (tests/test_web_server.py): one slow page, one that answers a POST
without reading its body. Served by the same uWSGI command line as Concord (config.web.uwsgi_command), wrapped as
config/wsgi.py wraps Concord."""

import importlib.util
import os
import time
from pathlib import Path

# Loaded by its path: importing the `config` package would load Celery and Django into this tiny app.
_spec = importlib.util.spec_from_file_location(
    "concord_hygiene", Path(__file__).parent.parent / "config" / "hygiene.py"
)
assert _spec is not None and _spec.loader is not None
_hygiene = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_hygiene)
HttpHygiene = _hygiene.HttpHygiene

SLOW_SECONDS = 2.0  # without CONCORD_TEST_SLOW_RELEASE
RELEASE_WAIT_SECONDS = 300  # the longest /slow waits for its release, should the test be gone


def _application(environ, start_response):
    if environ["PATH_INFO"] == "/slow":
        started = os.environ.get("CONCORD_TEST_SLOW_STARTED")
        if started:  # tells the test that a process holds the request (a file, as the process is another one)
            Path(started).touch()
        release = os.environ.get("CONCORD_TEST_SLOW_RELEASE")
        if release:  # the page ends when the test says so (it creates the file), however loaded the machine
            deadline = time.monotonic() + RELEASE_WAIT_SECONDS
            while not Path(release).exists() and time.monotonic() < deadline:
                time.sleep(0.01)
        else:
            time.sleep(SLOW_SECONDS)
        body = b"slow and whole"
    elif environ["PATH_INFO"] == "/refuse":  # like a 403 that never reads the POST body
        start_response("403 Forbidden", [("Content-Type", "text/plain"), ("Content-Length", "7")])
        return [b"refused"]
    else:
        body = b"ok"
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]


application = HttpHygiene(_application)
