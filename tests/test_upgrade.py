"""make upgrade (harness/reports/upgrade*.py): what changes for the claims between two releases, from the shipped
recordings replayed offline and the expectations, in words; bad input refused in one line before the replay."""

from __future__ import annotations

import copy
import re
import subprocess
import time
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from packaging.version import Version

from harness.base.versions import KubeVersion, release_name
from harness.core.expectations import Claim, Expectation
from harness.core.records import origin_of
from harness.doors import cli
from harness.reports import upgrade, upgrade_atlas, upgrade_compare, upgrade_ends, upgrade_model, upgrade_words
from harness.reports.wording import expected_words, words

if TYPE_CHECKING:
    from collections.abc import Callable, Collection

    from tests.conftest import ShippedReplay

REPO = Path(__file__).resolve().parent.parent
PHASES = "always.sigterm-ignored.phases"


def live_runs_of_phases(version: str) -> int:
    """How many shipped live recordings of `version` observe PHASES (its two probes), counted from the files."""
    recordings = Path(__file__).resolve().parent.parent / "probes" / "phase_after_deletion" / "recordings"
    return len(list(recordings.glob(f"always_pod_ignoring_sigterm*--v{version}-live-*.json")))


def phases_line(verb: str, first: str, then: str) -> str:
    """The one-screen line of PHASES between v1.26.15 and v1.27.16 (or back), with the live runs of each side."""
    before, after = f"[live ×{live_runs_of_phases('1.26.15')}]", f"[live ×{live_runs_of_phases('1.27.16')}]"
    sides = (f"{first} {before}", f"{then} {after}") if verb == "in" else (f"{first} {after}", f"{then} {before}")
    return f"  {verb} 1.27.0-rc.0 (k/k#115331) {PHASES}: {sides[0]} → {sides[1]}"


@pytest.fixture(scope="module")
def atlas(shipped_replay: ShippedReplay) -> list[dict[str, Any]]:
    """The run records of every shipped recording, replayed and read once for the session (tests/conftest.py): the
    tests only read them; make upgrade replays them itself
    (test_make_upgrade_prints_the_answer_from_the_shipped_recordings_with_no_cluster)."""
    return shipped_replay.records


@pytest.fixture(scope="module")
def observed(atlas: list[dict[str, Any]]) -> upgrade_compare.Observations:
    """What the atlas's live records saw, judged once for the module: compare reads records so (0.14 s of CPU each
    time), and the tests compare the same atlas again and again."""
    return upgrade_compare.Observations.of(atlas)


def between(observed: upgrade_compare.Observations, given_from: str, given_to: str) -> upgrade_model.Upgrade:
    return upgrade_compare.compare(
        upgrade_ends.resolve(upgrade_ends.read_end(given_from, "FROM"), "FROM"),
        upgrade_ends.resolve(upgrade_ends.read_end(given_to, "TO"), "TO"),
        observed,
        ["test"],
    )


def by_id(changes: list[upgrade_model.ClaimChange]) -> dict[str, upgrade_model.ClaimChange]:
    return {c.claim.id: c for c in changes}


def replay_as_selected(shipped_replay: ShippedReplay, folder: Path) -> Callable[[Path, str], Path]:
    """A stand-in for upgrade_atlas.replay_atlas from the session's replay of every recording: the run records of
    the recordings whose names pytest's -k `select` keeps (an `or` of parts of their names, as
    upgrade_atlas.release_selection writes it; a test's id holds its recording's name), linked under `folder` as that
    replay named them."""
    made: dict[str, Path] = {}
    files = sorted(shipped_replay.runs.glob("*/probes/*.json"))  # in the order of shipped_replay.records
    names = [Path(record["recording_origin"]["file"]).stem for record in shipped_replay.records]

    def replay(_out: Path, select: str) -> Path:
        if select not in made:
            made[select] = folder / f"replay-{len(made)}"
            probes = made[select] / "run" / "probes"
            probes.mkdir(parents=True)
            kept = select.removeprefix("(").removesuffix(")").split(" or ")
            for path, name in zip(files, names, strict=True):
                if any(part in name for part in kept):
                    (probes / path.name).symlink_to(path)
        return made[select]

    return replay


def test_the_atlas_is_every_shipped_recording_replayed_live(atlas: list[dict[str, Any]]) -> None:
    from harness.base.families import all_recordings

    assert len(atlas) == len(all_recordings()) > 700
    assert {"v1.26.15", "v1.27.16", "v1.27.0-rc.0"} <= upgrade_compare.live_versions(atlas)


