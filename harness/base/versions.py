"""Kubernetes versions: parsing what servers report and what users ask for, version ranges, and the oldest release the
suite supports."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache, lru_cache

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import Version

# "v1.27.3", "1.27.3", "v1.27.0-rc.0", "v1.27.3-eks-a5565ad", "v1.28.2+k3s1", "v1.29.1-gke.1589018"
_KUBE_VERSION = re.compile(
    r"^v?(?P<major>\d+)\.(?P<minor>\d+)(?:\.(?P<patch>\d+))?"
    r"(?:-(?P<pre>(?:alpha|beta|rc)\.\d+))?"
    r"(?P<vendor>[-+.].*)?$",
    re.ASCII,
)
# What a user may ask for (VERSION, VERSIONS, GOOD, BAD, --kind-version, --local-version): a release as Kubernetes
# tags spell it, nothing after it (a server's own version may carry a vendor's suffix; a request may not).
_REQUESTED_VERSION = re.compile(r"v?[0-9]+\.[0-9]+(?:\.[0-9]+(?:-(?:alpha|beta|rc)\.[0-9]+)?)?", re.ASCII)
REQUESTED_FORMS = "1.27, 1.27.3, v1.27.3, 1.27.0-rc.0, 1.27.0-alpha.3 or 1.27.0-beta.0"


# packaging's pre-release letters as Kubernetes tags spell them
PRE_RELEASE_WORDS = {"a": "alpha", "b": "beta", "rc": "rc"}

# The oldest Kubernetes minor the suite runs, where the expectations start too (every range begins at >=1.19);
# tests/test_versions.py holds it to the oldest release a kind of cluster pins.
OLDEST_SUPPORTED_MINOR = "1.19"


class VersionError(ValueError):
    """A version or image the suite cannot use; the message says what would work."""


@dataclass(frozen=True, order=True)
class KubeVersion:
    """A Kubernetes release as the suite compares it: vendor suffixes are kept but ignored."""

    version: Version
    text: str

    @classmethod
    def parse(cls, text: str) -> KubeVersion:
        """A version as a server reports it or a range's end names it; read once per spelling (_parsed: the report
        and the replays read the same few dozen spellings some hundred thousand times)."""
        return _parsed(text)

    @classmethod
    def requested(cls, text: str) -> KubeVersion:
        """A version a user asked for: a minor or a release exactly as Kubernetes spells it (REQUESTED_FORMS);
        anything else (1.27.x, 1.27.3-rc, full-width digits, a vendor's suffix) is refused, never read loosely."""
        if not _REQUESTED_VERSION.fullmatch(text.strip()):
            raise VersionError(f"not a Kubernetes version: {text!r} (give {REQUESTED_FORMS})")
        return cls.parse(text)

    @property
    def minor(self) -> str:
        return f"{self.version.major}.{self.version.minor}"

    def satisfies(self, specifier: str) -> bool:
        """True when this version is in a range such as "<1.27.0-alpha.3", ">=1.27.0-alpha.3,<1.30", or in
        either of two ranges joined by "||" (">=1.19,<1.22.12 || >=1.23.0-alpha.0,<1.23.9": the patches of
        several minors before a cherry-picked fix)."""
        return in_range(self.version, specifier)

    def __str__(self) -> str:
        return self.text


@lru_cache(maxsize=4096)
def release_name(version: Version) -> str:
    """A release as Kubernetes and the catalog spell it, whole: Version("1.31.0a1") -> "1.31.0-alpha.1", Version("1.31")
    -> "1.31.0". The one spelling of a packaging Version as a release (Release, coverage, upgrade and the gates use it).
    """
    core = ".".join(str(part) for part in (*version.release, 0, 0)[:3])
    if version.pre is None:
        return core
    return f"{core}-{PRE_RELEASE_WORDS[version.pre[0]]}.{version.pre[1]}"


@lru_cache(maxsize=4096)
def _parsed(text: str) -> KubeVersion:
    """KubeVersion.parse, remembered: a KubeVersion is frozen, so every reader may share one."""
    match = _KUBE_VERSION.match(text.strip())
    if not match:
        raise VersionError(f"not a Kubernetes version: {text!r} (expected e.g. 1.27, 1.27.3 or v1.27.3-eks-1)")
    core = f"{match['major']}.{match['minor']}.{match['patch'] or 0}"
    pre = match["pre"]
    return KubeVersion(Version(f"{core}-{pre}" if pre else core), text.strip())


@lru_cache(maxsize=65536)
def in_range(version: Version, specifier: str) -> bool:
    """Whether a version is in a range (KubeVersion.satisfies), remembered: the same few hundred ranges are asked of
    the same few dozen releases for every claim of every record."""
    return any(part.contains(version, prereleases=True) for part in version_range(specifier))


def range_parts(specifier: str) -> tuple[str, ...]:
    """The ranges a specifier joins with "||", as written (">=1.19,<1.22.12 || >=1.23.0-alpha.0,<1.23.9" -> two)."""
    return tuple(part.strip() for part in specifier.split("||"))


@cache
def version_range(specifier: str) -> tuple[SpecifierSet, ...]:
    """Parse a version range written with Kubernetes pre-release spellings (1.27.0-alpha.3): one range, or
    several joined by "||" (a version is in it when it is in any of them)."""
    parts = range_parts(specifier)
    try:
        if not all(parts):
            raise InvalidSpecifier(specifier)
        return tuple(SpecifierSet(part) for part in parts)
    except InvalidSpecifier as err:
        raise VersionError(f"not a version range: {specifier!r}") from err


def check_supported(version: KubeVersion) -> None:
    """Refuse a release older than the suite supports, before anything is downloaded or built."""
    minor = OLDEST_SUPPORTED_MINOR
    if version.version < Version(f"{minor}.0a0"):
        raise VersionError(
            f"Kubernetes {version} is older than the suite supports: the oldest is {minor} (the oldest release it "
            f"runs; no expectation covers earlier releases), so give VERSION={minor} or later"
        )


def canonical_spelling(kube: KubeVersion) -> str:
    """How Kubernetes spells the release (or the minor) a version names, made from its numbers: '1.27', '1.27.16',
    '1.27.0-rc.0', whatever text it was read from ('v1.27.16', a vendor's 'v1.27.3-eks-1', an image tag that names
    a runtime after the release, 'v1.27.16-kind.v0.25.0')."""
    match = _KUBE_VERSION.match(kube.text.strip())
    if match and match["patch"] is None and kube.version.pre is None:
        return kube.minor  # a minor alone: 1.27
    return release_name(kube.version)


@dataclass(frozen=True)
class Release:
    """A Kubernetes release (or a minor) a user asked for, read once where it came in (VERSION at make probe,
    --kind-version at pytest, a release of the version axis) and handed down as it is: spelled as Kubernetes
    tags spell it (REQUESTED_FORMS) and no older than the suite supports. Nothing below reads the text again.

    It carries its canonical spelling (`spelled`, and str()): what it is written as wherever it goes (a run's
    directory, a build's tag, the JSON a runnable is handed on as), and what `spelled_as` reads back, exactly. Two
    releases are one when their spellings are (1.27.3 and v1.27.3); `kube` keeps the text as it was given."""

    kube: KubeVersion = field(compare=False)
    spelled: str = field(init=False)  # '1.27', '1.27.16' or '1.27.0-rc.0' (canonical_spelling)

    def __post_init__(self) -> None:
        object.__setattr__(self, "spelled", canonical_spelling(self.kube))

    @classmethod
    def parse(cls, text: str) -> Release:
        """The one reading of a requested version; VersionError, saying what would work, for anything else."""
        kube = KubeVersion.requested(text)
        check_supported(kube)
        return cls(kube)

    @classmethod
    def spelled_as(cls, text: str) -> Release:
        """The release whose canonical spelling `text` is, as `spelled` wrote it for another process to read back;
        VersionError for any other text (a 'v', a vendor's suffix, an image's tag are no release's spelling)."""
        release = cls(KubeVersion.parse(text))
        if release.spelled != text:
            raise VersionError(
                f"not a release's spelling: {text!r} (a release spells itself as 1.27, 1.27.16 or 1.27.0-rc.0)"
            )
        return release

    @property
    def version(self) -> Version:
        return self.kube.version

    @property
    def minor(self) -> str:
        return self.kube.minor

    @property
    def bare(self) -> str:
        """'1.27.0-rc.0': its canonical spelling, without a 'v'."""
        return self.spelled

    @property
    def tag(self) -> str:
        """'v1.27.0-rc.0': the tag Kubernetes gives the release."""
        return f"v{self.spelled}"

    @property
    def names_a_patch(self) -> bool:
        """1.27.3 or 1.27.0-rc.0 rather than the minor 1.27."""
        return self.spelled.count(".") >= 2

    def whole(self, to: str) -> Release:
        """This release, refused (VersionError) where it is a minor alone: `to` says what needs one release."""
        if not self.names_a_patch:
            raise VersionError(
                f"give a full Kubernetes release to {to} (e.g. 1.27.3 or 1.27.0-rc.0), not {self.kube.text!r}"
            )
        return self

    def __str__(self) -> str:
        return self.spelled
