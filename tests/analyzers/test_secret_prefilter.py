"""Only the added lines that could hold a secret go to detect-secrets: the hits are the same as when
every added line goes, with every detector on."""

from __future__ import annotations

import tempfile
from pathlib import Path

from codejury.analyzers import secret_scan
from codejury.change.types import FileChange
from tests.analyzers.helpers import make_change

LIVE = "sk_live_" + "51Hx9QpLk2VbN8mWq3RtYz7AcD4eF"  # split so no scanner flags this test file itself
AWS = "AKIA" + "2OGYBAH6QWERTY7Z"
GITHUB = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
KEY_BLOCK = "-----BEGIN " + "RSA PRIVATE KEY-----"
JWT = "eyJhbGciOiJIUzI1NiJ9" + ".eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
ALLOWED = "pragma: " + "allowlist nextline secret"


def _scan_everything(files: list[FileChange]) -> list[secret_scan._Hit]:
    """What detect-secrets reports with every line of every file sent and all its detectors on."""
    from detect_secrets.core.secrets_collection import SecretsCollection
    from detect_secrets.settings import default_settings

    with tempfile.TemporaryDirectory() as tmp:
        names = [secret_scan._write_added_lines(Path(tmp), f, lambda _line: True) for f in files]
        collection = SecretsCollection(root=tmp)
        with default_settings():
            for name in names:
                if name is not None:
                    collection.scan_file(name)
        by_name = {n: f.path for n, f in zip(names, files, strict=True) if n is not None}
        return [secret_scan._Hit(by_name[n], s.line_number, s.type, s.secret_value or "") for n, s in collection]


def test_the_lines_left_out_and_the_detectors_left_off_change_no_finding(tmp_path: Path) -> None:
    files = {
        "deploy/env.yaml": ("", f"aws_access_key_id: {AWS}\nregion: eu-west-1\n"),
        "config/key.pem": ("", f"{KEY_BLOCK}\nMIIEowIBAAKCAQEA\n"),
        "src/client.ts": ("", f'const apiKey = process.env.KEY ?? "{LIVE}";\nconst url = "https://a.example";\n'),
        "app/settings.py": (
            "",
            'SECRET_KEY = "q8Zr3Lx7Pn2Vb9Kd4Tm6"\nDB_PASSWORD = "Zx81kQ0pLm27Vb"\nHOST = "10.1.2.3"\n'
            f'TOKEN = "{GITHUB}"\nDSN = "postgres://admin:Sup3rS3cretPw@db.internal/app"\n'
            f'AUTH = "{JWT}"\nDIGEST = "8f3a9c2b7e1d4f6a0b5c9e2d7f1a3b6c9e2d7f1a"\n'
            f"# {ALLOWED}\nAPI_KEY = 'n7Qw2Lp9Xz4Rt6Ys'\n",
        ),
        "docs/setup.md": ("", 'Set `contraseña = "Hj7Kl2Mn9Pq4"` in the file.\nNothing else here.\n'),
    }
    change = make_change(tmp_path, files, with_root=False)
    everything = secret_scan._evidence(_scan_everything(change.files), "secrets")
    assert len(everything) >= 6, "the sample holds secrets of several kinds"
    assert secret_scan._evidence(secret_scan._scan(change.files), "secrets") == everything


def test_a_line_without_any_keyword_or_format_is_not_sent() -> None:
    _plugins, candidate = secret_scan._plugins()
    assert not candidate("def function_1(value: int) -> int:  # line 1")
    assert candidate(f'x = "{AWS}"') and candidate("Password: hunter2") and candidate(f"# {ALLOWED}")
