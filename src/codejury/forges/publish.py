"""What to publish on a merge request, planned without any I/O (shared by every forge adapter).

``plan_publish(review, files, previous, options)`` turns a new review, the change's diff and
what the bot published before into a ``PublishPlan``: the summary comment, the new inline
threads, the threads to resolve with their one-line note, the threads kept as they are, the
findings that only the summary lists, the approval action and the counts of a re-review.
An adapter (``forges/gitlab/``, ``forges/github/``: the ``plan.Forge`` protocol) reads
the previous state, posts the plan and, when the forge refuses to anchor a comment, plans
again with that finding in ``PlanOptions.refused`` so it moves to the summary.

Matching across runs is by fingerprint (``codejury.fingerprint``). Each inline thread's
marker carries a *thread key* ``<fingerprint>:<severity>:<code digest>``: the severity lets a
later run see that a finding got materially worse, the digest (of the new-side text of the
commented lines) lets it see whether those lines changed, wherever they moved. The rules:

- reported again → the thread is kept, never posted twice;
- not reported, and the commented lines changed or the file left the diff → fixed: resolved
  with a note; not reported but the lines are unchanged → it stays open (a reviewer missing
  it this time is not a fix); in a partial review (no reviewer answered, only the analyzers'
  hits published) every thread not reported again stays as it is: no model looked;
- resolved by a human → left alone, unless the finding is now more severe (a new thread);
- a human with write access replied "won't fix" / "wontfix" / "acknowledged" / "ack" →
  dismissed: resolved, remembered in the summary's state, not raised again unless worse.

For the reviewers, ``previous_review(previous, changed_since)`` turns the same previous state
into ``ChangeMeta.previous`` (findings still open, dismissed ones, files changed since the last
reviewed commit; titles read back with ``finding_title``), which the prompts fence as data.

Every piece of model-written or human text goes through ``safety.safe_text`` / ``safe_line``;
every body is checked with ``safety.checked`` and a problem left is a bug (``UnsafeBody``),
never published. The summary's wording lives in ``summary`` (``failure_note`` too, re-exported
here with ``checked`` and ``UnsafeBody``); this module decides what goes into it. The plan types
live in ``plan`` (re-exported here), so ``summary`` and the adapters name them without importing
the planner.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from codejury.change.types import RESOLVED_BY_WRITER, FileChange, PreviousReview, PriorFinding
from codejury.findings import SEVERITY_RANK, Disagreement, Finding, ReplyVerdict, Review
from codejury.fingerprint import unique_fingerprints
from codejury.forges.markers import FindingStatus, SummaryState, finding_marker, with_marker
from codejury.forges.plan import WONT_FIX as WONT_FIX
from codejury.forges.plan import ApprovalAction as ApprovalAction
from codejury.forges.plan import Forge as Forge
from codejury.forges.plan import InlineComment as InlineComment
from codejury.forges.plan import LineUrl as LineUrl
from codejury.forges.plan import PlanOptions as PlanOptions
from codejury.forges.plan import PreviousState as PreviousState
from codejury.forges.plan import PreviousThread as PreviousThread
from codejury.forges.plan import PublishPlan as PublishPlan
from codejury.forges.plan import Replan as Replan
from codejury.forges.plan import Reply as Reply
from codejury.forges.plan import ThreadUpdate as ThreadUpdate
from codejury.forges.plan import split_thread_key as split_thread_key
from codejury.forges.plan import thread_key as thread_key
from codejury.forges.safety import UnsafeBody as UnsafeBody
from codejury.forges.safety import checked as checked
from codejury.forges.safety import inline_code, safe_code, safe_line, safe_text, suggestion_block
from codejury.forges.summary import failure_note as failure_note
from codejury.forges.summary import grounds_line, summary_body
from codejury.judge.verdict import VCS_ACTION
from codejury.render import SEVERITY_LABELS


def disputes(previous: PreviousState) -> list[Disagreement]:
    """The replies disputing the bot's open threads, for the coordinator to judge (``ReviewOptions.disputes``)."""
    out: list[Disagreement] = []
    for thread in previous.threads:
        reply = thread.dispute()
        if reply is not None:
            out.append(
                Disagreement(
                    thread_id=thread.id,
                    fingerprint=thread.fingerprint,
                    path=thread.path,
                    start_line=thread.start_line,
                    end_line=thread.end_line,
                    title=thread.title,
                    author=reply.author,
                    reply=reply.body,
                )
            )
    return out


