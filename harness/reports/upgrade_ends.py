"""The two ends of `make upgrade` (FROM and TO): each read once at the door into a typed release (`read_end`), then
resolved (`resolve`): a minor as `make probe` resolves it (its newest pinned node image), a patch or a pre-release as
given; a release the suite cannot answer for (a vendor's build, one never published, a minor newer than it knows)
refused in one line.
"""

from __future__ import annotations

import re

from packaging.version import Version

from harness.axis.pinned import pinned_minors, pinned_release, pinned_releases
from harness.axis.releases import first_catalogued, is_published
from harness.base.versions import REQUESTED_FORMS, Release, VersionError, release_name
from harness.reports.upgrade_model import UpgradeEnd

# A release as Kubernetes tags it, with something after it: a vendor's build (v1.27.3-eks-1, v1.28.2+k3s1, ...).
VENDOR_BUILD = re.compile(r"^v?\d+\.\d+\.\d+(?:-(?:alpha|beta|rc)\.\d+)?(?P<suffix>[-+.].+)$", re.ASCII)


class ReleaseError(VersionError):
    """FROM or TO is not a release the suite can answer for; the message says what would be."""


def known_minor_range() -> tuple[Version, Version]:
    """The minors the suite knows: from the oldest it supports to the newest with a pinned node image."""
    minors = [Version(m) for m in pinned_minors()]
    return min(minors), max(minors)


def read_end(text: str, what: str) -> Release:
    """FROM or TO read once, at make upgrade's door, into the typed release `resolve` takes: its form and a minor
    the suite supports, or ReleaseError; a vendor's build is refused in one line: the suite never ran it, and its
    upstream release is what it can answer for."""
    given = text.strip()
    if not given:
        raise ReleaseError(f"no {what} given: say which releases to compare, e.g. make upgrade FROM=1.26 TO=1.28")
    vendor = VENDOR_BUILD.match(given)
    if vendor and not re.fullmatch(r"-(?:alpha|beta|rc)\.\d+", vendor["suffix"]):
        upstream = given[: vendor.start("suffix")].lstrip("v")
        raise ReleaseError(
            f"{what}={given} is a vendor's build ({vendor['suffix'].lstrip('-+.')}), which the suite never ran: "
            f"give the upstream release it is built from ({what}={upstream}) for what upstream does there"
        )
    try:
        return Release.parse(given)
    except VersionError as err:
        raise ReleaseError(str(err).replace("VERSION=", f"{what}=")) from None


def check_published(wanted: Release, what: str) -> None:
    """FROM or TO as a release Kubernetes publishes (a minor the suite knows, a release the catalog holds), or
    ReleaseError."""
    given = wanted.kube.text
    oldest, newest = known_minor_range()
    if wanted.names_a_patch:
        if wanted.version < first_catalogued():  # older than the catalog: known published where a pinned image runs it
            if wanted.version not in {v.version for v in pinned_releases()}:
                newest_pinned = max((v for v in pinned_releases() if v.minor == wanted.minor), key=lambda v: v.version)
                raise ReleaseError(
                    f"{what}={given}: the release catalog (harness/releases.json) starts at "
                    f"{release_name(first_catalogued())}, so whether {given} was published is not known here; "
                    f"{what}={wanted.minor} answers for {newest_pinned.text} (its pinned node image)"
                )
        elif not is_published(wanted.version):
            raise ReleaseError(
                f"{what}={given}: no such Kubernetes release was published (harness/releases.json, read from the "
                f"CHANGELOGs, lists every release from 1.21 on)"
            )
        return
    minor = Version(wanted.minor)
    if minor > newest:
        raise ReleaseError(
            f"{what}={given}: Kubernetes {wanted.minor} is newer than any minor the suite knows (the newest is "
            f"{newest}); give a release of {oldest} to {newest} ({REQUESTED_FORMS})"
        )


def resolve(wanted: Release, what: str) -> UpgradeEnd:
    """FROM or TO (as `read_end` read it) as a release: a minor as `make probe` resolves it (its newest pinned node
    image), a patch or a pre-release as given (whether it ran live there, and where else, `compare` says: it reads
    the records); ReleaseError for one the suite cannot answer for."""
    check_published(wanted, what)
    if wanted.names_a_patch:
        version, how = wanted.kube, "as given"
    else:
        version = pinned_release(wanted)
        how = f"the newest pinned node image of {wanted.minor}"
    return UpgradeEnd(wanted.kube.text, version, how)
