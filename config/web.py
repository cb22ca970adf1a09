"""The production web server: `python -m config.web` (Docker, Compose, the README and the benchmark all start it so).

uWSGI with its HTTP router in front of the Django processes. The router, one process written in C, holds every
browser's keep-alive connection and hands each request to whichever Django process is free. Servers that keep a
connection in the process that accepted it (gunicorn's threaded workers, granian) leave the load to chance: on the
development machine one process often took most of the 20 benchmark annotators while the others idled, and the
95th-percentile latency doubled (benchmarks/README.md).

Settings, from the environment:
    WEB_BIND          address the router listens on (default 0.0.0.0:8000)
    WEB_CONCURRENCY   Django processes (default 4; about two per core)
    WEB_THREADS       threads per process (default 1: one request at a time per process; its Python never waits for
                      another thread's lock, and a long report request holds one process while the router sends the
                      rest elsewhere)
    WEB_TIMEOUT       seconds before a stuck request's process is restarted (default 60); also how long a stop
                      (SIGTERM) waits for the requests in flight

On SIGTERM (docker stop, systemd) the server stops taking new connections, lets every request in flight finish
(up to WEB_TIMEOUT seconds), then exits. uWSGI ignores a SIGTERM that comes while it starts, before its master is
ready; the orchestrator's kill after its grace period still ends it. Request bodies are read whole before Django sees
the request (post-buffering): a view that answers without reading a POST body (a 403, a redirect) no longer leaves
unread bytes on the connection, which made some clients lose the response.
"""

from __future__ import annotations

import os
import secrets
import shutil
import sys
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

from config.env import env


def _bind() -> str:
    bind = env.str("WEB_BIND", default="0.0.0.0:8000")
    host, _, port = bind.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ImproperlyConfigured(f"WEB_BIND={bind!r} is not an address: use HOST:PORT, e.g. 0.0.0.0:8000.")
    return bind


def _uwsgi() -> str:
    """The `uwsgi` program installed beside this Python (the pyuwsgi package), else the first on PATH."""
    beside = Path(sys.executable).parent / "uwsgi"
    found = str(beside) if beside.exists() else shutil.which("uwsgi")
    if found is None:
        raise ImproperlyConfigured("uwsgi is not installed: pip install -r requirements.txt")
    return found


def _backend_socket() -> list[str]:
    """Where the router hands requests to the Django processes: on Linux a Unix socket in the abstract namespace.

    Without one, uWSGI picks a loopback TCP port, and every request then pays for a TCP connection between the router
    and a process. An abstract socket is no file to clean up; like the TCP port, it is reachable from this host (this
    container) only. The name holds the master's process id (which `exec` keeps) and a random part, so that two
    servers never meet: not even two started from one process, or one started while a killed one's processes linger.
    """
    if sys.platform != "linux":
        return []
    return ["--socket", f"@concord-web-{os.getpid()}-{secrets.token_hex(4)}"]


def _listen_queue() -> list[str]:
    """The Django processes' listen queue: requests the router may hand over while every process is busy.

    uWSGI's default, 100, is below a busy minute's burst (200 annotators, benchmarks/README.md): past it the router
    closes the browser's connection. 1,024, or the kernel's limit (`net.core.somaxconn`) where that is lower, since
    uWSGI refuses to start above it.
    """
    try:
        limit = int(Path("/proc/sys/net/core/somaxconn").read_text())
    except (OSError, ValueError):
        limit = 128  # the historical default, and the floor on every system
    return ["--listen", str(min(1024, limit))]


POST_BUFFERING = 65536  # request bodies up to this size are buffered in memory, larger ones in a temporary file
# What uWSGI reads of a request's line and headers: its most, as its protocol counts a request's variables in 16 bits.
# The router passes the path twice (PATH_INFO, REQUEST_URI), so request lines up to about 32 KB reach the application,
# which answers 414 above 32 KB (config/hygiene.py).
BUFFER_SIZE = 65535


def uwsgi_command(*, module: str = "config.wsgi:application") -> list[str]:
    timeout = str(env.int("WEB_TIMEOUT", 60, minimum=1))
    return [
        _uwsgi(),
        "--strict",  # an option uWSGI does not know is an error, not a warning
        "--master",
        "--http", _bind(),
        *_backend_socket(),
        *_listen_queue(),
        "--http-keepalive",
        "--http-auto-chunked",  # keep-alive also for responses without a Content-Length
        "--http-timeout", timeout,
        "--module", module,
        "--need-app",
        "--single-interpreter",
        "--processes", str(env.int("WEB_CONCURRENCY", 4, minimum=1)),
        "--threads", str(env.int("WEB_THREADS", 1, minimum=1)),
        "--enable-threads",
        "--thunder-lock",  # processes take turns at the router's socket
        "--harakiri", timeout,
        "--die-on-term",  # SIGTERM (docker stop) stops rather than reloads...
        "--hook-master-start", "unix_signal:15 gracefully_kill_them_all",  # ...after the requests in flight end
        "--worker-reload-mercy", timeout,  # the longest a stop waits for them
        "--reload-mercy", timeout,
        "--post-buffering", str(POST_BUFFERING),  # read each request body whole before Django runs
        "--vacuum",
        "--buffer-size", str(BUFFER_SIZE),  # request line and headers, cookies included
        "--disable-logging",  # no access log; errors still go to the log
        "--ignore-sigpipe",
        "--ignore-write-errors",
        "--disable-write-exception",  # a browser that went away is not an error
    ]  # fmt: skip


def _require_secret_key() -> None:
    """Unlike `manage.py` and the embedded default, the production server never falls back on the key file under
    var/ (config/env.py): with DEBUG off (the default) it needs SECRET_KEY from its environment."""
    if not env.bool("DEBUG", default=False) and not env.str("SECRET_KEY", default=None):
        raise ImproperlyConfigured(
            "SECRET_KEY is not set; the production server does not start without it while DEBUG is off: "
            'export SECRET_KEY=$(python -c "import secrets; print(secrets.token_urlsafe(50))")'
        )


def main() -> None:
    try:
        command = uwsgi_command()
        _require_secret_key()
    except ImproperlyConfigured as exc:
        sys.exit(f"concord web server: {exc}")
    os.execv(command[0], command)


if __name__ == "__main__":
    main()
