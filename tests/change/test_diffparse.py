"""parse_diff on the diffs git and diff(1) really produce."""

from __future__ import annotations

import pytest

from codejury.change.diffparse import parse_diff, unquote_git_path
from codejury.change.types import DiffLine
from codejury.errors import DiffParseError

MODIFIED = b"""diff --git a/src/app.py b/src/app.py
index 83db48f..bf269f4 100644
--- a/src/app.py
+++ b/src/app.py
@@ -1,4 +1,5 @@ def main():
 import os
-import sys
+import sys  # changed
+import re
\x20
 x = 1
@@ -10,2 +11,2 @@ class Foo:
 a
-b
+c
"""


def test_modified_file_lines_and_numbers() -> None:
    (fc,) = parse_diff(MODIFIED)
    assert fc.path == "src/app.py"
    assert fc.status == "modified"
    assert fc.old_path is None
    assert len(fc.hunks) == 2
    first = fc.hunks[0]
    assert (first.old_start, first.old_len, first.new_start, first.new_len) == (1, 4, 1, 5)
    assert first.section == "def main():"
    assert first.lines[:3] == (
        DiffLine(" ", "import os", 1, 1),
        DiffLine("-", "import sys", 2, None),
        DiffLine("+", "import sys  # changed", None, 2),
    )
    assert first.lines[4] == DiffLine(" ", "", 3, 4)
    assert fc.added_lines == frozenset({2, 3, 12})
    assert fc.additions == 3 and fc.deletions == 2
    assert fc.new_side_lines == frozenset({1, 2, 3, 4, 5, 11, 12})
    assert fc.patch.startswith("diff --git a/src/app.py")


def test_empty_input_gives_no_files() -> None:
    assert parse_diff(b"") == ()
    assert parse_diff("  \n\n") == ()


def test_rename_with_and_without_changes() -> None:
    diff = b"""diff --git a/old/name.py b/new/name.py
similarity index 100%
rename from old/name.py
rename to new/name.py
diff --git a/a.txt b/b.txt
similarity index 80%
rename from a.txt
rename to b.txt
index 1111111..2222222 100644
--- a/a.txt
+++ b/b.txt
@@ -1,2 +1,2 @@
 keep
-old
+new
"""
    pure, edited = parse_diff(diff)
    assert (pure.path, pure.old_path, pure.status, pure.hunks) == (
        "new/name.py",
        "old/name.py",
        "renamed",
        (),
    )
    assert (edited.path, edited.old_path, edited.status) == ("b.txt", "a.txt", "renamed")
    assert edited.added_lines == frozenset({2})


def test_copy() -> None:
    diff = b"""diff --git a/a.py b/b.py
similarity index 100%
copy from a.py
copy to b.py
"""
    (fc,) = parse_diff(diff)
    assert (fc.path, fc.old_path, fc.status) == ("b.py", "a.py", "copied")


def test_new_and_deleted_files() -> None:
    diff = b"""diff --git a/new.txt b/new.txt
new file mode 100644
index 0000000..3b18e51
--- /dev/null
+++ b/new.txt
@@ -0,0 +1,2 @@
+hello
+world
diff --git a/gone.txt b/gone.txt
deleted file mode 100644
index 3b18e51..0000000
--- a/gone.txt
+++ /dev/null
@@ -1 +0,0 @@
-bye
diff --git a/empty.txt b/empty.txt
new file mode 100644
index 0000000..e69de29
"""
    new, gone, empty = parse_diff(diff)
    assert (new.path, new.status, new.new_mode) == ("new.txt", "added", "100644")
    assert new.added_lines == frozenset({1, 2})
    assert (gone.path, gone.status, gone.old_mode) == ("gone.txt", "deleted", "100644")
    assert gone.deletions == 1 and gone.added_lines == frozenset()
    assert (empty.path, empty.status, empty.hunks) == ("empty.txt", "added", ())


