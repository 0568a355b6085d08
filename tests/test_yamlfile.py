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


@pytest.mark.parametrize("text,value", [
    ("0o10", 8), ("0x10", 16), ("-3", -3), ("+4", 4), ("0", 0), ("00", 0), ("1e3", 1000.0),
    (".5", 0.5), ("5.", 5.0), ("01.5", 1.5), (".inf", float("inf")), ("true", True),
    ("FALSE", False), ("~", None), ("null", None),
    ("2001-12-14", "2001-12-14"),  # no timestamps in the core schema: text
    ("y", "y"), ("n", "n"), ("'yes'", "yes"), ("'010'", "010"), ('"1:30"', "1:30"),
    ("'1_000'", "1_000"),
])
def test_plain_scalars_resolve_by_the_yaml_12_core_schema(tmp_path, text, value):
    path = tmp_path / "f.yaml"
    path.write_text(f"a:\n  k: {text}\n")
    got = read_mapping(path, "keys")["a"]["k"]
    assert got == value and type(got) is type(value)


@pytest.mark.parametrize("text,old,write", [
    ("010", "8", "8 or 10"), ("08", "text", "8"), ("0b101", "5", "5"), ("1:30", "90", "90"),
    ("1:30.5", "90.5", "90.5"), ("1_000", "1000", "1000"), ("1_000.5", "1000.5", "1000.5"),
    ("-0x10", "-16", "-16"), ("yes", "true", "true"), ("Yes", "true", "true"),
    ("no", "false", "false"), ("NO", "false", "false"), ("on", "true", "true"),
    ("off", "false", "false"), ("Off", "false", "false"),
])
def test_yaml_11_forms_are_refused_naming_the_key_and_value(tmp_path, text, old, write):
    """YAML 1.1 reads each as a boolean or number and 1.2 as another value: one line with
    the line, the key, the value, the 1.1 reading and what to write (PyYAML's 1.1
    readings, e.g. 010 → 8, 1:30 → 90, written by hand here)."""
    path = tmp_path / "f.yaml"
    path.write_text(f"name: x\ngpu:\n  count: {text}\n")
    with pytest.raises(RldseError) as info:
        read_mapping(path, "keys")
    message = str(info.value)
    assert "\n" not in message
    assert f"line 3: count: {text} " in message
    assert f"YAML 1.1 reads {old}," in message and f"write {write}," in message


def test_yaml_11_forms_in_a_list_name_their_line(tmp_path):
    path = tmp_path / "f.yaml"
    path.write_text("a: 1\nb: [1, on]\n")
    with pytest.raises(RldseError, match=r"line 2: on is a YAML 1\.1 boolean"):
        read_mapping(path, "keys")
