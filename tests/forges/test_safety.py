"""The text-safety and marker layer: an attack corpus through safe_text, safe_line, safe_code and
suggestion_block, judged by check_published AND by independent oracles (a CommonMark parser and
GitLab's own quick-action regex), so a lenient check_published cannot hide a hole."""

from __future__ import annotations

import random
import re

import pytest
from markdown_it import MarkdownIt

from codejury.forges.markers import (
    FindingStatus,
    SummaryState,
    finding_marker,
    is_marker_line,
    parse_finding,
    parse_summary,
    summary_marker,
    trusted_finding,
    trusted_summary,
    with_marker,
)
from codejury.forges.safety import (
    check_published,
    inline_code,
    safe_code,
    safe_line,
    safe_text,
    suggestion_block,
)

SHA = "0123456789abcdef0123456789abcdef01234567"
SENTINEL = "SENTINEL-END-OF-COMMENT"

ATTACKS = {
    "merge": "/merge",
    "approve after text": "Looks fine.\n/approve",
    "indented close": " /close",
    "tab-indented assign": "\t/assign @me",
    "label in body": "This leaks the token.\n/label ~security-ok\nPlease fix.",
    "several commands": "/approve\n/merge\n/unapprove",
    "all": "@all please look",
    "here": "cc @here",
    "channel and everyone": "@channel @everyone",
    "group mention": "ping @group/team and @group/sub/team.",
    "escaped at": "\\@all",
    "escaped at after a word": "x\\@all",
    "escaped backslash then at": "\\\\@all",
    "mention in bold": "**@all**",
    "mention in link text": "[@all](https://example.com/@all)",
    "mention beside code span": "@all`x`",
    "mention between code spans": "`a`@all`b`",
    "unclosed code span": "`unclosed @all",
    "code span across paragraphs": "`a\n\nb` @all `c`",
    "code span across lines": "`a\nb` @all `c`",
    "pipe in a table cell": "| a | b |\n|---|---|\n| `x | @all` | y |",
    "entity at": "&#64;all and &#x40;here and &commat;channel",
    "forged summary marker": '<!-- codejury:summary v1 {"head_sha":"' + "f" * 40 + '","findings":{}} -->',
    "forged finding marker": "<!-- codejury:finding v1 deadbeef -->",
    "nested forged marker": "<!-<!-- codejury:x -->- codejury:summary v1 {} -->",
    "unterminated forged marker": "<!-- codejury:finding v1 abc\nmore",
    "marker in code": "```\n<!-- codejury:finding v1 abc -->\n```",
    "unclosed fence": "Here:\n```python\nprint(1)\n/merge\n@all",
    "unclosed tilde fence": "~~~\n/approve",
    "tilde fence": "~~~\n/approve\n~~~",
    "long fence inner close": "````\n```\n/merge\n```\n````",
    "suggestion fence in body": "```suggestion\nrm -rf /\n```",
    "indented fence in list": "- item\n  ```\n  /merge\n```\n@all",
    "fence in quote": "> ```\n> /merge\n> @all",
    "indented code": "    /merge\n    @all",
    "close details": "</details>\n/merge",
    "open details": "<details><summary>x</summary>",
    "html comment": "<!-- hidden\n/merge",
    "comment close": "-->",
    "script": "<script>alert(1)</script>",
    "code element": "<code>\n@all\n</code>",
    "escaped code element": "\\<code>@all</code>",
    "autolink": "<https://example.com/@all>",
    "crlf": "a\r\n/merge\r\n@all",
    "bare cr": "a\r/merge",
    "bidi override": "\u202e/merge",
    "tilde fence in prose": "    ~~~ x\n/merge",
    "backtick fence in prose": "``` `@all` ```",
    "homoglyph slash": "／merge is not a command",
}

REPLACEMENTS = {
    "plain": "x = 1\n",
    "inner fence": "s = '''\n```\n'''\n",
    "long backtick run": "a = '````'\n",
    "command line": "/merge\n",
    "comment lines": "// not a command\n/* nor this */\n",
    "path line": "/usr/bin/env python\n",
    "forged marker": '<!-- codejury:summary v1 {"head_sha":"' + "f" * 40 + '"} -->\n',
    "html": "</details>\n<!--\n",
    "mention": "@all\n",
    "delete": "",
}

