"""API tokens expire, logging out and changing a password revoke them, and failed logins lock out for a while."""

from datetime import timedelta

import pytest
from axes.models import AccessAttempt
from django.core.management import call_command
from django.test import Client
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from tests.conftest import PASSWORD

TOKEN = "/api/auth/token/"
API_LOGOUT = "/api/auth/logout/"
NEXT = "/api/annotate/next/"


def token_for(api: APIClient, username: str, password: str = PASSWORD):
    return api.post(TOKEN, {"username": username, "password": password}, format="json")


def with_token(key: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client


def age(key: str, *, days: float) -> None:
    Token.objects.filter(key=key).update(created=timezone.now() - timedelta(days=days))


def wrong_logins(client: Client, username: str, times: int, **extra) -> list[int]:
    return [
        client.post("/login/", {"username": username, "password": "not-the-password"}, **extra).status_code
        for _ in range(times)
    ]


@pytest.mark.django_db
class TestTokenExpiry:
    def test_the_token_endpoint_returns_the_expiry_beside_the_token(self, api, annotator, settings):
        settings.API_TOKEN_TTL = timedelta(days=30)
        before = timezone.now()

        body = token_for(api, "ana").json()

        assert set(body) == {"token", "expires"}
        expires = parse_datetime(body["expires"])
        assert timedelta(days=30) <= expires - before < timedelta(days=30, minutes=1)
        assert expires == Token.objects.get(key=body["token"]).created + timedelta(days=30)

    def test_an_expired_token_is_refused_and_deleted_and_a_new_one_is_issued(self, api, annotator, settings):
        settings.API_TOKEN_TTL = timedelta(days=30)
        key = token_for(api, "ana").json()["token"]
        age(key, days=29)
        assert with_token(key).get(NEXT).status_code in (200, 204)  # still valid a day before its end

        age(key, days=30)
        response = with_token(key).get(NEXT)

        assert response.status_code == 401
        assert response.json() == {"detail": "Token has expired."}
        assert not Token.objects.filter(key=key).exists()
        fresh = token_for(api, "ana").json()["token"]
        assert fresh != key
        assert with_token(fresh).get(NEXT).status_code in (200, 204)

    def test_the_token_endpoint_replaces_an_expired_token_it_would_have_returned(self, api, annotator, settings):
        settings.API_TOKEN_TTL = timedelta(days=2)
        key = token_for(api, "ana").json()["token"]
        assert token_for(api, "ana").json()["token"] == key  # the same while it lasts
        age(key, days=2)
        assert token_for(api, "ana").json()["token"] != key


@pytest.mark.django_db
class TestRevocation:
    def test_logging_out_of_the_api_revokes_the_callers_token(self, api, annotator):
        key = token_for(api, "ana").json()["token"]
        client = with_token(key)

        assert client.post(API_LOGOUT).status_code == 204

        assert not Token.objects.filter(user=annotator).exists()
        assert client.get(NEXT).status_code == 401

    def test_the_api_logout_needs_a_caller(self, api):
        assert api.post(API_LOGOUT).status_code == 401

    def test_logging_out_of_the_site_revokes_the_users_token_too(self, api, annotator):
        key = token_for(api, "ana").json()["token"]
        browser = Client()
        browser.force_login(annotator)

        assert browser.post("/logout/").status_code == 302

        assert with_token(key).get(NEXT).status_code == 401

    @pytest.mark.parametrize("method", ["PUT", "PATCH", "DELETE", "GET"])
    def test_the_site_logout_answers_other_methods_405_before_any_csrf_check(self, method, annotator):
        anonymous = Client(enforce_csrf_checks=True)
        browser = Client(enforce_csrf_checks=True)
        browser.force_login(annotator)

        assert anonymous.generic(method, "/logout/").status_code == 405
        assert browser.generic(method, "/logout/").status_code == 405
        assert "_auth_user_id" in browser.session  # still logged in

    def test_the_site_logout_still_needs_the_csrf_token(self, annotator):
        browser = Client(enforce_csrf_checks=True)
        browser.force_login(annotator)

        assert browser.post("/logout/").status_code == 403
        assert "_auth_user_id" in browser.session

    def test_the_api_logout_from_a_browser_session_ends_the_session(self, api, annotator):
        token_for(api, "ana")
        browser = Client()
        browser.force_login(annotator)

        assert browser.post(API_LOGOUT).status_code == 204

        assert not Token.objects.filter(user=annotator).exists()
        assert browser.get("/").status_code == 302  # back to the login page

    def test_the_api_logout_from_a_browser_needs_the_csrf_token(self, api, annotator):
        token_for(api, "ana")
        browser = Client(enforce_csrf_checks=True)
        browser.force_login(annotator)

        assert browser.post(API_LOGOUT).status_code == 403

        assert Token.objects.filter(user=annotator).exists()

    def test_changing_a_password_revokes_every_token_of_that_user_only(self, api, annotator, second_annotator):
        mine = token_for(api, "ana").json()["token"]
        theirs = token_for(api, "bo").json()["token"]

        annotator.set_password("a-brand-new-password")
        annotator.save()

        assert with_token(mine).get(NEXT).status_code == 401
        assert with_token(theirs).get(NEXT).status_code in (200, 204)

    def test_saving_a_user_without_a_new_password_keeps_the_token(self, api, annotator):
        key = token_for(api, "ana").json()["token"]
        annotator.first_name = "Ana"
        annotator.save()
        assert Token.objects.filter(key=key).exists()

    def test_resetting_a_password_with_create_user_revokes_the_token(self, api, annotator):
        key = token_for(api, "ana").json()["token"]
        call_command("create_user", "ana", "--role", "annotator", "--password", "another-password")
        assert not Token.objects.filter(key=key).exists()


@pytest.mark.django_db
class TestLoginLockout:
    def test_the_login_page_locks_a_username_after_the_limit_and_refuses_even_the_right_password(
        self, annotator, settings
    ):
        settings.AXES_FAILURE_LIMIT = 3
        client = Client()

        assert wrong_logins(client, "ana", 2) == [200, 200]  # the form again, with its error
        assert wrong_logins(client, "ana", 1) == [429]
        response = client.post("/login/", {"username": "ana", "password": PASSWORD})

        assert response.status_code == 429
        assert b"Too many failed log-in attempts" in response.content
        assert "_auth_user_id" not in client.session

    def test_the_lock_is_for_the_pair_so_the_same_username_from_another_address_logs_in(self, annotator, settings):
        settings.AXES_FAILURE_LIMIT = 3
        wrong_logins(Client(), "ana", 3, REMOTE_ADDR="10.0.0.1")
        locked = Client().post("/login/", {"username": "ana", "password": PASSWORD}, REMOTE_ADDR="10.0.0.1")
        elsewhere = Client().post("/login/", {"username": "ana", "password": PASSWORD}, REMOTE_ADDR="10.0.0.2")
        assert locked.status_code == 429
        assert elsewhere.status_code == 302

    def test_one_persons_typos_do_not_lock_the_others_behind_the_same_address(
        self, annotator, second_annotator, settings
    ):
        settings.AXES_FAILURE_LIMIT = 3
        wrong_logins(Client(), "ana", 3, REMOTE_ADDR="10.0.0.9")
        response = Client().post("/login/", {"username": "bo", "password": PASSWORD}, REMOTE_ADDR="10.0.0.9")
        assert response.status_code == 302

    def test_the_address_is_locked_whatever_the_username_at_its_own_higher_limit(
        self, annotator, second_annotator, settings
    ):
        settings.AXES_FAILURE_LIMIT = 3
        settings.CONCORD_LOGIN_ADDRESS_FAILURE_LIMIT = 4
        for username in ("x1", "x2", "x3"):
            wrong_logins(Client(), username, 1, REMOTE_ADDR="10.0.0.9")
        below = Client().post("/login/", {"username": "bo", "password": PASSWORD}, REMOTE_ADDR="10.0.0.9")
        assert below.status_code == 302  # 3 failures from the address: under its limit of 4
        wrong_logins(Client(), "x4", 1, REMOTE_ADDR="10.0.0.9")
        response = Client().post("/login/", {"username": "bo", "password": PASSWORD}, REMOTE_ADDR="10.0.0.9")
        assert response.status_code == 429
        other = Client().post("/login/", {"username": "bo", "password": PASSWORD}, REMOTE_ADDR="10.0.0.10")
        assert other.status_code == 302  # logged in from elsewhere

    def test_behind_a_proxy_the_lock_is_for_the_forwarded_address_not_the_proxys(
        self, annotator, second_annotator, settings
    ):
        settings.AXES_FAILURE_LIMIT = 3
        settings.CONCORD_LOGIN_ADDRESS_FAILURE_LIMIT = 3
        settings.CONCORD_TRUSTED_PROXY_COUNT = 1
        proxy = {"REMOTE_ADDR": "10.0.0.1"}
        for username in ("x1", "x2", "x3"):
            # What a client writes itself (the left part) is not trusted; the proxy's own entry (the right) is.
            wrong_logins(Client(), username, 1, HTTP_X_FORWARDED_FOR=f"9.9.9.{len(username)}, 192.0.2.7", **proxy)

        locked = Client().post(
            "/login/", {"username": "bo", "password": PASSWORD}, HTTP_X_FORWARDED_FOR="192.0.2.7", **proxy
        )
        elsewhere = Client().post(
            "/login/", {"username": "bo", "password": PASSWORD}, HTTP_X_FORWARDED_FOR="198.51.100.3", **proxy
        )

        assert locked.status_code == 429
        assert elsewhere.status_code == 302

    @pytest.mark.parametrize(
        ("entry", "counted"),
        [
            ("1.2.3.4:5678", "1.2.3.4"),
            ("[2001:db8::1]:443", "2001:db8::1"),
            ("[2001:db8::2]", "2001:db8::2"),
            ("2001:db8::3", "2001:db8::3"),
            ("not-an-ip", None),
            ("1.2.3.4:not-a-port", None),
        ],
    )
    def test_a_forwarded_entry_with_a_port_counts_its_address_and_anything_else_counts_none(
        self, annotator, settings, caplog, entry, counted
    ):
        settings.CONCORD_TRUSTED_PROXY_COUNT = 2
        proxy = {"REMOTE_ADDR": "10.0.0.1", "HTTP_X_FORWARDED_FOR": f"{entry}, 10.0.0.2"}

        failed = wrong_logins(Client(), "ana", 2, **proxy)
        counted_under = list(AccessAttempt.objects.values_list("ip_address", "failures_since_start"))
        logged_in = Client().post("/login/", {"username": "ana", "password": PASSWORD}, **proxy)

        assert failed == [200, 200]
        assert counted_under == [(counted, 2)]
        assert logged_in.status_code == 302
        warnings = [record for record in caplog.records if entry in record.getMessage()]
        assert len(warnings) == (0 if counted else 1)  # a bad entry is logged once, not per request

    def test_the_token_endpoint_counts_failures_and_answers_429_when_locked(self, api, annotator, settings):
        settings.AXES_FAILURE_LIMIT = 3
        statuses = [token_for(api, "ana", "wrong-password").status_code for _ in range(3)]
        assert statuses == [400, 400, 429]

        response = token_for(api, "ana")

        assert response.status_code == 429
        assert "locked" in response.json()["detail"]
        assert not Token.objects.filter(user=annotator).exists()

    def test_the_admin_login_is_locked_too(self, admin_user, settings):
        settings.AXES_FAILURE_LIMIT = 2
        client = Client()
        for _ in range(2):
            client.post("/admin/login/", {"username": "ada_admin", "password": "wrong-password"})
        response = client.post("/admin/login/?next=/admin/", {"username": "ada_admin", "password": PASSWORD})
        assert response.status_code == 429
        assert "_auth_user_id" not in client.session

    def test_axes_reset_lifts_the_lock(self, annotator, settings):
        settings.AXES_FAILURE_LIMIT = 2
        wrong_logins(Client(), "ana", 2)
        assert Client().post("/login/", {"username": "ana", "password": PASSWORD}).status_code == 429

        call_command("axes_reset", verbosity=0)

        assert Client().post("/login/", {"username": "ana", "password": PASSWORD}).status_code == 302

    def test_the_lock_ends_after_the_cool_off(self, annotator, settings):
        settings.AXES_FAILURE_LIMIT = 2
        settings.AXES_COOLOFF_TIME = timedelta(minutes=15)
        wrong_logins(Client(), "ana", 2)
        assert Client().post("/login/", {"username": "ana", "password": PASSWORD}).status_code == 429

        # The failures were recorded 16 minutes ago: past the cool-off.
        AccessAttempt.objects.update(attempt_time=timezone.now() - timedelta(minutes=16))

        assert Client().post("/login/", {"username": "ana", "password": PASSWORD}).status_code == 302

    def test_a_successful_login_resets_the_count(self, annotator, settings):
        settings.AXES_FAILURE_LIMIT = 3
        client = Client()
        wrong_logins(client, "ana", 2)
        assert client.post("/login/", {"username": "ana", "password": PASSWORD}).status_code == 302
        client.post("/logout/")
        assert wrong_logins(client, "ana", 2) == [200, 200]  # counting starts again

    def test_a_successful_token_login_resets_the_count_for_the_login_page_too(self, api, annotator, settings):
        settings.AXES_FAILURE_LIMIT = 3
        wrong_logins(Client(), "ana", 2)
        assert token_for(api, "ana").status_code == 200
        assert wrong_logins(Client(), "ana", 2) == [200, 200]  # counting starts again
        assert not AccessAttempt.objects.filter(failures_since_start__gte=3).exists()

    def test_a_successful_page_login_resets_the_count_for_the_token_endpoint(self, api, annotator, settings):
        settings.AXES_FAILURE_LIMIT = 3
        assert [token_for(api, "ana", "wrong-password").status_code for _ in range(2)] == [400, 400]
        assert Client().post("/login/", {"username": "ana", "password": PASSWORD}).status_code == 302
        assert [token_for(api, "ana", "wrong-password").status_code for _ in range(2)] == [400, 400]

    def test_attempts_during_a_lock_do_not_extend_it(self, annotator, settings):
        settings.AXES_FAILURE_LIMIT = 2
        settings.AXES_COOLOFF_TIME = timedelta(minutes=15)
        wrong_logins(Client(), "ana", 2)
        AccessAttempt.objects.update(attempt_time=timezone.now() - timedelta(minutes=10))
        # Five minutes before the lock ends: wrong and right passwords alike are refused, and change nothing.
        assert wrong_logins(Client(), "ana", 3) == [429, 429, 429]
        assert Client().post("/login/", {"username": "ana", "password": PASSWORD}).status_code == 429
        (attempt,) = AccessAttempt.objects.all()
        assert attempt.failures_since_start == 2
        assert attempt.attempt_time < timezone.now() - timedelta(minutes=9)

        AccessAttempt.objects.update(attempt_time=timezone.now() - timedelta(minutes=16))

        assert Client().post("/login/", {"username": "ana", "password": PASSWORD}).status_code == 302
