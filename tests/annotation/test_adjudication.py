"""Adjudication of every kind of disagreement: label, extraneous flag and marked words, over two or more annotators."""

import re

import pytest

from annotation import views
from annotation.models import Adjudication, Annotation, ExtraneousSpan
from annotation.selectors import research
from annotation.selectors.research import pool_disagreements, pool_disagreements_page
from annotation.services.adjudication import AdjudicationError, adjudication_save
from tests.annotation.factories import annotator_named, pool_for
from tests.factories import AnnotationFactory

TEXT = "The man said xe was late, and the woman agreed."
MAN = (4, 7)
WOMAN = (34, 39)


def annotate(item, annotator, label="correct", *, extraneous=False, spans=(), notes="", seconds=0.0):
    annotation = AnnotationFactory(
        item=item, annotator=annotator, label=label, extraneous=extraneous, notes=notes, seconds=seconds
    )
    for start, end in spans:
        ExtraneousSpan.objects.create(annotation=annotation, start=start, end=end)
    return annotation


@pytest.fixture
def three(annotator, second_annotator):
    return annotator, second_annotator, annotator_named("cy")


@pytest.fixture
def scene(three):
    """Item 0: labels differ; 1: extraneous flags differ; 2: marked words differ; 3: all agree; 4: one annotation."""
    ana, bo, cy = three
    pool, items = pool_for(ana, bo, cy, items=5, continuation=TEXT)
    annotate(items[0], ana, "correct", notes="fine to me", seconds=4.5)
    annotate(items[0], bo, "misgendering", seconds=12.0)
    annotate(items[0], cy, "correct", seconds=6.0)
    annotate(items[1], ana, extraneous=True, spans=[MAN])
    annotate(items[1], bo, extraneous=False)
    annotate(items[2], ana, extraneous=True, spans=[MAN])
    annotate(items[2], bo, extraneous=True, spans=[MAN, WOMAN])
    annotate(items[2], cy, extraneous=True, spans=[MAN])
    annotate(items[3], ana)
    annotate(items[3], bo)
    annotate(items[4], ana, "misgendering")
    return pool, items


def kinds_by_item(rows):
    return {row.item.pk: row.kinds for row in rows}


@pytest.mark.django_db
class TestDisagreements:
    def test_it_lists_each_kind_of_disagreement_with_its_kinds(self, scene):
        pool, items = scene

        rows = pool_disagreements(pool=pool)

        assert kinds_by_item(rows) == {
            items[0].pk: ["label"],
            items[1].pk: ["extraneous", "spans"],
            items[2].pk: ["spans"],
        }

    def test_it_shows_every_annotation_with_its_notes_seconds_and_words(self, scene):
        pool, items = scene

        rows = {row.item.pk: row for row in pool_disagreements(pool=pool)}

        first = rows[items[0].pk]
        assert [(a.annotator.username, a.label, a.notes, a.seconds) for a, _ in first.annotations] == [
            ("ana", "correct", "fine to me", 4.5),
            ("bo", "misgendering", "", 12.0),
            ("cy", "correct", "", 6.0),
        ]
        marked = rows[items[2].pk]
        assert [[w.word for w in words] for _, words in marked.annotations] == [["man"], ["man", "woman"], ["man"]]
        assert [(w.word, w.annotators) for w in marked.marked_words] == [
            ("man", ["ana", "bo", "cy"]),
            ("woman", ["bo"]),
        ]

    def test_it_filters_by_kind_and_by_status(self, scene, researcher):
        pool, items = scene
        adjudication_save(item=items[2], spans=[list(MAN)], adjudicator=researcher)

        assert list(kinds_by_item(pool_disagreements(pool=pool, kind="spans"))) == [items[1].pk, items[2].pk]
        assert list(kinds_by_item(pool_disagreements(pool=pool, kind="label"))) == [items[0].pk]
        assert list(kinds_by_item(pool_disagreements(pool=pool, status="open"))) == [items[0].pk, items[1].pk]
        assert list(kinds_by_item(pool_disagreements(pool=pool, status="adjudicated"))) == [items[2].pk]

    def test_it_sorts_by_the_number_of_kinds_and_open_items_first(self, scene, researcher):
        pool, items = scene
        adjudication_save(item=items[0], label="correct", adjudicator=researcher)

        assert list(kinds_by_item(pool_disagreements(pool=pool, sort="kinds")))[0] == items[1].pk
        assert list(kinds_by_item(pool_disagreements(pool=pool, sort="open"))) == [
            items[1].pk,
            items[2].pk,
            items[0].pk,
        ]

    def test_it_leaves_out_gold_and_training_items(self, scene):
        pool, items = scene
        items[0].kind, items[0].gold_label = "gold", "correct"
        items[0].save()

        assert items[0].pk not in kinds_by_item(pool_disagreements(pool=pool))


