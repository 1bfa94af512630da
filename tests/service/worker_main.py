"""A real ``codejury worker`` process whose reviewer is the scripted model (the tests start it as a subprocess).

    python worker_main.py SLEEP_S [sql] -- WORKER_FLAGS...

The reviewer takes ``SLEEP_S`` seconds before answering one finding (a long sleep leaves the job
running while the test kills this process); the coordinator keeps everything. The finding is an
unchecked input in ``app.py``, or with ``sql`` the %-formatted query of ``reports.py`` line 5
(where ruff's S608 hits when the worker reads the head commit's tree).
"""

from __future__ import annotations

import sys

from codejury.cli import cli
from codejury.testing.scripted import Final, Raw, ScriptedResolver, Sleep
from codejury.testing.scripted import finding as model_finding

FINDING = model_finding("app.py", 5, "Unchecked input", severity="warning", category="validation")
SQL = model_finding("reports.py", 5, "Query built from input", severity="critical", category="injection")


def main() -> None:
    sleep_s = float(sys.argv[1])
    flags = sys.argv[sys.argv.index("--") + 1 :]
    found = SQL if "sql" in sys.argv[2 : sys.argv.index("--")] else FINDING
    reviewer = Sleep(sleep_s, Final([found])) if sleep_s > 0 else Final([found])
    resolver = ScriptedResolver({"reviewer": [reviewer], "coordinator": [Raw({"decisions": []})]})
    with resolver.active():
        cli.main(
            [
                "worker",
                "--plugin",
                "codejury.testing.scripted",
                "--model",
                "scripted:reviewer",
                "--model-for",
                "coordinator=scripted:coordinator",
                *flags,
            ],
            prog_name="codejury",
        )


if __name__ == "__main__":
    main()
