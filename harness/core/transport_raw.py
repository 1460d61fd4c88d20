"""The Kubernetes API as the server's own JSON: a call (`raw_call`), a watch stream's events (`raw_watch_events`) and a
watch until something holds (`watch_until`), through the official client without building its models, retried
(`api_retry`) when the failure is transient. The live transport (transport_live.py) and the harness's own calls on
a cluster (namespaces, cluster life) use them alike.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import Any, cast

from tenacity import retry, retry_if_exception, stop_after_attempt, stop_after_delay, wait_exponential

from harness.core.transport import JsonDict

# Transient API failures worth retrying (k/k test/e2e/framework/get.go retries the same family:
# timeouts, 429 Too Many Requests, 5xx); everything else is an answer and is raised at once.
TRANSIENT_STATUS = frozenset({0, 429, 500, 502, 503, 504})


def is_transient(err: BaseException) -> bool:
    import urllib3
    from kubernetes.client.exceptions import ApiException

    if isinstance(err, ApiException):
        return (err.status or 0) in TRANSIENT_STATUS
    return isinstance(err, urllib3.exceptions.HTTPError | ConnectionError | TimeoutError)


api_retry = retry(
    retry=retry_if_exception(is_transient),
    stop=stop_after_attempt(6) | stop_after_delay(30),
    wait=wait_exponential(multiplier=0.5, max=5),
    reraise=True,
)


def raw_call(call: Callable[..., Any], *args: Any, **kwargs: Any) -> JsonDict:
    """Call the client without building its models: the JSON exactly as the API server sent it.

    The client (37.x) validates responses against its own, newest schema; an older server's objects (or a
    field the client marks required) would fail there for no reason the suite cares about.
    """
    return cast(JsonDict, json.loads(call(*args, _preload_content=False, **kwargs).data))


def raw_watch_events(response: Any) -> Iterator[JsonDict]:
    """The events of one watch response as raw JSON; an ERROR event (e.g. 410 Gone) becomes an ApiException."""
    for line in _lines(response):
        if not line.strip():
            continue
        event = json.loads(line)
        if event.get("type") == "ERROR":
            from kubernetes.client.exceptions import ApiException

            status = event.get("object") or {}
            raise ApiException(status=status.get("code"), reason=f"{status.get('reason')}: {status.get('message')}")
        yield event


def watch_until(
    list_fn: Callable[..., Any], done: Callable[[str, JsonDict], bool], timeout_s: float, **kwargs: Any
) -> bool:
    """Watch a list call until done(event_type, object) holds; False when the server-side timeout ends first.

    A watch the server ends with an error it may not give again is started anew in the time left: seen live on
    v1.37.0 (local, 17 workers and a Go build beside), a namespace's deletion watch got 504 "Too large resource
    version: 799, current: 795" (the watch cache behind etcd). A new watch without a resourceVersion starts with
    the objects as they are, so nothing the first one missed is lost for `done`.
    """
    from kubernetes.client.exceptions import ApiException

    deadline = time.monotonic() + timeout_s
    while True:
        left = deadline - time.monotonic()
        response = list_fn(watch=True, timeout_seconds=max(int(left), 1), _preload_content=False, **kwargs)
        try:
            return any(done(event["type"], event["object"]) for event in raw_watch_events(response))
        except ApiException as err:
            if err.status not in WATCH_AGAIN or deadline - time.monotonic() < 1:
                raise
        finally:
            response.close()
            response.release_conn()


# A watch's ERROR statuses worth a new watch: 410 Gone (expired), 500 and 504 (the watch cache behind etcd).
WATCH_AGAIN = (410, 500, 504)


def _lines(response: Any) -> Iterator[str]:
    """The lines of a streamed HTTP response as they arrive (the API server sends one watch event a line)."""
    pending = b""
    for chunk in response.stream(amt=None, decode_content=False):
        pending += chunk
        while b"\n" in pending:
            line, pending = pending.split(b"\n", 1)
            yield line.decode()
    if pending:
        yield pending.decode()
