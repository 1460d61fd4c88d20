"""Manifests checked against the target version's schema before a run (harness/base/manifest_check.py).

Real: kubernetes-validate's schemas and the checks. Nothing is stood in; no cluster is needed.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from harness.base import inputs
from harness.base.families import manifest_path
from harness.base.manifest_check import ManifestProblem, check_manifest, check_manifests, schema_version
from harness.base.manifests import templates
from harness.base.versions import KubeVersion
from harness.doors import cli

REPO = Path(__file__).resolve().parent.parent
POD = yaml.safe_load(manifest_path("pod-finalizer-traps-sigterm.yaml").read_text())


def test_every_manifest_of_the_suite_is_valid_for_every_version_with_a_schema() -> None:
    for minor in range(25, 38):
        problems, said = check_manifests(KubeVersion.parse(f"v1.{minor}.0"))
        assert problems == [], (minor, [str(p) for p in problems])
        assert "manifests checked against the Kubernetes" in said


def test_a_template_is_checked_as_its_overlays_apply_it() -> None:
    """A base whose placeholders its overlays fill is no manifest on its own (`seconds: SLEEP_SECONDS`)."""
    assert {"pod-prestop-sleep.yaml", "pod-prestop-timeline.yaml"} <= templates()
    base = yaml.safe_load(manifest_path("pod-prestop-sleep.yaml").read_text())
    assert [p.path for p in check_manifest(base, "1.30.0", "pod-prestop-sleep.yaml")] == [
        "spec.containers.1.lifecycle.preStop.sleep.seconds"
    ]
    problems, _ = check_manifests(KubeVersion.parse("v1.30.0"))
    assert problems == []


def test_every_wrong_type_is_reported_with_its_path() -> None:
    broken = copy.deepcopy(POD)
    broken["spec"]["terminationGracePeriodSeconds"] = "five"
    broken["spec"]["containers"][0]["ports"] = [{"containerPort": "http"}]
    problems = [str(p) for p in check_manifest(broken, "1.27.0", "pod.yaml")]
    assert len(problems) == 2, problems
    assert any(p.startswith("pod.yaml: spec.terminationGracePeriodSeconds:") and "'five'" in p for p in problems)
    assert any(p.startswith("pod.yaml: spec.containers.0.ports.0.containerPort:") for p in problems), problems


def test_unknown_fields_and_schema_only_required_fields_are_left_to_the_server() -> None:
    job = yaml.safe_load(manifest_path("job-pod-replaced-when-failed.yaml").read_text())
    assert check_manifest(job, "1.27.0", "job.yaml") == []  # podReplacementPolicy unknown in 1.27: on purpose
    policy = yaml.safe_load(manifest_path("job-pod-failure-policy-exit-42.yaml").read_text())
    assert check_manifest(policy, "1.26.0", "job.yaml") == []  # the schema 'requires' onPodConditions; the server not


def test_versions_without_a_schema_are_said_to_be_unchecked() -> None:
    assert schema_version(KubeVersion.parse("v1.24.17")) is None
    problems, said = check_manifests(KubeVersion.parse("v1.24.17"))
    assert problems == [] and "not checked against a schema" in said and "v1.24.17" in said


def test_make_probe_refuses_an_invalid_manifest_before_it_needs_docker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = copy.deepcopy(POD)
    broken["spec"]["containers"][0]["image"] = 5
    (tmp_path / "pod.yaml").write_text(yaml.safe_dump(broken))
    monkeypatch.setattr(inputs, "check_manifests", lambda v: check_manifests(v, tmp_path))
    assert cli.main(["probe", "--version", "1.27.3"]) == 2
    err = capsys.readouterr().err
    assert "manifests invalid for Kubernetes v1.27.3" in err and "pod.yaml: spec.containers.0.image" in err


def test_the_probes_pytest_checks_the_manifests_again_only_on_a_server_of_another_minor_than_make_probe_checked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """make probe hands its pytest the minor whose schema it checked the manifests against (the runnable's version);
    on a server of that minor the answer would be the same and they are not checked again, on another they are."""
    from harness.base.versions import Release
    from harness.clusters.kinds import Runnable
    from harness.doors.commands.probe import handed_on
    from harness.doors.plugin.clusters import _refuse_invalid_manifests

    runnable = Runnable("kind", Release.parse("1.27.3"))
    assert handed_on(runnable) == ["--cluster-spec", runnable.to_json(), "--manifests-checked", "1.27"]
    unresolved = Runnable("existing", None)  # make probe on an existing cluster: only the server says its version
    assert handed_on(unresolved) == ["--cluster-spec", unresolved.to_json()]
    broken = copy.deepcopy(POD)
    broken["spec"]["containers"][0]["image"] = 5
    (tmp_path / "pod.yaml").write_text(yaml.safe_dump(broken))
    checked: list[str] = []

    def check_the_broken_one(version: KubeVersion) -> tuple[list[ManifestProblem], str]:
        checked.append(str(version))
        return check_manifests(version, tmp_path)

    monkeypatch.setattr(inputs, "check_manifests", check_the_broken_one)
    _refuse_invalid_manifests({"gitVersion": "v1.27.9"}, "1.27")
    assert checked == []
    for server, handed in (("v1.28.2", "1.27"), ("v1.27.9", None)):
        with pytest.raises(pytest.exit.Exception) as exited:
            _refuse_invalid_manifests({"gitVersion": server}, handed)
        assert exited.value.returncode == 2
        assert f"manifests invalid for Kubernetes {server}" in str(exited.value) and "pod.yaml" in str(exited.value)
    assert checked == ["v1.28.2", "v1.27.9"]
