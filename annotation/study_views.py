"""A pool's study link on a crowd platform (annotation/services/recruitment.py): joining, the finish page with the
completion code, and the pool page's recruitment form and participants download.

The platform's ids arrive in the link's query; they are stored on the participant and never logged (Django's request
log names the path alone, and the pages send no referrer). A participant's session reaches only these pages, the
annotation page of their pool and the annotator API (annotation/middleware.py).
"""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login
from django.core.cache import cache
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_http_methods, require_safe

from accounts.backends import client_address
from accounts.roles import RESEARCHER, role_required
from annotation.access import pool_visible_or_404
from annotation.middleware import PARTICIPANT_SESSION_KEY
from annotation.models import Participant, Recruitment
from annotation.selectors.participants import participants_csv
from annotation.services.recruitment import (
    RecruitmentError,
    StudyRefused,
    completion_url,
    participant_finish,
    participant_join,
    recruitment_close,
    recruitment_open,
)
from common.errors import refusal_shown

_REFUSED_STATUS = {"bad_id": 400, "unknown": 404, "closed": 410, "full": 409, "no_items": 409}
_REFUSED_TITLE = {
    "bad_id": "This study link is incomplete",
    "unknown": "No such study",
    "closed": "This study is closed",
    "full": "This study is full",
    "no_items": "This study is full",
}


def _page(request, *, state: str, title: str, message: str, status: int = 200, code: str = "", platform: str = ""):
    response = render(
        request,
        "annotation/study_page.html",
        {
            "state": state,
            "title": title,
            "message": message,
            "status": status if status >= 400 else None,
            "code": code,
            "complete_url": completion_url(code) if code else "",
            "platform": platform,
        },
        status=status,
    )
    response["Referrer-Policy"] = "no-referrer"
    response["Cache-Control"] = "no-store"
    return response


