"""``python -m codejury.config_docs``: its flags, and how the settings reference names a key's type."""

from __future__ import annotations

from pathlib import Path

import pytest

from codejury import config_docs


@pytest.mark.parametrize(
    ("args", "code", "said"),
    [
        (["--help"], 0, "usage: python -m codejury.config_docs"),
        (["--chek"], 2, "unrecognized arguments: --chek"),
    ],
)
def test_help_and_a_wrong_flag_write_nothing(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    code: int,
    said: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as stopped:
        config_docs.main(args)
    assert stopped.value.code == code
    printed = capsys.readouterr()
    assert said in (printed.out if code == 0 else printed.err)
    assert list(tmp_path.iterdir()) == []  # docs/settings.md was not written


def test_a_key_with_a_fixed_set_of_values_lists_them() -> None:
    rows = {line.split(" | ")[0]: line for line in config_docs.render_settings_reference().splitlines()}
    assert '| one of `"weak"`, `"all"`, `"off"` |' in rows["| `verify`"]
    assert '| one of `"single"`, `"panel"` |' in rows["| `weak_panel`"]
    assert not any(" | any | " in line for line in rows.values())
