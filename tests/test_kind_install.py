"""Installing the kind release that built the node image (harness/clusters/kind/install.py).

Downloads are served from a local directory through file: URLs (stand-in for the GitHub release
assets); the kind on PATH is stood in by FakeRunner answering `kind version`.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from harness.clusters.kind.install import KindInstallError, asset_name, ensure_kind, fetch_url, published_sha256
from tests.doubles import FakeRunner, ok

ASSET = "kind-linux-amd64"
BINARY = b"#!/bin/sh\necho 'kind v0.20.0 go1.20.4 linux/amd64'\n"


def release_dir(root: Path, release: str = "v0.20.0", binary: bytes = BINARY, digest: str | None = None) -> str:
    """A directory laid out like the GitHub release downloads, as a file: URL."""
    folder = root / "releases" / release
    folder.mkdir(parents=True)
    (folder / ASSET).write_bytes(binary)
    (folder / f"{ASSET}.sha256sum").write_text(f"{digest or hashlib.sha256(binary).hexdigest()}  {ASSET}\n")
    return (root / "releases").as_uri()


def test_a_matching_kind_on_path_is_used_as_it_is(tmp_path: Path) -> None:
    runner = FakeRunner({"/usr/bin/kind version": ok("kind v0.20.0 go1.20.4 linux/amd64")})
    assert ensure_kind("v0.20.0", tools_dir=tmp_path, which=lambda _: "/usr/bin/kind", runner=runner) == "/usr/bin/kind"


def test_a_missing_kind_is_downloaded_verified_and_made_executable(tmp_path: Path) -> None:
    said: list[str] = []
    path = ensure_kind(
        "v0.20.0", tools_dir=tmp_path / "tools", base_url=release_dir(tmp_path), which=lambda _: None,
        asset=ASSET, say=said.append,
    )  # fmt: skip
    installed = Path(path)
    assert installed == tmp_path / "tools" / "kind-v0.20.0"
    assert installed.read_bytes() == BINARY
    assert installed.stat().st_mode & 0o111
    assert said and "sha256" in said[0] and "verified" in said[0]


def test_another_release_on_path_is_replaced_by_the_matching_one(tmp_path: Path) -> None:
    runner = FakeRunner({"/usr/bin/kind version": ok("kind v0.32.0 go1.26.3 linux/amd64")})
    said: list[str] = []
    path = ensure_kind(
        "v0.20.0", tools_dir=tmp_path / "tools", base_url=release_dir(tmp_path), which=lambda _: "/usr/bin/kind",
        runner=runner, asset=ASSET, say=said.append,
    )  # fmt: skip
    assert path.endswith("kind-v0.20.0")
    assert "kind on PATH is v0.32.0; this node image was built by kind v0.20.0" in said[0]


def test_a_binary_that_does_not_match_the_published_checksum_is_never_installed(tmp_path: Path) -> None:
    url = release_dir(tmp_path, digest="0" * 64)
    with pytest.raises(KindInstallError, match=r"has sha256 [0-9a-f]{64}, but the release publishes 0{64}: not used"):
        ensure_kind("v0.20.0", tools_dir=tmp_path / "tools", base_url=url, which=lambda _: None, asset=ASSET)
    assert not (tmp_path / "tools" / "kind-v0.20.0").exists()


def _no_go(release: str, target: Path) -> dict[str, str]:
    raise KindInstallError("the Go module proxy does not serve sigs.k8s.io/kind@" + release)


def test_an_unreachable_release_that_cannot_be_built_says_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(KindInstallError) as err:
        ensure_kind(
            "v0.20.0",
            tools_dir=tmp_path,
            base_url=(tmp_path / "nowhere").as_uri(),
            which=lambda _: None,
            asset=ASSET,
            build=_no_go,
        )
    assert "could not download kind v0.20.0 from file:" in str(err.value)
    assert "nor build it from its Go module: the Go module proxy does not serve sigs.k8s.io/kind@v0.20.0" in str(
        err.value
    )
    assert "install kind v0.20.0 yourself" in str(err.value)
    assert not (tmp_path / "kind-v0.20.0").exists()


def test_an_unreachable_release_is_built_from_its_go_module_and_the_record_says_so(tmp_path: Path) -> None:
    def build(release: str, target: Path) -> dict[str, str]:
        target.write_text("#!/bin/sh\necho kind " + release + "\n")
        target.chmod(0o755)
        return {"release": release, "how": "go install sigs.k8s.io/kind@" + release, "toolchain": "go1.20.14"}

    said: list[str] = []
    path = ensure_kind(
        "v0.20.0",
        tools_dir=tmp_path,
        base_url=(tmp_path / "nowhere").as_uri(),
        which=lambda _: None,
        asset=ASSET,
        build=build,
        say=said.append,
    )
    assert path == str(tmp_path / "kind-v0.20.0")
    assert json.loads((tmp_path / "kind-v0.20.0.json").read_text())["toolchain"] == "go1.20.14"
    assert said[0].startswith("could not download kind v0.20.0 from file:")
    assert said[1] == f"built kind v0.20.0 from sigs.k8s.io/kind@v0.20.0 with go1.20.14 as {path}"
    # Built once: the next call finds it without downloading or building.
    assert ensure_kind("v0.20.0", tools_dir=tmp_path, which=lambda _: None, build=_no_go) == path


def test_checksum_files_name_their_asset() -> None:
    digest = "a" * 64
    assert published_sha256(f"{digest}  {ASSET}\n", ASSET) == digest
    with pytest.raises(KindInstallError, match="unexpected checksum file"):
        published_sha256(f"{digest}  kind-darwin-arm64", ASSET)


def test_asset_names_follow_the_release_layout() -> None:
    assert asset_name("Linux", "x86_64") == "kind-linux-amd64"
    assert asset_name("Darwin", "arm64") == "kind-darwin-arm64"
    assert asset_name("linux", "aarch64") == "kind-linux-arm64"
    with pytest.raises(KindInstallError, match="no binary for windows"):
        asset_name("Windows", "AMD64")


def test_fetch_reads_file_urls(tmp_path: Path) -> None:
    (tmp_path / "x").write_bytes(b"payload")
    assert fetch_url((tmp_path / "x").as_uri(), 5) == b"payload"
