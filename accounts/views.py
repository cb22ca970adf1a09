from datetime import date
from functools import wraps

from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.core.exceptions import BadRequest
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.utils.decorators import method_decorator
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_safe
from rest_framework.authentication import get_authorization_header
from rest_framework.exceptions import AuthenticationFailed

from accounts.authentication import TokenAuthentication
from accounts.roles import ADMIN, ANNOTATOR, RESEARCHER, has_role, role_required
from accounts.services import tokens_revoke
from common.audit import AUDIT_COLUMNS, audit_changes_lines, audit_csv, audit_data_lines, audit_entries, audit_row

AUDIT_PAGE_ROWS = 500


@require_safe
@login_required
def home(request):
    """The landing page lists what the user's roles open; links are filled in by each app's urls.

    Annotators who have no other role land on their queue (the pool picker, or their only pool) instead.
    """
    if has_role(request.user, ANNOTATOR) and not has_role(request.user, RESEARCHER):
        return redirect("annotation:annotate")
    return render(request, "home.html")


class LogoutView(auth_views.LogoutView):
    """`POST /logout/`: ends the session and revokes the user's API token (README, "Roles"). Any other method is
    answered 405 before the CSRF check (which Django's view runs on every method it is sent), so a PUT is told what
    the address serves rather than refused as a forged form."""

    http_method_names = ["post"]

    @method_decorator(csrf_exempt)
    def dispatch(self, request, *args, **kwargs):
        if (request.method or "").lower() not in self.http_method_names:
            return self.http_method_not_allowed(request, *args, **kwargs)
        return super().dispatch(request, *args, **kwargs)  # csrf_protect: the POST still needs its token

    def post(self, request, *args, **kwargs):
        if request.user.is_authenticated:
            tokens_revoke(user=request.user)
        return super().post(request, *args, **kwargs)


def _date(raw: str, name: str) -> date | None:
    if not raw:
        return None
    try:
        return date.fromisoformat(raw)
    except ValueError:
        raise BadRequest(f"{name} must be a date, YYYY-MM-DD") from None


def token_accepted(view):
    """Let an API client call a page view with its token (`Authorization: Token KEY`, docs/api.md) as well as a
    browser with its session: the token's user stands in for the anonymous one before the view's own checks. A bad
    or expired token is 401, as on the API. For views that only read (GET and HEAD): no CSRF check is skipped."""

    @wraps(view)
    def wrapped(request, *args, **kwargs):
        if not request.user.is_authenticated and get_authorization_header(request):
            try:
                found = TokenAuthentication().authenticate(request)
            except AuthenticationFailed as exc:
                response = HttpResponse(f"{exc.detail}\n", status=401, content_type="text/plain; charset=utf-8")
                response["WWW-Authenticate"] = "Token"
                return response
            if found is not None:
                request.user = found[0]
        return view(request, *args, **kwargs)

    return wrapped


@require_safe
@token_accepted
@role_required(RESEARCHER)
def audit_log(request):
    """The audit trail: filtered by object (type and id), user, event and dates; `?format=csv` downloads every
    matching entry. Admins see every entry; researchers the study's (pools, imports, assignments, annotations,
    adjudications, jobs, judges), not the accounts' (users, roles, tokens)."""
    query = request.GET
    filters = {
        "object_type": query.get("object_type", "").strip(),
        "object_id": query.get("object_id", "").strip(),
        "username": query.get("user", "").strip(),
        "event": query.get("event", "").strip(),
        "since": _date(query.get("since", "").strip(), "since"),
        "until": _date(query.get("until", "").strip(), "until"),
        "accounts": has_role(request.user, ADMIN),
    }
    entries = audit_entries(**filters, reader=request.user)
    if query.get("format") == "csv":
        response = HttpResponse(audit_csv(entries), content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = 'attachment; filename="concord-audit.csv"'
        return response
    rows = [
        audit_row(entry) | {"changes_lines": audit_changes_lines(entry), "data_lines": audit_data_lines(entry)}
        for entry in entries[:AUDIT_PAGE_ROWS]
    ]
    csv_query = query.copy()
    csv_query["format"] = "csv"
    context = {
        "rows": rows,
        "columns": AUDIT_COLUMNS,
        "query": query,
        "csv_query": csv_query.urlencode(),
        "limit": AUDIT_PAGE_ROWS,
        "accounts": filters["accounts"],
    }
    return render(request, "audit/audit_log.html", context)
