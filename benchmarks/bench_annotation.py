"""Latency of the annotator API under concurrent annotators, against a real server on PostgreSQL.

    python benchmarks/bench_annotation.py [--annotators 20] [--seconds 20] [--warmup 3] [--items 1000]
        [--database-url postgres://postgres@127.0.0.1:5432/concord_bench] [--workers N] [--threads N] [--think-ms 0]

Sets up (in its own database, dropped and created afresh: never point it at a database you need) a pool with
`--items` items per annotator, assigned to `--annotators` users with API tokens, starts the production web server
(`python -m config.web`: uWSGI) on a free loopback port with DEBUG off, waits until it answers, then runs every
annotator on one asyncio loop: GET /api/annotate/next/, then POST /api/annotations/ (after
`--think-ms` on average, default none: as fast as the server answers), over a keep-alive connection with token
auth. After `--warmup` seconds, every request's latency for `--seconds` counts. Prints one JSON line:
{"p50_ms": ..., "p95_ms": ..., "requests": ...}; details (throughput, CPU per request of the server, the database
and the load generator, the machine's speed and load) go to stderr. Only loopback traffic; bounded in time.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

POOL = "bench-annotation"
TEXT = "The nurse said that xe would be off work in an hour, and the man went home to market."


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def fresh_database(url: str) -> None:
    """Drop and create the benchmark's database, so that every run starts from the same empty state (deleting the
    previous run's pool through the ORM would gather hundreds of thousands of rows first)."""
    import psycopg
    from psycopg import sql

    base, name = url.rsplit("/", 1)
    with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))


def setup(annotators: int, items_per_annotator: int) -> dict[str, str]:
    """Fresh pool and users; returns username -> API token."""
    import django

    django.setup()
    from django.contrib.auth.hashers import make_password
    from django.core.management import call_command
    from rest_framework.authtoken.models import Token

    from accounts.roles import ANNOTATOR
    from accounts.services import roles_ensure
    from annotation.models import Annotation, Assignment, ExtraneousSpan, Pool, PoolItem
    from annotation.services import assignments_create

    call_command("migrate", verbosity=0)
    roles_ensure()
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group

    group = Group.objects.get(name=ANNOTATOR)
    user_model = get_user_model()
    names = [f"bench-ann-{n:02d}" for n in range(annotators)]
    password = make_password(None)  # unusable: the benchmark uses tokens only
    tokens = {}
    for name in names:
        user, _ = user_model.objects.get_or_create(username=name, defaults={"password": password})
        user.groups.add(group)
        tokens[name] = Token.objects.get_or_create(user=user)[0].key
    pool = Pool.objects.create(name=POOL)
    rng = random.Random(0)
    PoolItem.objects.bulk_create(
        PoolItem(
            pool=pool,
            model_name=f"m{n % 6}",
            dataset=("misgendered", "ruff")[n % 2],
            setting=("pre", "post")[n % 2],
            pronoun=("he", "she", "they", "xe")[n % 4],
            template="x",
            context="Robin/'s pronouns are xe/xem/xyrs. Robin baked bread. ",
            continuation=f"{TEXT} {rng.random():.6f}",
            heuristic_correct=True,
        )
        for n in range(annotators * items_per_annotator)
    )
    assignments_create(pool=pool, usernames=names, overlap=0, seed=0)
    # A running site's tables have statistics and visibility maps from autovacuum; fresh bulk inserts (and the rows
    # the previous run deleted) do not, and the planner would be guessing.
    from django.db import connection

    with connection.cursor() as cursor:
        for model in (Pool, PoolItem, Assignment, Annotation, ExtraneousSpan, Token, Group, user_model):
            cursor.execute(f"VACUUM ANALYZE {connection.ops.quote_name(model._meta.db_table)}")
        cursor.execute(f"VACUUM ANALYZE {connection.ops.quote_name(user_model.groups.through._meta.db_table)}")
    return tokens


