"""The Kubernetes API calls the suite makes, as REST requests through the official client's `ApiClient` (its
configuration, authentication, TLS and connection pool), without the client's generated API classes.

Why: in client 37.x every method of `CoreV1Api`, `BatchV1Api`, ... carries pydantic validation and every module
imports its group's models. Importing `kubernetes.client.api.core_v1_api` costs about 1.2 s of CPU (batch and
apps 0.6 s each), in every process. Live on v1.37.0 (local, 14 pytest-xdist workers on 2 cores), each worker's
first probe spent 8.5-11 s in set-up, nearly all of it those imports made at once. The suite reads the API
server's JSON as sent anyway (harness.core.transport_raw.raw_call), so the classes gave it nothing but the paths.

Each method keeps the client's name, argument order (name, namespace, body) and keyword arguments (snake_case
query parameters, `_preload_content`, `_request_timeout`, `_content_type`), so the callers and their stand-ins
in tests read as before. Every call answers the raw urllib3 response, as the client does with
`_preload_content=False`; a status outside 2xx raises the client's ApiException.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from kubernetes import client

CORE = "/api/v1"
BATCH = "/apis/batch/v1"
APPS = "/apis/apps/v1"
DISCOVERY = "/apis/discovery.k8s.io/v1"

JSON = "application/json"
JSON_PATCH = "application/json-patch+json"  # the client's first patch type, sent when none is named


def query_name(argument: str) -> str:
    """A keyword argument as the API's query parameter: field_selector -> fieldSelector, _continue -> continue."""
    head, *rest = argument.lstrip("_").split("_")
    return head + "".join(word.capitalize() for word in rest)


class KubeApi:
    """The API server, by the calls the suite makes (one instance per ApiClient; cheap to make)."""

    def __init__(self, api_client: client.ApiClient) -> None:
        # Any: the type stubs describe the client before 37.x, whose ApiClient had neither param_serialize nor
        # call_api in this form (nor ApiException.from_response)
        self.api_client: Any = api_client

    def request(
        self, method: str, path: str, body: Any = None, content_type: str | None = None, **arguments: Any
    ) -> Any:
        """One request; `arguments`: query parameters, and the client's `_request_timeout` and `_content_type`
        (`_preload_content` is accepted and ignored: every answer is the raw response)."""
        from kubernetes.client.exceptions import ApiException

        arguments.pop("_preload_content", None)
        timeout = arguments.pop("_request_timeout", None)
        content_type = arguments.pop("_content_type", None) or content_type
        headers = {"Accept": JSON}
        if body is not None:
            headers["Content-Type"] = content_type or JSON
        query = [(query_name(k), v) for k, v in arguments.items() if v is not None]
        serialized = self.api_client.param_serialize(
            method=method,
            resource_path=path,
            query_params=query,
            header_params=headers,
            body=body,
            auth_settings=["BearerToken"],
        )
        response = self.api_client.call_api(*serialized, _request_timeout=timeout)
        if not 200 <= response.status <= 299:
            response.read()
            raise cast(Any, ApiException).from_response(http_resp=response, body=None, data=None)
        return response.response

    # The core group's calls made outside the per-kind table below (namespaces, nodes, cleanup, logs).
    def get_code(self, **arguments: Any) -> Any:
        return self.request("GET", "/version", **arguments)

    def create_namespace(self, body: Any, **arguments: Any) -> Any:
        return self.request("POST", f"{CORE}/namespaces", body, **arguments)

    def read_namespace(self, name: str, **arguments: Any) -> Any:
        return self.request("GET", f"{CORE}/namespaces/{name}", **arguments)

    def delete_namespace(self, name: str, **arguments: Any) -> Any:
        return self.request("DELETE", f"{CORE}/namespaces/{name}", **arguments)

    def list_namespace(self, **arguments: Any) -> Any:
        return self.request("GET", f"{CORE}/namespaces", **arguments)

    def list_node(self, **arguments: Any) -> Any:
        return self.request("GET", f"{CORE}/nodes", **arguments)

    def list_namespaced_service_account(self, namespace: str, **arguments: Any) -> Any:
        return self.request("GET", f"{CORE}/namespaces/{namespace}/serviceaccounts", **arguments)

    def list_namespaced_event(self, namespace: str, **arguments: Any) -> Any:
        return self.request("GET", f"{CORE}/namespaces/{namespace}/events", **arguments)

    def list_namespaced_pod(self, namespace: str, **arguments: Any) -> Any:
        return self.request("GET", f"{CORE}/namespaces/{namespace}/pods", **arguments)

    def read_namespaced_pod(self, name: str, namespace: str, **arguments: Any) -> Any:
        return self.request("GET", f"{CORE}/namespaces/{namespace}/pods/{name}", **arguments)

    def patch_namespaced_pod(self, name: str, namespace: str, body: Any, **arguments: Any) -> Any:
        return self.request("PATCH", f"{CORE}/namespaces/{namespace}/pods/{name}", body, JSON_PATCH, **arguments)

    def delete_collection_namespaced_pod(self, namespace: str, **arguments: Any) -> Any:
        return self.request("DELETE", f"{CORE}/namespaces/{namespace}/pods", **arguments)

    def create_namespaced_pod_eviction(self, name: str, namespace: str, body: Any, **arguments: Any) -> Any:
        return self.request("POST", f"{CORE}/namespaces/{namespace}/pods/{name}/eviction", body, **arguments)

    def read_namespaced_pod_log(self, name: str, namespace: str, **arguments: Any) -> str:
        response = self.request("GET", f"{CORE}/namespaces/{namespace}/pods/{name}/log", **arguments)
        return bytes(response.data).decode("utf-8", errors="replace")

    def kind(self, group: str, plural: str) -> KindCalls:
        """A namespaced kind's create, read, delete, list and patch, as the client's methods take them."""
        collection = f"{group}/namespaces/{{namespace}}/{plural}"

        def create(namespace: str, body: Any, **arguments: Any) -> Any:
            return self.request("POST", collection.format(namespace=namespace), body, **arguments)

        def read(name: str, namespace: str, **arguments: Any) -> Any:
            return self.request("GET", f"{collection.format(namespace=namespace)}/{name}", **arguments)

        def delete(name: str, namespace: str, body: Any = None, **arguments: Any) -> Any:
            return self.request("DELETE", f"{collection.format(namespace=namespace)}/{name}", body, **arguments)

        def list_(namespace: str, **arguments: Any) -> Any:
            return self.request("GET", collection.format(namespace=namespace), **arguments)

        def patch(name: str, namespace: str, body: Any, **arguments: Any) -> Any:
            path = f"{collection.format(namespace=namespace)}/{name}"
            return self.request("PATCH", path, body, JSON_PATCH, **arguments)

        return KindCalls(create, read, delete, list_, patch)


@dataclass(frozen=True)
class KindCalls:
    """One namespaced kind's calls: create(namespace, body), read(name, namespace), delete(name, namespace,
    body), list(namespace), patch(name, namespace, body); each with the client's keyword arguments."""

    create: Callable[..., Any]
    read: Callable[..., Any]
    delete: Callable[..., Any]
    list: Callable[..., Any]
    patch: Callable[..., Any]
