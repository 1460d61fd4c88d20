"""Reading JSON files through orjson gives what json gives, or json's own refusal (harness/base/json_read.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.base.json_read import parse_json, read_json


@pytest.mark.parametrize(
    "text",
    [
        b'{"b": 1, "a": [1.5, -0.0, 1e-7, 12345678901234567, true, null], "c": "caf\\u00e9 \\ud83d\\ude00"}',
        '{"k": "zürich, 東京"}'.encode(),
        b'{"a": 1, "a": 2}',  # the last of duplicate keys, as json keeps it
        b"[NaN, Infinity, -Infinity]",  # orjson refuses these; json reads them
        b'["\\ud800"]',  # a lone surrogate: orjson refuses it, json keeps it
        b"[1e400]",  # too large for a float: json reads inf
        b"[18446744073709551615, -9223372036854775808]",
    ],
)
def test_a_text_reads_as_json_reads_it(text: bytes) -> None:
    expected, got = json.loads(text.decode("utf-8")), parse_json(text)
    assert repr(got) == repr(expected)  # the same types and float bits, keys in the same order
    assert [type(v) for v in got] == [type(v) for v in expected]


@pytest.mark.parametrize(
    ("data", "refusal"),
    [
        (b'{"a": ', json.JSONDecodeError),
        (b"\xef\xbb\xbf{}", json.JSONDecodeError),  # a byte order mark
        (b'{"a": "\xff"}', UnicodeDecodeError),
    ],
)
def test_a_text_json_refuses_is_refused_in_its_words(data: bytes, refusal: type[Exception]) -> None:
    with pytest.raises(refusal) as orjson_read:
        parse_json(data)
    with pytest.raises(refusal) as json_read:
        json.loads(data.decode("utf-8"))
    assert str(orjson_read.value) == str(json_read.value)


def test_a_file_is_read_as_bytes_and_parsed(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"probe": "p", "n": [1, 2.5]}, indent=1) + "\n")
    assert read_json(path) == {"probe": "p", "n": [1, 2.5]}
    with pytest.raises(FileNotFoundError):
        read_json(tmp_path / "missing.json")
