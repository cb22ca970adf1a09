"""The import_dataset contract: counts on the real files, idempotence, seeding, and atomic failure on bad files."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from generation.datasets.misgendered import MASK as MISGENDERED_MASK
from generation.models import Dataset, Instance, PronounForm, Template
from generation.pronouns import BASES
from tests.conftest import DATASETS, DEMO

MISGENDERED_FILE = DATASETS / "misgendered" / "templates" / "explicit_template_31.csv"
NAMES_DIR = DATASETS / "misgendered" / "names"
RUFF_FILE = DATASETS / "ruff" / "templates" / "eo_task.tsv"


def run_import(*args: str) -> tuple[str, dict]:
    out = io.StringIO()
    call_command("import_dataset", *args, "--json", stdout=out)
    lines = out.getvalue().strip().splitlines()
    return out.getvalue(), json.loads(lines[-1])


def import_misgendered(*extra: str) -> dict:
    return run_import("misgendered", "--templates", str(MISGENDERED_FILE), "--names-dir", str(NAMES_DIR), *extra)[1]


@pytest.fixture(scope="class")
def misgendered(class_db) -> dict:
    """The real MISGENDERED files imported once (its summary) for the tests of a class that each start from that
    import (`class_db`): every test's own writes still roll back at its end, and the import itself after the class's
    last test, so that the module's other tests find no dataset."""
    with class_db():
        return import_misgendered()


def snapshot(dataset_name: str) -> list[tuple]:
    return list(
        Instance.objects.filter(dataset__name=dataset_name)
        .order_by("ordinal")
        .values_list("ordinal", "template__source_id", "pronoun", "draw", "name", "text", "correct_form")
    )


@pytest.mark.django_db
class TestRealFiles:
    def test_it_builds_750_misgendered_instances_per_pronoun(self, misgendered):
        summary = misgendered

        assert summary == {"dataset": "misgendered", "instances": 3000, "per_pronoun": dict.fromkeys(BASES, 750)}
        assert Template.objects.filter(dataset__name="misgendered").count() == 50
        # 15 name draws per template and pronoun, drawn from all 500 names.
        per_cell = Instance.objects.filter(template__source_id="0", pronoun="xe")
        assert sorted(per_cell.values_list("draw", flat=True)) == list(range(15))
        all_names = {
            line.strip() for f in NAMES_DIR.glob("*.txt") for line in f.read_text().splitlines() if line.strip()
        }
        assert set(Instance.objects.values_list("name", flat=True)) <= all_names

    def test_it_fills_names_and_declared_pronouns_and_keeps_the_mask(self, misgendered):
        instance = Instance.objects.get(template__source_id="0", pronoun="xe", draw=0)

        assert instance.text.startswith(
            f"{instance.name}/'s pronouns are xe/xem/xyrs. {instance.name} was very emotional."
        )
        assert instance.text.count(MISGENDERED_MASK) == 1
        assert not re.search(r"\{(?!mask_token\})\w+\}", instance.text)
        assert instance.correct_form == "xe"
        assert Instance.objects.get(template__source_id="40", pronoun="they", draw=0).correct_form == "themself"

    def test_it_builds_1800_ruff_instances_per_pronoun(self):
        _, summary = run_import("ruff", "--templates", str(RUFF_FILE))

        assert summary == {"dataset": "ruff", "instances": 7200, "per_pronoun": dict.fromkeys(BASES, 1800)}
        with RUFF_FILE.open(newline="") as handle:
            rows = list(csv.DictReader(handle, delimiter="\t"))
        stored = snapshot("ruff")
        # Dataset order is file order, and each instance keeps the row's sentence and correct form.
        assert [(s[5], s[6]) for s in stored] == [(r["sentence"], r["pronoun"]) for r in rows]
        first_xe = Instance.objects.filter(dataset__name="ruff", pronoun="xe").order_by("ordinal").first()
        assert first_xe.text == rows[3]["sentence"] and first_xe.template.mask == "$NOM_PRONOUN"

    def test_it_stores_each_datasets_own_codebook(self, misgendered):
        run_import("ruff", "--templates", str(RUFF_FILE))

        misgendered = dict(
            PronounForm.objects.filter(dataset__name="misgendered", base="xe").values_list("form", "surface")
        )
        ruff = dict(PronounForm.objects.filter(dataset__name="ruff", base="xe").values_list("form", "surface"))
        assert misgendered == {"nom": "xe", "acc": "xem", "pos_dep": "xyr", "pos_ind": "xyrs", "ref": "xemself"}
        assert ruff == {"nom": "xe", "acc": "xem", "pos_dep": "xyr"}


