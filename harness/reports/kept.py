"""What the reports work out once a process from objects that are only read (records, claims and their loaders),
found again by the objects' id()s: the offline tests and make report's command run in-process read the same records
again and again (load_records gives the same record for the same file)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class KeptWith(Generic[T]):
    """What `make` gave for the very same objects, by their id()s, each answer kept with its objects so that no id()
    is reused while it is kept (the objects are never changed); all forgotten at once past `most` answers."""

    def __init__(self, most: int) -> None:
        self._most = most
        self._kept: dict[tuple[int, ...], tuple[tuple[object, ...], T]] = {}

    def get(self, objects: tuple[object, ...], make: Callable[[], T]) -> T:
        key = tuple(map(id, objects))
        known = self._kept.get(key)
        if known is None:
            if len(self._kept) >= self._most:
                self._kept.clear()
            known = self._kept[key] = (objects, make())
        return known[1]