# -- thread keys and anchors --------------------------------------------------------------------------
def _shown_lines(change: FileChange) -> dict[int, tuple[int, str]]:
    """New-side line number -> (hunk index, text) for every added or context line."""
    return {
        line.new_no: (index, line.text)
        for index, hunk in enumerate(change.hunks)
        for line in hunk.lines
        if line.new_no is not None
    }


def anchor(change: FileChange, start: int, end: int) -> tuple[int, int] | None:
    """The commentable part of ``start..end``: shown lines inside the hunk of the last one shown."""
    lines = _shown_lines(change)
    shown = [n for n in range(start, max(start, end) + 1) if n in lines]
    if not shown:
        return None
    hunk = lines[shown[-1]][0]
    first = next(n for n in shown if lines[n][0] == hunk)
    return first, shown[-1]


def code_digest(texts: Sequence[str]) -> str:
    return hashlib.sha256("\n".join(t.rstrip() for t in texts).encode("utf-8")).hexdigest()[:12]


def _lines_unchanged(thread: PreviousThread, files: Mapping[str, FileChange]) -> bool:
    """Whether the thread's lines still appear, unchanged, in the diff (anywhere in the file)."""
    change = files.get(thread.path)
    if change is None or change.status == "deleted":
        return False  # the file went away, or left the diff: its flagged lines changed
    if thread.digest is None:
        return True  # a key without a digest: no way to tell, so never call it fixed
    lines = _shown_lines(change)
    size = max(1, thread.end_line - thread.start_line + 1)
    for first in sorted(lines):
        window = [lines.get(n) for n in range(first, first + size)]
        if all(w is not None for w in window) and code_digest([w[1] for w in window if w]) == thread.digest:
            return True
    return False


# -- planning ---------------------------------------------------------------------------------------
def _rank(severity: str | None) -> int:
    return SEVERITY_RANK.get(severity or "", 0)


def _succeeded(review: Review) -> bool:
    return any(r.status == "ok" for r in review.reviewers)


def approval_action(review: Review, *, approve: bool, bot_approved: bool) -> ApprovalAction:
    """The verdict rubric (docs/architecture.md) as a forge action; an unjudged, reviewer-less or
    ``not_reviewed`` review never approves (it withdraws the bot's approval); only break glass approves regardless."""
    if not approve:
        return "none"
    wants = "approve" if review.break_glass else VCS_ACTION[review.verdict]
    if wants == "approve" and (review.break_glass or (review.judged and _succeeded(review))):
        return "none" if bot_approved else "approve"
    return "unapprove" if bot_approved else "none"


@dataclass
class _Tally:
    statuses: dict[str, FindingStatus] = field(default_factory=dict)
    resolve: list[ThreadUpdate] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    fixed: list[PreviousThread] = field(default_factory=list)
    lingering: list[PreviousThread] = field(default_factory=list)
    unread: list[PreviousThread] = field(default_factory=list)
    """Open threads of a review no reviewer answered: left as they are, since no model looked."""
    dismissed: dict[str, str] = field(default_factory=dict)  # fingerprint -> who


def _review_threads(
    current: Mapping[str, Finding],
    files: Mapping[str, FileChange],
    previous: PreviousState,
    head_sha: str,
    replies: Sequence[ReplyVerdict] = (),
    *,
    looked: bool = True,
) -> _Tally:
    tally = _Tally(statuses=dict(previous.state.findings) if previous.state else {})
    by_fp: dict[str, list[PreviousThread]] = {}
    for thread in previous.threads:
        by_fp.setdefault(thread.fingerprint, []).append(thread)
    verdicts = {v.thread_id: v for v in replies}
    for fp, threads in by_fp.items():
        finding = current.get(fp)
        judged = [(t, r, verdicts[t.id]) for t in threads if t.id in verdicts and (r := t.dispute()) is not None]
        agreed = [(r.author, v.message) for _, r, v in judged if v.decision == "resolve"]
        if agreed:
            # The coordinator read the dispute and agreed: resolved with its reason, not raised again.
            author, reason = agreed[0]
            tally.statuses[fp] = "dismissed"
            tally.dismissed[fp] = author
            note = f"Resolved after the reply: {safe_text(reason).strip()}"
            tally.resolve += [ThreadUpdate(t.id, note, "dismissed") for t in threads if not t.resolved]
            continue
        for thread, _, verdict in judged:
            tally.resolve.append(ThreadUpdate(thread.id, safe_text(verdict.message).strip(), "answered", resolve=False))
        dismissals = [(t, w) for t in threads if (w := t.dismissed_by())]
        worst = max((_rank(t.severity) for t, _ in dismissals), default=0)
        who = dismissals[0][1] if dismissals else None
        if who and (finding is None or _rank(finding.severity) <= worst):
            tally.statuses[fp] = "dismissed"
            tally.dismissed[fp] = who
            note = (
                f"Dismissed after the reply by {safe_line(who)}: "
                "codejury will not raise this again unless it gets worse."
            )
            tally.resolve += [ThreadUpdate(t.id, note, "dismissed") for t in threads if not t.resolved]
            continue
        if finding is not None:
            tally.kept += [t.id for t in threads]
            continue
        if not looked:  # no model read the change: a finding not reported again is not a fix
            unread = [t for t in threads if not t.resolved]
            tally.kept += [t.id for t in unread]
            tally.unread += unread
            continue
        for thread in threads:
            if thread.resolved:
                continue
            if _lines_unchanged(thread, files):
                tally.lingering.append(thread)
                tally.statuses[fp] = "open"
            else:
                note = (
                    f"Fixed in {inline_code(head_sha[:12])}: "
                    "the flagged lines changed and the finding is no longer reported."
                )
                tally.resolve.append(ThreadUpdate(thread.id, note, "fixed"))
                tally.fixed.append(thread)
                tally.statuses[fp] = "fixed"
    return tally


