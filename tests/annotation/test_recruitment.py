"""Recruiting annotators on a crowd platform, the Prolific way (docs/guide-researcher.md, "Recruiting on Prolific"):
the study link, joining and resuming, the idle return, finishing with the completion or screened code, the
participants' export, role isolation, and participant ids absent from every other output."""

from __future__ import annotations

import copy
import csv
import io
import json
import logging
import zipfile
from datetime import timedelta
from urllib.parse import parse_qs, urlsplit

import pytest
from auditlog.models import LogEntry
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

from accounts.roles import ANNOTATOR, has_role
from annotation.models import Annotation, Assignment, Participant, Recruitment
from annotation.services import AssignmentError, assignments_create
from annotation.services.recruitment import recruitment_close, recruitment_open
from tests.factories import PoolFactory, PoolItemFactory

NEXT = "/api/annotate/next/"
SUBMIT = "/api/annotations/"
PID = "5f3a9c0d1e2b4a6f8c7d9e0a"  # 24 hex characters, as Prolific's
PID2 = "6a1b2c3d4e5f60718293a4b5"
STUDY = "60aa11bb22cc33dd44ee55ff"
SESSION = "70ff00ee11dd22cc33bb44aa"
EXPECTED = ["correct", "misgendering", "no_pronoun"]


def study_items(pool, count: int) -> list:
    return [PoolItemFactory(pool=pool, continuation=f"Xe smiled, item {n}.") for n in range(count)]


@pytest.fixture(scope="module")
def pool_built(module_db):
    """The pool `crowd` (12 study items and a gold one), built once per module (`module_db`): every test sees its
    rows, and its own writes roll back."""
    with module_db():
        pool = PoolFactory(name="crowd")
        study_items(pool, 12)
        PoolItemFactory(pool=pool, kind="gold", gold_label="correct")
        return pool


@pytest.fixture
def pool(pool_built, db):
    """The module's pool, its record a copy for this test."""
    return copy.deepcopy(pool_built)


@pytest.fixture
def recruitment(pool):
    return recruitment_open(pool=pool, items_per_person=4, completion_code="C1A2B3C4")


def link(recruitment, pid=PID, study=STUDY, session=SESSION) -> str:
    recruitment.refresh_from_db()
    return f"/study/{recruitment.token}/?PROLIFIC_PID={pid}&STUDY_ID={study}&SESSION_ID={session}"


def join(recruitment, pid=PID, client=None):
    client = client or Client()
    return client, client.get(link(recruitment, pid))


def participant_of(pid=PID) -> Participant:
    return Participant.objects.select_related("user").get(participant_id=pid)


def kinds(participant) -> dict[str, int]:
    counts: dict[str, int] = {}
    for kind in Assignment.objects.filter(annotator=participant.user).values_list("item__kind", flat=True):
        counts[kind] = counts.get(kind, 0) + 1
    return counts


def work_through(client, pool, *, labels=None) -> int:
    """Answer every item the annotator API serves (gold and training as expected unless `labels` says otherwise)."""
    saved = 0
    while True:
        response = client.get(NEXT, {"pool": pool.name})
        if response.status_code != 200:
            return saved
        body = response.json()
        item = pool.items.get(public_id=body["item"])
        label = (labels or {}).get(item.public_id) or item.gold_label or "correct"
        answer = client.post(
            SUBMIT, {"item": body["item"], "label": label, "seconds": 2.5}, content_type="application/json"
        )
        assert answer.status_code == 201, answer.content
        saved += 1


# The study link ------------------------------------------------------------------------------------------------------


