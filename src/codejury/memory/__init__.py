"""Memory: what people with write access dismissed in a repository stays dismissed there.

A finding is remembered by two keys that survive moving to another file, line or change:

- its **rule**: the analyzer rules that back it (``ruff:S101``), else its reviewer and normalised title
  (``code_quality:magic number in timeout``); with the rule's **version** (the reviewer's prompt, digested), so a
  dismissal stops counting when the reviewer that raised it changed;
- its **code shape**: a digest of the flagged lines' text, white space folded (``keys.code_shape``), never the
  path or the line number.

Every review records the keys of what it published and the dismissals it saw on its forge (a ``won't fix``
reply or a resolved thread by a writer, a dispute the coordinator accepted); the next review of any change of
the same repository looks them up in one store query (``codejury.record.memory``) and does not publish a
finding whose rule and shape match a dismissal younger than ``[memory] max_age_days``. ``learn`` turns what the
store remembers into rules a person reviews (``codejury learn``). The stage is ``codejury.stages.memory``.
"""
