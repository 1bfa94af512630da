"""A third-party plugin as a user would write one (loaded with --plugin tests.plugin_example)."""

from __future__ import annotations

from codejury.hookspecs import hookimpl
from codejury.plugins import BootstrapContext, ConfigureContext, PostConfigureContext
from codejury.reviewers.roster import ReviewerSpec

CALLS: list[str] = []


@hookimpl
async def codejury_bootstrap(ctx: BootstrapContext) -> None:
    CALLS.append("bootstrap")
    raise RuntimeError("license server unreachable")


@hookimpl
def codejury_configure(ctx: ConfigureContext) -> None:
    CALLS.append("configure")
    if ctx.settings.get("explode"):
        raise ValueError("bad licensing table")
    ctx.add_reviewer(
        ReviewerSpec(
            name="licensing",
            title="Licensing",
            tier="light",
            prompt="# Licensing\nFlag copied code without a licence.",
            tools=frozenset({"read_patch"}),
            source="plugin",
        )
    )
    ctx.add_prompt_section("House style", "Findings are written in British English.")


@hookimpl
async def codejury_post_configure(ctx: PostConfigureContext) -> None:
    CALLS.append("post_configure")
    ctx.override_model("licensing", "scripted:licensing-remote")