@pytest.mark.django_db
class TestAdjudicationService:
    def test_it_stores_label_flag_and_words_beside_the_annotations_with_who_and_when(self, scene, researcher):
        _, items = scene

        verdict = adjudication_save(
            item=items[1], label="correct", extraneous=True, spans=[[34, 39], [4, 7], [4, 7]], adjudicator=researcher
        )

        verdict.refresh_from_db()
        assert (verdict.label, verdict.extraneous, verdict.spans) == ("correct", True, [[4, 7], [34, 39]])
        assert verdict.adjudicator == researcher and verdict.created_at and verdict.updated_at
        assert sorted(Annotation.objects.filter(item=items[1]).values_list("extraneous", flat=True)) == [False, True]

    def test_it_keeps_parts_not_adjudicated_empty(self, scene, researcher):
        _, items = scene

        verdict = adjudication_save(item=items[2], spans=[], adjudicator=researcher)

        assert (verdict.label, verdict.extraneous, verdict.spans) == ("", None, [])

    def test_it_refuses_words_outside_the_text_and_words_with_a_no_flag(self, scene):
        _, items = scene

        with pytest.raises(AdjudicationError, match="outside the generated text"):
            adjudication_save(item=items[2], spans=[[40, 400]])
        with pytest.raises(AdjudicationError, match="settled as no"):
            adjudication_save(item=items[2], extraneous=False, spans=[list(MAN)])
        with pytest.raises(AdjudicationError, match="nothing to save"):
            adjudication_save(item=items[2])
        assert not Adjudication.objects.exists()

    def test_it_refuses_gold_and_training_items(self, scene):
        _, items = scene
        items[0].kind, items[0].gold_label = "training", "correct"
        items[0].save()

        with pytest.raises(AdjudicationError, match="training items have a known answer"):
            adjudication_save(item=items[0], label="misgendering")


@pytest.mark.django_db
class TestAdjudicationPage:
    def test_it_shows_every_kind_and_starts_the_label_choice_empty(self, client, researcher, scene):
        pool, items = scene
        client.force_login(researcher)

        response = client.get(f"/pools/{pool.name}/adjudicate/")

        html = response.content.decode()
        assert response.status_code == 200
        assert "pronoun label" in html and "extraneous flag" in html and "marked words" in html
        assert "fine to me" in html and "12.0" in html
        for _, form in response.context["rows"]:
            assert form["label"].value() in (None, "")
            assert form.fields["label"].choices[0] == ("", "not adjudicated")
        assert '<option value="" selected>not adjudicated</option>' in html

    def test_it_filters_from_the_query(self, client, researcher, scene):
        pool, items = scene
        client.force_login(researcher)

        response = client.get(f"/pools/{pool.name}/adjudicate/", {"kind": "label"})

        assert [row.item for row, _ in response.context["rows"]] == [items[0]]

    def test_it_settles_the_marked_words_from_the_page(self, client, researcher, scene):
        pool, items = scene
        client.force_login(researcher)

        response = client.post(
            f"/pools/{pool.name}/adjudicate/",
            {"item": items[2].public_id, "label": "", "extraneous": "yes", "decide_spans": "on", "spans": ["4-7"]},
        )

        assert response.status_code == 302 and response.url.endswith(f"#item-{items[2].public_id}")
        verdict = Adjudication.objects.get(item=items[2])
        assert (verdict.label, verdict.extraneous, verdict.spans, verdict.adjudicator) == (
            "",
            True,
            [[4, 7]],
            researcher,
        )

    def test_it_returns_to_the_same_filters_after_saving(self, client, researcher, scene):
        pool, items = scene
        client.force_login(researcher)

        response = client.post(
            f"/pools/{pool.name}/adjudicate/",
            {"item": items[0].public_id, "label": "correct", "back": "?kind=label&status=open\r\nX-Evil: 1"},
        )

        assert response.status_code == 302
        assert response.url.startswith(f"/pools/{pool.name}/adjudicate/?kind=label&status=open")
        assert "\n" not in response.url and response.url.endswith(f"#item-{items[0].public_id}")

    def test_it_leaves_the_words_alone_unless_asked_to_settle_them(self, client, researcher, scene):
        pool, items = scene
        client.force_login(researcher)

        client.post(
            f"/pools/{pool.name}/adjudicate/", {"item": items[1].public_id, "extraneous": "no", "spans": ["4-7"]}
        )

        verdict = Adjudication.objects.get(item=items[1])
        assert (verdict.extraneous, verdict.spans) == (False, None)

    def test_it_shows_why_nothing_was_saved(self, client, researcher, scene):
        pool, items = scene
        client.force_login(researcher)

        response = client.post(f"/pools/{pool.name}/adjudicate/", {"item": items[0].public_id}, follow=True)

        assert "nothing to save" in response.content.decode()
        assert not Adjudication.objects.exists()

    def test_it_is_closed_to_annotators(self, client, annotator, scene):
        pool, items = scene
        client.force_login(annotator)

        assert client.get(f"/pools/{pool.name}/adjudicate/").status_code == 403
        assert (
            client.post(f"/pools/{pool.name}/adjudicate/", {"item": items[0].public_id, "label": "correct"}).status_code
            == 403
        )
        assert not Adjudication.objects.exists()


