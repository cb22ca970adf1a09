import json

from django.core.management.base import BaseCommand, CommandError

from generation.parameters import JobParameterError
from generation.services.models import APIS, LOGPROBS, model_add


class Command(BaseCommand):
    help = (
        "Register a model: local weights (--hub ID, --path DIR, or --package PKG --gguf FILE) or a model behind an "
        "endpoint (--base-url URL --model ID), which is asked whether it is reachable and lists the model. The API "
        "key is never given here: --api-key-env names the environment variable the worker reads it from. The last "
        "line printed is a JSON summary."
    )

    def add_arguments(self, parser):
        parser.add_argument("name", help="the model's name in Concord")
        parser.add_argument("--hub", default=None, help="a Hugging Face model id")
        parser.add_argument("--path", default=None, help="a local directory of Hugging Face weights")
        parser.add_argument("--package", default=None, help="an installed Python package holding a GGUF file")
        parser.add_argument("--gguf", default=None, help="the GGUF file's name (with --package, --hub or --path)")
        parser.add_argument("--dtype", default="auto")
        parser.add_argument("--device", default="auto")
        parser.add_argument("--batch-size", type=int, default=None)
        parser.add_argument("--base-url", default=None, help="an endpoint's base URL, e.g. https://api.openai.com/v1")
        parser.add_argument("--model", default=None, help="the model's id at the endpoint")
        parser.add_argument("--api", default="openai", choices=APIS)
        parser.add_argument("--api-key-env", default="", help="the environment variable holding the API key")
        parser.add_argument("--concurrency", type=int, default=None, help="requests in flight at once (default 4)")
        parser.add_argument("--rpm", type=int, default=None, help="requests per minute at most (default: no limit)")
        parser.add_argument("--timeout", type=float, default=None, help="seconds per request (default 60)")
        parser.add_argument("--max-retries", type=int, default=None, help="retries of a 429/5xx/timeout (default 5)")
        parser.add_argument("--price-in", default=None, help="USD per million input tokens")
        parser.add_argument("--price-out", default=None, help="USD per million output tokens")
        parser.add_argument("--logprobs", default="auto", choices=LOGPROBS, help="does it give log-probs (auto: ask)")

    def handle(self, *args, **options):
        try:
            row = model_add(
                name=options["name"], hub=options["hub"], path=options["path"], package=options["package"],
                gguf=options["gguf"], dtype=options["dtype"], device=options["device"],
                batch_size=options["batch_size"], base_url=options["base_url"], model=options["model"],
                api=options["api"], api_key_env=options["api_key_env"], concurrency=options["concurrency"],
                rpm=options["rpm"], timeout=options["timeout"], max_retries=options["max_retries"],
                price_in=options["price_in"], price_out=options["price_out"], logprobs=options["logprobs"],
            )  # fmt: skip
        except JobParameterError as exc:
            raise CommandError(f"bad model: {exc}") from None
        summary: dict[str, object] = {"model": row.name, "source_kind": row.source_kind, "source": row.source}
        endpoint = row.endpoint_settings if row.is_endpoint else None
        if endpoint is not None:
            summary |= {
                "base_url": endpoint.base_url, "api": endpoint.api, "completions": endpoint.completions,
                "logprobs": endpoint.has_logprobs, "prompt_logprobs": endpoint.prompt_logprobs,
                "structured": endpoint.structured,
            }  # fmt: skip
        self.stderr.write(f"model {row.name}: registered ({row.get_source_kind_display()})")
        self.stdout.write(json.dumps(summary))
