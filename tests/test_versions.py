"""Version parsing and VERSION -> pinned node image resolution (harness/base/versions.py, node_images.yaml)."""

from __future__ import annotations

import re

import pytest

from harness.axis.pinned import known_versions, pinned_minors, pinned_release, pinned_releases
from harness.base.manifests import load_manifest, manifest_files
from harness.base.versions import OLDEST_SUPPORTED_MINOR, KubeVersion, Release, VersionError, version_range
from harness.clusters.kind.images import NodeImage, known_images, resolve_image


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("v1.27.3", "1.27.3"),
        ("1.27", "1.27.0"),
        ("v1.27.3-eks-a5565ad", "1.27.3"),
        ("v1.28.2+k3s1", "1.28.2"),
        ("v1.29.1-gke.1589018", "1.29.1"),
        ("v1.27.0-rc.0", "1.27.0rc0"),
        ("v1.27.0-alpha.3.125+abcdef", "1.27.0a3"),
    ],
)
def test_server_versions_with_vendor_suffixes_parse(text: str, expected: str) -> None:
    assert str(KubeVersion.parse(text).version) == expected


@pytest.mark.parametrize("text", ["", "latest", "1", "v1.x.3", "kindest/node:v1.27.3"])
def test_malformed_versions_are_refused_with_an_example(text: str) -> None:
    with pytest.raises(VersionError, match=r"expected e\.g\. 1\.27"):
        KubeVersion.parse(text)


def test_pre_releases_fall_in_ranges_written_with_kubernetes_spellings() -> None:
    rc = KubeVersion.parse("v1.27.0-rc.0")
    assert rc.satisfies(">=1.27.0-alpha.0")
    assert not rc.satisfies("<1.27.0-alpha.0")
    assert KubeVersion.parse("v1.26.15").satisfies("<1.27.0-alpha.0")


def test_every_pinned_image_has_a_digest_and_a_kind_release() -> None:
    images = known_images()
    assert len(images) > 100
    for image in images:
        assert image.digest is not None, image.reference
        assert image.kind_release is not None and image.kind_release.startswith("v0."), image.reference
    assert len({i.reference for i in images}) == len(images)


def test_the_oldest_supported_minor_is_the_oldest_pinned_images_and_the_pinned_releases_are_the_images() -> None:
    """base/ names the oldest minor without reading kind's image table; the table holds it to that figure, and the
    pinned releases (axis/pinned.py, read from the tags alone) are exactly the releases kind's images run."""
    images = known_images()
    assert min((i.kubernetes for i in images), key=lambda v: v.version).minor == OLDEST_SUPPORTED_MINOR
    assert [v.version for v in pinned_releases()] == sorted({i.kubernetes.version for i in images})
    for minor in pinned_minors():
        assert pinned_release(Release.parse(minor)) == resolve_image(Release.parse(minor)).kubernetes


def test_the_documents_images_resolve_by_patch() -> None:
    # Document pod-phase-on-stop-1.27 ran kind v0.20.0 with these two images.
    assert resolve_image(Release.parse("1.26.6")).reference == (
        "kindest/node:v1.26.6@sha256:6e2d8b28a5b601defe327b98bd1c2d1930b49e5d8c512e1895099e4504007adb"
    )
    image = resolve_image(Release.parse("v1.27.3"))
    assert image.reference.endswith("@sha256:3966ac761ae0136263ffdb6cfd4db23ef8a83cba8a463690e98317add2c9ba72")
    assert image.kind_release == "v0.20.0"


def test_a_minor_resolves_to_its_newest_patch_from_the_newest_kind_release() -> None:
    image = resolve_image(Release.parse("1.27"))
    assert str(image.kubernetes.version) == "1.27.16"
    assert image.kind_release == "v0.25.0"  # v0.24.0 built a different 1.27.16 image
    assert str(resolve_image(Release.parse("1.33")).kubernetes.version) == "1.33.12"


def test_an_image_built_for_a_release_wins_over_one_listed_as_compatible() -> None:
    # 1.28.0 exists only as an "additional" image (kind v0.19.0 and v0.20.0): the newer release's is chosen.
    assert resolve_image(Release.parse("1.28.0")).kind_release == "v0.20.0"


def test_unknown_version_lists_the_known_ones() -> None:
    with pytest.raises(VersionError) as err:
        resolve_image(Release.parse("9.99"))
    message = str(err.value)
    assert "no pinned node image for Kubernetes 9.99" in message
    assert "1.26 (" in message and "1.27.3" in message and "1.37" in message


def test_missing_version_lists_the_known_ones() -> None:
    with pytest.raises(VersionError, match=r"no VERSION given; known versions: 1\.19"):
        resolve_image(None)


def test_image_override_keeps_its_reference_and_finds_its_kind_release() -> None:
    pinned = "kindest/node:v1.27.3@sha256:3966ac761ae0136263ffdb6cfd4db23ef8a83cba8a463690e98317add2c9ba72"
    assert resolve_image(Release.parse("1.19"), pinned).kind_release == "v0.20.0"
    local = resolve_image(None, "kindest/node:v1.27.0-rc.0")
    assert local.digest is None
    assert local.kind_release is None
    assert str(local.kubernetes.version) == "1.27.0rc0"


def test_an_image_that_is_not_a_node_image_is_refused() -> None:
    with pytest.raises(VersionError, match="not a node image reference"):
        NodeImage.parse("alpine:3.18.4")


def test_known_versions_are_ordered_by_minor() -> None:
    minors = [entry.split(" ")[0] for entry in known_versions()]
    assert minors == sorted(minors, key=lambda m: tuple(int(p) for p in m.split(".")))
    assert minors[0] == "1.19"


def test_every_image_the_probes_run_is_pinned_by_digest() -> None:
    manifests = manifest_files()
    assert manifests
    for name in manifests:
        spec = load_manifest(name)["spec"]  # an overlay as applied
        spec = spec.get("template", {}).get("spec", spec)  # a Job: its pod template
        for container in spec.get("containers", []) + spec.get("initContainers", []):
            assert re.search(r"@sha256:[0-9a-f]{64}$", container["image"]), f"{name}: {container['image']}"


def test_ranges_joined_by_a_double_bar_hold_a_version_in_any_of_them() -> None:
    unfixed = ">=1.19,<1.22.12 || >=1.23.0-alpha.0,<1.23.9"
    assert KubeVersion.parse("v1.22.11").satisfies(unfixed)
    assert KubeVersion.parse("v1.23.0-rc.1").satisfies(unfixed)
    assert not KubeVersion.parse("v1.22.12").satisfies(unfixed)
    assert not KubeVersion.parse("v1.23.9").satisfies(unfixed)


@pytest.mark.parametrize("text", [">=1.19 ||", "|| <1.20", ">=1.19 || nonsense"])
def test_a_union_with_an_empty_or_malformed_part_is_refused(text: str) -> None:
    with pytest.raises(VersionError, match="not a version range"):
        version_range(text)
