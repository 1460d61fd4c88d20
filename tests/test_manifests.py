"""Manifest files and their declared overlays (harness/base/manifests.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from harness.base.families import manifest_path
from harness.base.manifests import load_manifest, manifest_files, merge_patch

BASE = """\
apiVersion: v1
kind: Pod
metadata: {name: p, finalizers: [hold]}
spec:
  restartPolicy: Always
  terminationGracePeriodSeconds: 5
  containers: [{name: main, command: [sh, -c, "sleep SECONDS"]}]
"""


def write(directory: Path, **files: str) -> Path:
    for name, text in files.items():
        (directory / f"{name}.yaml").write_text(text)
    return directory


def test_an_overlay_fills_placeholders_and_merges_its_patch_keeping_the_bases_order(tmp_path: Path) -> None:
    overlay = "overlay:\n  base: base.yaml\n  placeholders: {SECONDS: 30}\n"
    overlay += "  patch: {metadata: {finalizers: null}, spec: {restartPolicy: OnFailure, hostNetwork: true}}\n"
    write(tmp_path, base=BASE, **{"base.variant": overlay})
    pod = load_manifest("base.variant.yaml", tmp_path)
    assert pod["metadata"] == {"name": "p"}
    assert list(pod["spec"]) == ["restartPolicy", "terminationGracePeriodSeconds", "containers", "hostNetwork"]
    assert pod["spec"]["restartPolicy"] == "OnFailure"
    assert pod["spec"]["containers"][0]["command"] == ["sh", "-c", "sleep 30"]
    assert load_manifest("base.yaml", tmp_path)["spec"]["restartPolicy"] == "Always"  # the base is untouched
    assert manifest_files(tmp_path) == ["base.variant.yaml", "base.yaml"]


def test_a_placeholder_that_is_a_whole_value_keeps_the_type_it_is_given(tmp_path: Path) -> None:
    """A number filled into a shell string is text; filled in for a whole value it stays a number (an API integer)."""
    base = BASE.replace("terminationGracePeriodSeconds: 5", "terminationGracePeriodSeconds: SECONDS")
    write(tmp_path, base=base, variant="overlay: {base: base.yaml, placeholders: {SECONDS: 30}}")
    pod = load_manifest("variant.yaml", tmp_path)
    assert pod["spec"]["terminationGracePeriodSeconds"] == 30
    assert pod["spec"]["containers"][0]["command"] == ["sh", "-c", "sleep 30"]


@pytest.mark.parametrize(
    ("overlay", "refusal"),
    [
        ("overlay: {base: base.yaml, placeholders: {MISSING: 1}}", "base.yaml has no placeholder MISSING"),
        ("overlay: {base: base.yaml, pacth: {spec: {}}}", "an overlay has only"),
        ("overlay: {patch: {spec: {}}}", "an overlay has only"),
        ("overlay: {base: base.yaml}\nkind: Pod", "an overlay has only"),
    ],
)
def test_a_malformed_overlay_is_refused_by_name(tmp_path: Path, overlay: str, refusal: str) -> None:
    write(tmp_path, base=BASE, bad=overlay)
    with pytest.raises(ValueError, match=refusal):
        load_manifest("bad.yaml", tmp_path)


def test_merge_patch_follows_rfc_7386() -> None:
    # RFC 7386 appendix A, a few of its cases
    assert merge_patch({"a": "b"}, {"a": "c"}) == {"a": "c"}
    assert merge_patch({"a": "b"}, {"a": None}) == {}
    assert merge_patch({"a": ["b"]}, {"a": "c"}) == {"a": "c"}
    assert merge_patch({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}) == {"a": {"b": "d"}}
    assert merge_patch({"e": None}, {"a": 1}) == {"e": None, "a": 1}
    assert merge_patch([1, 2], {"a": "b", "c": None}) == {"a": "b"}


def test_every_overlay_of_the_suite_sits_next_to_its_base_and_changes_it() -> None:
    overlays = 0
    for name in manifest_files():
        declared = yaml.safe_load(manifest_path(name).read_text()).get("overlay")
        if declared:
            overlays += 1
            assert name.startswith(declared["base"].removesuffix(".yaml") + "."), name
            assert load_manifest(name) != load_manifest(declared["base"]), name
    assert overlays
