"""The replay transport: a recording served back in order on a virtual clock, so that only the transport differs from
a live run; a call the recording does not hold (the probe changed since) is refused as a `RecordingMismatch` that
says where the two part.
"""

from __future__ import annotations

from typing import Any

from harness.core.transport import JsonDict, Rejected, Transport, WatchEvent
from harness.core.transport_recording import Recording


class RecordingMismatch(AssertionError):
    """The probe asked for something the recording does not contain: the probe changed since."""


class ReplayTransport(Transport):
    """Serves a recording back, in order, on a virtual clock: only the transport differs from a live run."""

    # A probe may ask for slightly more watch time than was recorded (float rounding of deadlines).
    CLOCK_SLACK_S = 1.0

    def __init__(self, recording: Recording, node_access: bool = True) -> None:
        self.recording = recording
        self.node_access = node_access and recording.origin.get("node_access", True)
        self.views = recording.views
        self._steps = list(recording.interactions)
        self._position = 0
        self._now = 0.0
        self._last_started = 0.0

    def now(self) -> float:
        return self._now

    def pause(self, seconds: float) -> None:
        self.advance_to(self._now + seconds)

    def last_call_started(self) -> float:
        return self._last_started

    def advance_to(self, t: float) -> None:
        self._now = max(self._now, t)

    def _next(self, call: str, request: JsonDict) -> JsonDict:
        if self._position >= len(self._steps):
            raise RecordingMismatch(
                f"the probe called {call}({_brief(request)}) but the recording of {self.recording.probe} "
                f"ended after {len(self._steps)} calls"
            )
        step = self._steps[self._position]
        recorded = {k: step["request"].get(k) for k in request}
        if step["call"] != call or recorded != request:
            raise RecordingMismatch(
                f"call {self._position + 1} of the recording of {self.recording.probe} is "
                f"{step['call']}({_brief(step['request'])}), but the probe called {call}({_brief(request)})"
            )
        self._position += 1
        self._last_started = float(step.get("t_start", self._now))
        self.advance_to(self._last_started)
        recorded_t = step["t_end"] if "t_end" in step else step.get("t_start", self._now)
        self.advance_to(float(recorded_t))
        return step

    def call(self, call_name: str, /, **request: Any) -> Any:
        # Matched: the call and its arguments, but for the version a watch starts from (the recorded server's)
        # and a manifest, which is compared on its own to say where it differs.
        step = self._next(call_name, {k: v for k, v in request.items() if k not in ("manifest", "resource_version")})
        if "manifest" in request and step["request"].get("manifest") != request["manifest"]:
            raise RecordingMismatch(
                f"the probe created a different {request['manifest'].get('kind')} than the recording of "
                f"{self.recording.probe} holds: {_diff(step['request'].get('manifest'), request['manifest'])}"
            )
        if "rejected" in step:
            raise Rejected(int(step["rejected"]["status"]), str(step["rejected"]["message"]))
        if call_name == "watch":
            events = [WatchEvent.from_json(e) for e in step["events"]]
            closed_at = step.get("closed_at", events[-1].t if events else self._now)
            return _ReplayWatch(self, events, float(closed_at))
        if call_name == "node_containers" and not self.node_access:
            return None
        return step["response"]

    def unused_calls(self) -> list[str]:
        return [f"{s['call']}({_brief(s['request'])})" for s in self._steps[self._position :]]


class _ReplayWatch:
    def __init__(self, transport: ReplayTransport, events: list[WatchEvent], closed_at: float) -> None:
        self._transport = transport
        self._events = events
        self._closed_at = closed_at
        self._position = 0

    def next_event(self, timeout: float) -> WatchEvent | None:
        now = self._transport.now()
        if self._position < len(self._events) and self._events[self._position].t <= now + timeout:
            event = self._events[self._position]
            self._position += 1
            self._transport.advance_to(event.t)
            return event
        if now + timeout > self._closed_at + self._transport.CLOCK_SLACK_S:
            raise RecordingMismatch(
                f"the probe kept watching until t={now + timeout:.1f}s but the recording of "
                f"{self._transport.recording.probe} stopped watching at t={self._closed_at:.1f}s"
            )
        self._transport.advance_to(now + timeout)
        return None

    def close(self) -> None:
        self._transport.advance_to(self._closed_at)


def _brief(request: JsonDict) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in request.items() if k != "manifest")


def _diff(recorded: Any, asked: Any, path: str = "") -> str:
    if isinstance(recorded, dict) and isinstance(asked, dict):
        for key in sorted(set(recorded) | set(asked)):
            if recorded.get(key) != asked.get(key):
                return _diff(recorded.get(key), asked.get(key), f"{path}.{key}")
    return f"{path or '.'}: recorded {recorded!r}, probe {asked!r}"
