"""Referents on RUFF distractor items: the tokens and their code-point offsets, what the annotator loads (blinded),
what a save needs and stores, the export and adjudication."""

from __future__ import annotations

import json

import pytest

from annotation.models import Annotation, Assignment, Referent
from annotation.referents import pronoun_tokens
from tests.annotation.test_blinding import FORBIDDEN
from tests.factories import (
    DatasetFactory,
    GenerationFactory,
    GenerationJobFactory,
    InstanceFactory,
    LanguageModelFactory,
    PoolFactory,
    PoolItemFactory,
    TemplateFactory,
)

CONTEXT = "The nurse was happy. The patient felt tired; she slept. The nurse said that"
# An emoji (one code point, two UTF-16 units) and a combining mark before the pronouns.
CONTINUATION = " xe 👩🏽 smiled at he\u0301r and Her friend; then she left with xyr bag."


def distractor_item(pool, continuation: str = CONTINUATION, *, model: str = "secret-model-7b"):
    dataset = DatasetFactory(name="ruff-distractors", kind="ruff")
    template = TemplateFactory(
        dataset=dataset,
        text="The nurse said that $NOM_PRONOUN was late.",
        mask="$NOM_PRONOUN",
        form="nom",
        meta={"occupation": "nurse", "participant": "patient", "word": "nurse"},
    )
    instance = InstanceFactory(
        template=template,
        pronoun="xe",
        name="",
        text=CONTEXT + " $NOM_PRONOUN was late.",
        distractors=2,
        other_person="patient",
        confuse_pronoun="she",
    )
    job = GenerationJobFactory(model=LanguageModelFactory(name=model), dataset=dataset)
    generation = GenerationFactory(job=job, instance=instance, continuation=continuation)
    return PoolItemFactory(
        pool=pool,
        generation=generation,
        model_name=model,
        dataset="ruff",
        context=generation.context,
        continuation=continuation,
        heuristic_correct=generation.heuristic_correct,
        first_pronoun=generation.first_pronoun,
    )


def expected_tokens(text: str) -> list[tuple[int, int, str]]:
    """By hand: the pronoun words of CONTINUATION and their code-point offsets."""
    found = []
    for word in ("xe", "Her", "she", "xyr"):
        start = text.index(" " + word + " ") + 1
        found.append((start, start + len(word), word))
    return sorted(found)


class TestTokens:
    def test_it_counts_offsets_in_code_points_past_emoji_and_combining_marks(self):
        tokens = pronoun_tokens(CONTINUATION, dataset_kind="ruff")

        assert [(t.start, t.end, t.word) for t in tokens] == expected_tokens(CONTINUATION)
        assert all(CONTINUATION[t.start : t.end] == t.word for t in tokens)
        # "he" + a combining acute is another word, not the pronoun "he"; "Her" is found whatever its case.
        assert [t.base for t in tokens] == ["xe", "she", "she", "xe"]

    def test_it_offsets_past_the_emoji_by_one_code_point(self):
        [token] = pronoun_tokens("👩🏽 she", dataset_kind="ruff")

        assert (token.start, token.end) == (3, 6)  # woman + skin tone modifier are 2 code points, 4 UTF-16 units


@pytest.fixture
def scene(annotator):
    pool = PoolFactory(name="distractor-pool")
    item = distractor_item(pool)
    Assignment.objects.create(pool=pool, item=item, annotator=annotator, position=0)
    return item


def all_referents(item, choice: str = "target") -> list[dict]:
    return [{"start": s, "end": e, "referent": choice} for s, e, _ in expected_tokens(item.continuation)]


