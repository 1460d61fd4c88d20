"""Folders the suite writes its outputs into (make atlas, report, matrix, bisect, test's run records): the one owner
of making, replacing and deleting them.

Every such folder holds a marker file, MARKER, that the suite wrote when it made it. The suite deletes or replaces a
folder only when it holds that marker (or is empty), never a folder of the user's; a path that is empty, the root,
the home folder, or an ancestor of either or of the suite's checkout is refused in one line before anything is
written. A folder that is replaced is written anew beside it and swapped in only once it is complete: a run that
fails or is interrupted leaves the last one as it was.
"""

from __future__ import annotations

import os
import secrets
import shutil
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from harness.base.errors import BadInput

# Written into every output folder the suite makes: what it may later replace or delete, and nothing else.
MARKER = ".plp-output"
MARKER_TEXT = "made by pod-lifecycle-probes; the suite replaces or deletes only folders that hold this file\n"
# The checkout itself: no output may replace it or a folder above it.
SUITE_DIR = Path(__file__).resolve().parents[2]


def is_ours(folder: Path) -> bool:
    """The folder holds the marker the suite writes into every output folder it makes."""
    return (folder / MARKER).is_file()


def mark(folder: Path) -> Path:
    """Write the marker into a folder the suite has just made."""
    (folder / MARKER).write_text(MARKER_TEXT)
    return folder


def check_output_dir(text: str, variable: str) -> Path:
    """A folder the suite may write (and later replace) `text` as, absolute; BadInput in one line naming `variable`
    when it is empty, the root, the home folder, a folder above either or above the suite's checkout, the checkout
    itself, not a folder, or a folder holding anything the suite did not make (no MARKER in it)."""
    if not text.strip():
        raise BadInput(f"{variable} is empty: name the folder to write, e.g. {variable}=runs/{variable.lower()}")
    if "\n" in text or "\0" in text:
        raise BadInput(f"{variable} {text!r} holds a newline: name a folder")
    folder = Path(text).expanduser().absolute()
    resolved = folder.resolve()
    home = Path.home().resolve()
    protected = {Path("/"), home, SUITE_DIR, *home.parents, *SUITE_DIR.parents}
    if resolved in protected:
        what = "the root folder" if resolved == Path("/") else "your home folder" if resolved == home else None
        what = what or ("the suite's checkout" if resolved == SUITE_DIR else "a folder above your home or the suite")
        raise BadInput(f"{variable}={text} is {what}: the suite writes only a folder of its own (e.g. runs/...)")
    if folder.exists() and not folder.is_dir():
        raise BadInput(f"{variable}={text} is not a folder")
    above = next(p for p in folder.parents if p.exists())
    if not folder.exists() and (not above.is_dir() or not os.access(above, os.W_OK | os.X_OK)):
        raise BadInput(f"{variable}={text} cannot be written: {above} is not a folder this user may write in")
    if folder.is_dir() and not is_ours(folder) and any(folder.iterdir()):
        raise BadInput(
            f"{variable}={text} holds files the suite did not write (no {MARKER} in it): it is left as it is; "
            "name a new folder, or one the suite made"
        )
    return folder


@contextmanager
def replacing(target: Path) -> Iterator[Path]:
    """A new marked folder beside `target` to write into; once the block ends without an error it replaces `target`
    (which check_output_dir allowed: the suite's own, empty, or not there). On an error or an interrupt the new
    folder is removed and `target` is left as it was."""
    target.parent.mkdir(parents=True, exist_ok=True)
    token = secrets.token_hex(3)
    staging = mark(_made(target.parent / f".{target.name}.new-{token}"))
    try:
        yield staging
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    old = target.parent / f".{target.name}.old-{token}"
    if target.is_dir() and is_ours(target):
        target.rename(old)
    elif target.is_dir():
        target.rmdir()  # empty (check_output_dir allowed it): OSError rather than losing a file that came since
    staging.rename(target)
    if old.is_dir():
        shutil.rmtree(old)


def new_output_dir(parent: Path, name: str) -> Path:
    """A new marked folder `parent/name` (its parents made as need be); FileExistsError if it is there."""
    parent.mkdir(parents=True, exist_ok=True)
    return mark(_made(parent / name))


def own(folder: Path) -> Path:
    """A folder of a new run id (runs/matrix-<id>, runs/bisect-<id>) made if need be and marked as the suite's."""
    folder.mkdir(parents=True, exist_ok=True)
    return folder if is_ours(folder) else mark(folder)


def prune(parent: Path, keep: int, older_than: float | None = None) -> list[Path]:
    """Delete all but the `keep` newest of the suite's marked folders directly under `parent` (of those last changed
    before `older_than`, a time.time(), when given: a run starting beside the pruning is not counted); what was
    deleted. Folders without the marker (the user's, or older than the marker) are never touched."""
    ours = [p for p in parent.iterdir() if p.is_dir() and not p.is_symlink() and is_ours(p)] if parent.is_dir() else []
    if older_than is not None:
        ours = [p for p in ours if p.stat().st_mtime < older_than]
    ours.sort(key=lambda p: p.stat().st_mtime, reverse=True)
    for folder in ours[keep:]:
        _delete(folder)
    return ours[keep:]


def _delete(folder: Path) -> None:
    """The folder's files, then its marker and itself: one deleted halfway (interrupted) is still the suite's."""
    for entry in folder.iterdir():
        if entry.name == MARKER:
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()
    (folder / MARKER).unlink()
    folder.rmdir()


def _made(folder: Path) -> Path:
    os.mkdir(folder)
    return folder


def main(argv: list[str]) -> int:
    """`python -m harness.base.outputs prune DIR KEEP` (make unit: the last KEEP test runs' records, pruned while the
    tests run: a folder changed since this started is the new run's)."""
    started = time.time()
    if len(argv) != 3 or argv[0] != "prune" or not argv[2].isdigit():
        print("usage: python -m harness.base.outputs prune DIR KEEP", file=sys.stderr)
        return 2
    prune(Path(argv[1]), int(argv[2]), older_than=started)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
