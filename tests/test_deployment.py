"""What users run in production: docker-compose.yml (Compose itself must accept it, with the services we document)
and the web server (`python -m config.web`), started for real."""

import http.client
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPO

PRODUCTION_KEY = "deployment-test-not-secret-" + "0123456789abcdef" * 3  # 50+ characters, as DEBUG=0 demands


@pytest.fixture(scope="module")
def compose() -> dict:
    if shutil.which("docker-compose") is None:
        pytest.fail("docker-compose is not installed (scripts/test.sh installs Debian's docker-compose)")
    result = subprocess.run(
        ["docker-compose", "-f", "docker-compose.yml", "config"],
        cwd=REPO,
        env={**os.environ, "SECRET_KEY": PRODUCTION_KEY},
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    import yaml

    return yaml.safe_load(result.stdout)


def test_compose_accepts_the_file_and_defines_every_service(compose):
    assert set(compose["services"]) == {
        "db",
        "redis",
        "proxy",
        "web",
        "worker-generation",
        "worker-gpu",
        "worker-default",
    }


def test_only_the_proxy_is_published_and_it_forwards_to_the_web_server_that_trusts_it(compose):
    proxy, web = compose["services"]["proxy"], compose["services"]["web"]
    assert "ports" not in web
    assert "8000" in str(proxy["ports"])
    assert proxy["image"].startswith("nginx:")
    assert proxy["environment"]["CONCORD_UPSTREAM"] == "web:8000"
    mounts = [v if isinstance(v, str) else f"{v['source']}:{v['target']}" for v in proxy["volumes"]]
    assert any(
        m.split(":")[0].endswith("deploy/nginx/concord.conf.template")
        and m.split(":")[1] == "/etc/nginx/templates/default.conf.template"
        for m in mounts
    ), mounts
    assert web["environment"]["TRUSTED_PROXY_COUNT"] == "1"  # the lockout counts the address nginx saw


def _command(service: dict) -> str:
    return service["command"] if isinstance(service["command"], str) else " ".join(service["command"])


def test_the_cpu_generation_worker_listens_on_its_queue(compose):
    assert "-Q generation " in _command(compose["services"]["worker-generation"]) + " "


def test_the_gpu_worker_runs_vllm_on_a_reserved_nvidia_gpu_and_takes_the_vllm_queue(compose):
    worker = compose["services"]["worker-gpu"]
    devices = worker["deploy"]["resources"]["reservations"]["devices"]
    assert devices[0]["capabilities"] == ["gpu"] and devices[0]["driver"] == "nvidia"
    assert worker["runtime"] == "nvidia"
    assert worker["profiles"] == ["gpu"]  # `docker compose up` on a host without the NVIDIA runtime leaves it out
    assert worker["build"]["target"] == "gpu"
    assert worker["environment"]["CONCORD_ENGINE"] == "vllm"
    assert "-Q generation-gpu,generation" in _command(worker)


def test_the_dockerfile_has_a_gpu_target_that_installs_the_gpu_requirements():
    dockerfile = (REPO / "Dockerfile").read_text()
    assert "AS gpu" in dockerfile and "requirements-gpu.txt" in dockerfile
    requirements = (REPO / "requirements-gpu.txt").read_text()
    assert "vllm==" in requirements and "bitsandbytes==" in requirements


def test_every_app_service_talks_to_postgres_and_redis(compose):
    for name in ("web", "worker-generation", "worker-gpu", "worker-default"):
        env = compose["services"][name]["environment"]
        assert env["DATABASE_URL"].startswith("postgres://")
        assert env["CELERY_BROKER_URL"].startswith("redis://redis:6379")
        assert env["DEBUG"] == "0"


def test_every_app_service_runs_with_debug_off_and_the_secret_key_it_was_given(compose):
    for name in ("web", "worker-generation", "worker-gpu", "worker-default"):
        env = compose["services"][name]["environment"]
        assert env["DEBUG"] == "0"
        assert env["SECRET_KEY"] == PRODUCTION_KEY


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


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def web_command(monkeypatch, **env) -> list[str]:
    from config.web import uwsgi_command

    for name in ("WEB_BIND", "WEB_CONCURRENCY", "WEB_THREADS", "WEB_TIMEOUT"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return uwsgi_command()


def option(command: list[str], name: str) -> str:
    return command[command.index(name) + 1]


def test_the_web_server_reads_its_settings_from_the_environment(monkeypatch):
    defaults = web_command(monkeypatch)
    assert [option(defaults, flag) for flag in ("--http", "--processes", "--threads", "--harakiri")] == [
        "0.0.0.0:8000",
        "4",
        "1",
        "60",
    ]
    assert option(defaults, "--module") == "config.wsgi:application"
    if sys.platform == "linux":
        # The router reaches the processes over a Unix socket of this server's own, not a loopback TCP port.
        assert re.fullmatch(rf"@concord-web-{os.getpid()}-[0-9a-f]{{8}}", option(defaults, "--socket"))
        assert option(web_command(monkeypatch), "--socket") != option(defaults, "--socket")  # one per server

    command = web_command(
        monkeypatch, WEB_BIND="127.0.0.1:9000", WEB_CONCURRENCY="8", WEB_THREADS="3", WEB_TIMEOUT="30"
    )
    assert [option(command, flag) for flag in ("--http", "--processes", "--threads", "--harakiri")] == [
        "127.0.0.1:9000",
        "8",
        "3",
        "30",
    ]


def test_the_web_servers_listen_queue_holds_a_burst_within_the_kernels_limit(monkeypatch):
    queue = int(option(web_command(monkeypatch), "--listen"))
    limit = Path("/proc/sys/net/core/somaxconn")

    assert queue == (min(1024, int(limit.read_text())) if limit.exists() else 128)


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("WEB_THREADS", "many", "WEB_THREADS='many' is not an integer"),
        ("WEB_CONCURRENCY", "0", "WEB_CONCURRENCY='0' must be at least 1"),
        ("WEB_BIND", "8000", "WEB_BIND='8000' is not an address"),
        ("WEB_BIND", "0.0.0.0:http", "WEB_BIND='0.0.0.0:http' is not an address"),
    ],
)
@pytest.mark.slow  # starts the web server in a process for each case; the full suite runs it
def test_the_web_server_names_a_bad_variable_and_does_not_start(name, value, message):
    result = subprocess.run(
        [sys.executable, "-m", "config.web"],
        cwd=REPO,
        env={**os.environ, name: value},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0
    assert message in result.stderr


def production_server(directory: Path, port: int) -> subprocess.Popen:
    """`python -m config.web` as in production (DEBUG off, 2 processes) on its own SQLite file, on 127.0.0.1:port."""
    env = {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{directory / 'web.sqlite3'}",
        "DEBUG": "0",
        "SECRET_KEY": PRODUCTION_KEY,
        "ALLOWED_HOSTS": "127.0.0.1",
        "SECURE_COOKIES": "0",
        "WEB_BIND": f"127.0.0.1:{port}",
        "WEB_CONCURRENCY": "2",
    }
    return subprocess.Popen(
        [sys.executable, "-m", "config.web"], cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )


@pytest.mark.slow  # starts a process; the full suite runs it
def test_the_web_server_keeps_connections_alive_and_stops_on_sigterm(tmp_path):
    port = free_port()
    server = production_server(tmp_path, port)
    try:
        connection = None
        for _ in range(150):
            try:
                connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
                connection.connect()
                break
            except OSError:
                time.sleep(0.2)
        assert connection is not None and connection.sock is not None, "the web server did not start"
        local = connection.sock.getsockname()
        if sys.platform == "linux":
            assert f"@concord-web-{server.pid}-" in Path("/proc/net/unix").read_text()
        for _ in range(3):
            connection.request("GET", "/login/")
            response = connection.getresponse()
            assert response.status == 200
            assert b'name="csrfmiddlewaretoken"' in response.read()
            assert connection.sock is not None and connection.sock.getsockname() == local  # the same connection
        connection.request("GET", "/api/annotate/next/")
        response = connection.getresponse()
        assert response.status == 401 and response.read()  # Django answered, through the same router
        connection.close()

        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=20) is not None  # stopped, not reloaded
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()


