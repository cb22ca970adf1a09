from django.contrib.auth import views as auth_views
from django.urls import path
from django.views.decorators.http import require_http_methods

from accounts import apis, views

urlpatterns = [
    path("", views.home, name="home"),
    path(
        "login/",
        require_http_methods(["GET", "HEAD", "POST"])(auth_views.LoginView.as_view(redirect_authenticated_user=True)),
        name="login",
    ),
    path("logout/", views.LogoutView.as_view(), name="logout"),
    path("audit/", views.audit_log, name="audit-log"),
    path("api/auth/token/", apis.TokenObtainApi.as_view(), name="api-token"),
    path("api/auth/logout/", apis.TokenLogoutApi.as_view(), name="api-logout"),
]
