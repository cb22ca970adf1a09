"""Who may reach what: one check per role and endpoint, and CSRF for session-authenticated writes."""

import pytest
from rest_framework.authtoken.models import Token

from annotation.models import Annotation
from tests.annotation.factories import pool_for
from tests.factories import PoolFactory

ROLES = ["admin", "researcher", "annotator", "outsider"]


@pytest.fixture
def pool(db):
    return PoolFactory(name="perm-pool")


def page_urls(pool):
    return {
        "annotate": "/annotate/",
        "pools": "/pools/",
        "pool": f"/pools/{pool.name}/",
        "adjudicate": f"/pools/{pool.name}/adjudicate/",
        "sample": "/pools/new/",
        "files": "/pools/new/files/",
        "assign": f"/pools/{pool.name}/assign/",
    }


ALLOWED = {
    "annotate": {"annotator"},
    "pools": {"admin", "researcher"},
    "pool": {"admin", "researcher"},
    "adjudicate": {"admin", "researcher"},
    "sample": {"admin"},
    "files": {"admin", "researcher"},
    "assign": {"admin"},  # and the researcher who made the pool (tests/annotation/test_pool_files.py)
}
# The pages about one pool, which a researcher of another project cannot tell from a pool that does not exist.
POOL_PAGES = ["pool", "adjudicate", "assign"]


@pytest.mark.django_db
@pytest.mark.parametrize("page", list(ALLOWED))
@pytest.mark.parametrize("role", ROLES)
def test_it_lets_only_the_right_roles_open_each_page(client, people, pool, page, role):
    client.force_login(people[role])

    response = client.get(page_urls(pool)[page])

    assert response.status_code == (200 if role in ALLOWED[page] else 403)


@pytest.mark.django_db
@pytest.mark.parametrize("page", POOL_PAGES)
def test_a_researcher_of_another_project_gets_404_on_each_pool_page(client, stranger, pool, page):
    client.force_login(stranger)

    response = client.get(page_urls(pool)[page])

    assert response.status_code == 404
    assert pool.name.encode() not in response.content


@pytest.mark.django_db
@pytest.mark.parametrize("page", sorted(set(ALLOWED) - set(POOL_PAGES) - {"annotate", "sample"}))
def test_a_researcher_of_another_project_opens_the_pages_about_no_one_pool(client, stranger, pool, page):
    client.force_login(stranger)

    response = client.get(page_urls(pool)[page])

    assert response.status_code == 200
    assert pool.name.encode() not in response.content


@pytest.mark.django_db
@pytest.mark.parametrize("page", list(ALLOWED))
def test_it_sends_anonymous_visitors_to_the_login_page(client, pool, page):
    response = client.get(page_urls(pool)[page])

    assert response.status_code == 302 and response.url.startswith("/login/")


API_CALLS = [
    ("get", "/api/annotate/next/", None),
    ("get", "/api/annotate/items/whatever/", None),
    ("post", "/api/annotations/", {"item": "whatever", "label": "correct"}),
]


@pytest.mark.django_db
@pytest.mark.parametrize(("method", "url", "body"), API_CALLS)
@pytest.mark.parametrize("role", ["admin", "researcher", "outsider"])
def test_it_keeps_non_annotators_out_of_the_annotator_api(api, people, method, url, body, role):
    api.force_authenticate(people[role])

    response = getattr(api, method)(url, body, format="json")

    assert response.status_code == 403
    assert response.json()["detail"] == "Only annotators may do this."


@pytest.mark.django_db
@pytest.mark.parametrize(("method", "url", "body"), API_CALLS)
def test_it_refuses_the_annotator_api_to_anonymous_callers(api, method, url, body):
    response = getattr(api, method)(url, body, format="json")

    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Token"
    assert "credentials were not provided" in response.json()["detail"]


@pytest.mark.django_db
class TestCsrf:
    def test_it_refuses_a_session_post_without_the_csrf_token(self, csrf_client, annotator):
        _, items = pool_for(annotator, items=1)
        csrf_client.force_login(annotator)

        response = csrf_client.post(
            "/api/annotations/", {"item": items[0].public_id, "label": "correct"}, content_type="application/json"
        )

        assert response.status_code == 403 and "CSRF" in response.json()["detail"]
        assert not Annotation.objects.exists()

    def test_it_accepts_a_session_post_with_the_token_from_the_page(self, csrf_client, annotator):
        _, items = pool_for(annotator, items=1)
        csrf_client.force_login(annotator)
        csrf_client.get("/annotate/")
        token = csrf_client.cookies["csrftoken"].value

        response = csrf_client.post(
            "/api/annotations/",
            {"item": items[0].public_id, "label": "correct"},
            content_type="application/json",
            HTTP_X_CSRFTOKEN=token,
        )

        assert response.status_code == 201
        assert Annotation.objects.filter(annotator=annotator).count() == 1

    def test_it_needs_no_csrf_token_with_token_auth(self, csrf_client, annotator):
        _, items = pool_for(annotator, items=1)
        token = Token.objects.create(user=annotator)

        response = csrf_client.post(
            "/api/annotations/",
            {"item": items[0].public_id, "label": "correct"},
            content_type="application/json",
            HTTP_AUTHORIZATION=f"Token {token.key}",
        )

        assert response.status_code == 201