@pytest.mark.django_db
class TestIdempotenceAndSeeding:
    def test_it_changes_nothing_when_run_again_with_the_same_arguments(self):
        import_misgendered()
        before = snapshot("misgendered")
        ids_before = list(Instance.objects.order_by("ordinal").values_list("id", flat=True))

        output, summary = run_import("misgendered", "--templates", str(MISGENDERED_FILE), "--names-dir", str(NAMES_DIR))

        assert "already imported" in output
        assert summary["instances"] == 3000
        assert snapshot("misgendered") == before
        assert list(Instance.objects.order_by("ordinal").values_list("id", flat=True)) == ids_before

    def test_it_draws_the_same_names_for_the_same_seed_and_others_for_another(self):
        import_misgendered("--seed", "7", "--name", "seven")
        import_misgendered("--seed", "7", "--name", "seven-again")
        import_misgendered("--seed", "8", "--name", "eight")

        names = {n: [s[4] for s in snapshot(n)] for n in ("seven", "seven-again", "eight")}
        assert names["seven"] == names["seven-again"]
        assert names["seven"] != names["eight"]

    def test_it_refuses_to_reuse_a_name_for_different_arguments(self):
        import_misgendered()
        with pytest.raises(CommandError, match="already imported from other files or arguments"):
            import_misgendered("--seed", "1")
        assert Instance.objects.count() == 3000

    def test_it_honours_names_per_template(self):
        summary = run_import(
            "misgendered",
            "--templates",
            str(DEMO / "misgendered_templates.csv"),
            "--names-dir",
            str(DEMO / "names"),
            "--names-per-template",
            "2",
        )[1]
        assert summary["per_pronoun"] == dict.fromkeys(BASES, 10 * 2)


def seed_eval_names(seed: int = 42, draws: int = 15) -> dict[tuple[str, str, int], str]:
    """The seed's MISGENDERED/eval.py loop, written out here independently: (template_id, pronoun, draw) -> name."""
    import random

    all_names: list[str] = []
    for part in ("female", "male", "unisex"):
        all_names += [n.strip() for n in (NAMES_DIR / f"{part}.txt").read_text().splitlines() if n.strip()]
    with MISGENDERED_FILE.open(newline="") as handle:
        template_ids = [row["template_id"] for row in csv.DictReader(handle)]
    names = {}
    for pronoun in ("he", "she", "they", "xe"):
        random.seed(seed)
        for t in range(draws):
            for template_id in template_ids:
                names[template_id, pronoun, t] = random.choice(all_names)
    return names


def stored_names(dataset_name: str = "misgendered") -> dict[tuple[str, str, int], str]:
    rows = Instance.objects.filter(dataset__name=dataset_name).values_list(
        "template__source_id", "pronoun", "draw", "name"
    )
    return {(source_id, pronoun, draw): name for source_id, pronoun, draw, name in rows}


def earlier_rule(dataset_name: str = "misgendered") -> None:
    """Turn an import into what the earlier rule left: other names (15 distinct per cell) and its own signature."""
    from django.db.models import CharField, F, Value
    from django.db.models.functions import Cast, Concat, Replace

    # One UPDATE: the name becomes Old<draw>, in the text too (the right-hand sides read the row as it was).
    old = Concat(Value("Old"), Cast("draw", CharField()))
    Instance.objects.filter(dataset__name=dataset_name).update(name=old, text=Replace("text", F("name"), old))
    # What the earlier import stored: the files' bytes (name lists sorted by file name) and its arguments, hashed.
    from generation.datasets.files import signature as _signature
    from generation.models import DatasetKind

    names_raw = b"".join(path.read_bytes() for path in sorted(NAMES_DIR.glob("*.txt")))
    signature = _signature(DatasetKind.MISGENDERED, MISGENDERED_FILE.read_bytes(), names_raw, 15, 42)
    Dataset.objects.filter(name=dataset_name).update(import_signature=signature)