def test_pool_recruit_opens_updates_rotates_and_closes_with_json_on_the_last_line(pool, capsys):
    call_command(
        "pool_recruit", "--pool", pool.name, "--platform", "prolific", "--items-per-person", "5",
        "--completion-code", "C0DE1234", "--screened-code", "SCR33N", "--max-people", "30",
        "--timeout-minutes", "45", "--base-url", "https://concord.example.org/", "--json",
    )  # fmt: skip
    state = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    recruitment = Recruitment.objects.get(pool=pool)
    assert state["pool"] == pool.name and state["open"] is True and state["platform"] == "prolific"
    assert (state["items_per_person"], state["max_people"], state["timeout_minutes"]) == (5, 30, 45)
    assert (state["completion_code"], state["screened_code"]) == ("C0DE1234", "SCR33N")
    url = urlsplit(state["url"])
    assert (url.scheme, url.netloc, url.path) == ("https", "concord.example.org", f"/study/{recruitment.token}/")
    assert parse_qs(url.query) == {
        "PROLIFIC_PID": ["{{%PROLIFIC_PID%}}"],
        "STUDY_ID": ["{{%STUDY_ID%}}"],
        "SESSION_ID": ["{{%SESSION_ID%}}"],
    }
    assert len(recruitment.token) >= 43  # 32 random bytes, URL-safe: 256 bits

    old = recruitment.token
    call_command("pool_recruit", "--pool", pool.name, "--items-per-person", "6", "--rotate", "--json")
    state = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    recruitment.refresh_from_db()
    assert state["items_per_person"] == 6 and state["completion_code"] == "C0DE1234"  # the rest kept
    assert recruitment.token != old and old not in state["url"]
    assert Client().get(f"/study/{old}/?PROLIFIC_PID={PID}").status_code == 404

    call_command("pool_recruit", "--pool", pool.name, "--close", "--json")
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["open"] is False


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--items-per-person", "3"], "needs --items-per-person and --completion-code"),
        (["--items-per-person", "99", "--completion-code", "C1"], "more than the pool's 12 study items"),
        (["--items-per-person", "0", "--completion-code", "C1"], "--items-per-person must be at least 1"),
        (["--items-per-person", "3", "--completion-code", "no spaces"], "--completion-code"),
        (["--close"], "has no recruitment"),
    ],
)
def test_pool_recruit_refuses_bad_requests_and_writes_nothing(pool, flags, message):
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match=message):
        call_command("pool_recruit", "--pool", pool.name, *flags)
    assert not Recruitment.objects.exists()


def test_the_pool_page_opens_recruitment_and_shows_the_link(pool, researcher, annotator):
    client = Client()
    client.force_login(researcher)
    form = {"action": "open", "items_per_person": "3", "completion_code": "ABC123", "timeout_minutes": "30"}
    response = client.post(f"/pools/{pool.name}/recruit/", form)
    assert response.status_code == 302
    recruitment = Recruitment.objects.get(pool=pool)
    assert (recruitment.items_per_person, recruitment.timeout_minutes, recruitment.is_open) == (3, 30, True)
    page = client.get(f"/pools/{pool.name}/").content.decode()
    assert f"http://testserver/study/{recruitment.token}/?PROLIFIC_PID={{{{%PROLIFIC_PID%}}}}" in page
    client.post(f"/pools/{pool.name}/recruit/", {"action": "close"})
    recruitment.refresh_from_db()
    assert not recruitment.is_open

    refused = Client()
    refused.force_login(annotator)
    assert refused.post(f"/pools/{pool.name}/recruit/", form).status_code == 403


# Joining and resuming ------------------------------------------------------------------------------------------------


def test_joining_makes_a_pseudonymous_annotator_of_that_pool_alone_and_signs_them_in(recruitment, pool):
    other = PoolFactory(name="other")
    PoolItemFactory(pool=other)
    client, response = join(recruitment)
    assert response.status_code == 302 and response["Location"] == f"/annotate/{pool.name}/"
    participant = participant_of()
    user = participant.user
    assert (participant.study_id, participant.session_id) == (STUDY, SESSION)
    assert has_role(user, ANNOTATOR) and not user.has_usable_password() and not user.is_staff
    assert PID not in user.username and user.first_name == user.last_name == user.email == ""
    assert kinds(participant) == {"study": 4, "gold": 1}
    assert set(Assignment.objects.filter(annotator=user).values_list("pool__name", flat=True)) == {pool.name}
    page = client.get(f"/annotate/{pool.name}/")
    assert page.status_code == 200 and 'data-finish-url="/study/finish/"' in page.content.decode()
    assert client.get(NEXT, {"pool": pool.name}).status_code == 200
    assert client.get(f"/annotate/{other.name}/").status_code == 404