@pytest.mark.slow  # starts a process; the full suite runs it
def test_the_wsgi_module_loads_every_view_before_the_server_forks_and_freezes_them():
    probe = (
        "import gc, sys; import config.wsgi; "
        "print(gc.get_freeze_count(), 'annotation.apis' in sys.modules, 'analysis.views' in sys.modules)"
    )
    env = {
        **os.environ,
        "DATABASE_URL": "sqlite:///:memory:",
        "DEBUG": "0",
        "SECRET_KEY": PRODUCTION_KEY,
        "ALLOWED_HOSTS": "x",
    }
    result = subprocess.run(
        [sys.executable, "-c", probe], cwd=REPO, env=env, capture_output=True, text=True, timeout=60, check=True
    )
    frozen, *loaded = result.stdout.split()
    assert int(frozen) > 10_000  # Django, DRF and the views, out of the collector's reach
    assert loaded == ["True", "True"]


def test_every_way_to_start_the_web_server_uses_its_settings_module():
    for path in ("Dockerfile", "docker-compose.yml", "README.md"):
        assert "python -m config.web" in (REPO / path).read_text().replace('", "', " ").replace('["', "")


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({}, "SECRET_KEY is not set; the production server does not start without it while DEBUG is off"),
        ({"DEBUG": "0"}, "SECRET_KEY is not set"),
        ({"SECRET_KEY": ""}, "SECRET_KEY is not set"),
    ],
)
@pytest.mark.slow  # starts the web server in a process for each case; the full suite runs it
def test_the_web_server_refuses_to_start_without_a_secret_key(env, message):
    base = {k: v for k, v in os.environ.items() if k not in {"SECRET_KEY", "DEBUG"}}
    result = subprocess.run(
        [sys.executable, "-m", "config.web"], cwd=REPO, env={**base, **env}, capture_output=True, text=True, timeout=60
    )
    assert result.returncode != 0
    assert message in result.stderr


