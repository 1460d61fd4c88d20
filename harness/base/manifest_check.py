"""Check the suite's manifests against the target version's schema before anything is applied.

The schemas are kubernetes-validate's (JSON schemas generated from each release's OpenAPI, 1.25 onwards).
Two deliberate departures from a plain schema validation, both because the API server itself decides:
- Unknown fields are left to the server. Some probes apply a field on versions that do not know it on
  purpose (podReplacementPolicy before 1.28, podFailurePolicy before 1.25) and check how the server answers.
- `required` is not enforced. The OpenAPI of built-in kinds marks fields required that the API server does
  not require: the 1.25-1.28 schemas require `onPodConditions` in every podFailurePolicy rule and 1.29's
  require `status` in it, yet the Job of pod-phase-on-stop-1.27 (the Kubernetes docs' example) has neither
  and is accepted. The server's own validation reports what is really missing, at create.
What is left — wrong types, values outside an enum, malformed formats — is an error before the run.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.base.manifests import load_manifest, manifest_files, templates
from harness.base.versions import KubeVersion

if TYPE_CHECKING:
    from referencing import Registry

# jsonschema, referencing and kubernetes-validate (and importlib.metadata, for its version) are imported when a
# manifest is first checked, not with this module: the harness refuses bad input before that without waiting for them.


@functools.cache
def schema_package_version() -> str:
    """The installed kubernetes-validate's version, whose schemas the manifests are checked against."""
    import importlib.metadata

    return importlib.metadata.version("kubernetes-validate")


def _schema_files() -> Any:  # kubernetes_validate.utils (the package has no type information)
    from kubernetes_validate import utils

    return utils


# Validator that ignores `required` (see the module docstring).
def _not_enforced(*_: Any) -> None:
    return None


@functools.cache
def _validator_class() -> Any:
    import jsonschema

    return jsonschema.validators.extend(  # type: ignore[no-untyped-call]  # (extend is untyped in the stubs)
        jsonschema.validators.Draft202012Validator, {"required": _not_enforced}
    )


@dataclass(frozen=True)
class ManifestProblem:
    file: str
    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.file}: {self.path or '(top level)'}: {self.message}"


def schema_version(version: KubeVersion) -> str | None:
    """The kubernetes-validate schema release for a server version, or None when it has none (before 1.25)."""
    wanted = (version.version.major, version.version.minor)
    known = sorted({tuple(int(p) for p in v.split(".")[:2]) for v in _schema_files().all_versions()})
    if wanted < known[0] or wanted > known[-1]:
        return None
    return f"{wanted[0]}.{wanted[1]}.0"


def check_manifest(data: dict[str, Any], version: str, name: str) -> list[ManifestProblem]:
    """Every schema problem of one manifest for a schema release ('1.27.0'); unknown fields, `required` aside."""
    api_version = str(data.get("apiVersion", ""))
    group_version = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)  # batch/v1 -> batch-v1 (as the library)
    try:
        validator = _validator(f"{str(data.get('kind', '')).lower()}-{group_version}.json", version)
    except FileNotFoundError:
        return [ManifestProblem(name, "", f"no schema for {data.get('kind')} {api_version} in Kubernetes {version}")]
    return [
        ManifestProblem(name, ".".join(str(p) for p in error.absolute_path), error.message)
        for error in sorted(validator.iter_errors(data), key=lambda e: list(map(str, e.absolute_path)))
    ]


@functools.cache
def _validator(schema_file: str, version: str) -> Any:
    """The validator of one kind's schema in one release (read once: the files are large)."""
    from referencing import Resource

    schema = _schema_files().schema_contents(f"{_schema_directory(version)}/{schema_file}", version)
    return _validator_class()(schema, registry=Resource.from_contents(schema) @ _definitions(version))


@functools.cache
def _definitions(version: str) -> Registry[Any]:
    from referencing import Registry, Resource

    definitions = _schema_files().schema_contents(f"{_schema_directory(version)}/_definitions.json", version)
    return Resource.from_contents(definitions) @ Registry()


def _schema_directory(version: str) -> str:
    return f"kubernetes-json-schema/v{version}-local"


def check_manifests(version: KubeVersion, directory: Path | None = None) -> tuple[list[ManifestProblem], str]:
    """Problems of every manifest for this version (an overlay as applied), and a sentence saying what was checked."""
    schema = schema_version(version)
    if schema is None:
        return [], (
            f"manifests not checked against a schema: kubernetes-validate {schema_package_version()} has none "
            f"for Kubernetes {version} (the server still validates them at create)"
        )
    as_their_overlays = templates(directory)  # read once: each reads every manifest
    files = [name for name in manifest_files(directory) if name not in as_their_overlays]
    problems = [p for name in files for p in check_manifest(load_manifest(name, directory), schema, name)]
    return problems, f"{len(files)} manifests checked against the Kubernetes {schema} schema"


def images_in_manifests(directory: Path | None = None) -> list[str]:
    """Every container image the suite's manifests name (pods, and the pod templates of workloads)."""
    images: set[str] = set()
    for name in manifest_files(directory):
        spec = load_manifest(name, directory).get("spec") or {}
        pod_spec = ((spec.get("template") or {}).get("spec")) or spec
        for container in (pod_spec.get("containers") or []) + (pod_spec.get("initContainers") or []):
            if container.get("image"):
                images.add(str(container["image"]))
    return sorted(images)
