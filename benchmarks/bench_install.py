"""Time `scripts/setup.sh` from nothing (a fresh clone without `.venv`), with the machine's load.

    python benchmarks/bench_install.py [--pip] [--cache DIR]

Clones this repository's committed HEAD into a temporary folder, so the shared `.venv` is not touched, and runs its
`scripts/setup.sh` there: torch with pip, the rest with uv (`--pip`: with pip only, `NO_UV=1`). The download caches of
pip and uv are a fresh empty folder (cold) unless `--cache DIR` names one to reuse (run twice: warm). Samples the
1-minute load average (runnable processes; the machine has `os.cpu_count()` cores) every second as it goes. Prints one
JSON line: seconds, the installer, the caches, the load average seen (min / mean / max).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pip", action="store_true", help="pip only (NO_UV=1), as before uv")
    parser.add_argument("--cache", type=Path, help="reuse this folder for pip's and uv's caches (default: a fresh one)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as folder:
        clone = Path(folder) / "concord"
        subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True)
        cache = args.cache or Path(folder) / "cache"
        env = dict(os.environ, PIP_CACHE_DIR=str(cache / "pip"), UV_CACHE_DIR=str(cache / "uv"))
        env.pop("VIRTUAL_ENV", None)
        if args.pip:
            env["NO_UV"] = "1"
        loads = [os.getloadavg()[0]]
        start = time.monotonic()
        with open(Path(folder) / "setup.log", "w") as log:
            setup = subprocess.Popen(["bash", "scripts/setup.sh"], cwd=clone, env=env, stdout=log, stderr=log)
            while setup.poll() is None:
                time.sleep(1)
                loads.append(os.getloadavg()[0])
        seconds = time.monotonic() - start
        if setup.returncode != 0:
            raise SystemExit((Path(folder) / "setup.log").read_text()[-4000:])
        torch = subprocess.run(
            [str(clone / ".venv/bin/python"), "-c", "import torch; print(torch.__version__)"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    print(
        json.dumps(
            {
                "seconds": round(seconds, 1),
                "installer": "pip" if args.pip else "uv (torch with pip)",
                "caches": "reused" if args.cache else "cold",
                "torch": torch,
                "cores": os.cpu_count(),
                "load": [round(min(loads), 2), round(statistics.mean(loads), 2), round(max(loads), 2)],
            }
        )
    )


if __name__ == "__main__":
    main()