def test_the_web_server_refuses_a_short_secret_key_when_it_loads_the_app(tmp_path):
    env = {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{tmp_path / 'web.sqlite3'}",
        "SECRET_KEY": "too-short",
        "WEB_BIND": f"127.0.0.1:{free_port()}",
        "WEB_CONCURRENCY": "1",
    }
    env.pop("DEBUG", None)
    result = subprocess.run(
        [sys.executable, "-m", "config.web"], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode != 0
    assert "SECRET_KEY has 9 characters; with DEBUG off it must have at least 50" in result.stderr


def _wait_for_port(port: int, process: subprocess.Popen, what: str) -> None:
    for _ in range(200):
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            if process.poll() is not None:
                break
            time.sleep(0.1)
    process.kill()
    pytest.fail(f"{what} did not start: " + process.communicate()[1].decode()[-2000:])


def nginx_config(directory: Path, *, port: int, upstream: str) -> Path:
    """deploy/nginx/concord.conf.template filled in as the nginx image does, inside a main configuration that keeps
    every file nginx writes in `directory`."""
    server = (REPO / "deploy" / "nginx" / "concord.conf.template").read_text()
    for name, value in {
        "NGINX_PORT": f"127.0.0.1:{port}",
        "CONCORD_UPSTREAM": upstream,
        "NGINX_MAX_BODY": "110m",
    }.items():
        server = server.replace("${" + name + "}", value)
    assert "${" not in server  # every variable the image fills in, filled in here
    (directory / "concord.conf").write_text(server)
    temp = " ".join(
        f"{kind}_temp_path {directory / kind};" for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    main = directory / "nginx.conf"
    main.write_text(
        ("user root;\n" if os.geteuid() == 0 else "")
        + f"daemon off; worker_processes 1; pid {directory / 'nginx.pid'}; error_log {directory / 'error.log'};\n"
        + f"events {{ worker_connections 64; }}\nhttp {{ access_log off; {temp} include {directory / 'concord.conf'}; }}\n"
    )
    return main


class _KeptOpen:
    """A file that a finished response cannot close: the next response reads on from it."""

    def __init__(self, file):
        self.file = file

    def __getattr__(self, name):
        return getattr(self.file, name)

    def close(self) -> None:
        pass


def _raw_exchange(port: int, requests: list[tuple[str, bytes]]) -> list[tuple[int, bytes]]:
    """Send the requests (method, bytes) on one connection, then read their responses in order."""
    with socket.create_connection(("127.0.0.1", port), timeout=20) as sock:
        sock.sendall(b"".join(request for _, request in requests))
        reader = sock.makefile("rb")
        out = []
        for method, _ in requests:
            response = http.client.HTTPResponse(sock, method=method)
            response.fp = _KeptOpen(reader)  # one buffered stream for all the responses
            response.begin()
            out.append((response.status, response.read()))
        return out


@pytest.mark.slow  # starts two processes; the full suite runs it
def test_the_compose_proxy_answers_over_long_request_lines_and_passes_everything_else(tmp_path):
    nginx = shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None)
    if nginx is None:
        pytest.fail("nginx is not installed (scripts/test.sh installs Debian's nginx)")
    web_port, proxy_port = free_port(), free_port()
    web = production_server(tmp_path, web_port)
    proxy = None
    try:
        _wait_for_port(web_port, web, "the web server")
        config = nginx_config(tmp_path, port=proxy_port, upstream=f"127.0.0.1:{web_port}")
        proxy = subprocess.Popen(
            [nginx, "-p", str(tmp_path), "-c", str(config)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        _wait_for_port(proxy_port, proxy, "nginx")
        host = b"Host: 127.0.0.1\r\n"

        [(status, body)] = _raw_exchange(proxy_port, [("GET", b"GET /login/ HTTP/1.1\r\n" + host + b"\r\n")])
        assert status == 200 and b'name="csrfmiddlewaretoken"' in body  # Django answered, through nginx

        for length in (33 * 1024, 100 * 1024):  # past what uWSGI's router would answer at all
            request = b"GET /" + b"a" * length + b" HTTP/1.1\r\n" + host + b"Connection: close\r\n\r\n"
            [(status, _)] = _raw_exchange(proxy_port, [("GET", request)])
            assert status == 414, length

        # A HEAD response has no body, so the next response on the kept-alive connection is read whole.
        pair = [(method, method.encode() + b" /login/ HTTP/1.1\r\n" + host + b"\r\n") for method in ("HEAD", "GET")]
        (head_status, head_body), (get_status, get_body) = _raw_exchange(proxy_port, pair)
        assert (head_status, head_body) == (200, b"")
        assert get_status == 200 and get_body.rstrip().endswith(b"</html>")
    finally:
        for process in (proxy, web):
            if process is not None and process.poll() is None:
                process.kill()
                process.wait()


def test_the_compose_proxy_sets_x_forwarded_proto_from_its_own_scheme_not_the_clients(tmp_path):
    """nginx is the edge: a client that claims `X-Forwarded-Proto: https` over plain HTTP must not reach Django as
    HTTPS (with SECURE_PROXY_SSL_HEADER=1 that would mark the request secure)."""
    import http.server
    import threading

    seen: list[str | None] = []

    class Echo(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            seen.append(self.headers.get("X-Forwarded-Proto"))
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args):
            pass

    nginx = shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None)
    if nginx is None:
        pytest.fail("nginx is not installed (scripts/test.sh installs Debian's nginx)")
    upstream = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Echo)
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    proxy_port = free_port()
    config = nginx_config(tmp_path, port=proxy_port, upstream=f"127.0.0.1:{upstream.server_address[1]}")
    proxy = subprocess.Popen([nginx, "-p", str(tmp_path), "-c", str(config)], stderr=subprocess.PIPE)
    try:
        _wait_for_port(proxy_port, proxy, "nginx")
        for claimed in (b"", b"X-Forwarded-Proto: https\r\n"):
            request = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n" + claimed + b"Connection: close\r\n\r\n"
            [(status, _)] = _raw_exchange(proxy_port, [("GET", request)])
            assert status == 204
    finally:
        proxy.kill()
        proxy.wait()
        upstream.shutdown()

    assert seen == ["http", "http"]