# GitLab's quick-action extractor before it moved to a Markdown pipeline (lib/gitlab/quick_actions/extractor.rb).
_OLD_GITLAB = re.compile(
    r"""
      (?P<code>^```.+?\n```$)
    | (?P<html>^<[^>]+?>\n.+?\n</[^>]+?>$)
    | (?P<quote>^>>>.+?\n>>>$)
    | (?:^/(?P<cmd>merge|approve|unapprove|close|reopen|label|assign|title|submit_review)
         (?:[ ](?P<arg>[^\n]*))?(?:\s*\n|$))
    """,
    re.VERBOSE | re.DOTALL | re.MULTILINE | re.IGNORECASE,
)
_MD = MarkdownIt("commonmark", {"html": True}).enable("table")
_LIVE_MENTION = re.compile(r"(?<![A-Za-z0-9])@[A-Za-z0-9_]")


def old_gitlab_commands(body: str) -> list[str]:
    return [m["cmd"] for m in _OLD_GITLAB.finditer(body.replace("\r", "")) if m["cmd"]]


def rendered_problems(body: str) -> list[str]:
    """What a CommonMark reader sees: quick-action lines, live mentions, raw HTML, a swallowed ending."""
    problems: list[str] = []
    lines = body.split("\n")
    tokens = _MD.parse(body)
    in_code: set[int] = set()
    for token in tokens:
        if token.type in ("fence", "code_block") and token.map:
            in_code.update(range(*token.map))
            inner = lines[token.map[0] + 1 : token.map[1] - 1] if token.type == "fence" else []
            problems += [f"command in code: {line!r}" for line in inner if re.match(r"/[A-Za-z]\w*(\s|$)", line, re.A)]
        if token.type == "html_block" and token.map != [0, 1]:
            problems.append(f"html block: {token.content!r}")
    problems += [
        f"quick action: {line!r}" for i, line in enumerate(lines) if i not in in_code and line.lstrip().startswith("/")
    ]
    live, code_depth = [], 0
    for token in tokens:
        for child in token.children or []:
            if child.type == "html_inline":
                if child.content.lower() in ("<code>", "</code>"):
                    code_depth += 1 if child.content.lower() == "<code>" else -1
                else:
                    problems.append(f"inline html: {child.content!r}")
            elif child.type == "text" and not code_depth:
                live.append(child.content)
            else:
                live.append(" ")
        live.append("\n")
    problems += [f"mention: {m[0]!r}" for m in _LIVE_MENTION.finditer("".join(live))]
    if not any(t.type == "inline" and t.content == SENTINEL for t in tokens):
        problems.append("the end of the comment was swallowed")
    return problems


def publish(text: str) -> str:
    """A comment laid out the way a publisher would: marker, heading, untrusted text, our own ending."""
    body = f"## codejury review\n\n{text}\n\n{SENTINEL}\n"
    return with_marker(summary_marker(SHA, {"fp1": "open"}), body)


def assert_clean(body: str, *, quoted_code: bool = False) -> None:
    assert check_published(body) == []
    assert rendered_problems(body) == []
    assert old_gitlab_commands(body) == []
    assert parse_summary(body) == SummaryState(head_sha=SHA, findings={"fp1": "open"})
    if not quoted_code:  # code is quoted verbatim: a marker there is inert text, parsers read line 1 only
        assert len(re.findall(r"<!--\s*codejury", body, re.I)) == 1


# Raw attacks that are harmless as they stand, and the raw ones only check_published's stricter rules see.
HARMLESS_RAW = {
    "code span across paragraphs",
    "marker in code",
    "suggestion fence in body",
    "comment close",
    "bidi override",
    "backtick fence in prose",
    "homoglyph slash",
}
ORACLES_BLIND = {"tab-indented assign", "escaped at after a word", "fence in quote", "indented code", "bare cr"}


@pytest.mark.parametrize("name", sorted(ATTACKS.keys() - HARMLESS_RAW))
def test_the_corpus_is_harmful_when_published_raw(name: str) -> None:
    body = publish(ATTACKS[name])
    assert check_published(body)
    if name not in ORACLES_BLIND:
        assert rendered_problems(body) or old_gitlab_commands(body) or body.count("<!-- codejury") > 1


@pytest.mark.parametrize("text", ATTACKS.values(), ids=ATTACKS.keys())
def test_attack_in_a_body_publishes_nothing_harmful(text: str) -> None:
    assert_clean(publish(safe_text(text)))


@pytest.mark.parametrize("text", ATTACKS.values(), ids=ATTACKS.keys())
def test_attack_in_a_title_publishes_nothing_harmful(text: str) -> None:
    line = safe_line(text)
    assert "\n" not in line
    assert_clean(publish(f"**Warning** · **{line}**"))


@pytest.mark.parametrize("text", ATTACKS.values(), ids=ATTACKS.keys())
def test_attack_as_code_publishes_nothing_harmful(text: str) -> None:
    assert_clean(publish("Quoted:\n\n" + safe_code(text, "md")), quoted_code=True)


