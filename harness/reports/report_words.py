"""The behaviour matrix's words: a change's ends, PR references made links, where a long token may break. Values
and expectations themselves are in words in wording.py, which upgrade_words.py and radar.py share."""

from __future__ import annotations

import re

from markupsafe import Markup, escape

from harness.core.expectations import PR_REFERENCE
from harness.reports.report_model import Side
from harness.reports.wording import expected_text, expected_words, short, words

PR_URL = "https://github.com/kubernetes/kubernetes/pull/"


def side_words(side: Side) -> str:
    """A change's end in words (a sequence with ', then', so that an arrow only ever joins the two ends)."""
    if side.basis == "expected":
        return expected_words(side.expectation)
    e = side.expectation
    if e is not None and e.between is not None:
        return f"{words(side.value)} ({'in' if e.matches(side.value) else 'expected'} {expected_words(e)})"
    if e is not None and not e.matches(side.value):
        return f"{words(side.value)} (expected {expected_words(e)})"
    return words(side.value)


def side_text(side: Side) -> str:
    """A change's end: the value, an observed measurement with the range it lies in."""
    if side.basis == "expected":
        return expected_text(side.expectation)
    e = side.expectation
    if e is not None and (e.between is not None or e.one_of):
        where = "in" if e.matches(side.value) else "expected"
        return f"{short(side.value)} ({where} {expected_text(side.expectation)})"
    return short(side.value)


def pr_links(text: str) -> Markup:
    """The text, escaped, with each k/k#N made a link to the Kubernetes PR."""

    def link(match: re.Match[str]) -> str:
        return f'<a href="{PR_URL}{match.group(1)}">{match.group(0)}</a>'

    return Markup(PR_REFERENCE.sub(link, str(escape(text))))


# Where the matrix breaks a long token (a field path, a dotted claim id) rather than inside a word: after these.
_BREAK_AFTER = re.compile(r"(?<=[./\[\]:_=])(?=[\w\[])")
ZWSP = "\u200b"


def breakable(text: str, longer_than: int = 16) -> str:
    """`text` with a zero-width space after the dots, slashes, brackets, colons and underscores of its tokens longer
    than `longer_than` characters: the only places a narrow cell may break a token; ordinary words never break."""
    return " ".join(_BREAK_AFTER.sub(ZWSP, word) if len(word) > longer_than else word for word in text.split(" "))
