from datetime import date

from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.core.exceptions import BadRequest
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_safe

from accounts.roles import ADMIN, ANNOTATOR, RESEARCHER, has_role, role_required
from accounts.services import tokens_revoke
from common.audit import AUDIT_COLUMNS, audit_csv, audit_entries, audit_row

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
    """`POST /logout/`: ends the session and revokes the user's API token (README, "Roles")."""

    http_method_names = ["post"]

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


@require_safe
@role_required(ADMIN)
def audit_log(request):
    """The audit trail for admins: filtered by object (type and id), user, event and dates; `?format=csv` downloads
    every matching entry."""
    query = request.GET
    filters = {
        "object_type": query.get("object_type", "").strip(),
        "object_id": query.get("object_id", "").strip(),
        "username": query.get("user", "").strip(),
        "event": query.get("event", "").strip(),
        "since": _date(query.get("since", "").strip(), "since"),
        "until": _date(query.get("until", "").strip(), "until"),
    }
    entries = audit_entries(**filters)
    if query.get("format") == "csv":
        response = HttpResponse(audit_csv(entries), content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = 'attachment; filename="concord-audit.csv"'
        return response
    rows = [audit_row(entry) for entry in entries[:AUDIT_PAGE_ROWS]]
    csv_query = query.copy()
    csv_query["format"] = "csv"
    context = {
        "rows": rows,
        "columns": AUDIT_COLUMNS,
        "query": query,
        "csv_query": csv_query.urlencode(),
        "limit": AUDIT_PAGE_ROWS,
    }
    return render(request, "audit/audit_log.html", context)