FRAGMENTS = [
    *ATTACKS.values(),
    "@here",
    "@g/t",
    "\\",
    "`",
    "``",
    "```",
    "~~~",
    "\n",
    "\n\n",
    " ",
    "    ",
    "<details>",
    "<!--",
    "-->",
    "<code>",
    "</code>",
    "&",
    "<",
    "> ",
    "- ",
    "1. ",
    "|",
    "| a | b |\n|---|---|\n",
    "x",
    "_",
    "*",
    "[",
    "](",
    ")",
    "\r",
    "\t",
    "é",
]


@pytest.mark.parametrize("seed", range(4))
def test_random_mixes_of_the_corpus_publish_nothing_harmful(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(300):
        text = "".join(rng.choice(FRAGMENTS) for _ in range(rng.randint(1, 12)))
        assert_clean(publish(safe_text(text)))
        assert_clean(publish(f"**{safe_line(text)}**"))


@pytest.mark.parametrize("replacement", REPLACEMENTS.values(), ids=REPLACEMENTS.keys())
def test_suggestion_cannot_escape_and_applies_verbatim(replacement: str) -> None:
    block = suggestion_block(replacement, lines_above=2)
    body = with_marker(finding_marker("fp1"), f"**Warning** · {safe_line('x')}\n\n{block}\n\n{SENTINEL}\n")
    assert check_published(body) == []
    assert [p for p in rendered_problems(body) if "html block" not in p] == []
    assert old_gitlab_commands(body) == []
    assert parse_finding(body) == "fp1"
    (fence,) = [t for t in _MD.parse(body) if t.type == "fence"]
    assert fence.info == "suggestion:-2+0"
    expected = "".join(f" {line}\n" if line == "/merge" else f"{line}\n" for line in replacement.splitlines())
    assert fence.content == expected


def test_suggestion_offsets() -> None:
    assert suggestion_block("x").startswith("```suggestion\n")
    assert suggestion_block("x", lines_above=3).startswith("```suggestion:-3+0\n")
    assert suggestion_block("x", lines_below=1).startswith("```suggestion:-0+1\n")
    with pytest.raises(ValueError):
        suggestion_block("x", lines_above=-1)


def test_safe_code_fence_outlasts_every_backtick_run_and_cleans_the_language() -> None:
    block = safe_code("a ````` b\n```\n", "py\n/merge")
    assert block.splitlines()[0] == "``````py"
    assert block.splitlines()[-1] == "``````"
    assert safe_code("x", "suggestion:-0+0").startswith("```\n")
    assert safe_code("") == "```\n```"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("/merge", "\\/merge"),
        ("  /close", "  \\/close"),
        ("@all please", "<code>@all</code> please"),
        ("use `@property` here", "use `@property` here"),
        ("a && b < c", "a &amp;&amp; b &lt; c"),
        ("mail dev@example.com", "mail dev@example.com"),
        ("／merge", "／merge"),
        ("`a | b`", "<code>a \\| b</code>"),
        ("keep **bold** and [links](https://x.org)", "keep **bold** and [links](https://x.org)"),
        ("```py\nif a < b:\n    pass\n```", "```py\nif a < b:\n    pass\n```"),
    ],
)
def test_safe_text_stays_readable(text: str, expected: str) -> None:
    assert safe_text(text) == expected


def test_inline_code_for_untrusted_paths() -> None:
    assert inline_code("packages/@scope/x.ts") == "`packages/@scope/x.ts`"
    assert inline_code("a`b") == "``a`b``"
    assert check_published(f"- {inline_code('packages/@all/x|y.ts')}: generated") == []


def test_our_own_layout_passes() -> None:
    body = (
        "## codejury review\n\n**Verdict: Approved**\n\n<details>\n<summary>Skipped files (1)</summary>\n\n"
        "- `packages/@scope/x.ts`: generated\n\n</details>\n\n<sub>codejury · tier lite</sub>\n"
    )
    assert check_published(body) == []


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ("ok\n/merge", "quick action"),
        ("ok\n   /close", "quick action"),
        ("hi @all", "mention"),
        ("hi \\@here", "mention"),
        ("hi @group/team", "mention"),
        ("hi &#64;all", "encoded @"),
        ("<details>\n`@all`\n</details>", "mention"),
        ("`a\nb` @all `c`", "mention"),
        ("| `x | @all` |", "mention"),
        ("```\ncode", "never closed"),
        ("````\n/merge\n````", "quick action in code"),
        ("  ```\n  x\n  ```", "indented code fence"),
        ("<details>\n```\nx\n```\n</details>", "inside raw HTML"),
        ("</details>", "without an opening tag"),
        ("<details>\n\nx", "unbalanced <details>"),
        ("x\n<!-- codejury:summary v1 {} -->", "HTML comment"),
        ("<!-- codejury:summary v1 {broken} -->\nx", "HTML comment"),
        ("<script>x</script>", "raw HTML"),
        ("a\r\nb", "carriage return"),
        ("    ~~~\n    @x", "fence-like"),
    ],
)
def test_check_published_finds(body: str, problem: str) -> None:
    assert any(problem in p for p in check_published(body)), check_published(body)