def _covered(fp: str, finding: Finding, threads: Sequence[PreviousThread]) -> bool:
    """An open or human-resolved thread already says this, at least as severely."""
    covering = [t for t in threads if t.fingerprint == fp and (not t.resolved or t.resolved_by_human)]
    return any(_rank(t.severity) >= _rank(finding.severity) or t.severity is None for t in covering)


def plan_publish(
    review: Review, files: Sequence[FileChange], previous: PreviousState, options: PlanOptions
) -> PublishPlan:
    """The whole publishing plan for ``review``; see the module docstring for the rules."""
    by_path = {f.path: f for f in files}
    fps = unique_fingerprints(review.findings)
    current = dict(zip(fps, review.findings, strict=True))
    prev_status = dict(previous.state.findings) if previous.state else {}
    tally = _review_threads(current, by_path, previous, options.head_sha, review.replies, looked=_succeeded(review))
    inline_candidates: list[tuple[str, Finding, tuple[int, int]]] = []
    summary_only: list[tuple[Finding, str]] = []
    shown: list[tuple[str, Finding]] = []
    new = still_open = 0
    for fp, finding in current.items():
        if tally.statuses.get(fp) == "dismissed" and fp in tally.dismissed:
            continue
        if prev_status.get(fp) == "dismissed" and fp not in tally.dismissed:
            dismissed = [t for t in previous.threads if t.fingerprint == fp and t.dismissed_by()]
            if not dismissed or _rank(finding.severity) <= max(_rank(t.severity) for t in dismissed):
                continue
        tally.statuses[fp] = "open"
        shown.append((fp, finding))
        if prev_status.get(fp) == "open":
            still_open += 1
        else:
            new += 1
        if _covered(fp, finding, previous.threads):
            continue
        change = by_path.get(finding.path)
        spot = anchor(change, finding.start_line, finding.end_line) if change else None
        if spot is None or fp in options.refused:
            reason = "refused by the forge" if fp in options.refused else "outside the diff"
            summary_only.append((finding, reason))
        else:
            inline_candidates.append((fp, finding, spot))
    still_open += len(tally.lingering) + len(tally.unread)
    inline_candidates.sort(key=lambda c: (-_rank(c[1].severity), -c[1].confidence, c[1].path, c[1].start_line))
    limit = max(0, options.max_inline)
    summary_only += [(f, f"over the cap of {limit} inline comments") for _, f, _ in inline_candidates[limit:]]
    inline = tuple(_inline(fp, f, spot, by_path[f.path], options) for fp, f, spot in inline_candidates[:limit])
    state = SummaryState(head_sha=options.head_sha, findings=tally.statuses, verdict=review.verdict)
    approval = approval_action(review, approve=options.approve, bot_approved=previous.bot_approved)
    plan = PublishPlan(
        summary="",
        state=state,
        inline=inline,
        resolve=tuple(tally.resolve),
        kept=tuple(tally.kept),
        summary_only=tuple(summary_only),
        approval=approval,
        fixed=len(tally.fixed),
        still_open=still_open,
        new=new,
        summary_changed=previous.state != state or bool(options.refused) or previous.summary_id is None,
    )
    body = summary_body(review, files, plan, previous, options, shown, lingering=tally.lingering, fixed=tally.fixed)
    return replace(plan, summary=body)


