"""The review workspace: numbered patches and the shared context file."""

from __future__ import annotations

from pathlib import Path

from codejury.change.diffparse import parse_diff
from codejury.change.types import ChangeSet, FileChange
from codejury.workspace import build_workspace, numbered_patch, safe_patch_name

DIFF = b"""diff --git a/src/app.py b/src/app.py
--- a/src/app.py
+++ b/src/app.py
@@ -10,4 +10,5 @@ def main():
 keep = 1
-old = 2
+new = 2
+more = 3
 tail = 4
 end = 5
diff --git a/old.py b/pkg/new.py
similarity index 90%
rename from old.py
rename to pkg/new.py
--- a/old.py
+++ b/pkg/new.py
@@ -1 +1 @@
-a
+b
diff --git a/logo.png b/logo.png
Binary files a/logo.png and b/logo.png differ
diff --git a/run.sh b/run.sh
old mode 100644
new mode 100755
"""


def files() -> dict[str, FileChange]:
    return {fc.path: fc for fc in parse_diff(DIFF)}


def test_numbered_patch_carries_new_side_numbers() -> None:
    assert numbered_patch(files()["src/app.py"]) == (
        "# src/app.py (modified)\n"
        "@@ -10,4 +10,5 @@ def main():\n"
        "   10   keep = 1\n"
        "      - old = 2\n"
        "   11 + new = 2\n"
        "   12 + more = 3\n"
        "   13   tail = 4\n"
        "   14   end = 5\n"
    )


def test_numbered_patch_rename_binary_and_mode_only() -> None:
    fcs = files()
    assert numbered_patch(fcs["pkg/new.py"]) == (
        "# pkg/new.py (renamed, renamed from old.py)\n@@ -1,1 +1,1 @@\n      - a\n    1 + b\n"
    )
    binary = numbered_patch(fcs["logo.png"]).splitlines()
    assert binary[0] == "# logo.png (modified)"
    assert len(binary) == 2 and "binary" in binary[1]
    assert numbered_patch(fcs["run.sh"]).splitlines()[0] == "# run.sh (modified, mode 100644 -> 100755)"


def test_build_workspace_writes_patches_and_context(tmp_path: Path) -> None:
    change = ChangeSet(files=tuple(files().values()))
    ws = build_workspace(change, tmp_path / "ws", shared_context="# Change\nTitle: x\n")
    assert ws.root == tmp_path / "ws"
    assert ws.context_file.read_text(encoding="utf-8") == "# Change\nTitle: x\n"
    assert set(ws.patch_paths) == {"src/app.py", "pkg/new.py", "logo.png", "run.sh"}
    assert ws.patch_paths["src/app.py"] == ws.patch_dir / "src__app.py.patch"
    assert sorted(p.name for p in ws.patch_dir.iterdir()) == sorted(p.name for p in ws.patch_paths.values())
    assert ws.patch_text("src/app.py") == numbered_patch(files()["src/app.py"])


def test_files_argument_restricts_the_patches(tmp_path: Path) -> None:
    fcs = files()
    ws = build_workspace(ChangeSet(files=tuple(fcs.values())), tmp_path, shared_context="", files=[fcs["run.sh"]])
    assert list(ws.patch_paths) == ["run.sh"]
    assert [p.name for p in ws.patch_dir.iterdir()] == ["run.sh.patch"]


def test_rebuilding_removes_stale_patches(tmp_path: Path) -> None:
    fcs = files()
    build_workspace(ChangeSet(files=tuple(fcs.values())), tmp_path, shared_context="")
    ws = build_workspace(ChangeSet(files=(fcs["run.sh"],)), tmp_path, shared_context="")
    assert [p.name for p in ws.patch_dir.iterdir()] == ["run.sh.patch"]


def test_weird_paths_stay_inside_dest_and_never_collide(tmp_path: Path) -> None:
    weird = ["../../etc/passwd", "a/b.py", "a__b.py", "A__B.py", "dir with space/caf\u00e9.txt", "x/\u2028y",
             "..", ".hidden", "a" * 400 + ".py", "a:b*c?.py", "a;rm -rf ~.py"]  # fmt: skip
    fcs = tuple(FileChange(path=p, old_path=None, status="added") for p in weird)
    dest = tmp_path / "ws"
    ws = build_workspace(ChangeSet(files=fcs), dest, shared_context="ctx")
    assert set(ws.patch_paths) == set(weird)
    names = [p.name for p in ws.patch_paths.values()]
    assert len({n.lower() for n in names}) == len(weird)
    for path, target in ws.patch_paths.items():
        assert target.parent == ws.patch_dir
        assert target.resolve().is_relative_to(dest.resolve())
        assert target.name.endswith(".patch") and len(target.name) < 200
        assert all(ch.isascii() and (ch.isalnum() or ch in "._-") for ch in target.name)
        assert ws.patch_text(path).startswith(f"# {path} (added)")
    assert sorted(p.name for p in (tmp_path).iterdir()) == ["ws"]


def test_safe_patch_name_is_readable_for_plain_paths() -> None:
    assert safe_patch_name("src/codejury/cli.py") == "src__codejury__cli.py.patch"
    assert safe_patch_name("a b.py").startswith("a_b.py.")
