"""Login, logout, token auth, roles and the create_user contract."""

import io

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from accounts.roles import ADMIN, ANNOTATOR, RESEARCHER, has_role
from tests.conftest import PASSWORD


@pytest.mark.django_db
class TestPages:
    def test_it_sends_anonymous_visitors_to_the_login_page(self, client):
        response = client.get("/")
        assert response.status_code == 302
        assert response["Location"].startswith("/login/?next=/")

    def test_it_logs_in_with_a_csrf_token_and_shows_the_roles_cards(self, csrf_client, researcher):
        page = csrf_client.get("/login/")
        token = page.cookies["csrftoken"].value

        response = csrf_client.post(
            "/login/", {"username": "rui_researcher", "password": PASSWORD, "csrfmiddlewaretoken": token}, follow=True
        )

        assert response.status_code == 200
        assert b'data-role="researcher"' in response.content
        assert b'data-role="annotator"' not in response.content and b'data-role="admin"' not in response.content

    def test_an_annotator_lands_on_their_queue_after_logging_in(self, csrf_client, annotator):
        token = csrf_client.get("/login/").cookies["csrftoken"].value
        response = csrf_client.post("/login/", {"username": "ana", "password": PASSWORD, "csrfmiddlewaretoken": token})
        assert response.status_code == 302
        assert csrf_client.get(response["Location"])["Location"] == "/annotate/"

    def test_it_refuses_a_login_post_without_csrf(self, csrf_client, annotator):
        response = csrf_client.post("/login/", {"username": "ana", "password": PASSWORD})
        assert response.status_code == 403
        assert "_auth_user_id" not in csrf_client.session

    def test_it_refuses_a_wrong_password(self, client, annotator):
        response = client.post("/login/", {"username": "ana", "password": "nope-nope"})
        assert response.status_code == 200
        assert b"correct username and password" in response.content
        assert "_auth_user_id" not in client.session

    def test_it_logs_out_on_post(self, client, annotator):
        client.force_login(annotator)
        response = client.post("/logout/")
        assert response.status_code == 302
        assert client.get("/").status_code == 302

    def test_the_admin_site_is_for_admins_only(self, client, researcher, admin_user):
        client.force_login(researcher)
        assert client.get("/admin/").status_code == 302  # Django's admin redirects non-staff to its login
        client.force_login(admin_user)
        assert client.get("/admin/").status_code == 200


@pytest.mark.django_db
class TestTokenApi:
    def test_it_returns_a_token_for_good_credentials(self, api, annotator):
        response = api.post("/api/auth/token/", {"username": "ana", "password": PASSWORD}, format="json")
        assert response.status_code == 200
        token = response.json()["token"]
        assert len(token) == 40
        # The same token authenticates API calls.
        api.credentials(HTTP_AUTHORIZATION=f"Token {token}")
        assert api.post("/api/auth/token/", {"username": "ana", "password": PASSWORD}).json()["token"] == token

    def test_it_refuses_bad_credentials(self, api, annotator):
        response = api.post("/api/auth/token/", {"username": "ana", "password": "wrong-password"}, format="json")
        assert response.status_code == 400
        assert "token" not in response.json()


@pytest.mark.django_db
class TestRoles:
    def test_an_admin_may_do_what_a_researcher_may_but_not_annotate(self, admin_user):
        assert has_role(admin_user, ADMIN) and has_role(admin_user, RESEARCHER)
        assert not has_role(admin_user, ANNOTATOR)

    def test_an_annotator_is_only_an_annotator(self, annotator):
        assert has_role(annotator, ANNOTATOR)
        assert not has_role(annotator, RESEARCHER) and not has_role(annotator, ADMIN)

    def test_an_outsider_has_no_role(self, outsider):
        assert not any(has_role(outsider, role) for role in (ANNOTATOR, RESEARCHER, ADMIN))


@pytest.mark.django_db
class TestCreateUserCommand:
    def test_it_creates_a_user_with_its_role_and_a_usable_password(self):
        out = io.StringIO()
        call_command("create_user", "maya", "--role", "researcher", "--password", "a-long-password", stdout=out)

        user = get_user_model().objects.get(username="maya")
        assert list(user.groups.values_list("name", flat=True)) == ["researcher"]
        assert user.check_password("a-long-password")
        assert "created researcher maya" in out.getvalue()

    def test_it_prints_a_generated_password_that_works(self):
        out = io.StringIO()
        call_command("create_user", "lee", "--role", "annotator", stdout=out)
        password = out.getvalue().split("password: ")[1].strip()
        assert get_user_model().objects.get(username="lee").check_password(password)

    def test_it_moves_an_existing_user_to_the_new_role(self):
        call_command("create_user", "kim", "--role", "admin", "--password", "first-password", stdout=io.StringIO())
        call_command("create_user", "kim", "--role", "annotator", "--password", "second-password", stdout=io.StringIO())
        user = get_user_model().objects.get(username="kim")
        assert list(user.groups.values_list("name", flat=True)) == ["annotator"]
        assert not user.is_superuser and not user.is_staff

    def test_it_rejects_an_unknown_role_and_a_short_password(self):
        with pytest.raises(CommandError, match="invalid choice: 'boss'"):
            call_command("create_user", "x", "--role", "boss")
        with pytest.raises(CommandError, match="at least 8 characters"):
            call_command("create_user", "x", "--role", "annotator", "--password", "short")
        assert not get_user_model().objects.filter(username="x").exists()
