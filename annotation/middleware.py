"""A study participant's session (annotation/study_views.py) reaches the annotator API, the annotation page of their
own pool, the study pages and logging out; anything else answers 403, before any view runs."""

from __future__ import annotations

from django.http import HttpResponseForbidden, JsonResponse

PARTICIPANT_SESSION_KEY = "concord_participant"
ALLOWED_VIEWS = frozenset(
    {
        "annotation:api-next",
        "annotation:api-item",
        "annotation:api-annotations",
        "annotation:annotate",
        "annotation:annotate-pool",
        "annotation:study-join",
        "annotation:study-finish",
        "home",  # an annotator's home is their queue
        "logout",
        "api-logout",
    }
)
REFUSED = "A study participant's session may use the annotation page and the annotator API only."


class ParticipantScopeMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_view(self, request, view_func, view_args, view_kwargs):
        if not request.user.is_authenticated or PARTICIPANT_SESSION_KEY not in request.session:
            return None
        match = request.resolver_match
        if match is not None and match.view_name in ALLOWED_VIEWS:
            return None
        if request.path.startswith("/api/"):
            return JsonResponse({"detail": REFUSED}, status=403)
        return HttpResponseForbidden(REFUSED, content_type="text/plain; charset=utf-8")
