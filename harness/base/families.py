"""Claim families: each one folder under probes/, found by looking, never listed anywhere else.

    probes/documents.yaml  the documents the families cite: id -> title, site, author, date, address, about
    probes/<family>/
      family.yaml          its title, its place in the report, and the id of the document it comes from
      test_<family>.py     its probes (pytest collects them; the family is the folder's name)
      expectations.yaml    its claims, per Kubernetes version range (harness/core/expectations.py)
      manifests/*.yaml     what its probes apply (harness/base/manifests.py)
      recordings/*.json    its recordings, replayed by `make test`

A folder is a family when it holds a family.yaml. Manifest file names are unique across the suite, so an
overlay may name a base in another family's folder by its file name (tests/test_families.py checks both).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

from harness.base.json_copy import json_copy

FAMILIES_ROOT = Path(__file__).resolve().parents[2] / "probes"
METADATA = "family.yaml"
DOCUMENTS = "documents.yaml"
FIELDS = frozenset({"title", "order", "document"})
DOCUMENT_FIELDS = ("title", "title_en", "site", "author", "date", "address", "about")


def parse_yaml(text: str) -> Any:
    """The suite's own YAML (family.yaml, manifests, documents, findings, the harness's own tables), safely loaded
    through libyaml when PyYAML has it: the same safe loading, several times faster (a replay of every probe reads
    family.yaml and the manifests about 1,300 times; a 13 kB table took 13 ms, 2 ms so). PyYAML is imported on the
    first file read, not with this module: a process that reads none (a collection of the probes, a refused command)
    does without it (12 ms of CPU)."""
    import yaml

    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def load_yaml(path: Path) -> Any:
    """A YAML file of the suite, safely loaded; each text is parsed once per process (a replay of every recording
    reads the same family.yaml, expectations and manifests about 3,700 times). The caller gets its own copy."""
    return json_copy(_parsed_yaml(path.read_text()))


@lru_cache(maxsize=1024)
def _parsed_yaml(text: str) -> Any:
    return parse_yaml(text)


class FamilyError(ValueError):
    """A family folder that is not what this module says a family folder is."""


@dataclass(frozen=True)
class Family:
    name: str
    directory: Path
    title: str
    order: int
    document: str  # the id, in probes/documents.yaml, of the document its claims come from

    @property
    def expectations(self) -> Path:
        return self.directory / "expectations.yaml"

    @property
    def manifests(self) -> Path:
        return self.directory / "manifests"

    @property
    def recordings(self) -> Path:
        return self.directory / "recordings"

    @property
    def modules(self) -> list[Path]:
        return sorted(self.directory.glob("test_*.py"))

    @classmethod
    def load(cls, directory: Path) -> Family:
        path = directory / METADATA
        data = load_yaml(path) or {}
        if not isinstance(data, dict) or not {"title", "order", "document"} <= set(data) or not set(data) <= FIELDS:
            raise FamilyError(f"{path}: needs title, order and document (an id in {DOCUMENTS}), and nothing else")
        return cls(
            name=directory.name,
            directory=directory,
            title=str(data["title"]),
            order=int(data["order"]),
            document=str(data["document"]),
        )


def families(root: Path | None = None) -> tuple[Family, ...]:
    """Every family under `root` (default: probes/), in reading order (family.yaml's order, then name)."""
    return _families(root or FAMILIES_ROOT)


@cache
def _families(root: Path) -> tuple[Family, ...]:
    found = [Family.load(path.parent) for path in root.glob(f"*/{METADATA}")]
    return tuple(sorted(found, key=lambda f: (f.order, f.name)))


def family(name: str, root: Path | None = None) -> Family:
    for candidate in families(root):
        if candidate.name == name:
            return candidate
    raise FamilyError(f"no claim family {name!r} under {root or FAMILIES_ROOT} (a folder with a {METADATA})")


def family_of(path: Path) -> Family:
    """The family a file (a probe module, a recording, a manifest) belongs to: the nearest folder with family.yaml."""
    for folder in path.resolve().parents:
        if (folder / METADATA).is_file():
            return Family.load(folder)
    raise FamilyError(f"{path} is in no claim family folder (none of its folders holds a {METADATA})")


@dataclass(frozen=True)
class Document:
    """A published document the probes check, cited by its public title (probes/documents.yaml)."""

    id: str
    title: str
    title_en: str
    site: str
    author: str
    date: str
    address: str
    about: str

    @property
    def byline(self) -> str:
        """Site, author and date, leaving out what is not recorded."""
        return ", ".join(v for v in (self.site, self.author, self.date) if not v.startswith("not recorded"))


def documents(root: Path | None = None) -> dict[str, Document]:
    """Every document the families may cite, by id (probes/documents.yaml; none when a root has no such file)."""
    return _documents(root or FAMILIES_ROOT)


@cache
def _documents(root: Path) -> dict[str, Document]:
    path = root / DOCUMENTS
    if not path.is_file():
        return {}
    data = parse_yaml(path.read_text()) or {}
    out: dict[str, Document] = {}
    for doc_id, body in data.items():
        if not isinstance(body, dict) or set(body) != set(DOCUMENT_FIELDS):
            raise FamilyError(f"{path}: {doc_id}: needs exactly {', '.join(DOCUMENT_FIELDS)}")
        out[str(doc_id)] = Document(str(doc_id), **{k: str(body[k]) for k in DOCUMENT_FIELDS})
    return out


def manifest_path(filename: str, root: Path | None = None) -> Path:
    """Where a manifest file is: in the folder of the family that applies it (names are unique in the suite)."""
    found = [p for f in families(root) if (p := f.manifests / filename).is_file()]
    if not found:
        raise FileNotFoundError(f"no manifest {filename} in any family's manifests/ under {root or FAMILIES_ROOT}")
    if len(found) > 1:
        raise FamilyError(f"manifest {filename} is in more than one family: {', '.join(map(str, found))}")
    return found[0]


def recording_path(relative: str, root: Path | None = None) -> Path:
    """'<family>/<name>.json' (how tests name a recording) -> probes/<family>/recordings/<name>.json."""
    name, _, filename = relative.partition("/")
    return (root or FAMILIES_ROOT) / name / "recordings" / filename


def all_recordings(root: Path | None = None) -> list[Path]:
    return sorted(p for f in families(root) for p in f.recordings.glob("*.json"))