@pytest.mark.django_db
class TestPayloadAndSave:
    def test_it_shows_both_people_and_the_tokens_and_nothing_that_unblinds(self, api, annotator, scene):
        api.force_authenticate(annotator)

        body = api.get("/api/annotate/next/").json()

        assert body["people"] == [
            {"role": "target", "name": "nurse", "pronouns": "xe/xem/xyr"},
            {"role": "other", "name": "patient", "pronouns": "she/her"},
        ]
        assert [(t["start"], t["end"], t["word"]) for t in body["pronoun_tokens"]] == expected_tokens(CONTINUATION)
        text = json.dumps(body).lower()
        for needle in FORBIDDEN:
            assert needle.lower() not in text, needle
        assert "distractor" not in text

    def test_it_stores_a_referent_per_token_with_its_word(self, api, annotator, scene):
        api.force_authenticate(annotator)
        referents = all_referents(scene)
        referents[1]["referent"] = "other"

        response = api.post(
            "/api/annotations/",
            {"item": scene.public_id, "label": "misgendering", "referents": referents},
            format="json",
        )

        assert response.status_code == 201
        stored = list(Referent.objects.values_list("start", "end", "word", "referent"))
        words = [w for _, _, w in expected_tokens(CONTINUATION)]
        assert [(s, e, w) for s, e, w, _ in stored] == expected_tokens(CONTINUATION)
        assert [r for *_, r in stored] == ["target", "other", "target", "target"] and words[1] == "Her"
        body = api.get(f"/api/annotate/items/{scene.public_id}/").json()
        assert body["annotation"]["referents"][1] == {**referents[1]}

    def test_a_reused_key_with_changed_referents_is_a_422_and_the_same_ones_a_replay(self, api, annotator, scene):
        api.force_authenticate(annotator)
        referents = all_referents(scene)
        changed = all_referents(scene)
        changed[1]["referent"] = "other"

        def save(chosen):
            return api.post(
                "/api/annotations/",
                {"item": scene.public_id, "label": "correct", "referents": chosen},
                format="json",
                HTTP_IDEMPOTENCY_KEY="one-answer",
            )

        first, replay, conflict = save(referents), save(list(reversed(referents))), save(changed)

        assert (first.status_code, replay.status_code, conflict.status_code) == (201, 200, 422)
        assert conflict.json()["conflicts"] == ["referents"]
        assert list(Referent.objects.values_list("referent", flat=True)) == ["target"] * 4

    def test_it_replaces_the_referents_on_update(self, api, annotator, scene):
        api.force_authenticate(annotator)
        for choice in ("target", "unclear"):
            api.post(
                "/api/annotations/",
                {"item": scene.public_id, "label": "correct", "referents": all_referents(scene, choice)},
                format="json",
            )

        assert set(Referent.objects.values_list("referent", flat=True)) == {"unclear"}
        assert Referent.objects.count() == 4

    @pytest.mark.parametrize(
        "change, message",
        [
            (lambda refs: refs[:-1], "every pronoun needs a referent"),
            (lambda refs: [*refs[:-1], {**refs[-1], "start": refs[-1]["start"] + 1}], "is not a pronoun"),
            (lambda refs: [*refs[:-1], {**refs[-1], "referent": "him"}], "is not one of target"),
        ],
    )
    def test_it_rejects_missing_or_wrong_referents_and_writes_nothing(self, api, annotator, scene, change, message):
        api.force_authenticate(annotator)

        response = api.post(
            "/api/annotations/",
            {"item": scene.public_id, "label": "correct", "referents": change(all_referents(scene))},
            format="json",
        )

        assert response.status_code == 400
        assert response.json()["field"] == "referents" and message in response.json()["detail"]
        assert not Annotation.objects.exists() and not Referent.objects.exists()

    def test_it_refuses_referents_on_an_item_without_distractors(self, api, annotator):
        pool = PoolFactory(name="plain")
        item = PoolItemFactory(pool=pool, continuation=" she left.")
        Assignment.objects.create(pool=pool, item=item, annotator=annotator, position=0)
        api.force_authenticate(annotator)

        response = api.post(
            "/api/annotations/",
            {"item": item.public_id, "label": "correct", "referents": [{"start": 1, "end": 4, "referent": "target"}]},
            format="json",
        )

        assert response.status_code == 400 and not Annotation.objects.exists()
        assert "people" not in api.get("/api/annotate/next/").json()


