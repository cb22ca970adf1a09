"""Requests per second to a model behind an endpoint at concurrency 1, 8 and 32, side by side: the product's path
(`generation.engines.endpoint.client.calls_send`: the stored replies looked up, the rest sent through the `openai`
client from a thread pool, each reply stored as it comes) against a local OpenAI-compatible server that answers each
request after `--latency` seconds (tests/endpoint_servers.py).

    python benchmarks/bench_endpoints.py [--latency 0.1] [--rounds 3] [--seconds 3]

Each round runs every concurrency once, in turn, with requests none of which is stored (a new seed each), about
`--seconds` of work each; prints one JSON line with the median requests per second of each concurrency and the
ratios to concurrency 1. A fresh SQLite file holds the replies.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CONCURRENCIES = (1, 8, 32)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=3.0)
    args = parser.parse_args()
    directory = tempfile.mkdtemp(prefix="bench-endpoints-")
    os.environ["DATABASE_URL"] = f"sqlite:///{directory}/bench.sqlite3"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    import logging

    from django.core.management import call_command

    logging.getLogger("httpx2").setLevel(logging.WARNING)
    logging.getLogger("httpx").setLevel(logging.WARNING)
    call_command("migrate", verbosity=0)
    from generation.engines.endpoint.client import Call, Target, calls_send
    from generation.models import LanguageModel, ModelEndpoint
    from tests.endpoint_servers import TinyServer

    server = TinyServer(latency=args.latency)
    model = LanguageModel.objects.create(name="bench-api", source_kind="api", source="tiny")
    ModelEndpoint.objects.create(model=model, base_url=server.url)
    seed = 0
    rates: dict[int, list[float]] = {c: [] for c in CONCURRENCIES}
    for _ in range(args.rounds):
        for concurrency in CONCURRENCIES:
            count = max(concurrency, int(args.seconds / args.latency) * concurrency)
            target = Target(model_id=model.pk, name=model.name, model="tiny", base_url=server.url, api="openai",
                            concurrency=concurrency)  # fmt: skip
            calls = []
            for index in range(count):
                seed += 1
                body = {"model": "tiny", "messages": [{"role": "user", "content": f"item {index}"}],
                        "max_completion_tokens": 4, "seed": seed}  # fmt: skip
                calls.append(Call(route="chat", body=body, seed=seed))
            start = time.perf_counter()
            calls_send(target=target, calls=calls)
            rates[concurrency].append(count / (time.perf_counter() - start))
    server.close()
    median = {c: statistics.median(values) for c, values in rates.items()}
    print(
        json.dumps(
            {
                "latency_s": args.latency,
                "rounds": args.rounds,
                "requests_per_s": {str(c): round(v, 2) for c, v in median.items()},
                "speedup_over_1": {str(c): round(v / median[1], 2) for c, v in median.items()},
                "load_average": [round(x, 2) for x in os.getloadavg()],
            }
        )
    )


if __name__ == "__main__":
    main()