def _inline(
    fp: str, finding: Finding, spot: tuple[int, int], change: FileChange, options: PlanOptions
) -> InlineComment:
    lines = _shown_lines(change)
    digest = code_digest([lines[n][1] for n in range(spot[0], spot[1] + 1)])
    key = thread_key(fp, finding.severity, digest)
    label = SEVERITY_LABELS.get(finding.severity, finding.severity)
    parts = [f"**{label}** · {safe_line(finding.category)} · **{safe_line(finding.title)}**", ""]
    body = safe_text(finding.body).strip()
    if body:
        parts += [body, ""]
    whole = spot == (finding.start_line, finding.end_line)
    if finding.suggestion is not None and whole:
        above = spot[1] - spot[0] if options.suggestion_offsets else 0
        parts += ["Suggested change:", "", suggestion_block(finding.suggestion, lines_above=above), ""]
    elif finding.suggestion is not None and finding.suggestion.strip():
        parts += ["Suggested code:", "", safe_code(finding.suggestion), ""]
    parts += [grounds_line(finding), ""]
    parts.append(f"<sub>codejury · {safe_line(finding.reviewer)} · confidence {finding.confidence:.0%}</sub>")
    text = checked(with_marker(finding_marker(key), "\n".join(parts)))
    return InlineComment(fp, key, finding, spot[0], spot[1], text)


_INLINE_HEAD = re.compile(r"^\*\*[^*\n]+\*\* · .* · \*\*(?P<title>.*)\*\*\s*$")


def finding_title(body: str) -> str:
    """The title in an inline comment the bot wrote (``_inline``'s first line after the marker), or ''.

    ``safe_line``'s escapes are undone (``&lt;``, ``\\/``, mentions in ``<code>``) so a model reads
    the title as written; it is untrusted text again and must be fenced as data.
    """
    lines = body.split("\n")
    for line in lines[1:3]:
        match = _INLINE_HEAD.match(line.strip())
        if match:
            title = re.sub(r"<code>(@[^<]*)</code>", lambda m: m[1].replace("\\_", "_"), match["title"].strip())
            title = re.sub(r"\\([/`])", r"\1", title)
            return title.replace("&lt;", "<").replace("&amp;", "&")
    return ""


def previous_review(previous: PreviousState, changed_since: Sequence[str] | None) -> PreviousReview | None:
    """What reviewers are told about the bot's earlier review (None when there was none).

    Still open: the bot's open threads whose finding is not fixed or dismissed. Dismissed: a
    "won't fix" reply from someone with write access, a thread a human resolved (``RESOLVED_BY_WRITER``
    when the forge names a resolver with write access), or the status the summary remembers. One entry
    per fingerprint, with it; open findings without a thread (listed in the summary only) are counted.
    ``changed_since`` is None when the last reviewed commit is unknown or unreachable.
    """
    if previous.state is None and not previous.threads:
        return None
    status = dict(previous.state.findings) if previous.state else {}
    still_open: dict[str, PriorFinding] = {}
    dismissed: dict[str, PriorFinding] = {}
    for thread in previous.threads:
        fp = thread.fingerprint
        severity = thread.severity or "unknown"
        who = thread.dismissed_by()
        if who or status.get(fp) == "dismissed" or thread.resolved_by_human:
            why = (
                f"reply by {who}"
                if who
                else RESOLVED_BY_WRITER
                if thread.resolved_by_writer
                else "resolved by a human"
                if thread.resolved_by_human
                else "dismissed earlier"
            )
            item = PriorFinding(thread.path, thread.start_line, thread.end_line, severity, thread.title, why, fp)
            dismissed.setdefault(fp, item)
        elif not thread.resolved and status.get(fp, "open") == "open":
            still_open[fp] = PriorFinding(thread.path, thread.start_line, thread.end_line, severity, thread.title)
    for fp in dismissed:
        still_open.pop(fp, None)
    threaded = {t.fingerprint for t in previous.threads}
    unlisted = sum(1 for fp, s in status.items() if s == "open" and fp not in threaded)
    return PreviousReview(
        head_sha=previous.state.head_sha if previous.state else "",
        changed_since=tuple(changed_since) if changed_since is not None else None,
        still_open=tuple(still_open.values()),
        dismissed=tuple(dismissed.values()),
        unlisted_open=unlisted,
    )