@pytest.mark.django_db
class TestExportAndAdjudication:
    def test_it_exports_the_referents_with_their_words_and_marks_the_heuristic(self, api, annotator, scene):
        from annotation.selectors.export import pool_annotation_rows

        api.force_authenticate(annotator)
        api.post(
            "/api/annotations/",
            {"item": scene.public_id, "label": "correct", "referents": all_referents(scene)},
            format="json",
        )

        [row] = pool_annotation_rows(pool=scene.pool)

        assert row["distractors"] == 2
        assert row["heuristic_validity"] == "not valid with distractors"
        assert row["referents"] == [[s, e, "target"] for s, e, _ in expected_tokens(CONTINUATION)]
        assert row["referent_words"] == ["xe", "Her", "she", "xyr"]

    def test_it_adjudicates_the_referents(self, researcher, scene):
        from annotation.services.adjudication import AdjudicationError, adjudication_save

        referents = all_referents(scene, "other")
        verdict = adjudication_save(item=scene, referents=referents, adjudicator=researcher)

        assert verdict.referents == [[s, e, "other"] for s, e, _ in expected_tokens(CONTINUATION)]
        with pytest.raises(AdjudicationError, match="every pronoun needs a referent"):
            adjudication_save(item=scene, referents=referents[:2])


@pytest.mark.django_db
class TestAdjudicationPageReferents:
    """The adjudication page settles a distractor item's referents, one choice per pronoun, beside what each
    annotator chose (docs/domain.md, 'RUFF with distractors')."""

    @pytest.fixture
    def disputed(self, scene, django_user_model):
        from tests.factories import AnnotationFactory

        tokens = expected_tokens(scene.continuation)
        for username, label, choice in (("rater-ana", "correct", "target"), ("rater-bo", "misgendering", "other")):
            annotation = AnnotationFactory(
                item=scene, annotator=django_user_model.objects.create(username=username), label=label
            )
            Referent.objects.bulk_create(
                Referent(annotation=annotation, start=s, end=e, word=w, referent=choice) for s, e, w in tokens
            )
        return scene

    def url(self, item) -> str:
        return f"/pools/{item.pool.name}/adjudicate/"

    def test_it_offers_one_choice_per_pronoun_with_the_annotators_choices(self, client, researcher, disputed):
        client.force_login(researcher)

        response = client.get(self.url(disputed))

        (row, form), *_ = response.context["rows"]
        tokens = expected_tokens(CONTINUATION)
        assert [field.name for field, _ in form.referent_rows] == [f"referent_{s}_{e}" for s, e, _ in tokens]
        assert all(annotators == "rater-ana: target, rater-bo: other" for _, annotators in form.referent_rows)
        html = response.content.decode()
        assert "Referents: who each pronoun refers to" in html and "\u201cHer\u201d at" in html

    def test_it_saves_every_referent_from_the_page(self, client, researcher, disputed):
        from annotation.models import Adjudication

        client.force_login(researcher)
        tokens = expected_tokens(CONTINUATION)
        body = {"item": disputed.public_id, **{f"referent_{s}_{e}": "other" for s, e, _ in tokens}}

        response = client.post(self.url(disputed), body, follow=True)

        assert "Adjudication saved." in response.content.decode()
        assert Adjudication.objects.get(item=disputed).referents == [[s, e, "other"] for s, e, _ in tokens]
        (row, form), *_ = response.context["rows"]
        assert all(field.value() == "other" for field, _ in form.referent_rows)  # the verdict shown as chosen

    def test_it_names_a_pronoun_left_out_and_saves_nothing(self, client, researcher, disputed):
        from annotation.models import Adjudication

        client.force_login(researcher)
        (s, e, _), *_ = expected_tokens(CONTINUATION)

        response = client.post(
            self.url(disputed), {"item": disputed.public_id, f"referent_{s}_{e}": "target"}, follow=True
        )

        assert "every pronoun needs a referent" in response.content.decode()
        assert not Adjudication.objects.exists()