def test_1_26_to_1_27_says_a_deleted_pod_ends_failed_from_1_27_with_its_pr_seen_live_on_both(
    observed: upgrade_compare.Observations,
) -> None:
    found = between(observed, "1.26", "1.27")
    assert (found.before.name, found.after.name) == ("v1.26.15", "v1.27.16")  # as make probe resolves the minors
    changed = by_id(found.changed)
    phases = changed[PHASES]
    assert [s.release for s in phases.steps] == ["1.27.0-rc.0"] and phases.steps[0].reason == "k/k#115331"
    assert phases.before.live and phases.after.live
    assert phases.after.seen and all(s.value == ["Running", "Failed"] and s.status == "pass" for s in phases.after.seen)
    assert all(s.value == ["Running"] for s in phases.before.seen)
    line = upgrade_words.line(phases)
    assert "Running → Running, then Failed; changed in 1.27.0-rc.0 (k/k#115331); live on both" in line
    # a claim a race decides on 1.26 is kept apart; one the same on both but not on 1.27.0-rc.0 is said so
    assert "exit-status-kept" in by_id(found.raced) and "exit-status-kept" not in changed
    on_the_way = by_id(found.on_the_way)
    assert "daemonset.stopped-pod" in on_the_way and "daemonset.stopped-pod" not in changed
    assert [s.release for s in on_the_way["daemonset.stopped-pod"].steps] == ["1.27.0-rc.0", "1.27.0-rc.1"]
    # claims that do not change are not listed, and every claim is in exactly one place
    assert "default-grace-period" not in by_id(found.changed + found.raced + found.on_the_way)
    text = upgrade.render_detail(found)
    assert text.index("Behaviour that changes") < text.index(PHASES) < text.index("Decided by a race")
    assert text.count(f"{PHASES} —") == 1
    # one screen: the phases measured live on both sides, the release and its PR in full
    screen = upgrade.render_text(found)
    assert phases_line("in", "Running", "Running, then Failed") in screen


def test_1_24_to_1_31_lists_every_release_on_the_way_and_cites_no_pr_for_what_a_release_lacks(
    observed: upgrade_compare.Observations,
) -> None:
    found = between(observed, "1.24", "1.31")
    assert (found.before.name, found.after.name) == ("v1.24.17", "v1.31.14")
    changed = by_id(found.changed)
    assert {PHASES, "job-deadline.conditions-before-failed", "prestop-in-time.killed-after-delete"} <= set(changed)
    revision = by_id(found.on_the_way)["statefulset.partition.recreated-pod-revision"]
    releases = [s.release for s in revision.steps]
    assert releases == [
        "1.25.12",
        "1.26.0-alpha.0",
        "1.26.7",
        "1.27.0-alpha.0",
        "1.27.4",
        "1.27.8",
        "1.28.0-alpha.4",
        "1.28.4",
        "1.29.0-alpha.0",
        "1.29.0-alpha.3",
    ]
    # "before the k/k#117865 cherry-pick" says what 1.26.0-alpha.0 lacks: it is not what changed it
    assert revision.steps[1].reason == "before the k/k#117865 cherry-pick"
    assert revision.steps[-1].reason == "k/k#120731"


def test_a_release_without_a_live_recording_is_said_to_be_only_expected(observed: upgrade_compare.Observations) -> None:
    found = between(observed, "1.29", "1.30")  # 1.30 resolves to v1.30.13; it was recorded live on v1.30.12
    assert found.after.name == "v1.30.13"
    assert all(not c.after.live for c in found.claims) and any(c.before.live for c in found.claims)
    # Nothing seen live changes between them; only the preStop sleep action, on by default from v1.30.0-alpha.3
    # (k/k#122456), is expected to: v1.30.13 never ran it, and v1.29.14 (kind) saw live only its refusal.
    assert {c.family.name for c in found.changed} == {"prestop_sleep"}
    # What turned the action on is named first, before the kubelet fix the cut-off sleep also rests on (k/k#115835)
    cut = by_id(found.changed)["sleep-cut-by-deletion-grace.sigterm-delay"]
    assert [(s.release, s.reason) for s in cut.steps] == [("1.30.0-alpha.3", "k/k#122456, k/k#115835")]
    assert by_id(found.changed)["sleep.sigterm-delay"].steps[0].reason == "k/k#122456"
    assert all(not c.after.live for c in found.changed)
    refused = {"sleep.accepted", "sleep-zero.accepted", "sleep-beyond-grace.accepted"}
    assert {c.claim.id for c in found.changed if c.before.live} == refused
    assert f"Behaviour that changes ({len(found.changed)} claims)" in upgrade.render_detail(found)
    screen = upgrade.render_text(found)
    assert all("[live" not in line for line in screen.splitlines() if line.startswith("  in "))
    # the side that did not run names the nearest release that did, and is never called live
    assert found.after.nearest == ("v1.30.12",) and not found.after.ran
    assert (
        "to: v1.30.13 (the newest pinned node image of 1.30): not run here, expected values; nearest live v1.30.12"
        in screen
    )