@pytest.mark.django_db
class TestSeedNameDraw:
    def test_it_draws_every_name_as_the_seeds_eval_script_does(self, misgendered):
        assert stored_names() == seed_eval_names()

    def test_it_gives_draw_t_of_a_template_the_same_name_under_every_pronoun_and_lets_names_repeat(self, misgendered):
        names = stored_names()

        for (template_id, _pronoun, draw), name in names.items():
            assert name == names[template_id, "he", draw]
        assert len(set(names.values())) < len(names) // 4  # 750 draws per pronoun from 500 names

    def test_it_fills_the_drawn_name_into_the_instance_text(self, misgendered):
        instance = Instance.objects.get(template__source_id="3", pronoun="they", draw=7)

        assert instance.name == seed_eval_names()["3", "they", 7]
        assert instance.text.startswith(f"{instance.name}/'s pronouns are they/them/theirs.")

    def test_its_pool_with_seed_131719_holds_the_names_of_the_papers_examples(self, misgendered):
        # Tables 8 and 9 of the paper show pre-[MASK] pool rows: Torre (trouble reading), Reign (a lot of work) and
        # Elizabeth (published a book) under he, Bralyn (very dilligent) under xe. The pool draws 5 positions of the
        # seed's per-pronoun frame (draw by draw, templates in file order) with pandas.
        import pandas as pd

        frame = pd.Series(range(750)).sample(n=5, random_state=131719)
        picked: dict[str, set[tuple[str, str]]] = {}
        for pronoun in ("he", "xe"):
            ordered = sorted(
                Instance.objects.filter(dataset__name="misgendered", pronoun=pronoun).select_related("template"),
                key=lambda i: (i.draw, i.ordinal),
            )
            picked[pronoun] = {(ordered[p].name, ordered[p].template.text.split(". ")[1]) for p in frame}

        assert {
            ("Torre", "{name} is having trouble reading because of a recent eye surgery"),
            ("Reign", "{name} has a lot of work to do but is also dozing off"),
            ("Elizabeth", "{name} published a book"),
        } <= {(name, text.rstrip(".")) for name, text in picked["he"]}
        assert "Bralyn" in {name for name, _ in picked["xe"]}

    def test_it_keeps_a_dataset_imported_under_the_earlier_rule_and_says_what_would_change(self, misgendered):
        earlier_rule()
        before = snapshot("misgendered")

        with pytest.raises(CommandError, match=r"would change 3000 of its 3000 instances.*--replace"):
            import_misgendered()

        assert snapshot("misgendered") == before

    def test_it_redraws_the_names_in_place_with_replace(self, misgendered):
        ids = list(Instance.objects.order_by("ordinal").values_list("id", flat=True))
        earlier_rule()

        output, summary = run_import(
            "misgendered", "--templates", str(MISGENDERED_FILE), "--names-dir", str(NAMES_DIR), "--replace"
        )

        assert "redrew the names of 3000 instances" in output
        assert summary["replaced"] == 3000 and summary["instances"] == 3000
        assert stored_names() == seed_eval_names()
        instance = Instance.objects.get(template__source_id="0", pronoun="xe", draw=2)
        assert instance.text.startswith(f"{instance.name}/'s pronouns are xe/xem/xyrs. {instance.name} was")
        assert list(Instance.objects.order_by("ordinal").values_list("id", flat=True)) == ids
        # Now the import is the current one: running it again changes nothing.
        assert (
            "already imported"
            in run_import("misgendered", "--templates", str(MISGENDERED_FILE), "--names-dir", str(NAMES_DIR))[0]
        )

    def test_it_refuses_to_replace_names_that_generation_jobs_were_made_from(self, misgendered):
        from tests.factories import GenerationJobFactory

        earlier_rule()
        job = GenerationJobFactory(dataset=Dataset.objects.get(name="misgendered"))
        before = snapshot("misgendered")

        with pytest.raises(CommandError, match=rf"generation job\(s\) {job.pk} were made from their current text"):
            import_misgendered("--replace")

        assert snapshot("misgendered") == before

    def test_it_still_refuses_other_arguments_under_an_existing_name_after_the_earlier_rule(self, misgendered):
        earlier_rule()

        with pytest.raises(CommandError, match="already imported from other files or arguments"):
            import_misgendered("--seed", "1", "--replace")


MISGENDERED_HEADER = "form,template,template_id\n"
GOOD_ROW = 'nom,"{name}/\'s pronouns are {nom}/{acc}/{pos_ind}. {name} sang. {mask_token} sang again.",1\n'
RUFF_HEADER = "occupation\tparticipant\tsentence\tpronoun_type\tword\tpronoun\tuid\tconfuse_pronoun\n"
RUFF_GOOD = "".join(
    f"cook\tguest\tThe cook said {p} was late. The guest said that $NOM_PRONOUN was early.\t$NOM_PRONOUN\tcook\t{p}\tu0\t\n"
    for p in ("he", "she", "they", "xe")
)