def test_the_same_participant_id_resumes_the_same_annotator(recruitment, pool):
    first, _ = join(recruitment)
    item = first.get(NEXT, {"pool": pool.name}).json()["item"]
    first.post(SUBMIT, {"item": item, "label": "correct"}, content_type="application/json")
    again, response = join(recruitment)  # another browser, the same id
    assert response.status_code == 302
    assert Participant.objects.count() == 1 and get_user_model().objects.filter(participant__isnull=False).count() == 1
    body = again.get(NEXT, {"pool": pool.name}).json()
    assert body["done"] == 1 and body["total"] == 5 and body["item"] != item


@pytest.mark.parametrize(
    "query",
    [
        "",
        "?STUDY_ID=abc&SESSION_ID=def",
        "?PROLIFIC_PID=",
        f"?PROLIFIC_PID={'a' * 65}",
        "?PROLIFIC_PID=5f3a9c0d-1e2b",
        "?PROLIFIC_PID=%3Cscript%3E",
        f"?PROLIFIC_PID={PID}&SESSION_ID=not%20a%20word",
    ],
)
def test_a_missing_or_malformed_id_is_a_plain_400_and_creates_nothing(recruitment, query):
    users = get_user_model().objects.count()
    response = Client().get(f"/study/{recruitment.token}/{query}")
    assert response.status_code == 400
    text = response.content.decode()
    assert "This study link is incomplete" in text and "<nav" not in text and "<script" not in text
    assert get_user_model().objects.count() == users and not Participant.objects.exists()
    assert not Assignment.objects.exists()


def test_an_id_of_64_word_characters_is_accepted(recruitment):
    _, response = join(recruitment, pid="w_" + "9" * 62)
    assert response.status_code == 302 and Participant.objects.count() == 1


def test_a_closed_study_says_so_to_newcomers_and_lets_participants_already_in_go_on(recruitment, pool):
    join(recruitment)
    recruitment_close(pool=pool)
    _, response = join(recruitment, pid=PID2)
    assert response.status_code == 410 and "This study is closed" in response.content.decode()
    assert Participant.objects.count() == 1
    assert join(recruitment)[1].status_code == 302


def test_a_full_study_says_so_and_creates_nothing(pool):
    recruitment = recruitment_open(pool=pool, items_per_person=4, completion_code="C1", max_people=1)
    join(recruitment)
    users = get_user_model().objects.count()
    _, response = join(recruitment, pid=PID2)
    assert response.status_code == 409 and "This study is full" in response.content.decode()
    assert get_user_model().objects.count() == users and Participant.objects.count() == 1


def test_a_study_whose_items_all_have_their_annotators_is_full(pool):
    recruitment = recruitment_open(pool=pool, items_per_person=12, completion_code="C1")
    assert join(recruitment)[1].status_code == 302
    _, response = join(recruitment, pid=PID2)
    assert response.status_code == 409 and Participant.objects.count() == 1


def test_participants_share_the_items_by_the_overlap_rule(pool):
    recruitment = recruitment_open(pool=pool, items_per_person=4, completion_code="C1", overlap=4, raters=2)
    overlap = set(recruitment.overlap_items)
    assert len(overlap) == 4
    for n in range(4):
        join(recruitment, pid=f"p{n}")
    holders: dict[int, int] = {}
    for item_id in Assignment.objects.filter(item__kind="study").values_list("item_id", flat=True):
        holders[item_id] = holders.get(item_id, 0) + 1
    # 16 study places: the 4 overlap items twice, and 8 other items once each.
    assert {item_id: holders[item_id] for item_id in overlap} == dict.fromkeys(overlap, 2)
    assert sorted(count for item_id, count in holders.items() if item_id not in overlap) == [1] * 8


# The work: idle return and finishing --------------------------------------------------------------------------------


