"""The README says what each of the demo's pools shows and where, and that a pool is not tied to misgendering."""

from __future__ import annotations

import re

from demo.judged import JUDGED_POOL
from demo.services import FEATURES_POOL, LIVE_POOL, SHIPPED_POOL
from tests.conftest import REPO

README = (REPO / "README.md").read_text()


def test_the_readme_says_what_each_demo_pool_shows_and_where():
    rows = {
        match.group(1): (match.group(2), match.group(3))
        for match in re.finditer(r"^\| `([a-z-]+)` \| (.+?) \| (.+?) \|$", README, re.M)
    }
    assert set(rows) >= {SHIPPED_POOL, FEATURES_POOL, JUDGED_POOL, LIVE_POOL}, sorted(rows)
    shows, where = rows[JUDGED_POOL]
    assert "verdict" in shows and f"/reports/{JUDGED_POOL}/" in where
    for pool in (SHIPPED_POOL, FEATURES_POOL):
        assert f"/annotate/{pool}/" in rows[pool][1]


def test_the_judged_demos_link_goes_to_the_verdict_section():
    anchor = re.search(rf"/reports/{JUDGED_POOL}/#([a-z-]+)", README)
    assert anchor and f'id="{anchor.group(1)}"' in (REPO / "templates/analysis/_verdict.html").read_text()


def test_the_readme_and_the_home_page_say_a_pool_holds_any_label_set_and_scale(client, researcher):
    assert "any label set and scale" in " ".join(README.split())
    client.force_login(researcher)
    assert "any label set and scale" in " ".join(client.get("/").content.decode().split())
