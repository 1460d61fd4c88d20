"""JSON files read as json.loads reads them, in about half its CPU: orjson parses, the standard library answers what
orjson refuses.

A replay of every shipped recording parses 268 MB of JSON, and the offline tests do it several times over (the probes,
the altered-recording replays, the replays of make atlas, upgrade and coverage). orjson gives the same values as json
for all of them (checked for every shipped recording: the same types, keys in the same order, floats to the bit,
the last of duplicate keys), except where it refuses a text json reads (NaN, Infinity, a lone surrogate, a number too
large for a float), which json then reads here, and an integer wider than 64 bits, which orjson reads as a float: the
API's integers are int32 and int64, and none of the recordings' is wider.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson


def parse_json(data: bytes) -> Any:
    """The value json.loads gives for UTF-8 `data`; json's own error (JSONDecodeError, UnicodeDecodeError) for a
    text neither reads."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return json.loads(data.decode("utf-8"))


def read_json(path: Path) -> Any:
    """The value of a UTF-8 JSON file (parse_json); OSError as reading it raises it."""
    return parse_json(path.read_bytes())
