"""The production web server (python -m config.web): a stop drains the requests in flight, and POST bodies are
buffered so a response that leaves its body unread reaches the client whole. Served: tests/slow_wsgi_app.py, under
the same uWSGI command line as Concord."""

import http.client
import os
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.slow

# The longest any step waits for the server, however loaded the machine: a bound for a broken server, not a pace.
WAIT_SECONDS = 120


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def server(monkeypatch, tmp_path):
    from config.web import uwsgi_command

    port = free_port()
    monkeypatch.setenv("CONCORD_TEST_SLOW_STARTED", str(tmp_path / "slow-started"))
    monkeypatch.setenv("CONCORD_TEST_SLOW_RELEASE", str(tmp_path / "slow-release"))
    monkeypatch.setenv("WEB_BIND", f"127.0.0.1:{port}")
    monkeypatch.setenv("WEB_CONCURRENCY", "2")
    monkeypatch.setenv("WEB_TIMEOUT", str(WAIT_SECONDS))  # no harakiri or mercy ends a request the test holds
    # uWSGI ignores SIGTERM until its master has installed the stop hook, which a loaded machine lets a process
    # outrun: a hook after it creates a file, and the server is ready once that file exists.
    ready = tmp_path / "master-ready"
    command = [*uwsgi_command(module="tests.slow_wsgi_app:application"), "--hook-master-start", f"create:{ready}"]
    # A session of its own, so that the teardown ends the router and the Django processes together.
    process = subprocess.Popen(
        command, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=os.environ, start_new_session=True
    )
    deadline = time.monotonic() + WAIT_SECONDS
    while time.monotonic() < deadline and process.poll() is None:
        if ready.exists():
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                pass
        time.sleep(0.05)
    else:
        os.killpg(process.pid, signal.SIGKILL)
        pytest.fail("the web server did not start: " + process.communicate()[1].decode()[-2000:])
    yield process, port
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait()


def test_a_stop_lets_the_requests_in_flight_finish(server):
    """Each step waits for the one before it, not for a time: the request is held by a process (it says so), the stop
    begins (uWSGI's master says it is gracefully killing its workers), and only then is the page let finish."""
    process, port = server
    answers, sent, stopping = {}, threading.Event(), threading.Event()

    def slow_request():
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=WAIT_SECONDS)
        connection.request("GET", "/slow")
        sent.set()
        response = connection.getresponse()
        answers["slow"] = (response.status, response.read())
        connection.close()

    log: list[bytes] = []

    def master_log():
        for line in process.stderr:
            log.append(line)
            if b"Gracefully killing worker" in line:
                stopping.set()

    threading.Thread(target=master_log, daemon=True).start()
    client = threading.Thread(target=slow_request)
    client.start()
    assert sent.wait(WAIT_SECONDS)
    started = Path(os.environ["CONCORD_TEST_SLOW_STARTED"])
    deadline = time.monotonic() + WAIT_SECONDS
    while not started.exists() and time.monotonic() < deadline:  # until a process holds it
        time.sleep(0.01)
    assert started.exists(), "no process took the request"
    process.send_signal(signal.SIGTERM)
    assert stopping.wait(WAIT_SECONDS), "the server did not begin to stop"
    assert process.poll() is None and "slow" not in answers  # the stop waits on the request in flight
    Path(os.environ["CONCORD_TEST_SLOW_RELEASE"]).touch()
    client.join(WAIT_SECONDS)
    assert answers.get("slow") == (200, b"slow and whole")
    try:
        assert process.wait(timeout=WAIT_SECONDS) == 0  # then it stopped, rather than reloading
    except subprocess.TimeoutExpired:
        pytest.fail("the server did not stop: " + b"".join(log).decode(errors="replace")[-3000:])


def test_a_response_to_an_unread_post_body_is_never_cut_off(server):
    _, port = server
    body = b"x" * (4 * 1024 * 1024)
    for _ in range(5):
        with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
            head = (
                f"POST /refuse HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nContent-Length: {len(body)}\r\n\r\n"
            )
            sock.sendall(head.encode() + body)
            received = b""
            while b"refused" not in received:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                received += chunk
        assert received.startswith(b"HTTP/1.1 403") and received.endswith(b"refused")


def test_a_head_response_carries_no_body_so_the_next_response_on_the_connection_is_whole(server):
    _, port = server
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    connection.request("HEAD", "/")
    head = connection.getresponse()
    assert (head.status, head.getheader("Content-Length"), head.read()) == (200, "2", b"")
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(b"HEAD / HTTP/1.1\r\nHost: x\r\n\r\n")
        time.sleep(0.5)
        sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        received = b""
        while received.count(b"HTTP/1.1 200") < 2 or not received.endswith(b"ok"):
            chunk = sock.recv(65536)
            if not chunk:
                break
            received += chunk
    head_part, get_part = received.split(b"HTTP/1.1 200 OK", 2)[1:]
    assert head_part.endswith(b"\r\n\r\n")  # the headers, and nothing after them
    assert get_part.endswith(b"\r\n\r\nok")


def test_a_request_line_over_32_kb_is_answered_414_before_django_reads_it():
    from config.hygiene import MAX_REQUEST_LINE, HttpHygiene

    reached = []

    def application(environ, start_response):
        reached.append(environ["PATH_INFO"])
        start_response("200 OK", [("Content-Length", "2")])
        return [b"ok"]

    def call(path: str) -> str:
        statuses = []
        environ = {"REQUEST_METHOD": "GET", "REQUEST_URI": path, "PATH_INFO": path, "SERVER_PROTOCOL": "HTTP/1.1"}
        body = b"".join(HttpHygiene(application)(environ, lambda status, headers: statuses.append(status)))
        return f"{statuses[0]} {body.decode()}"

    line_overhead = len("GET  HTTP/1.1")
    assert call("/" + "a" * (MAX_REQUEST_LINE - line_overhead - 1)) == "200 OK ok"
    assert call("/" + "a" * (MAX_REQUEST_LINE - line_overhead)).startswith(
        "414 URI Too Long The request line is longer"
    )
    assert len(reached) == 1
