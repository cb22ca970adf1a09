from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.views.decorators.http import require_safe

from accounts.roles import ANNOTATOR, RESEARCHER, has_role
from accounts.services import tokens_revoke


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
