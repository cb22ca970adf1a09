from django.contrib.auth.decorators import login_required
from django.shortcuts import render


@login_required
def home(request):
    """The landing page lists what the user's roles open; links are filled in by each app's urls."""
    return render(request, "home.html")
