"""The shared YAML reader: every way a user's file can be wrong is one line."""

from __future__ import annotations

import pytest

from rldse.errors import RldseError
from rldse.yamlfile import read_mapping


@pytest.mark.parametrize("content,needle", [
    (b"a: [1, 2\n", "line 2: not valid YAML"),
    (b"- just\n- a list\n", "expected a mapping (keys a, b)"),
    (b"\xff\xfe bad bytes", "not UTF-8 text"),
])
def test_bad_files(tmp_path, content, needle):
    path = tmp_path / "f.yaml"
    path.write_bytes(content)
    with pytest.raises(RldseError, match=needle.replace("(", r"\(").replace(")", r"\)")):
        read_mapping(path, "keys a, b")


def test_missing_and_empty(tmp_path):
    with pytest.raises(RldseError, match="no such file"):
        read_mapping(tmp_path / "none.yaml", "x")
    (tmp_path / "empty.yaml").write_text("")
    assert read_mapping(tmp_path / "empty.yaml", "x") == {}
