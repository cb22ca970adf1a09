from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

# Annotation first: its API is the hot path, and Django tries the patterns in order. No two apps share a pattern.
urlpatterns = [
    path("", include("annotation.urls")),
    path("", include("accounts.urls")),
    path("", include("generation.urls")),
    path("", include("analysis.urls")),
    path("", include("judging.urls")),
    # OpenAPI 3 (drf-spectacular) and Swagger UI from local files; the UI's script is a file too (no inline script).
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="api-schema", metadata_class=None), name="api-docs"),
    path("admin/", admin.site.urls),
]

# Styled error pages with the navigation (JSON under /api/): config/errors.py.
handler400 = "config.errors.bad_request"
handler403 = "config.errors.permission_denied"
handler404 = "config.errors.page_not_found"
handler500 = "config.errors.server_error"