def test_runs_add_live_records_and_a_live_value_that_differs_from_the_expectation_is_said(
    atlas: list[dict[str, Any]],
) -> None:
    """A run record of v1.30.13 (a copy of a v1.30.12 record, altered in memory): the after side becomes live,
    and a phase the expectation does not allow is shown beside what is expected."""
    source = next(
        r for r in atlas if r["server_version"] == "v1.30.12" and any(v["claim"] == PHASES for v in r["verdicts"])
    )
    record = copy.deepcopy(source)
    record["server_version"] = "v1.30.13"
    record["transport"], record["recording_origin"] = "live", {}
    next(v for v in record["verdicts"] if v["claim"] == PHASES)["observed"] = ["Running"]
    found = upgrade_compare.compare(
        upgrade_ends.resolve(upgrade_ends.read_end("1.26", "FROM"), "FROM"),
        upgrade_ends.resolve(upgrade_ends.read_end("1.30", "TO"), "TO"),
        [*atlas, record],
        ["test"],
    )
    phases = by_id(found.changed)[PHASES]
    assert phases.after.live and phases.after.disagrees
    assert PHASES in by_id(found.disagreeing)
    assert "Running, then Failed (seen live on v1.30.13: Running)" in upgrade_words.line(phases)


def test_steps_follow_equal_ranges_and_ranges_joined_by_or() -> None:
    """A fix cherry-picked into patches: the version line crosses it once per minor; an == range ends at the next
    release."""

    def e(versions: str, value: Any) -> Expectation:
        return Expectation(versions=versions, value=value, sources=(f"k/k#{100000 + len(versions)}",))

    claim = Claim(
        "c",
        "a claim",
        "a value",
        "d",
        (
            e("<1.22.12 || >=1.23.0-alpha.0,<1.23.9", "old"),
            e(">=1.22.12,<1.23.0-alpha.0 || >=1.23.9,<1.24.0-alpha.1", "new"),
            e("==1.24.0-alpha.1", "odd"),
            e(">=1.24.0-alpha.2", "new"),
        ),
    )
    steps = upgrade_model.steps_between(claim, KubeVersion.parse("1.22.3"), KubeVersion.parse("1.24.3"))
    assert [(s.release, s.expectation.value if s.expectation else None) for s in steps] == [
        ("1.22.12", "new"),
        ("1.23.0-alpha.0", "old"),
        ("1.23.9", "new"),
        ("1.24.0-alpha.1", "odd"),
        ("1.24.0-alpha.2", "new"),
    ]
    assert upgrade_model.steps_between(claim, KubeVersion.parse("1.24.3"), KubeVersion.parse("1.30")) == ()


ZERO_SLEEP_REFUSED = (  # sleep-zero.accepted before and from 1.30.0-alpha.3: alike for 56 characters
    "status 422, refused spec.containers[1].lifecycle.preStop: Required value: must specify a handler type",
    "status 422, refused spec.containers[1].lifecycle.preStop.sleep: Invalid value: 0: must be greater than 0 and "
    "less than terminationGracePeriodSeconds (10)",
)


@pytest.mark.parametrize("room", [40, 60, 80, 100, 140, 200])
def test_two_values_cut_to_fit_keep_where_they_differ(room: int) -> None:
    """Cut at their ends, both refusals read 'status 422, refused spec.containers[1]…': the start they share goes
    into an ellipsis, so that each side shows the segment where they part."""
    before, after = ZERO_SLEEP_REFUSED
    text = upgrade_words.change_text((before, after, " [both expected]"), room)
    assert len(text) <= room
    cut_before, cut_after = text.removesuffix(" [both expected]").split(" → ")
    assert cut_before != cut_after
    assert cut_before.startswith(("…preStop:", "status 422")) and cut_after.startswith(("…preStop.s", "status 422"))
    assert "preStop:" in cut_before and "preStop.s" in cut_after  # the segment where they part, on both sides


