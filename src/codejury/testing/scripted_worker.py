"""A real ``codejury worker`` process whose reviewer is the scripted model (tests and benchmarks start it).

    python -m codejury.testing.scripted_worker SLEEP_S [sql] -- WORKER_FLAGS...

The reviewer takes ``SLEEP_S`` seconds before answering one finding (a long sleep leaves the job
running while a test kills this process; 0 answers at once); the coordinator keeps everything.
The finding is an unchecked input in ``app.py`` line 5, or with ``sql`` the %-formatted query of
``reports.py`` line 5 (where ruff's S608 hits when the worker reads the head commit's tree).
``WORKER_FLAGS`` are ``codejury worker``'s (``--database URL`` and the rest).
"""

from __future__ import annotations

import sys

from codejury.cli import cli
from codejury.testing.scripted import Final, Raw, ScriptedResolver, Sleep, Step
from codejury.testing.scripted import finding as model_finding

FINDING = model_finding("app.py", 5, "Unchecked input", severity="warning", category="validation")
SQL = model_finding("reports.py", 5, "Query built from input", severity="critical", category="injection")
MODEL_FLAGS = ("--plugin", "codejury.testing.scripted", "--model", "scripted:reviewer",
               "--model-for", "coordinator=scripted:coordinator")  # fmt: skip


def main(argv: list[str]) -> None:
    if "--" not in argv or argv.index("--") == 0:
        raise SystemExit("usage: python -m codejury.testing.scripted_worker SLEEP_S [sql] -- WORKER_FLAGS...")
    own, flags = argv[: argv.index("--")], argv[argv.index("--") + 1 :]
    sleep_s = float(own[0])
    found = SQL if "sql" in own[1:] else FINDING
    reviewer: Step = Sleep(sleep_s, Final([found])) if sleep_s > 0 else Final([found])
    resolver = ScriptedResolver({"reviewer": [reviewer], "coordinator": [Raw({"decisions": []})]})
    with resolver.active():
        cli.main(["worker", *MODEL_FLAGS, *flags], prog_name="codejury")


if __name__ == "__main__":
    main(sys.argv[1:])
