"""make clean (harness/clusters/janitor.py and each kind's leftovers): only the suite's leftovers are removed.

kind is stood in by FakeRunner; the API by tests.test_cleanup.FakeCore with a labelled namespace list.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.base.run import PROBE_FINALIZER, SUITE_LABEL
from harness.clusters.existing.clusters import clean_namespaces
from harness.clusters.janitor import JanitorReport
from harness.clusters.kind.leftovers import clean_kind_clusters, installed_kind
from tests.doubles import FakeRunner, failed, ok
from tests.test_cleanup import OTHER, FakeCore, raw


def test_only_the_suites_kind_clusters_are_deleted() -> None:
    runner = FakeRunner({"kind get clusters": ok("kind\nplp-1-27-ab12\nmy-dev\nplp-1-26-cd34\n")})
    report = JanitorReport([clean_kind_clusters(runner=runner)])
    deleted = [call[4] for call in runner.calls if call[:3] == ["kind", "delete", "cluster"]]
    assert deleted == ["plp-1-27-ab12", "plp-1-26-cd34"]
    assert report.render().splitlines() == [
        "kind clusters deleted: plp-1-27-ab12, plp-1-26-cd34",
        "kind clusters left alone (not the suite's): kind, my-dev",
    ]


def test_a_failing_kind_is_reported_not_hidden() -> None:
    report = JanitorReport(
        [clean_kind_clusters(runner=FakeRunner({"kind get clusters": failed("Cannot connect to the Docker daemon")}))]
    )
    assert report.errors == ["kind get clusters failed: Cannot connect to the Docker daemon"]
    assert report.render().endswith("error: kind get clusters failed: Cannot connect to the Docker daemon")


class LabelledCore(FakeCore):
    """FakeCore plus namespaces: only `probe-ns` carries the suite's label."""

    def list_namespace(self, label_selector: str, **_: Any) -> Any:
        assert label_selector == f"{SUITE_LABEL}=true"
        return raw({"items": [{"metadata": {"name": n}} for n in sorted(self.namespaces)]})


def test_labelled_namespaces_lose_only_the_suites_finalizer_and_are_deleted() -> None:
    core = LabelledCore({"held": [PROBE_FINALIZER, OTHER]})
    report = JanitorReport([clean_namespaces(core)])  # type: ignore[arg-type]
    assert core.pods["held"] == [OTHER]
    assert "probe-ns" not in core.namespaces
    assert "namespace probe-ns: finalizers removed from 1 pod(s), deleted" in report.render()


def test_without_kind_on_path_the_kind_the_suite_installed_lists_the_clusters(tmp_path: Path) -> None:
    assert installed_kind(tmp_path) is None
    built = tmp_path / "kind-v0.20.0"
    built.write_text("#!/bin/sh\n")
    built.chmod(0o755)
    (tmp_path / "kind-v0.20.0.json").write_text("{}")
    (tmp_path / "kind-v0.26.0.partial").write_text("")  # not executable: an interrupted download
    assert installed_kind(tmp_path) == str(built)
