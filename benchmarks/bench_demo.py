"""Time the first start of the embedded demo until its live pool `demo-live` exists, with the machine's load.

    python benchmarks/bench_demo.py [--timeout 900]

Does what `scripts/run.sh` does, on a fresh SQLite file in a temporary folder: `load_demo --migrate`, then the
server (`runserver --noreload`), whose embedded runner starts the queued demo jobs. Polls the database every second
until the pool `demo-live` appears, sampling the 1-minute load average (runnable processes; the machine has
`os.cpu_count()` cores) as it goes. Prints one JSON line: seconds to the server's start, to `demo-live`, the
continuations generated, and the load average seen (min / mean / max).
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _scalar(database: Path, sql: str) -> int:
    try:
        with sqlite3.connect(database, timeout=1) as connection:
            row = connection.execute(sql).fetchone()
    except sqlite3.Error:
        return 0
    return int(row[0] or 0) if row else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--timeout", type=float, default=900, help="give up after this many seconds")
    parser.add_argument("--port", type=int, default=8765)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as folder:
        database = Path(folder) / "concord.sqlite3"
        env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "CELERY_BROKER_URL"}}
        env |= {
            "DATABASE_URL": f"sqlite:///{database}",
            "CONCORD_DEMO_LOGINS": str(Path(folder) / "demo-logins.json"),
            "HF_HUB_OFFLINE": "1",
        }
        python = str(ROOT / ".venv" / "bin" / "python")
        loads = [os.getloadavg()[0]]
        start = time.monotonic()
        subprocess.run(
            [python, "manage.py", "load_demo", "--migrate"], cwd=ROOT, env=env, check=True, capture_output=True
        )
        loaded = time.monotonic() - start
        server = subprocess.Popen(
            [python, "manage.py", "runserver", f"127.0.0.1:{args.port}", "--noreload"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            live = None
            while time.monotonic() - start < args.timeout:
                time.sleep(1)
                loads.append(os.getloadavg()[0])
                if _scalar(database, "SELECT COUNT(*) FROM annotation_pool WHERE name = 'demo-live'"):
                    live = time.monotonic() - start
                    break
            generated = _scalar(database, "SELECT SUM(done_items) FROM generation_job")
        finally:
            server.terminate()
            server.wait(timeout=30)
    print(
        json.dumps(
            {
                "load_demo_s": round(loaded, 1),
                "demo_live_s": None if live is None else round(live, 1),
                "continuations": generated,
                "cores": os.cpu_count(),
                "load_1min": {
                    "min": round(min(loads), 2),
                    "mean": round(statistics.fmean(loads), 2),
                    "max": round(max(loads), 2),
                },
            }
        )
    )
    if live is None:
        sys.exit(f"demo-live did not appear within {args.timeout:.0f} s")


if __name__ == "__main__":
    main()
