"""Regenerate harness/releases.json, every published Kubernetes release from 1.21 on, from the CHANGELOGs.

    python tools/release_catalog.py [--from v1.38.0-beta.0]

The CHANGELOG/ folder of k8s.io/kubernetes at a tag cut from master holds CHANGELOG-1.X.md for every minor, each
updated as patches ship; a release branch's tag holds only its own minor's. Each `# v1.X.Y[-pre.N]` heading there
is a release with notes. Two kinds of tag have none and are added by name: the tag read (its notes are written
after it is cut) and each minor's v1.X.0-alpha.0, the tag cut on master when the previous minor branches
(CHANGELOG-1.20 names its own as the base of v1.20.0-alpha.1; the proxy serves v1.25.0-alpha.0 and refuses
others, see the gate ledger). The module zip comes from the Go module proxy into .tools/go/mod (shared).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from harness.axis.releases import CATALOG_FILE, FIRST_MINOR, sort_key  # noqa: E402
from harness.gobuild.go import go_environment, run_go  # noqa: E402

_HEADING = re.compile(r"^# v(1\.(\d+)\.\d+(?:-(?:alpha|beta|rc)\.\d+)?)\s*$", re.MULTILINE)
_CHANGELOG = re.compile(r"/CHANGELOG/CHANGELOG-1\.(\d+)\.md$")


def module_zip(tag: str, tools: Path) -> Path:
    """The module zip of k8s.io/kubernetes at the tag, downloaded into the shared module cache if missing."""
    (tools / "go").mkdir(parents=True, exist_ok=True)
    env = {
        **go_environment(tools),
        "GOFLAGS": "",
        "GOTOOLCHAIN": "auto",
    }  # a tag whose go.mod asks a newer Go switches to it
    result = run_go(["mod", "download", "-json", f"k8s.io/kubernetes@{tag}"], env, tools / "go", timeout=900)
    try:
        answer = json.loads(result.stdout)
    except json.JSONDecodeError:
        answer = {"Error": (result.stderr.strip().splitlines() or ["no answer"])[-1]}
    if answer.get("Error") or not answer.get("Zip"):
        raise SystemExit(f"error: the Go module proxy does not serve k8s.io/kubernetes@{tag}: {answer.get('Error')}")
    return Path(answer["Zip"])


def releases_in_changelogs(archive: Path) -> dict[str, list[str]]:
    """Per CHANGELOG file (from 1.21 on), the releases its headings name."""
    found: dict[str, list[str]] = {}
    with zipfile.ZipFile(archive) as zipped:
        for name in zipped.namelist():
            match = _CHANGELOG.search(name)
            if not match or int(match[1]) < FIRST_MINOR:
                continue
            text = zipped.read(name).decode("utf-8", "replace")
            found[f"CHANGELOG-1.{match[1]}.md"] = [m[1] for m in _HEADING.finditer(text) if m[2] == match[1]]
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--from", dest="tag", default="v1.38.0-beta.0", help="a tag cut from master (all CHANGELOGs)")
    args = parser.parse_args(argv)
    if not re.fullmatch(r"v1\.\d+\.\d+(?:-(?:alpha|beta|rc)\.\d+)?", args.tag):
        print(f"error: --from wants a Kubernetes tag such as v1.38.0-beta.0, not {args.tag!r}", file=sys.stderr)
        return 2
    started = time.monotonic()
    archive = module_zip(args.tag, REPO / ".tools")
    per_file = releases_in_changelogs(archive)
    with_notes = {release for releases in per_file.values() for release in releases}
    minors = sorted({int(release.split(".")[1]) for release in with_notes} | {int(args.tag.split(".")[1])})
    without_notes = {f"1.{minor}.0-alpha.0" for minor in minors} | {args.tag.removeprefix("v")}
    without_notes -= with_notes
    catalog = {
        "about": "every published Kubernetes release from 1.21 on; regenerate with tools/release_catalog.py",
        "read_from": f"CHANGELOG/CHANGELOG-1.X.md at k8s.io/kubernetes@{args.tag} (the Go module proxy's zip)",
        "changelogs": {name: len(per_file[name]) for name in sorted(per_file, key=lambda n: int(n.split(".")[1]))},
        "without_notes": sorted(without_notes, key=sort_key),
        "releases": sorted(with_notes | without_notes, key=sort_key),
    }
    CATALOG_FILE.write_text(json.dumps(catalog, indent=1) + "\n")
    print(
        f"{len(catalog['releases'])} releases ({len(without_notes)} without notes) from {len(per_file)} CHANGELOGs"
        f" at {args.tag} in {time.monotonic() - started:.1f} s -> {CATALOG_FILE.relative_to(REPO)}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