def reference_ms() -> float:
    """Milliseconds for a fixed piece of pure Python (best of 3): this machine's speed at the moment.

    The development machine is a virtual machine whose speed varies by tens of percent from minute to minute; figures
    from two runs are comparable only when their reference times are close.
    """
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        total = 0
        for n in range(1_000_000):
            total += n
        best = min(best, time.perf_counter() - started)
    return round(best * 1000, 1)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for(port: int, deadline: float) -> None:
    """Until the server answers an HTTP request (any status). The HTTP router listens at once, but the Django
    processes start only after the application has loaded, seconds later on a busy machine; annotators let in before
    then fill the processes' listen queue (100) and the rest have their connections closed."""
    probe = b"GET /api/annotate/next/ HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
                sock.sendall(probe)
                if sock.recv(16).startswith(b"HTTP/1."):
                    return
        except OSError:
            pass
        time.sleep(0.2)
    raise RuntimeError("the server did not start")


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU of these processes so far (Linux /proc; 0 for any that is gone or unreadable)."""
    total = 0.0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def server_pids(server: subprocess.Popen) -> list[int]:
    """The server's master process and its children (uWSGI's HTTP router and the Django processes)."""
    try:
        children = Path(f"/proc/{server.pid}/task/{server.pid}/children").read_text().split()
    except OSError:
        children = []
    return [server.pid, *map(int, children)]


def listeners(pids: list[int], port: int) -> list[int]:
    """Those of `pids` that hold the socket listening on loopback `port`: the server's master and its HTTP router.

    (The Django processes hold only the socket the router hands requests over.)
    """
    inodes = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[1] == f"0100007F:{port:04X}" and fields[3] == "0A":  # 127.0.0.1:port, LISTEN
            inodes.add(f"socket:[{fields[9]}]")
    holding = []
    for pid in pids:
        try:
            if any(os.readlink(fd) in inodes for fd in Path(f"/proc/{pid}/fd").iterdir()):
                holding.append(pid)
        except OSError:
            continue
    return holding


def database_pids(url: str) -> list[int]:
    """The PostgreSQL backends serving the benchmark's database (readable in /proc when the server is local)."""
    import psycopg

    name = url.rsplit("/", 1)[1]
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute("SELECT pid FROM pg_stat_activity WHERE datname = %s", [name]).fetchall()
    return [pid for (pid,) in rows]