def test_an_idle_participants_open_items_go_back_to_the_queue_and_their_labels_stay(pool):
    recruitment = recruitment_open(pool=pool, items_per_person=5, completion_code="C1", timeout_minutes=60)
    first, _ = join(recruitment)
    idle = participant_of()
    body = first.get(NEXT, {"pool": pool.name}).json()
    first.post(SUBMIT, {"item": body["item"], "label": "misgendering"}, content_type="application/json")
    saved = Annotation.objects.get(annotator=idle.user)
    open_study = set(
        Assignment.objects.filter(annotator=idle.user, annotated=False, item__kind="study").values_list(
            "item_id", flat=True
        )
    )
    assert open_study
    # 59 minutes of quiet: nothing goes back.
    Participant.objects.filter(pk=idle.pk).update(last_seen_at=timezone.now() - timedelta(minutes=59))
    Annotation.objects.filter(pk=saved.pk).update(updated_at=timezone.now() - timedelta(minutes=59))
    join(recruitment, pid="second")
    assert Assignment.objects.filter(annotator=idle.user, item_id__in=open_study).count() == len(open_study)
    # 61 minutes: the open study items go back, the saved label and its item stay.
    Participant.objects.filter(pk=idle.pk).update(last_seen_at=timezone.now() - timedelta(minutes=61))
    Annotation.objects.filter(pk=saved.pk).update(updated_at=timezone.now() - timedelta(minutes=61))
    join(recruitment, pid="third")
    assert not Assignment.objects.filter(annotator=idle.user, item_id__in=open_study).exists()
    assert Annotation.objects.filter(pk=saved.pk, label="misgendering").exists()
    assert Assignment.objects.filter(annotator=idle.user, item=saved.item, annotated=True).exists()
    third = participant_of("third")
    assert open_study & set(Assignment.objects.filter(annotator=third.user).values_list("item_id", flat=True))
    # The idle one comes back: topped up with what is left (12 items: 5 each for the others, 1 saved, 1 free).
    join(recruitment)
    assert Assignment.objects.filter(annotator=idle.user, item__kind="study").count() == 2
    holders = Assignment.objects.filter(item__kind="study").values_list("item_id", flat=True)
    assert sorted(holders) == sorted(pool.items.filter(kind="study").values_list("pk", flat=True))


def test_finishing_shows_the_completion_code_and_returning_shows_it_again(recruitment, pool):
    client, _ = join(recruitment)
    assert client.get("/study/finish/")["Location"] == f"/annotate/{pool.name}/"  # not done yet
    assert work_through(client, pool) == 5  # 4 study items and the gold one
    assert client.get(NEXT, {"pool": pool.name}).status_code == 204
    page = client.get("/study/finish/")
    text = page.content.decode()
    assert page.status_code == 200 and "C1A2B3C4" in text
    assert 'href="https://app.prolific.com/submissions/complete?cc=C1A2B3C4"' in text
    participant = participant_of()
    assert participant.finished_at is not None and participant.outcome == "completed"
    assert participant.code_shown == "C1A2B3C4"
    # Returning through the link: the code again, and no more items.
    again, response = join(recruitment)
    assert response["Location"] == "/study/finish/"
    assert "C1A2B3C4" in again.get("/study/finish/").content.decode()
    assert again.get(NEXT, {"pool": pool.name}).status_code == 204
    assert Assignment.objects.filter(annotator=participant.user, item__kind="study").count() == 4


@pytest.fixture
def trained_pool(db):
    pool = PoolFactory(name="trained", pass_mark=0.9)
    for label in EXPECTED:
        PoolItemFactory(pool=pool, kind="training", gold_label=label, explanation="why")
    study_items(pool, 6)
    return pool


@pytest.mark.parametrize("screened_code", ["SCREEN9", ""])
def test_failing_the_training_round_gives_the_screened_code_and_frees_the_items(trained_pool, screened_code):
    pool = trained_pool
    recruitment = recruitment_open(pool=pool, items_per_person=3, completion_code="DONE1", screened_code=screened_code)
    client, _ = join(recruitment)
    participant = participant_of()
    assert kinds(participant) == {"training": 3, "study": 3}
    assert client.get(NEXT, {"pool": pool.name}).json()["phase"] == "training"
    wrong = {
        item.public_id: "no_pronoun" if item.gold_label != "no_pronoun" else "correct" for item in pool.items.all()
    }
    work_through(client, pool, labels=wrong)
    assert client.get(NEXT, {"pool": pool.name}).status_code == 403
    text = client.get("/study/finish/").content.decode()
    participant.refresh_from_db()
    assert participant.outcome == "screened" and "DONE1" not in text
    if screened_code:
        assert f"cc={screened_code}" in text and participant.code_shown == screened_code
    else:
        assert "gives no code" in text and "cc=" not in text and participant.code_shown == ""
    assert not Assignment.objects.filter(annotator=participant.user, item__kind="study").exists()
    assert "DONE1" not in client.get(link(recruitment), follow=True).content.decode()


