import json

from django.core.management.base import BaseCommand, CommandError

from generation.models import DEFAULT_MODEL_NAME, LanguageModel
from generation.pronouns import BASES
from generation.rewriting import SpacyPipelineMissing, rewrite_continuations, template_fill
from generation.services.tango import lazy_contraction_chooser


class Command(BaseCommand):
    requires_system_checks: list = []  # text in, text out: it needs no URLs or admin
    help = (
        "Rewrite one TANGO continuation into a Prob-TANGO template (cut at the second pronoun, neutralized to they, "
        "reverted to a template with case slots). The registered model is loaded only to choose they're/they've."
    )

    def add_arguments(self, parser):
        parser.add_argument("--text", required=True, help="the continuation (the generated text alone)")
        parser.add_argument("--pronoun", choices=BASES, help="also print the template filled with this family")
        parser.add_argument("--context", default="", help="the context before it (for the they're/they've choice)")
        parser.add_argument("--model", default=DEFAULT_MODEL_NAME, help="registered model for they're/they've")
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args, text: str, pronoun: str | None, context: str, model: str, **options):
        if not LanguageModel.objects.filter(name=model).exists():
            raise CommandError(
                f"unknown model {model!r}; registered: {', '.join(LanguageModel.objects.values_list('name', flat=True)) or 'none'}"
            )
        try:
            [rewrite] = rewrite_continuations(
                [text], choose_contraction=lazy_contraction_chooser(model_name=model, contexts=[context])
            )
        except SpacyPipelineMissing as exc:
            raise CommandError(str(exc)) from None
        result = rewrite.as_json()
        if pronoun is not None:
            result["filled"] = None if rewrite.template is None else template_fill(rewrite.template, pronoun)
        if options["json"]:
            self.stdout.write(json.dumps(result))
            return
        for key, value in result.items():
            self.stdout.write(f"{key}: {value}")
