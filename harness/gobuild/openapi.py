"""The one generated file Kubernetes 1.21-1.23 tags lack: `pkg/generated/openapi/zz_generated.openapi.go`.

Before 1.24 upstream did not commit it: `make` generated it (build/root/Makefile.generated_files, target
gen_openapi) with k8s.io/kube-openapi's openapi-gen over every package with a `+k8s:openapi-gen=` tag, so the
module `k8s.io/kubernetes@v1.21.14` has `pkg/generated/openapi/` without it and kube-apiserver does not
compile (`undefined: openapi.GetOpenAPIDefinitions`). The published staging twins (kube-aggregator,
apiextensions-apiserver) do carry their own, so this is the only file missing.

What is read from the tag's Makefile, not assumed: which tagged directories the KUBE target leaves out
(`filter-out vendor/k8s.io/code-generator/% vendor/k8s.io/sample-apiserver/%`), the output package and the
boilerplate header. The input directories are found as the Makefile finds them: every directory with Go files
(hack/make-rules/helpers/cache_go_dirs.sh: names starting with `_` or `.` and the top-level `vendor/` pruned;
`staging/src/k8s.io/X` named `vendor/k8s.io/X`), whose `*.go` files hold a line `// +k8s:...` and the text
`+k8s:openapi-gen=`, sorted as `LC_ALL=C sort -u` sorts them. Here the staging directories are the published
twins the build uses (the module zip of k8s.io/kubernetes does not contain staging/).
"""

from __future__ import annotations

import os
import re
import shutil
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

OPENAPI_FILE = "pkg/generated/openapi/zz_generated.openapi.go"
OPENAPI_BASENAME = "zz_generated.openapi"  # $(GENERATED_FILE_PREFIX)openapi
MAKEFILE = "build/root/Makefile.generated_files"
KUBERNETES = "k8s.io/kubernetes"
_ANY_TAG = re.compile(r"^// *\+k8s:", re.M)  # grep -l '^// *+k8s:' (ALL_K8S_TAG_FILES)
_OPENAPI_TAG = "+k8s:openapi-gen="  # grep -l '+k8s:openapi-gen=' (OPENAPI_DIR_DEF)


class OpenAPIError(RuntimeError):
    """The tag's Makefile does not say what this code expects it to say."""


def lacks_openapi(source: Path) -> bool:
    """True for a tag that does not commit the file (before 1.24): only then is it generated."""
    return not (source / OPENAPI_FILE).is_file()


@dataclass(frozen=True)
class OpenAPISettings:
    """What build/root/Makefile.generated_files says for the KUBE openapi target."""

    excluded: tuple[str, ...]  # upstream-form prefixes: ("vendor/k8s.io/code-generator/", ...)
    output_package: str  # "pkg/generated/openapi"
    boilerplate: str  # "vendor/k8s.io/code-generator/hack/boilerplate.go.txt"
    known_violations: str | None  # "api/api-rules/violation_exceptions.list"


def _makefile_value(text: str, name: str) -> str | None:
    match = re.search(rf"^{name}\s*:=\s*(.+?)\s*$", text, re.M)
    return match[1] if match else None


def makefile_settings(source: Path) -> OpenAPISettings:
    path = source / MAKEFILE
    if not path.is_file():
        raise OpenAPIError(f"{KUBERNETES} has no {MAKEFILE}: cannot tell how upstream generated {OPENAPI_FILE}")
    text = path.read_text()
    tag_files = _makefile_value(text, "KUBE_OPENAPI_TAG_FILES")
    output = _makefile_value(text, "KUBE_OPENAPI_OUTPUT_PKG")
    boilerplate = _makefile_value(text, "BOILERPLATE_FILENAME")
    filtered = re.fullmatch(r"\$\(filter-out\s+([^,]*),\s*\$\(ALL_K8S_TAG_FILES\)\)", tag_files or "")
    if not filtered or not output or not boilerplate:
        raise OpenAPIError(
            f"{MAKEFILE} does not set KUBE_OPENAPI_TAG_FILES (a filter-out of ALL_K8S_TAG_FILES), "
            "KUBE_OPENAPI_OUTPUT_PKG and BOILERPLATE_FILENAME as 1.21-1.23 do"
        )
    excluded = tuple(pattern.removesuffix("%") for pattern in filtered[1].split())
    if not all(pattern.endswith("/") for pattern in excluded):
        raise OpenAPIError(f"{MAKEFILE}: unexpected filter-out patterns for the KUBE openapi target: {filtered[1]}")
    if f"{output}/{OPENAPI_BASENAME}.go" != OPENAPI_FILE:
        raise OpenAPIError(f"{MAKEFILE}: KUBE_OPENAPI_OUTPUT_PKG is {output}, not {os.path.dirname(OPENAPI_FILE)}")
    return OpenAPISettings(excluded, output, boilerplate, _makefile_value(text, "KUBE_KNOWN_VIOLATION_FILENAME"))