class Client:
    """One annotator's keep-alive HTTP/1.1 connection, on asyncio.

    The annotators share one event loop rather than one thread each: with threads, a reply that has arrived waits
    for the load generator's own GIL, and that wait would be counted as the server's latency.
    """

    def __init__(self, port: int, token: str):
        self.port = port
        self.head = f"Host: 127.0.0.1\r\nAuthorization: Token {token}\r\nAccept: application/json\r\n"
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def call(self, method: str, path: str, body: bytes = b"") -> tuple[int, bytes]:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)
        extra = f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n" if body else ""
        self.writer.write(f"{method} {path} HTTP/1.1\r\n{self.head}{extra}\r\n".encode() + body)
        status_line = await self.reader.readline()
        if not status_line:
            raise ConnectionError("the server closed the connection")
        status = int(status_line.split()[1])
        length, close = 0, False
        while (line := await self.reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.decode("latin-1").partition(":")
            if name.lower() == "content-length":
                length = int(value)
            elif name.lower() == "connection" and value.strip().lower() == "close":
                close = True
        data = await self.reader.readexactly(length) if length else b""
        if close:
            await self.close()
        return status, data

    async def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = None


async def annotate(
    port: int,
    token: str,
    measure_from: float,
    stop_at: float,
    think: float,
    latencies: list[list[float]],
    errors: list[str],
) -> None:
    client = Client(port, token)
    mine: list[float] = []
    latencies.append(mine)
    labels = ["correct", "misgendering", "no_pronoun"]
    rng = random.Random(token)

    async def call(method: str, path: str, body: bytes = b"") -> tuple[int, bytes]:
        started = time.perf_counter()
        status, data = await client.call(method, path, body)
        if time.monotonic() >= measure_from:
            mine.append((time.perf_counter() - started) * 1000)
        return status, data

    try:
        if think:
            # People at human pace do not all open the page in the same millisecond: spread the first requests over
            # one pause (inside the warm-up). Sent at once, 200 of them overflowed the Django processes' listen
            # queue (100) and the router closed about 95 connections.
            await asyncio.sleep(rng.uniform(0, 1.5) * think)
        while time.monotonic() < stop_at:
            status, data = await call("GET", "/api/annotate/next/")
            if status == 204:
                break
            if status != 200:
                errors.append(f"next {status}")
                break
            item = json.loads(data)
            if think:
                await asyncio.sleep(rng.uniform(0.5, 1.5) * think)  # reading and deciding, not measured
            extraneous = rng.random() < 0.2
            body = {
                "item": item["item"],
                "label": rng.choice(labels),
                "extraneous": extraneous,
                "extraneous_spans": [[59, 62]] if extraneous else [],
                "notes": "",
                "tags": [],
                "seconds": 3.0,
            }
            status, data = await call("POST", "/api/annotations/", json.dumps(body).encode())
            if status not in (200, 201):
                errors.append(f"save {status} {data[:200]!r}")
                break
    except (OSError, asyncio.IncompleteReadError) as exc:
        errors.append(f"connection: {exc!r}")
    finally:
        await client.close()


async def drive(args, tokens: dict[str, str], port: int, server: subprocess.Popen):
    """Run every annotator; returns each one's latencies, errors, measured seconds and CPU used per role."""
    latencies: list[list[float]] = []
    errors: list[str] = []
    # Every annotator works through a warm-up first (not measured), so that each worker thread has its database
    # connection and each worker its imports before the clock starts.
    measure_from = time.monotonic() + args.warmup
    stop_at = measure_from + args.seconds
    think = args.think_ms / 1000
    tasks = [
        asyncio.create_task(annotate(port, token, measure_from, stop_at, think, latencies, errors))
        for token in tokens.values()
    ]
    await asyncio.sleep(max(0.0, measure_from - time.monotonic()))
    cpu_pids = {"server": server_pids(server), "database": database_pids(args.database_url), "client": [os.getpid()]}
    cpu_before = {role: cpu_seconds(pids) for role, pids in cpu_pids.items()}
    router = [pid for pid in listeners(cpu_pids["server"], port) if pid != server.pid]
    router_before = cpu_seconds(router)
    await asyncio.gather(*tasks)
    elapsed = time.monotonic() - measure_from
    cpu_used = {role: cpu_seconds(pids) - cpu_before[role] for role, pids in cpu_pids.items()}
    cpu_used["router"] = cpu_seconds(router) - router_before
    return latencies, errors, elapsed, cpu_used


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--annotators", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=20, help="measured time, after the warm-up")
    parser.add_argument("--warmup", type=float, default=3, help="seconds of unmeasured work first (default 3)")
    parser.add_argument("--items", type=int, default=1000, help="items per annotator")
    parser.add_argument("--database-url", default="postgres://postgres@127.0.0.1:5432/concord_bench")
    parser.add_argument("--workers", type=int, help="Django processes (default: config/web.py's WEB_CONCURRENCY)")
    parser.add_argument("--threads", type=int, help="threads per process (default: config/web.py's WEB_THREADS)")
    parser.add_argument(
        "--think-ms", type=float, default=0, help="mean pause per item, as a person reading (default 0: no pause)"
    )
    return parser.parse_args()


def start_server(args: argparse.Namespace, env: dict[str, str]) -> tuple[subprocess.Popen, int, object]:
    """The production server and settings (config/web.py), bound to a free loopback port; --workers/--threads
    override them. Returns the process, its port and its log file."""
    port = free_port()
    server_env = {**env, "WEB_BIND": f"127.0.0.1:{port}"}
    if args.workers:
        server_env["WEB_CONCURRENCY"] = str(args.workers)
    if args.threads:
        server_env["WEB_THREADS"] = str(args.threads)
    server_log = tempfile.TemporaryFile()
    server = subprocess.Popen(
        [sys.executable, "-m", "config.web"], cwd=ROOT, env=server_env, stdout=server_log, stderr=subprocess.STDOUT
    )
    try:
        wait_for(port, time.monotonic() + 120)
    except RuntimeError:
        server.kill()
        server_log.seek(0)
        log_tail = server_log.read()[-3000:].decode(errors="replace")
        raise RuntimeError(f"the server did not start:\n{log_tail}") from None
    return server, port, server_log


def stop_server(server: subprocess.Popen) -> None:
    server.terminate()
    try:
        server.wait(timeout=10)
    except subprocess.TimeoutExpired:
        server.kill()


def report(per_annotator: list[list[float]], elapsed: float, cpu_used: dict[str, float]) -> dict:
    """Details to stderr; returns the JSON line's figures."""
    latencies = [latency for mine in per_annotator for latency in mine]
    if not latencies:
        raise SystemExit("no request completed")
    cuts = statistics.quantiles(latencies, n=100, method="inclusive")
    log(f"{len(latencies)} requests in {elapsed:.1f}s ({len(latencies) / elapsed:.0f}/s), max {max(latencies):.1f} ms")
    per_request = {role: 1000 * used / len(latencies) for role, used in cpu_used.items()}
    log(
        f"CPU per request: server {per_request['server']:.2f} ms (of which the HTTP router {per_request['router']:.2f}),"
        f" database {per_request['database']:.2f} ms (its PostgreSQL backends), load generator {per_request['client']:.2f} ms"
    )
    means = sorted(statistics.mean(mine) for mine in per_annotator if mine)
    # A server that keeps each connection in one process can give some annotators a busier process than others.
    log(f"mean latency per annotator: {means[0]:.1f} ms (fastest) to {means[-1]:.1f} ms (slowest)")
    return {"p50_ms": round(cuts[49], 2), "p95_ms": round(cuts[94], 2), "requests": len(latencies)}


def main() -> None:
    args = parse_args()
    env = {
        **os.environ,
        "DATABASE_URL": args.database_url,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DEBUG": "false",
        "SECRET_KEY": "bench-annotation-not-secret-" + "x" * 40,  # settings require 50 characters with DEBUG off
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "SECURE_COOKIES": "false",
    }
    os.environ.update(env)
    fresh_database(args.database_url)
    log(f"setting up {args.annotators} annotators x {args.items} items in {args.database_url.rsplit('/', 1)[1]}")
    tokens = setup(args.annotators, args.items)

    speed_before, load_before = reference_ms(), os.getloadavg()[0]
    server, port, server_log = start_server(args, env)
    try:
        per_annotator, errors, elapsed, cpu_used = asyncio.run(drive(args, tokens, port, server))
    finally:
        stop_server(server)
    speed_after, load_after = reference_ms(), os.getloadavg()[0]

    if errors:
        log(f"{len(errors)} annotator(s) stopped on errors, e.g. {errors[0]}")
        server_log.seek(0)
        log("server log, last lines:\n" + server_log.read()[-3000:].decode(errors="replace"))
    figures = report(per_annotator, elapsed, cpu_used)
    log(f"machine speed: reference loop {speed_before} ms before, {speed_after} ms after (lower is faster)")
    log(f"machine load: 1-minute load average {load_before:.1f} before, {load_after:.1f} after ({os.cpu_count()} CPUs)")
    print(json.dumps(figures))
    if errors:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
