"""A third-party plugin as a user would write one (loaded with --plugin tests.plugin_example).

It imports only from ``codejury.plugin``, the public facade.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from codejury.plugin import (
    BootstrapContext,
    ChangeMeta,
    ChangeSet,
    ChangeSource,
    ConfigureContext,
    Evidence,
    PostConfigureContext,
    ReviewerSpec,
    SourceOptions,
    hookimpl,
    parse_diff,
)

CALLS: list[str] = []

CANNED_DIFF = """\
diff --git a/billing/invoice.py b/billing/invoice.py
index 1111111..2222222 100644
--- a/billing/invoice.py
+++ b/billing/invoice.py
@@ -1,2 +1,3 @@
 def total(lines):
+    # TODO: rounding
     return sum(lines)
"""


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
            tiers=frozenset(ctx.settings.get("tiers", ["lite", "full"])),
        )
    )
    ctx.add_prompt_section("House style", "Findings are written in British English.")


@hookimpl
async def codejury_post_configure(ctx: PostConfigureContext) -> None:
    CALLS.append("post_configure")
    ctx.override_model("licensing", "scripted:licensing-remote")


class CannedSource(ChangeSource):
    """A change from a ticket system, as a source plugin would fetch it (here: a constant)."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options

    def load(self) -> ChangeSet:
        CALLS.append(f"canned source: repo={self.options.repo}")
        return ChangeSet(files=parse_diff(CANNED_DIFF), meta=ChangeMeta(title="Ticket 42"), root=self.options.repo)


@hookimpl
def codejury_register_sources(register: Callable[[str, Callable[[SourceOptions], ChangeSource]], None]) -> None:
    register("canned", CannedSource)


class TodoAnalyzer:
    """Evidence for every added TODO comment."""

    async def analyze(self, change: ChangeSet) -> list[Evidence]:
        return [
            Evidence(
                analyzer="todo",
                rule="T001",
                path=f.path,
                start_line=line.new_no,
                end_line=line.new_no,
                severity="suggestion",
                message="a TODO was added",
            )  # fmt: skip
            for f in change.files
            for h in f.hunks
            for line in h.lines
            if line.kind == "+" and line.new_no is not None and "TODO" in line.text
        ]


@hookimpl
def codejury_register_analyzers(register: Callable[[str, Any], None]) -> None:
    register("todo", TodoAnalyzer())
