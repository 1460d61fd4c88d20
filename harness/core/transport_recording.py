"""A recording: a probe's calls and what came back, in order, as probes/<family>/recordings/ hold them (`Recording`,
the file format), and the transport that writes one down during a live run (`RecordingTransport`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.base.json_read import read_json
from harness.core.transport import ACTIONS, JsonDict, Rejected, Transport, ViewMemo, WatchEvent, WatchHandle

RECORDING_FORMAT = "pod-lifecycle-probes/recording/v1"
# How Recording.write begins a file: its format, then the probe it is of (all --replay's collection needs of it).
RECORDING_HEAD = re.compile(r'\{\s*"format": "(?P<format>[^"\\]*)",\s*"probe": (?P<probe>"(?:[^"\\]|\\.)*"),')
RECORDING_HEAD_BYTES = 4096


@dataclass
class Recording:
    """A probe's calls and what came back, in order; the file format of probes/<family>/recordings/."""

    probe: str
    origin: JsonDict
    interactions: list[JsonDict] = field(default_factory=list)
    # The views its replays made of its objects (harness/core/transport.py ViewMemo): a copy that shares its
    # objects and never changes one in place may share them (the tests that replay a recording several times, a
    # watch's events altered or lost, make each view once).
    views: ViewMemo = field(default_factory=dict, repr=False, compare=False)

    def to_json(self) -> JsonDict:
        return {
            "format": RECORDING_FORMAT,
            "probe": self.probe,
            "origin": self.origin,
            "interactions": self.interactions,
        }

    def write(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.to_json(), indent=1, sort_keys=False) + "\n")

    @classmethod
    def probe_of(cls, path: Path) -> str:
        """The probe a recording is of, from the head of the file where Recording.write puts it (the file is read
        whole when the probe replays it: a recording is about 120 KB, its head is all collection needs); a file that
        does not begin so is read whole here, refused as Recording.load refuses it."""
        with path.open("rb") as file:
            head = file.read(RECORDING_HEAD_BYTES).decode("utf-8", errors="replace")
        found = RECORDING_HEAD.match(head)
        if found is None or found["format"] != RECORDING_FORMAT:
            return cls.load(path).probe
        return str(json.loads(found["probe"]))

    @classmethod
    def load(cls, path: Path) -> Recording:
        data = read_json(path)
        if data.get("format") != RECORDING_FORMAT:
            raise ValueError(f"{path}: not a recording in format {RECORDING_FORMAT} (format={data.get('format')!r})")
        return cls(data["probe"], data["origin"], data["interactions"])

    def server_git_version(self) -> str:
        for step in self.interactions:
            if step["call"] == "server_version":
                return str(step["response"]["gitVersion"])
        raise ValueError(f"recording of {self.probe} never asked for the server version")


# How Recording.write lays a whole recording out (json.dumps with indent=1): its format, probe and origin, then its
# calls, each from a line "  {" to a line "  }", its own keys each beginning a line indented by three spaces (anything
# nested in a call, a watch's events, is indented further).
_WRITTEN = '{\n "format": '
_INTERACTIONS = '\n "interactions": ['
_WRITTEN_END = "\n  }\n ]\n}\n"


@dataclass(frozen=True)
class RecordingText:
    """A recording read off the text Recording.write laid out, its calls not parsed: a recording is nearly all watch
    events, which a reader of its head, its call times or its server version does not need (parsing the 2,400
    shipped recordings whole takes about 1 s of CPU through orjson, 2 s through json)."""

    text: str
    cut: int  # where its calls begin
    head: JsonDict  # format, probe, origin

    @classmethod
    def of(cls, text: str) -> RecordingText | None:
        """The recording's text when it is whole as Recording.write lays it out; None for any other text (parse it
        whole). Raises ValueError when its head is not JSON."""
        cut = text.find(_INTERACTIONS)
        if not (text.startswith(_WRITTEN) and text.endswith(_WRITTEN_END)) or cut < 0:
            return None
        return cls(text, cut, json.loads(text[:cut].rstrip(",") + "}"))

    def call_values(self, key: str) -> Iterator[float]:
        """The numbers a key of the calls holds, in order (found by str.find: a regular expression tried at every
        line of the events took as long as parsing them); any other value (null, a string) is passed over."""
        needle = f'\n   "{key}": '
        at = self.text.find(needle, self.cut)
        while at >= 0:
            begins = at + len(needle)
            ends = self.text.find("\n", begins)
            if (value := _number(self.text[begins:ends].rstrip(","))) is not None:
                yield value
            at = self.text.find(needle, ends)

    def server_git_version(self) -> str | None:
        """The gitVersion the first server_version call answered (Recording.server_git_version), parsed alone; None
        when the recording never asked."""
        asked = self.text.find('\n   "call": "server_version",\n', self.cut)
        if asked < 0:
            return None
        begins, ends = self.text.rfind("\n  {", self.cut, asked), self.text.find("\n  }", asked)
        call = json.loads(self.text[begins : ends + len("\n  }")])
        return Recording(self.head.get("probe", ""), {}, [call]).server_git_version()


def _number(text: str) -> float | None:
    """A JSON number as a float; None for any other value (null, a string)."""
    try:
        return float(text)
    except ValueError:
        return None


class RecordingTransport(Transport):
    """Passes every call to a live transport and writes down what it asked and what came back."""

    def __init__(self, inner: Transport, recording: Recording) -> None:
        self.inner = inner
        self.recording = recording
        self.node_access = inner.node_access

    def now(self) -> float:
        return self.inner.now()

    def pause(self, seconds: float) -> None:
        self.inner.pause(seconds)

    def last_call_started(self) -> float:
        return self.inner.last_call_started()

    def call(self, call_name: str, /, **request: Any) -> Any:
        step: JsonDict = {"call": call_name, "request": request, "t_start": round(self.inner.now(), 3)}
        if call_name == "watch":  # its events are written down as they arrive
            step["events"] = []
            self.recording.interactions.append(step)
            return _RecordingWatch(self.inner.watch(**request), step, self.inner.now)
        try:
            response = getattr(self.inner, call_name)(**request)
        except Rejected as rejected:
            self._write(step, rejected=rejected.to_json())
            raise
        self._write(step, response=response)
        return response

    def _write(self, step: JsonDict, **outcome: Any) -> None:
        if step["call"] in ACTIONS:
            step["t_start"] = round(self.inner.last_call_started(), 3)
        step["t_end"] = round(self.inner.now(), 3)
        self.recording.interactions.append({**step, **outcome})


class _RecordingWatch:
    def __init__(self, inner: WatchHandle, step: JsonDict, clock: Callable[[], float]) -> None:
        self._inner = inner
        self._step = step
        self._clock = clock

    def next_event(self, timeout: float) -> WatchEvent | None:
        event = self._inner.next_event(timeout)
        if event is not None:
            self._step["events"].append(event.to_json())
        return event

    def close(self) -> None:
        self._step.setdefault("closed_at", round(self._clock(), 3))
        self._inner.close()
