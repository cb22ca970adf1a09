from django.contrib import admin
from django.urls import include, path

# Annotation first: its API is the hot path, and Django tries the patterns in order. No two apps share a pattern.
urlpatterns = [
    path("", include("annotation.urls")),
    path("", include("accounts.urls")),
    path("", include("generation.urls")),
    path("", include("analysis.urls")),
    path("admin/", admin.site.urls),
]
