"""``/codejury describe`` in the service: a writer gets the change's walkthrough, written again now, in the thread."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from codejury_fakes.gitlab import FakeGitLab
from codejury_fakes.routing_server import RoutingServer

from codejury.forges.safety import check_published
from codejury.testing.scripted import Final, Raw, ScriptedResolver
from tests.service.test_chat import ScriptedModels, bot_notes, gitlab_options, post_note, service_client
from tests.service.test_chat import gl as gl  # noqa: F401  (the fixture)
from tests.service.test_chat import scripted_models as scripted_models  # noqa: F401  (the fixture)
from tests.service.test_local_reviews import FINDING, gitlab_summaries, until

DRAFT = {
    "summary": "Renames `line 5` to `line five`. It also adds `RetryQueue`.",
    "groups": [{"purpose": "Text", "files": [{"path": "app.py", "line": "One line reworded."}]}],
    "diagram": "",
}


def resolver() -> ScriptedResolver:
    return ScriptedResolver(
        {"reviewer": [Final([FINDING])], "coordinator": [Raw({"decisions": []})]},
        walkthroughs={"coordinator": [Raw(DRAFT)]},
    )


async def describe_once(gl: FakeGitLab, tmp_path: Path, author: str = "alice", **changed: object) -> list[dict]:  # noqa: F811
    note = gl.add_note(1, 7, "/codejury describe", author=author)
    async with service_client(replace(gitlab_options(tmp_path, gl), **changed)) as c:  # type: ignore[arg-type]
        assert (await post_note(c, gl, note)).json()["outcome"] == "queued"
        if author == "alice":
            await until(lambda: len(bot_notes(gl)) == 1)
    return bot_notes(gl)


async def test_a_writer_gets_the_walkthrough_in_the_thread_and_nothing_is_reviewed(
    gl: FakeGitLab,  # noqa: F811
    scripted_models: ScriptedModels,  # noqa: F811
    tmp_path: Path,
) -> None:
    models = scripted_models(resolver())
    [reply] = await describe_once(gl, tmp_path)
    body = reply["body"]
    assert body.startswith("### Walkthrough\n\nRenames `line 5` to `line five`.\n")  # RetryQueue is not in the diff
    assert "| Text | `app.py` | One line reworded. |" in body
    assert check_published(body) == []
    assert models.models["coordinator"].walkthrough_prompts and models.models["reviewer"].prompts == []
    assert not gitlab_summaries(gl)  # describing reviews nothing


async def test_describe_under_the_kill_switch_is_refused_without_a_model(
    gl: FakeGitLab,  # noqa: F811
    scripted_models: ScriptedModels,  # noqa: F811
    tmp_path: Path,
) -> None:
    models = scripted_models(resolver())
    with RoutingServer() as routing:
        routing.body = json.dumps({"kill_switch": True, "reason": "provider incident"}).encode()
        [reply] = await describe_once(gl, tmp_path, remote_config=routing.url)
    assert reply["body"].startswith("codejury is not describing this merge request now: the kill switch is on")
    assert models.models["coordinator"].walkthrough_prompts == []


async def test_describe_in_the_description_rewrites_its_block_and_says_so_in_the_thread(
    gl: FakeGitLab,  # noqa: F811
    scripted_models: ScriptedModels,  # noqa: F811
    tmp_path: Path,
) -> None:
    scripted_models(resolver())
    config = tmp_path / "describe.toml"
    config.write_text('describe_in = "description"\n', encoding="utf-8")
    gl.set_description(1, 7, "Adds things.")
    [reply] = await describe_once(gl, tmp_path, config_file=config)
    assert reply["body"] == "codejury wrote the walkthrough again in the description."
    description = gl.mr(1, 7)["description"]
    assert description.startswith("Adds things.\n\n<!-- codejury:walkthrough v1 ")
    assert "Renames `line 5` to `line five`." in description
