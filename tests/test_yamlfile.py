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


@pytest.mark.parametrize("content,needle", [
    ("a: 1\nb: 2\na: 3\n", r"line 3: not valid YAML \(duplicate key 'a' \(first on line 1\)\)"),
    ("x: {b: 1, b: 2}\n", "duplicate key 'b'"),
    # 50,000 flow levels: refused on line 1 in one line, by rldse's cap or by the YAML
    # library's own scanner limit first (its words are not rldse's to pin)
    ("[" * 50_000 + "]" * 50_000, "line 1: not valid YAML \\("),
    ("{a: " * 50_000 + "1" + "}" * 50_000, "line 1: not valid YAML \\("),
    ("[" * 100 + "]" * 100, "line 1: not valid YAML \\(nested deeper than 64 levels\\)"),
    ("".join("  " * i + "a:\n" for i in range(100)) + "  " * 100 + "x: 1\n",
     "line 65: not valid YAML \\(nested deeper"),
])
def test_duplicate_keys_and_deep_nesting_are_one_line(tmp_path, content, needle):
    path = tmp_path / "f.yaml"
    path.write_text(content)
    with pytest.raises(RldseError, match=needle) as info:
        read_mapping(path, "keys")
    assert "\n" not in str(info.value)


def test_merge_keys_and_exponent_numbers(tmp_path):
    """A merge key may be overridden (not a duplicate); 1e10 is a number, as in YAML 1.2."""
    path = tmp_path / "f.yaml"
    path.write_text("a: &x {b: 1}\nc: {<<: *x, b: 2}\nn: 1e10\nm: -2.5E-3\ns: '1e10'\n"
                    + "d: " + "[" * 63 + "]" * 63 + "\n")
    raw = read_mapping(path, "keys")
    assert raw["c"] == {"b": 2} and raw["n"] == 1e10 and raw["m"] == -2.5e-3
    assert raw["s"] == "1e10"