def test_passing_the_training_round_leads_on_to_the_study_items_and_the_code(trained_pool):
    recruitment = recruitment_open(pool=trained_pool, items_per_person=3, completion_code="DONE1")
    client, _ = join(recruitment)
    assert work_through(client, trained_pool) == 6
    assert "cc=DONE1" in client.get("/study/finish/").content.decode()


# Export for payment ---------------------------------------------------------------------------------------------------


def test_export_participants_writes_one_safe_row_per_participant(recruitment, pool, tmp_path, researcher):
    client, _ = join(recruitment)
    work_through(client, pool)
    client.get("/study/finish/")
    join(recruitment, pid=PID2)
    out = tmp_path / "participants.csv"
    call_command("export_participants", "--pool", pool.name, "--out", str(out))
    rows = list(csv.DictReader(out.open(encoding="utf-8")))
    assert list(rows[0]) == [
        "participant_id", "study_id", "session_id", "pseudonym", "started_at", "finished_at", "items", "seconds",
        "gold_accuracy", "qualification", "code_shown",
    ]  # fmt: skip
    done, started = rows
    first = participant_of()
    expected_seconds = sum(Annotation.objects.filter(annotator=first.user).values_list("seconds", flat=True))
    assert (done["participant_id"], done["study_id"], done["session_id"]) == (PID, STUDY, SESSION)
    assert done["pseudonym"] == first.user.username
    assert (int(done["items"]), float(done["seconds"]), float(done["gold_accuracy"])) == (4, expected_seconds, 1.0)
    assert done["code_shown"] == "C1A2B3C4" and done["finished_at"] and done["qualification"] == "not_required"
    assert started["participant_id"] == PID2 and started["finished_at"] == "" and started["items"] == "0"
    assert started["gold_accuracy"] == "" and started["code_shown"] == ""

    # The same file from the pool page, for researchers only; a crafted pseudonym cannot become a formula.
    get_user_model().objects.filter(pk=first.user_id).update(username="=HYPERLINK(1)")
    researcher_client = Client()
    researcher_client.force_login(researcher)
    response = researcher_client.get(f"/pools/{pool.name}/participants.csv")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    downloaded = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert downloaded[0]["pseudonym"] == "'=HYPERLINK(1)" and downloaded[1]["participant_id"] == PID2


def test_only_researchers_and_admins_download_the_participants(recruitment, pool, people):
    participant_client, _ = join(recruitment)
    for role in ("annotator", "outsider"):
        client = Client()
        client.force_login(people[role])
        assert client.get(f"/pools/{pool.name}/participants.csv").status_code == 403
    assert participant_client.get(f"/pools/{pool.name}/participants.csv").status_code == 403
    assert Client().get(f"/pools/{pool.name}/participants.csv").status_code == 302  # to the login page
    for role in ("researcher", "admin"):
        client = Client()
        client.force_login(people[role])
        assert PID in client.get(f"/pools/{pool.name}/participants.csv").content.decode()


# Security --------------------------------------------------------------------------------------------------------------


def test_a_participant_session_reaches_the_annotator_api_and_nothing_else(recruitment, pool, annotator):
    client, _ = join(recruitment)
    assert client.get(NEXT, {"pool": pool.name}).status_code == 200
    for path in (
        "/pools/",
        f"/pools/{pool.name}/",
        "/generation/jobs/",
        "/audit/",
        "/admin/",
        f"/reports/{pool.name}/",
    ):
        assert client.get(path).status_code == 403, path
    for path in ("/api/pools/", f"/api/pools/{pool.name}/annotations/", "/api/generation-jobs/", "/api/schema/"):
        response = client.get(path)
        assert response.status_code == 403 and "annotator API only" in response.json()["detail"], path
    assert (
        client.post("/api/auth/token/", {"username": participant_of().user.username, "password": ""}).status_code == 403
    )
    # No password: the login form cannot sign them in; and no assignment run may give them other work.
    participant = participant_of()
    assert not Client().login(username=participant.user.username, password="")
    other = PoolFactory(name="elsewhere")
    PoolItemFactory(pool=other)
    with pytest.raises(AssignmentError, match="study participants"):
        assignments_create(pool=other, usernames=[participant.user.username, annotator.username])
    assert not Assignment.objects.filter(pool=other).exists()