def _too_many(request) -> bool:
    """Whether this address has visited study links more than STUDY_JOIN_PER_MINUTE times in this minute."""
    minute = int(timezone.now().timestamp() // 60)
    key = f"concord:study-join:{client_address(request) or 'unknown'}:{minute}"
    cache.add(key, 0, timeout=120)
    try:
        visits = cache.incr(key)
    except ValueError:  # expired between add and incr
        cache.set(key, 1, timeout=120)
        visits = 1
    return visits > settings.CONCORD_STUDY_JOIN_PER_MINUTE


@require_safe  # HEAD (a link checker's) answers as GET without its body (config/hygiene.py strips it)
def study_join(request, token: str):
    """`GET /study/TOKEN/?PROLIFIC_PID=...&STUDY_ID=...&SESSION_ID=...`: sign the participant in (made on the first
    visit) and take them to the pool's annotation page, or to their code once finished."""
    if _too_many(request):
        return _page(
            request,
            state="rate_limited",
            title="Too many visits",
            message="This address opened study links too often; wait a minute, then open the link again.",
            status=429,
        )
    try:
        visit = participant_join(
            token=token,
            participant_id=request.GET.get("PROLIFIC_PID", ""),
            study_id=request.GET.get("STUDY_ID", ""),
            session_id=request.GET.get("SESSION_ID", ""),
        )
    except StudyRefused as exc:
        return _page(
            request,
            state=exc.reason,
            title=_REFUSED_TITLE[exc.reason],
            message=str(exc),
            status=_REFUSED_STATUS[exc.reason],
        )
    participant = visit.participant
    login(request, participant.user, backend="django.contrib.auth.backends.ModelBackend")
    request.session[PARTICIPANT_SESSION_KEY] = participant.pk
    if visit.finished:
        return redirect("annotation:study-finish")
    return redirect("annotation:annotate-pool", pool=participant.recruitment.pool.name)


def session_participant(request) -> Participant | None:
    """The participant whose session this is, or None."""
    pk = request.session.get(PARTICIPANT_SESSION_KEY) if request.user.is_authenticated else None
    if pk is None:
        return None
    return Participant.objects.select_related("recruitment__pool", "user").filter(pk=pk, user=request.user).first()


@require_safe
def study_finish(request):
    """The participant's end: the completion code (or the screened one) once finished; else back to the work."""
    participant = session_participant(request)
    if participant is None:
        return _page(
            request,
            state="no_session",
            title="No study in progress",
            message="Open the study link from the platform again to go on.",
            status=403,
        )
    visit = participant_finish(participant=participant)
    participant = visit.participant
    recruitment = participant.recruitment
    if not visit.finished:
        return redirect("annotation:annotate-pool", pool=recruitment.pool.name)
    platform = recruitment.get_platform_display()
    if participant.outcome == Participant.SCREENED:
        if participant.code_shown:
            message = (
                "You did not reach the training round's pass mark, so the study ends here. Return to "
                f"{platform} with this code."
            )
        else:
            message = (
                "You did not reach the training round's pass mark, so the study ends here. This study gives no code "
                f"for that: return the study on {platform}."
            )
        return _page(
            request, state="screened", title="Thank you", message=message, code=participant.code_shown,
            platform=platform,
        )  # fmt: skip
    return _page(
        request,
        state="completed",
        title="Thank you: you are done",
        message=f"You have finished the study. Return to {platform} with this code.",
        code=participant.code_shown,
        platform=platform,
    )


@require_http_methods(["GET", "HEAD", "POST"])  # GET: back to the pool page
@role_required(RESEARCHER)
def pool_recruit(request, name: str):
    """The pool page's recruitment form: open or update (`action=open`), close, or a new link (`rotate`)."""
    pool = pool_visible_or_404(user=request.user, name=name)
    back = f"{reverse('annotation:pool-detail', kwargs={'name': pool.name})}#recruit"
    if request.method != "POST":
        return redirect(back)
    action = request.POST.get("action", "open")
    with refusal_shown(request, say=_not_changed):
        if action == "close":
            recruitment_close(pool=pool, user=request.user)
            messages.success(request, "Recruitment closed: the link lets nobody new in.")
        elif action == "rotate":
            recruitment_open(pool=pool, rotate=True, user=request.user)
            messages.success(request, "New study link: paste it into Prolific; the old one no longer works.")
        else:
            recruitment_open(
                pool=pool,
                items_per_person=_number(request.POST, "items_per_person", "Study items per participant"),
                completion_code=request.POST.get("completion_code", ""),
                screened_code=request.POST.get("screened_code", ""),
                max_people=_number(request.POST, "max_people", "Participants at most"),
                timeout_minutes=_number(request.POST, "timeout_minutes", "Minutes idle"),
                overlap=_number(request.POST, "overlap", "Overlap"),
                raters=_number(request.POST, "raters", "Participants per overlap item"),
                user=request.user,
            )
            messages.success(request, "Recruitment open: the study URL is below.")
    return redirect(back)


def _not_changed(message: str) -> str:
    return f"Not changed: {message.replace('--', '')}."  # the service names the command's flags


def _number(data, name: str, title: str) -> int | None:
    text = data.get(name, "").strip()
    if not text:
        return None
    try:
        return int(text)
    except ValueError:
        raise RecruitmentError(f"{title}: {text!r} is not a whole number") from None


@require_safe
@role_required(RESEARCHER)
def pool_participants(request, name: str):
    """The participants' CSV (`export_participants`): the only download with the platform's ids."""
    pool = pool_visible_or_404(user=request.user, name=name)
    if not Recruitment.objects.filter(pool=pool).exists():
        return redirect(f"{reverse('annotation:pool-detail', kwargs={'name': pool.name})}#recruit")
    response = HttpResponse(participants_csv(pool=pool), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{pool.name}-participants.csv"'
    response["Cache-Control"] = "no-store"
    return response