def test_mode_change_only() -> None:
    diff = b"""diff --git a/run.sh b/run.sh
old mode 100644
new mode 100755
"""
    (fc,) = parse_diff(diff)
    assert (fc.path, fc.status, fc.old_mode, fc.new_mode, fc.hunks) == (
        "run.sh",
        "modified",
        "100644",
        "100755",
        (),
    )


def test_binary_files() -> None:
    diff = b"""diff --git a/logo.png b/logo.png
index 1111111..2222222 100644
Binary files a/logo.png and b/logo.png differ
diff --git a/icon.ico b/icon.ico
new file mode 100644
index 0000000000000000000000000000000000000000..6b2aaa7640726588bcd3d57e1de4b1315b7f315e
GIT binary patch
literal 5
McmZ?wbYf-z00UG2-~a#s

literal 0
HcmV?d00001

diff --git a/after.txt b/after.txt
--- a/after.txt
+++ b/after.txt
@@ -1 +1 @@
-a
+b
"""
    png, ico, after = parse_diff(diff)
    assert png.is_binary and png.status == "modified" and png.hunks == ()
    assert ico.is_binary and ico.status == "added" and ico.path == "icon.ico"
    assert not after.is_binary and after.added_lines == frozenset({1})


def test_plain_binary_line_without_git_header() -> None:
    (fc,) = parse_diff(b"Binary files old/a.bin and new/a.bin differ\n")
    assert fc.is_binary and fc.path == "a.bin"


def test_crlf_line_endings() -> None:
    diff = MODIFIED.replace(b"\n", b"\r\n")
    (fc,) = parse_diff(diff)
    assert fc.hunks[0].lines[0].text == "import os"
    assert fc.added_lines == frozenset({2, 3, 12})


def test_non_utf8_bytes_are_replaced_not_fatal() -> None:
    diff = b"""diff --git a/latin1.txt b/latin1.txt
--- a/latin1.txt
+++ b/latin1.txt
@@ -1 +1 @@
-caf\xe9
+caf\xe9 cr\xe8me
"""
    (fc,) = parse_diff(diff)
    assert fc.hunks[0].lines[1].text == "caf\ufffd cr\ufffdme"


def test_quoted_paths() -> None:
    diff = b"""diff --git "a/dir with space/caf\\303\\251.txt" "b/dir with space/caf\\303\\251.txt"
--- "a/dir with space/caf\\303\\251.txt"
+++ "b/dir with space/caf\\303\\251.txt"
@@ -1 +1 @@
-a
+b
"""
    (first,) = parse_diff(diff)
    assert first.path == "dir with space/caf\u00e9.txt"
    assert unquote_git_path('"a\\tb\\"c\\\\"') == 'a\tb"c\\'
    assert unquote_git_path("plain") == "plain"


def test_quoted_rename() -> None:
    diff = b"""diff --git "a/old \\"q\\".txt" b/new.txt
similarity index 100%
rename from "old \\"q\\".txt"
rename to new.txt
"""
    (fc,) = parse_diff(diff)
    assert (fc.old_path, fc.path, fc.status) == ('old "q".txt', "new.txt", "renamed")


def test_unquoted_paths_with_spaces() -> None:
    diff = b"""diff --git a/my file.txt b/my file.txt
--- a/my file.txt
+++ b/my file.txt
@@ -1 +1 @@
-a
+b
"""
    (fc,) = parse_diff(diff)
    assert fc.path == "my file.txt"


def test_plain_diff_u_with_timestamps() -> None:
    diff = b"""--- old/pkg/mod.py\t2024-01-01 10:00:00.000000000 +0000
+++ new/pkg/mod.py\t2024-01-02 10:00:00.000000000 +0000
@@ -1,2 +1,2 @@
 a
-b
+c
"""
    (fc,) = parse_diff(diff)
    assert fc.path == "pkg/mod.py" and fc.status == "modified"