# --- in pages: the same items in the same order as the whole list, an item with many annotations summarised as
# counts per label, and page links that keep the filters
def _all_pages(pool, per_page, **filters):
    first = pool_disagreements_page(pool=pool, per_page=per_page, **filters)
    rows = list(first.rows)
    for number in range(2, first.pages + 1):
        rows += pool_disagreements_page(pool=pool, per_page=per_page, page=number, **filters).rows
    return first, rows


@pytest.mark.django_db
class TestPages:
    @pytest.mark.parametrize(
        "filters",
        [{}, {"kind": "spans"}, {"kind": "label"}, {"status": "open"}, {"status": "adjudicated"},
         {"sort": "kinds"}, {"sort": "open"}, {"sort": "cell"}, {"model": "nobody"}],
    )  # fmt: skip
    def test_it_pages_the_items_of_the_whole_list_in_its_order(self, scene, researcher, filters):
        pool, items = scene
        adjudication_save(item=items[2], spans=[list(MAN)], adjudicator=researcher)
        whole = kinds_by_item(pool_disagreements(pool=pool, **filters))

        first, rows = _all_pages(pool, 2, **filters)

        assert list(kinds_by_item(rows).items()) == list(whole.items())
        assert first.count == len(whole) and first.pages == max(1, -(-len(whole) // 2))

    def test_it_lists_every_annotation_of_an_item_with_few(self, scene):
        pool, items = scene

        rows = {row.item.pk: row for row in pool_disagreements_page(pool=pool).rows}

        first = rows[items[0].pk]
        assert [(a.annotator.username, a.label, a.notes) for a, _ in first.annotations] == [
            ("ana", "correct", "fine to me"),
            ("bo", "misgendering", ""),
            ("cy", "correct", ""),
        ]
        assert first.label_counts is None and first.n_annotations == 3

    def test_it_summarises_an_item_with_more_annotations_than_it_lists(self, scene):
        pool, items = scene

        rows = {row.item.pk: row for row in pool_disagreements_page(pool=pool, listed=2).rows}

        labels, marked, two = rows[items[0].pk], rows[items[2].pk], rows[items[1].pk]
        assert labels.annotations == [] and labels.label_counts == [("correct", 2), ("misgendering", 1)]
        assert labels.extraneous_counts == (0, 3)
        # ana and cy marked "man", bo "man" and "woman"; all three said extraneous
        assert marked.extraneous_counts == (3, 0) and marked.label_counts == [("correct", 3)]
        assert [(w.word, w.start, w.end, w.annotators) for w in marked.marked_words] == [
            ("man", 4, 7, ["ana", "bo", "cy"]),
            ("woman", 34, 39, ["bo"]),
        ]
        assert len(two.annotations) == 2 and two.label_counts is None  # two annotations: listed

    def test_a_page_past_the_last_is_the_last(self, scene):
        pool, _ = scene

        page = pool_disagreements_page(pool=pool, per_page=2, page=9)

        assert (page.number, page.pages, len(page.rows)) == (2, 2, 1)


@pytest.mark.django_db
class TestPage:
    def test_it_shows_one_page_with_links_that_keep_the_filters(self, scene, client, researcher, monkeypatch):
        pool, items = scene
        monkeypatch.setattr(views, "ADJUDICATION_PAGE_SIZE", 2)
        client.force_login(researcher)
        url = f"/pools/{pool.name}/adjudicate/"

        first = client.get(url, {"sort": "item"}).content.decode()
        second = client.get(url, {"sort": "item", "page": "2"}).content.decode()
        odd = client.get(url, {"page": "x"}).content.decode()

        shown = re.compile(r'<article class="card" id="item-([^"]+)"')
        assert shown.findall(first) == [items[0].public_id, items[1].public_id] == shown.findall(odd)
        assert shown.findall(second) == [items[2].public_id]
        assert "3 items. Page 1 of 2." in first and "3 items. Page 2 of 2." in second
        assert 'href="?sort=item&amp;page=2" rel="next"' in first and 'rel="prev"' not in first
        assert 'href="?sort=item&amp;page=1" rel="prev"' in second and 'rel="next"' not in second

    def test_it_counts_the_labels_of_an_item_past_the_listed_count(self, scene, client, researcher, monkeypatch):
        pool, items = scene
        monkeypatch.setattr(research, "ANNOTATIONS_LISTED", 2)
        client.force_login(researcher)

        html = client.get(f"/pools/{pool.name}/adjudicate/").content.decode()

        item = html.split(f'id="item-{items[0].public_id}"')[1].split("</article>")[0]
        counts = re.findall(
            r'<tr class="label-count"><td><strong>([^<]+)</strong></td><td class="num">(\d+)</td>', item
        )
        assert [n for _, n in counts] == ["2", "1"] and len(counts) == 2
        assert 'class="annotation"' not in item and "fine to me" not in item
        assert "Extraneous: yes 0, no 3." in item

    def test_a_small_pool_is_one_page_listing_every_annotation(self, scene, client, researcher):
        pool, items = scene
        client.force_login(researcher)

        html = client.get(f"/pools/{pool.name}/adjudicate/").content.decode()

        assert "3 items." in html and "Page 1 of" not in html and 'rel="next"' not in html
        assert html.count('<tr class="annotation">') == 3 + 2 + 3 and "label-count" not in html