def test_values_cut_where_they_differ_early_are_cut_at_their_ends() -> None:
    shown = upgrade_words.change_text(("Running, then Failed, then Failed", "Succeeded, then Succeeded again", ""), 40)
    assert shown.startswith("Running, then") and " → Succeeded" in shown
    assert upgrade_words.change_text(("13.0 [live]", "11.0 [live ×3: 10.8–11.2]", ""), 60) == (
        "13.0 [live] → 11.0 [live ×3: 10.8–11.2]"
    )


def test_make_upgrade_shows_how_the_zero_sleeps_refusal_changes_at_1_30_0_alpha_3(
    observed: upgrade_compare.Observations,
) -> None:
    """On one screen the two refusals are cut: what the line says of each side is where they differ."""
    lines = upgrade.render_text(between(observed, "1.30.0-alpha.2", "1.30.0-alpha.3")).splitlines()
    said = [line for line in lines if "sleep-zero" in line or "accepted ×" in line]
    assert said, lines
    assert any("preStop: Required" in line and "preStop.sleep: Invalid" in line for line in lines), lines


def test_values_are_said_in_words() -> None:
    assert words(["Running", "Failed"]) == "Running, then Failed"
    assert words([]) == "none" and words(None) == "none"
    assert words(True) == "yes" and words({"exitCode": 137, "reason": "Error"}) == "exitCode 137, reason Error"
    ranged = Expectation(versions=">=1.19", between=(9.0, 13.0))
    assert expected_words(ranged) == "between 9 and 13"
    race = Expectation(versions=">=1.19", one_of=(Expectation("", value=True), Expectation("", value=False)))
    assert expected_words(race) == "yes or no"


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--from", "1.26", "--to", "1.26.15"], "FROM 1.26 and TO 1.26.15 are the same release (v1.26.15)"),
        (["--from", "1.26", "--to", "1.99"], "TO=1.99: Kubernetes 1.99 is newer than any minor the suite knows"),
        (
            ["--from", "v1.27.3-eks-1", "--to", "1.28"],
            "FROM=v1.27.3-eks-1 is a vendor's build (eks-1), which the suite",
        ),
        (["--from", "1.26", "--to", "v1.28.2+k3s1"], "give the upstream release it is built from (TO=1.28.2)"),
        (["--from", "1.27.x", "--to", "1.28"], "not a Kubernetes version: '1.27.x'"),
        (["--from", "1.26", "--to", "1.28", "--detail", "yes"], "DETAIL=yes: give DETAIL=1"),
        (["--to", "1.28"], "no FROM given"),
        (["--from", "1.26"], "no TO given"),
        (["--from", "one", "--to", "1.28"], "not a Kubernetes version: 'one'"),
        (["--from", "1.18", "--to", "1.28"], "older than the suite supports: the oldest is 1.19, so give FROM=1.19"),
        (["--from", "1.26", "--to", "1.28", "--runs", "/no/such/runs"], "RUNS names /no/such/runs"),
        (  # older than the release catalog and not a pinned image's: not called unpublished, the minor offered
            ["--from", "1.20.3", "--to", "1.28"],
            "whether 1.20.3 was published is not known here; FROM=1.20 answers for v1.20.15",
        ),
    ],
)
def test_bad_input_is_refused_in_one_line_before_the_replay(
    argv: list[str], says: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def replay(*_: object) -> None:
        raise AssertionError("the atlas was replayed before the input was checked")

    monkeypatch.setattr(upgrade_atlas, "replay_atlas", replay)
    assert cli.main(["upgrade", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: bad input: ") and err.count("\n") == 1, err
    assert says in err.replace(" (the oldest release it runs; no expectation covers earlier releases)", "")


def test_make_upgrade_prints_the_answer_from_the_shipped_recordings_with_no_cluster(
    shipped_replay: ShippedReplay,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    """make upgrade end to end (its own replay of every recording, in a child); then the rollback with DETAIL=1
    through the same command in this process, its replay the session's (tests/conftest.py) instead of a second one."""
    started = time.monotonic()
    done = subprocess.run(
        ["make", "--no-print-directory", "upgrade", "FROM=1.26", "TO=1.27"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=1400,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert out.startswith("Upgrading Kubernetes 1.26 → 1.27: v1.26.15 → v1.27.16\n")
    assert phases_line("in", "Running", "Running, then Failed") in out
    assert len(out.splitlines()) <= upgrade.SCREEN_LINES
    print(f"make upgrade took {time.monotonic() - started:.1f} s")  # a figure, not a bound a loaded machine moves
    # its replay of the two releases only answers as every recording replayed (the session's) does
    said = f"live: {len(shipped_replay.records)} shipped recordings (probes/*/recordings/), replayed offline"
    every = upgrade_compare.Observations.of(shipped_replay.records)
    assert out == upgrade.render_text(
        upgrade_compare.compare(
            upgrade_ends.resolve(upgrade_ends.read_end("1.26", "FROM"), "FROM"),
            upgrade_ends.resolve(upgrade_ends.read_end("1.27", "TO"), "TO"),
            every,
            [said],
        )
    )
    monkeypatch.setattr(upgrade_atlas, "replay_atlas", replay_as_selected(shipped_replay, tmp_path))
    capsys.readouterr()
    assert cli.main(["upgrade", "--from", "1.27", "--to", "1.26", "--detail", "1"]) == 0
    detail = capsys.readouterr().out
    assert detail.startswith("Rolling back Kubernetes 1.27 → 1.26: v1.27.16 → v1.26.15\n")
    assert (
        f"{PHASES} — phases of the pod from the delete until 5 s after its container stopped: "
        "Running, then Failed → Running; undoes what changed in 1.27.0-rc.0 (k/k#115331); live on both" in detail
    )
    assert f"live: {len(shipped_replay.records)} shipped recordings (probes/*/recordings/), replayed offline" in detail


# FROM/TO pairs of every sort: minors, patches, pre-releases, forward and back, releases with no recording (one
# side or both), a release older than the catalog, the oldest and newest minors, a minor and a patch of another
UPGRADE_PAIRS = """
1.26 1.27 | 1.27 1.26 | 1.21 1.37 | 1.37 1.21 | 1.22 1.23 | 1.22.4 1.22.5 | 1.22.5 1.22.4 | 1.23 1.24 | 1.24 1.25
1.24.0-alpha.2 1.24.2 | 1.25 1.26 | 1.25.0-alpha.0 1.25.16 | 1.26.6 1.26.7 | 1.26.15 1.27.3 | 1.27.3 1.27.16
1.27.0-rc.0 1.27.4 | 1.27.8 1.27.9 | 1.27.16 1.28 | 1.28.4 1.28.5 | 1.28 1.29 | 1.29.5 1.30 | 1.29 1.30 | 1.30 1.31
1.31.0-beta.0 1.31.14 | 1.31 1.32 | 1.32 1.33 | 1.33 1.34 | 1.34 1.35 | 1.35 1.36 | 1.36 1.37 | 1.37.0-rc.1 1.37.2
1.37 1.38.0-beta.0 | 1.38.0-beta.0 1.36 | 1.19 1.28 | 1.20 1.21 | 1.20.15 1.26 | 1.26.2 1.27.0-rc.1 | 1.25.11 1.25.12
1.28.0 1.28.15 | 1.29.0-alpha.3 1.29.14 | 1.30.0 1.30.12 | 1.31.0 1.31.14 | 1.37.0 1.37.1 | 1.24.1 1.24.17
1.23.0 1.23.8 | 1.21.14 1.22.17 | 1.27.7 1.28.1 | 1.28.6 1.28.3 | 1.35.8 1.25.16 | 1.33.1 1.34.2 | 1.22 1.36
1.24.3 1.24.6
"""


def test_the_recordings_of_one_release_are_replayed_alone(shipped_replay: ShippedReplay) -> None:
    """A real replay of the selection when only one side ran here (TO=1.30 names v1.30.13, never recorded): v1.27.7's
    one recording, and nothing else, replayed as the replay of every recording replayed it. A selection that pytest
    took for an option ('-k --v1.27.7-live-') ended the replay with a usage error."""
    shipped = upgrade_atlas.shipped_by_release()
    atlas = upgrade_atlas.atlas_records({Version("1.27.7"), Version("1.30.13")})
    assert Version("1.30.13") not in shipped and len(shipped[Version("1.27.7")]) == len(atlas.records) == 1
    (record,) = atlas.records
    (same,) = [r for r in shipped_replay.records if r["recording_origin"] == record["recording_origin"]]
    assert record["verdicts"] == same["verdicts"] and record["server_version"] == "v1.27.7"


def test_make_upgrade_replays_only_the_two_releases_and_answers_as_with_every_recording_replayed(
    shipped_replay: ShippedReplay,
    observed: upgrade_compare.Observations,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    """make upgrade replays the recordings of FROM and TO only (the others' names say which releases ran live, for
    the nearest ones it names): at 52 pairs its DETAIL=1 and its screen are those it gave when it replayed every
    recording, which `observed` holds. The -k selection itself is replayed for real in the end-to-end test above."""
    shipped = upgrade_atlas.shipped_by_release()
    assert sum(len(files) for files in shipped.values()) == len(shipped_replay.records)  # every recording named
    monkeypatch.setattr(upgrade_atlas, "shipped_by_release", lambda: shipped)  # the same files all along: listed once
    monkeypatch.setattr(upgrade_atlas, "replay_atlas", replay_as_selected(shipped_replay, tmp_path))
    atlas_records, compare = upgrade_atlas.atlas_records, upgrade_compare.compare
    replayed: list[upgrade_atlas.Atlas] = []
    answered: list[upgrade_model.Upgrade] = []

    def noted_atlas(releases: Collection[Version]) -> upgrade_atlas.Atlas:
        replayed.append(atlas_records(releases))
        return replayed[-1]

    def noted_answer(*args: Any, **kwargs: Any) -> upgrade_model.Upgrade:
        answered.append(compare(*args, **kwargs))
        return answered[-1]

    monkeypatch.setattr(upgrade_atlas, "atlas_records", noted_atlas)
    monkeypatch.setattr(upgrade_compare, "compare", noted_answer)
    said = f"live: {len(shipped_replay.records)} shipped recordings (probes/*/recordings/), replayed offline"
    pairs = [pair.split() for pair in UPGRADE_PAIRS.replace("\n", " | ").split(" | ") if pair.strip()]
    assert len(pairs) == 52
    for given_from, given_to in pairs:
        before = upgrade_ends.resolve(upgrade_ends.read_end(given_from, "FROM"), "FROM")
        after = upgrade_ends.resolve(upgrade_ends.read_end(given_to, "TO"), "TO")
        every = compare(before, after, observed, [said])
        assert cli.main(["upgrade", "--from", given_from, "--to", given_to, "--detail", "1"]) == 0
        assert capsys.readouterr().out == upgrade.render_detail(every), (given_from, given_to)
        assert upgrade.render_text(answered[-1]) == upgrade.render_text(every), (given_from, given_to)
        sides = {before.version.version, after.version.version}
        read = {KubeVersion.parse(r["server_version"]).version for r in replayed[-1].records}
        assert read == sides & set(shipped), (given_from, given_to)  # those two releases, all their recordings
        assert len(replayed[-1].records) == sum(len(shipped.get(side, [])) for side in sides)


def test_any_published_release_is_answered_at_that_release_with_the_nearest_live_runs_named(
    observed: upgrade_compare.Observations,
) -> None:
    """1.29.5 has no pinned image and no recording: its expectations answer, the nearest live releases are named, and
    nothing of it is called live; a pre-release and a patch of another line are answered the same way."""
    found = between(observed, "1.29.5", "1.30")
    assert found.before.name == "v1.29.5" and found.before.how == "as given" and not found.before.ran
    assert found.before.nearest == ("v1.29.14",)  # releases, not the 1.29.0-alpha.3 that ran too
    assert not any(c.before.live for c in found.claims)
    screen = upgrade.render_text(found)
    assert "from: v1.29.5 (as given): not run here, expected values; nearest live v1.29.14" in screen
    pre = between(observed, "1.26.2", "1.27.0-rc.1")
    assert pre.after.name == "v1.27.0-rc.1" and PHASES in by_id(pre.changed)
    assert by_id(pre.changed)[PHASES].key_step == by_id(pre.changed)[PHASES].steps[-1]


def test_a_release_older_than_the_catalog_is_answered_where_a_pinned_image_runs_it() -> None:
    """v1.20.15 is no release of the catalog (it starts at 1.21) but a pinned node image runs it: it is a published
    release, answered as given like any other (it was refused as never published)."""
    assert (
        upgrade_ends.resolve(upgrade_ends.read_end("1.20.15", "FROM"), "FROM").name
        == upgrade_ends.resolve(upgrade_ends.read_end("1.20", "FROM"), "FROM").name
        == "v1.20.15"
    )


def test_a_rollback_says_what_going_back_undoes(observed: upgrade_compare.Observations) -> None:
    back = between(observed, "1.27", "1.26")
    assert back.rollback and (back.before.name, back.after.name) == ("v1.27.16", "v1.26.15")
    phases = by_id(back.changed)[PHASES]
    assert phases.before.expectation is not None and phases.before.expectation.value == ["Running", "Failed"]
    assert [s.release for s in phases.steps] == ["1.27.0-rc.0"]
    forward = between(observed, "1.26", "1.27")
    assert set(by_id(back.changed)) == set(by_id(forward.changed))  # the same claims, the other way
    screen = upgrade.render_text(back)
    assert screen.startswith("Rolling back Kubernetes 1.27 → 1.26: v1.27.16 → v1.26.15\n")
    assert phases_line("undoes", "Running, then Failed", "Running") in screen


def test_measured_values_are_the_median_of_the_live_runs_with_their_spread_and_marked(
    observed: upgrade_compare.Observations,
) -> None:
    claim = "prestop-in-time.killed-after-delete"
    found = by_id(between(observed, "1.27", "1.28").changed)[claim]
    assert found.before.expectation is not None and found.before.expectation.between == (12.0, 16.0)
    values = sorted(float(s.value) for s in found.after.seen)
    said = upgrade_words.measured_words(found.after)
    median = (
        values[len(values) // 2] if len(values) % 2 else (values[len(values) // 2 - 1] + values[len(values) // 2]) / 2
    )
    assert said.startswith(f"{median:.1f} [live")
    if len(values) > 1 and values[0] != values[-1]:
        assert said.endswith(f"×{len(values)}: {values[0]:.1f}–{values[-1]:.1f}]")
    unrun = upgrade_model.Side(
        upgrade_ends.resolve(upgrade_ends.read_end("1.28.3", "TO"), "TO"), found.after.expectation, ()
    )
    assert upgrade_words.measured_words(unrun) == "between 9 and 13 [expected]"  # the range only where no run exists


def test_live_is_qualified_by_the_runtime_the_record_names() -> None:
    local = {
        "recording_origin": {
            "cluster": "local",
            "kubernetes": {"version": "v1.21.14"},
            "containerd": "containerd github.com/containerd/containerd 1.6.20~ds1 1.6.20~ds1-1",
            "runc": "runc version 1.1.5+ds1",
        }
    }
    assert origin_of(local).runtime_words() == "local build (containerd 1.6.20, runc 1.1.5)"
    old_kind = {
        "recording_origin": {"cluster": "kind", "node_image": "kindest/node:v1.26.6", "kind_version": "v0.20.0"}
    }
    assert origin_of(old_kind).runtime_words() == "kind v0.20.0 (runtime not recorded)"
    new_kind = {
        "recording_origin": {
            "cluster": "kind",
            "node_image": "plp-node:v1.37.2",
            "kind_version": "v0.33.0",
            "containerd": "v2.1.4",
            "runc": "1.3.0",
            "cgroup": "v1",
            "crictl": "v1.33.0",
        }
    }
    assert origin_of(new_kind).runtime_words() == (
        "kind v0.33.0 (containerd 2.1.4, runc 1.3.0, crictl 1.33.0, cgroup v1)"
    )


@cache  # listed once for the 17 minors' tests below, not once each (all_recordings lists and sorts 2,385 paths)
def _recorded_releases() -> tuple[str, ...]:
    return tuple(release_name(version) for version in sorted(upgrade_atlas.shipped_by_release()))


@cache  # each release is an end of many pairs: read and resolved once (UpgradeEnd is frozen; compare only reads it)
def _end(given: str, what: str) -> upgrade_model.UpgradeEnd:
    return upgrade_ends.resolve(upgrade_ends.read_end(given, what), what)


@pytest.mark.parametrize("minor", [f"1.{m}" for m in range(21, 38)])
def test_the_answer_is_one_screen_at_every_pair_of_recorded_releases(
    minor: str, observed: upgrade_compare.Observations
) -> None:
    """From each recorded release of a minor to every later recorded release, and back from the newest recorded
    release of the minor to the newest of every earlier minor: at most 40 lines of at most 120 characters, and no PR
    number cut."""
    releases = _recorded_releases()
    assert len(releases) > 40
    newest = {KubeVersion.parse(r).minor: r for r in releases}  # releases are in order: the last of each minor
    pairs = [
        (given_from, given_to)
        for given_from in releases
        if KubeVersion.parse(given_from).minor == minor
        for given_to in releases
        if KubeVersion.parse(given_to).version > KubeVersion.parse(given_from).version
    ]
    pairs += [
        (newest[minor], older)
        for m, older in newest.items()
        if KubeVersion.parse(older).version < KubeVersion.parse(newest[minor]).version
    ]
    for given_from, given_to in pairs:
        found = upgrade_compare.compare(_end(given_from, "FROM"), _end(given_to, "TO"), observed)
        lines = upgrade.render_text(found).splitlines()
        assert len(lines) <= upgrade.SCREEN_LINES, (given_from, given_to, len(lines))
        assert max(len(line) for line in lines) <= upgrade.SCREEN_WIDTH, (given_from, given_to)
        cited = {pr for change in found.changed if change.key_step for pr in change.key_step.prs}
        shown = {pr for line in lines for pr in re.findall(r"(?:k/k)?#(\d+)\b", line)}  # k/k#121579 #129731
        cut = any(line.startswith("  … and ") for line in lines)
        assert cited <= shown or cut, (given_from, given_to)
        # each behaviour is named: the release it changed in, and its family (or the claim, one a line)
        verb = "undoes" if found.rollback else "in"
        by_lead: dict[str, list[str]] = {}  # each line by its start up to its first " (": '  in 1.27.0-rc.0 ('
        for line in lines:
            if " (" in line:
                by_lead.setdefault(line[: line.index(" (") + 2], []).append(line)
        for change in found.changed:
            step = change.key_step
            named = (change.family.name, change.claim.id)
            assert cut or any(
                any(f" {n}:" in line for n in named)
                for line in by_lead.get(f"  {verb} {step.release if step else ''} (", [])
            ), (given_from, given_to, change.claim.id)


def test_a_long_upgrade_says_each_behaviour_by_its_release_and_family_and_what_each_aspect_goes_from_and_to(
    observed: upgrade_compare.Observations,
) -> None:
    """1.23 -> 1.31 changes too many claims for a line each: a line per behaviour (a family's claims that change in
    one release) with every PR, then what each aspect of it goes from and to, measured where it ran, on the lines
    the screen has room for; what does not fit is counted, never dropped silently."""
    found = upgrade_compare.compare(
        upgrade_ends.resolve(upgrade_ends.read_end("1.23", "FROM"), "FROM"),
        upgrade_ends.resolve(upgrade_ends.read_end("1.31", "TO"), "TO"),
        observed,
    )
    groups = upgrade.behaviours(found.changed)
    assert len(found.changed) > 40 and 10 <= len(groups) < len(found.changed)
    lines = upgrade.render_text(found).splitlines()
    assert f"What changes ({len(found.changed)} claims, {len(groups)} behaviours: " in lines[5]
    leads = [i for i, line in enumerate(lines) if line.startswith("  in ")]
    assert len(leads) == len(groups)
    for group, start in zip(groups, leads, strict=True):
        assert lines[start].startswith(group.lead(rollback=False).rstrip())
        end = next((i for i in range(start + 1, len(lines)) if not lines[i].startswith(upgrade.CONTINUED)), len(lines))
        said = lines[start].removeprefix(group.lead(rollback=False).rstrip())
        items = [i.strip() for line in [said, *lines[start + 1 : end]] for i in line.split("; ") if i.strip()]
        more = int(items.pop()[1:].removesuffix(" more")) if items and items[-1].startswith("+") else 0
        names = [re.split(r": | ×", item, maxsplit=1)[0] for item in items]
        aspects = list(dict.fromkeys(upgrade.aspect(c.claim.id) for c in group.changes))
        assert names == aspects[: len(names)] and len(names) + more == len(aspects), lines[start:end]
    # the new Job back-off (k/k#114768) and the kubelet's preStop fix (k/k#115835) with the values measured live
    screen = "\n".join(lines)
    # (on the lead line, or on the next when the measured values do not fit beside it)
    back_off = r"in 1\.27\.0-beta\.0 \(k/k#114768\) job_replacement:\s+replacement-after-delete: \S+ \[live"
    assert re.search(back_off, screen), screen
    timings = [c for c in found.changed if c.claim.id.endswith(".killed-after-delete")]
    assert timings and all(c.before.live and c.after.live for c in timings)
    assert "killed-after-delete ×2: " + " / ".join(upgrade_words.change_words(c) for c in timings) in screen
    assert " alike" not in screen


def test_a_live_verdict_with_watch_gaps_is_judged_again_with_them_as_the_report_judges_it() -> None:
    """A live record keeps the gaps its verdict was judged with (`watch_gaps`, `gap_slots`); make upgrade judges the
    observation again with them, as the report's matrix does, rather than taking the list of gaps for a doubt."""
    from harness.reports.report_reading import build_matrix

    record = {
        "probe": "test_active_deadline.py::test_pod_deadline",
        "family": "active_deadline",
        "server_version": "v1.27.3",
        "transport": "replay",
        "recording_origin": {"kind": "live", "cluster": "local", "file": "f"},
        "verdicts": [
            {
                "claim": "pod-deadline.status",
                "status": "undecided",
                "observed": "Failed",
                "detail": {"watch_gaps": ["the watch re-listed after 3.0 s"]},  # a record from before gap_slots
            }
        ],
    }
    seen = upgrade_compare.live_observations([record])
    matrix = build_matrix([record])
    assert matrix.observations is not None
    assert seen == matrix.observations.seen and seen[("pod-deadline.status", "1.27.3")]