def test_preamble_and_no_newline_marker() -> None:
    diff = b"""From 1234 Mon Sep 17 00:00:00 2001
From: Someone <s@example.com>
Subject: [PATCH] thing

---
 a.txt | 2 +-

diff --git a/a.txt b/a.txt
--- a/a.txt
+++ b/a.txt
@@ -1 +1 @@
-a
\\ No newline at end of file
+b
\\ No newline at end of file
--\x20
2.39.0
"""
    (fc,) = parse_diff(diff)
    assert [(ln.kind, ln.text) for ln in fc.hunks[0].lines] == [("-", "a"), ("+", "b")]


@pytest.mark.parametrize(
    ("diff", "cause"),
    [
        (b"just some text\nnot a diff\n", "not a unified diff"),
        (b"--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n a\n", "hunk says"),
        (b"--- a/x\n+++ b/x\n@@ nonsense @@\n", "bad hunk header"),
        (b"@@ -1 +1 @@\n-a\n+b\n", "before any file header"),
        (b"diff --cc file.c\nindex 1,2..3\n", "combined"),
        (b"--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n+c\n", "has more"),
    ],
)
def test_malformed_diff_is_a_one_line_error(diff: bytes, cause: str) -> None:
    with pytest.raises(DiffParseError) as info:
        parse_diff(diff)
    message = str(info.value)
    assert cause in message
    assert message.startswith("malformed diff at line ")
    assert "\n" not in message


def test_str_input_works_like_bytes() -> None:
    assert parse_diff(MODIFIED.decode()) == parse_diff(MODIFIED)


def test_plain_diff_against_dev_null_strips_side_prefix() -> None:
    added = b"--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1 @@\n+hi\n"
    removed = b"--- a/old.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n"
    ((new,), (old,)) = parse_diff(added), parse_diff(removed)
    assert (new.path, new.status) == ("new.txt", "added")
    assert (old.path, old.status) == ("old.txt", "deleted")


def test_lines_that_look_like_headers_inside_a_hunk() -> None:
    diff = b"""diff --git a/y.txt b/y.txt
--- a/y.txt
+++ b/y.txt
@@ -1,3 +1,3 @@
 a
---- removed dashes
+++++ added plusses
 c
"""
    (fc,) = parse_diff(diff)
    assert [(ln.kind, ln.text) for ln in fc.hunks[0].lines] == [
        (" ", "a"), ("-", "--- removed dashes"), ("+", "++++ added plusses"), (" ", "c"),
    ]  # fmt: skip


def test_deleted_binary_file() -> None:
    diff = b"""diff --git a/x.bin b/x.bin
deleted file mode 100644
index 1111111..0000000
Binary files a/x.bin and /dev/null differ
"""
    (fc,) = parse_diff(diff)
    assert (fc.path, fc.status, fc.is_binary) == ("x.bin", "deleted", True)


@pytest.mark.parametrize("field", ["-{n},1 +1,1", "-1,{n} +1,1", "-1 +{n},1", "-1,1 +1,{n}"])
def test_an_absurd_number_in_a_hunk_header_is_a_one_line_parse_error(field: str) -> None:
    digits = "9" * 5000  # past Python's 4300-digit int() limit: must be refused before int()
    diff = f"--- a/x.py\n+++ b/x.py\n@@ {field.format(n=digits)} @@\n-a\n+b\n".encode()
    with pytest.raises(DiffParseError) as info:
        parse_diff(diff)
    message = str(info.value)
    assert "\n" not in message and len(message) < 200
    assert "line 3" in message and "5000 digits" in message


def test_a_ten_digit_line_number_is_still_a_number() -> None:
    (fc,) = parse_diff(b"--- a/x.py\n+++ b/x.py\n@@ -1234567890,1 +1234567890,1 @@\n-a\n+b\n")
    assert fc.added_lines == frozenset({1234567890})