def test_saving_from_a_participant_session_needs_the_csrf_token(recruitment, pool, csrf_client):
    csrf_client.get(link(recruitment))
    item = csrf_client.get(NEXT, {"pool": pool.name}).json()["item"]
    refused = csrf_client.post(SUBMIT, {"item": item, "label": "correct"}, content_type="application/json")
    assert refused.status_code == 403 and not Annotation.objects.exists()
    csrf_client.get(f"/annotate/{pool.name}/")
    token = csrf_client.cookies["csrftoken"].value
    saved = csrf_client.post(
        SUBMIT, {"item": item, "label": "correct"}, content_type="application/json", HTTP_X_CSRFTOKEN=token
    )
    assert saved.status_code == 201


def test_joining_is_rate_limited_per_address(pool, settings, monkeypatch):
    """The clock stands still inside one minute (the count is per address and minute), then moves to the next."""
    settings.CONCORD_STUDY_JOIN_PER_MINUTE = 3
    recruitment = recruitment_open(pool=pool, items_per_person=1, completion_code="C1")
    now = timezone.now().replace(second=10, microsecond=0)
    monkeypatch.setattr(timezone, "now", lambda: now)
    client = Client(REMOTE_ADDR="203.0.113.7")
    answers = [client.get(link(recruitment, pid=f"p{n}")).status_code for n in range(4)]
    assert answers == [302, 302, 302, 429]
    assert Participant.objects.count() == 3
    assert Client(REMOTE_ADDR="203.0.113.8").get(link(recruitment, pid="p9")).status_code == 302
    now += timedelta(minutes=1)  # the next minute counts afresh
    assert client.get(link(recruitment, pid="p4")).status_code == 302


def test_only_a_participant_session_gets_the_finish_page_and_the_finish_hook(pool, annotator):
    assert Client().get("/study/finish/").status_code == 403
    PoolItemFactory(pool=pool)
    assignments_create(pool=pool, usernames=[annotator.username])
    client = Client()
    client.force_login(annotator)
    assert client.get("/study/finish/").status_code == 403
    assert "data-finish-url" not in client.get(f"/annotate/{pool.name}/").content.decode()


# Privacy --------------------------------------------------------------------------------------------------------------


def test_participant_ids_appear_in_no_other_output(recruitment, pool, researcher, caplog, tmp_path):
    from analysis.study.export import study_export

    caplog.set_level(logging.DEBUG)
    client, _ = join(recruitment)
    work_through(client, pool)
    client.get("/study/finish/")
    join(recruitment, pid=PID2, client=Client(REMOTE_ADDR="198.51.100.1"))
    Client().get(f"/study/{recruitment.token}/?PROLIFIC_PID=bad-{PID}")
    secrets = (PID, PID2, STUDY, SESSION)

    outputs = {"logs": caplog.text}
    outputs["audit"] = "\n".join(
        f"{entry.object_repr} {entry.changes} {entry.additional_data}" for entry in LogEntry.objects.all()
    )
    researcher_client = Client()
    researcher_client.force_login(researcher)
    for fmt in ("csv", "jsonl"):
        streamed = researcher_client.get(f"/api/pools/{pool.name}/annotations/?format={fmt}").streaming_content
        outputs[f"export {fmt}"] = b"".join(streamed).decode()
    outputs["pool page"] = researcher_client.get(f"/pools/{pool.name}/").content.decode()
    outputs["report"] = researcher_client.get(f"/reports/{pool.name}/").content.decode()
    outputs["report json"] = researcher_client.get(f"/reports/{pool.name}/export/json/").content.decode()
    outputs["audit page"] = researcher_client.get("/audit/").content.decode()
    bundle = tmp_path / "bundle.zip"
    study_export(pool=pool, out=bundle)
    with zipfile.ZipFile(bundle) as archive:
        outputs["bundle"] = "\n".join(archive.read(name).decode("utf-8", "replace") for name in archive.namelist())
    assert participant_of().user.username in outputs["export csv"]  # the pseudonym stands in for the person
    for name, text in outputs.items():
        assert text, name
        for secret in secrets:
            assert secret not in text, f"{secret} in {name}"


def test_a_head_request_on_the_study_link_answers_as_get_without_a_body(recruitment, pool):
    response = Client().head(link(recruitment))

    assert response.status_code == 302 and response["Location"] == f"/annotate/{pool.name}/"
    assert response.content == b""