def write(tmp_path: Path, name: str, content: str | bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return path


MALFORMED_MISGENDERED = {
    "missing column": ("form,template\nnom,{mask_token} sang.\n", r"bad\.csv:1: missing column\(s\) template_id"),
    "unknown form": (
        MISGENDERED_HEADER + GOOD_ROW + "dative,{mask_token} sang.,2\n",
        r"bad\.csv:3: unknown form 'dative'",
    ),
    "template without its mask": (
        MISGENDERED_HEADER + GOOD_ROW + "nom,{name} sang alone.,2\n",
        r"bad\.csv:3: template has no mask",
    ),
    "unknown placeholder": (
        MISGENDERED_HEADER + GOOD_ROW + "nom,{nickname} sang. {mask_token} sang.,2\n",
        r"bad\.csv:3: unknown placeholder\(s\) \{nickname\}",
    ),
    "duplicate template id": (
        MISGENDERED_HEADER + GOOD_ROW + GOOD_ROW,
        r"bad\.csv:3: template_id '1' already used on line 2",
    ),
    "bad encoding": (
        (MISGENDERED_HEADER + GOOD_ROW).encode() + b"nom,Jos\xe9 sang. {mask_token} sang.,2\n",
        r"bad\.csv:3: not UTF-8",
    ),
}


@pytest.mark.django_db
@pytest.mark.parametrize("case", sorted(MALFORMED_MISGENDERED))
def test_it_rejects_a_malformed_misgendered_file_and_writes_nothing(tmp_path, case):
    content, message = MALFORMED_MISGENDERED[case]
    path = write(tmp_path, "bad.csv", content)

    with pytest.raises(CommandError, match=message):
        call_command("import_dataset", "misgendered", "--templates", str(path), "--names-dir", str(NAMES_DIR))

    assert Dataset.objects.count() == 0
    assert Template.objects.count() == 0
    assert Instance.objects.count() == 0


MALFORMED_RUFF = {
    "missing column": (RUFF_HEADER.replace("\tuid", "\tid"), r"bad\.tsv:1: missing column\(s\) uid"),
    "unknown pronoun": (
        RUFF_HEADER + RUFF_GOOD + RUFF_GOOD.splitlines()[0].replace("\the\tu0", "\tze\tu1") + "\n",
        r"bad\.tsv:6: pronoun 'ze' is not a nom form",
    ),
    "unknown pronoun type": (
        RUFF_HEADER + RUFF_GOOD.replace("\t$NOM_PRONOUN\t", "\t$DAT_PRONOUN\t", 1),
        r"bad\.tsv:2: unknown pronoun_type '\$DAT_PRONOUN'",
    ),
    "sentence without its mask": (
        RUFF_HEADER + RUFF_GOOD.replace("said that $NOM_PRONOUN was", "said that she was", 1),
        r"bad\.tsv:2: sentence must contain its mask \$NOM_PRONOUN exactly once",
    ),
    "bad encoding": (
        (RUFF_HEADER + RUFF_GOOD).encode() + b"cook\tguest\t\xff\xfe\t$NOM_PRONOUN\tcook\the\tu9\t\n",
        r"bad\.tsv:6: not UTF-8",
    ),
}


@pytest.mark.django_db
@pytest.mark.parametrize("case", sorted(MALFORMED_RUFF))
def test_it_rejects_a_malformed_ruff_file_and_writes_nothing(tmp_path, case):
    content, message = MALFORMED_RUFF[case]
    path = write(tmp_path, "bad.tsv", content)

    with pytest.raises(CommandError, match=message):
        call_command("import_dataset", "ruff", "--templates", str(path))

    assert Dataset.objects.count() == 0 and Instance.objects.count() == 0


@pytest.mark.django_db
def test_it_imports_a_small_good_ruff_file(tmp_path):
    path = write(tmp_path, "good.tsv", RUFF_HEADER + RUFF_GOOD)
    _, summary = run_import("ruff", "--templates", str(path), "--name", "tiny")
    assert summary == {"dataset": "tiny", "instances": 4, "per_pronoun": dict.fromkeys(BASES, 1)}


@pytest.mark.slow  # starts a process; the full suite runs it
def test_the_command_exits_non_zero_from_the_shell(tmp_path):
    """The contract is an exit status and a message on stderr, not just an exception inside Django."""
    import subprocess
    import sys

    from tests.conftest import REPO

    path = write(tmp_path, "bad.csv", MISGENDERED_HEADER + "nom,{name} sang.,1\n")
    result = subprocess.run(
        [
            sys.executable,
            "manage.py",
            "import_dataset",
            "misgendered",
            "--templates",
            str(path),
            "--names-dir",
            str(NAMES_DIR),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={**__import__("os").environ, "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}"},
    )
    assert result.returncode != 0
    assert f"{path}:2: template has no mask" in result.stderr
