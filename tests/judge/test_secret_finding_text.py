"""A committed secret as the review publishes it: a title, a body that adds to it, and nothing of the secret."""

from __future__ import annotations

from pathlib import Path

from codejury.findings import Review
from codejury.render import codeclimate, sarif
from codejury.render.jsonout import review_to_json
from codejury.render.markdown import render_review_markdown
from codejury.testing.scripted import Final, Raw
from tests.engine_helpers import make_change, run_review, scripted_settings

LIVE = "sk_live_" + "51Hx9QpLk2VbN8mWq3RtYz7AcD4eF"  # split so no scanner flags this test file itself
PATH = "shop/payments.py"


async def test_a_committed_key_is_published_with_a_body_and_without_any_of_its_characters(tmp_path: Path) -> None:
    old = "import os\n"
    new = old + f'PAYMENT_API_KEY = "{LIVE}"\n'
    change = make_change(tmp_path, {PATH: (old, new)})
    scripts = {"security": [Final([])], "coordinator": [Raw({"decisions": []})]}
    settings = scripted_settings(analyzers=True, weak_models=("scripted:*",))

    review, _, _ = await run_review(change, scripts, settings=settings)

    assert isinstance(review, Review)
    [f] = [f for f in review.findings if f.category == "stripe-access-key"]
    assert (f.severity, f.start_line) == ("critical", 2)
    assert f.title == "A stripe access key is committed in the code"
    assert f.body.startswith("Anyone who can read the repository can use it") and f.title not in f.body
    for render in (render_review_markdown, review_to_json, sarif.render, codeclimate.render):
        shown = render(review)
        assert "sk_live" not in shown and LIVE[8:16] not in shown, render