def _tagged_dirs(root: Path, prune_vendor: bool) -> list[str]:
    """Directories under root (relative, "." for root) holding a Go file with both tags; find's pruning."""
    found = []
    for directory, subdirs, files in os.walk(root):
        relative = os.path.relpath(directory, root)
        subdirs[:] = [
            name
            for name in subdirs
            if not name.startswith(("_", ".")) and not (prune_vendor and relative == "." and name == "vendor")
        ]
        for name in sorted(files):
            if not name.endswith(".go") or name.startswith(("_", ".")) or os.path.islink(Path(directory) / name):
                continue  # find -type f -name \*.go
            text = (Path(directory) / name).read_text(errors="replace")
            if _ANY_TAG.search(text) and _OPENAPI_TAG in text:
                found.append(relative)
                break
    return found


def input_packages(source: Path, twins: Mapping[str, Path], settings: OpenAPISettings) -> list[str]:
    """The import paths openapi-gen gets as -i, in the Makefile's order (its directory names, C-sorted).

    `twins` maps each staging module (k8s.io/api, ...) to the directory of the published twin the build uses.
    """
    upstream: dict[str, str] = {}  # the Makefile's name of the directory -> import path
    for relative in _tagged_dirs(source, prune_vendor=True):
        upstream[relative] = KUBERNETES if relative == "." else f"{KUBERNETES}/{relative}"
    for module, directory in twins.items():
        for relative in _tagged_dirs(directory, prune_vendor=False):
            package = module if relative == "." else f"{module}/{relative}"
            upstream[f"vendor/{package}"] = package
    kept = [name for name in upstream if not any(f"{name}/".startswith(prefix) for prefix in settings.excluded)]
    return [upstream[name] for name in sorted(kept)]


def boilerplate_path(source: Path, twins: Mapping[str, Path], settings: OpenAPISettings) -> Path:
    """BOILERPLATE_FILENAME, `vendor/k8s.io/X/...` read from the twin of k8s.io/X (staging's copy upstream)."""
    name = settings.boilerplate
    if name.startswith("vendor/"):
        for module, directory in twins.items():
            if name.startswith(f"vendor/{module}/"):
                return directory / name.removeprefix(f"vendor/{module}/")
        raise OpenAPIError(f"the boilerplate {name} belongs to no staging module of this build")
    return source / name


def generator_args(
    packages: list[str], settings: OpenAPISettings, boilerplate: Path, report: Path, output_base: Path
) -> list[str]:
    """openapi-gen's arguments as the Makefile passes them (KUBE_VERBOSE's default 1), output to a scratch dir."""
    return [
        "--v",
        "1",
        "--logtostderr",
        "-i",
        ",".join(packages),
        "-p",
        f"{KUBERNETES}/{settings.output_package}",
        "-O",
        OPENAPI_BASENAME,
        "-h",
        str(boilerplate),
        "-r",
        str(report),
        "--output-base",
        str(output_base),
    ]


def writable_copy(source: Path, target: Path) -> None:
    """The tag's module source (read-only in the module cache) copied to target, writable by its owner."""
    if target.exists():
        for path in [target, *target.rglob("*")]:
            if not path.is_symlink():
                path.chmod(path.stat().st_mode | stat.S_IWUSR)
        shutil.rmtree(target)
    shutil.copytree(source, target, symlinks=True)
    for path in [target, *target.rglob("*")]:
        if not path.is_symlink():
            path.chmod(path.stat().st_mode | stat.S_IWUSR)