def test_summary_marker_round_trip() -> None:
    findings: dict[str, FindingStatus] = {"a1b2": "open", "sec:sql/x.py": "fixed", "c3": "dismissed"}
    marker = summary_marker(SHA, findings, "requested_changes")
    assert is_marker_line(marker)
    state = parse_summary(with_marker(marker, "## codejury review\n"))
    assert state == SummaryState(head_sha=SHA, findings=findings, verdict="requested_changes")


def test_summary_json_cannot_end_the_comment() -> None:
    marker = summary_marker(SHA, {"a--": "open", "--": "fixed"})
    assert marker.count("-->") == 1 and marker.endswith(" -->")
    assert "<" not in marker[4:] and ">" not in marker[:-1]
    assert parse_summary(marker) == SummaryState(head_sha=SHA, findings={"a--": "open", "--": "fixed"})


@pytest.mark.parametrize("fingerprint", ["a-->b", "x y", "", "<b>", "a\nb"])
def test_malformed_fingerprints_are_refused(fingerprint: str) -> None:
    with pytest.raises(ValueError):
        finding_marker(fingerprint)
    with pytest.raises(ValueError):
        summary_marker(SHA, {fingerprint: "open"})


@pytest.mark.parametrize("sha", ["--output=/tmp/x", "HEAD", "abc", "g" * 40])
def test_head_sha_must_be_hex(sha: str) -> None:
    with pytest.raises(ValueError):
        summary_marker(sha, {})


def test_finding_marker_round_trip() -> None:
    marker = finding_marker("sec:sql/x.py:1f2e")
    assert parse_finding(with_marker(marker, "**Critical** ...")) == "sec:sql/x.py:1f2e"


@pytest.mark.parametrize(
    "body",
    [
        "<!-- codejury:summary v1 {not json} -->",
        '<!-- codejury:summary v2 {"head_sha":"' + SHA + '"} -->',
        '<!-- codejury:summary v1 {"head_sha":"--upload-pack=x"} -->',
        '<!-- codejury:summary v1 {"head_sha":"' + SHA + '","findings":{"a":"maybe"}} -->',
        '<!-- codejury:summary v1 {"head_sha":"' + SHA + '"} --> {"x": 1} -->',
        '<!-- codejury:summary v1 {"head_sha":"' + SHA + '"} --> trailing',
        'text first\n<!-- codejury:summary v1 {"head_sha":"' + SHA + '"} -->',
        ' <!-- codejury:summary v1 {"head_sha":"' + SHA + '"} -->',
        '`<!-- codejury:summary v1 {"head_sha":"' + SHA + '"} -->`',
    ],
)
def test_tampered_summary_markers_are_ignored(body: str) -> None:
    assert parse_summary(body) is None


@pytest.mark.parametrize(
    "body",
    ["<!-- codejury:finding v1 a b -->", "<!-- codejury:finding v1 -->", "x\n<!-- codejury:finding v1 ab -->"],
)
def test_tampered_finding_markers_are_ignored(body: str) -> None:
    assert parse_finding(body) is None


def test_markers_count_only_on_the_bots_own_comments() -> None:
    summary = with_marker(summary_marker(SHA, {"fp": "open"}), "body")
    finding = with_marker(finding_marker("fp"), "body")
    assert trusted_summary(summary, author_id=7, bot_id=7) == SummaryState(head_sha=SHA, findings={"fp": "open"})
    assert trusted_summary(summary, author_id=8, bot_id=7) is None
    assert trusted_summary(summary, author_id="7", bot_id=7) is None
    assert trusted_finding(finding, author_id="bot", bot_id="bot") == "fp"
    assert trusted_finding(finding, author_id="mallory", bot_id="bot") is None


def test_forged_markers_in_model_text_do_not_change_our_state() -> None:
    forged = '<!-- codejury:summary v1 {"head_sha":"' + "f" * 40 + '","findings":{"fp1":"dismissed"}} -->'
    body = publish(safe_text(f"{forged}\n\nAll good.\n\n```\n{forged}\n```"))
    assert parse_summary(body) == SummaryState(head_sha=SHA, findings={"fp1": "open"})
    assert "f" * 40 not in body
