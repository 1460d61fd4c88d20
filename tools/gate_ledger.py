"""Regenerate harness/gate_ledger.json: every feature gate's default and stage at every catalogued release.

    python tools/gate_ledger.py [--jobs 3] [--keep-zips] [--only 1.24.2,1.24.3] [--parse-only]

For each release of harness/releases.json, the module zip of k8s.io/kubernetes@v<release> comes from the Go
module proxy (`go mod download`, into the shared .tools/go/mod); its own pkg/features/*.go (kube_features.go, and
versioned_kube_features.go where the release has one) is copied to .tools/gate-ledger/<release>/, and the
unpacked tree and the zip are removed again unless they were there before (--keep-zips keeps the zips). A
release the proxy refuses (403, "not available") is written "refused"; any other failure "not read" with its
reason: nothing is guessed. --parse-only rereads what .tools/gate-ledger/ holds without asking the proxy.

A gate's default at a release: its FeatureSpec, or for versioned specs (from 1.31) the last spec whose Version is
at most the release's own minor (a binary emulates its own version unless told otherwise).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import stat
import sys
import time
import zipfile
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from harness.axis.gates import LEDGER_FILE, GateState  # noqa: E402
from harness.axis.releases import published_releases, sort_key  # noqa: E402
from harness.gobuild.go import go_environment, run_go  # noqa: E402

TOOLS = REPO / ".tools"
SOURCES = TOOLS / "gate-ledger"
FEATURE_FILE = re.compile(r"^k8s\.io/kubernetes@[^/]+/pkg/features/(?!.*_test\.go$)[^/]+\.go$")
REFUSED = re.compile(r"403|not available|410 Gone", re.IGNORECASE)


# ----- Reading the Go source (no Go parser needed: the gate maps are plain composite literals).

_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.DOTALL)
_MAP_START = re.compile(r"map\[featuregate\.Feature\]featuregate\.(FeatureSpec|VersionedSpecs)\s*\{")
_CONST = re.compile(r"^\s*(\w+)\s+featuregate\.Feature\s*=\s*\"([^\"]+)\"", re.MULTILINE)
_FIELD = re.compile(r"(\w+)\s*:\s*([^,{}]+?)\s*(?:,|$)")
_VERSION = re.compile(r"MustParse\(\"(\d+)\.(\d+)\"\)")


def _matching(text: str, start: int) -> int:
    """The index of the brace closing the one at start."""
    depth = 0
    for index in range(start, len(text)):
        if text[index] == "{":
            depth += 1
        elif text[index] == "}":
            depth -= 1
            if depth == 0:
                return index
    raise ValueError("unbalanced braces")


def _entries(body: str) -> list[tuple[str, str]]:
    """The top-level `key: {value}` entries of a map literal's body."""
    out: list[tuple[str, str]] = []
    position = 0
    while True:
        match = re.compile(r"([\w.]+)\s*:\s*\{").search(body, position)
        if not match:
            return out
        end = _matching(body, match.end() - 1)
        out.append((match[1], body[match.end() : end]))
        position = end + 1


def _spec(fields_text: str) -> tuple[bool, str, bool, tuple[int, int] | None]:
    fields = dict(_FIELD.findall(fields_text.replace("\n", " ")))
    default = fields.get("Default", "false").strip()
    if default not in ("true", "false"):
        raise ValueError(f"a default that is not a literal: {default!r}")
    stage = fields.get("PreRelease", "").strip().rsplit(".", 1)[-1]
    version = _VERSION.search(fields_text)
    return (
        default == "true",
        {"Alpha": "alpha", "Beta": "beta", "GA": "GA", "Deprecated": "deprecated"}.get(stage, stage or "?"),
        fields.get("LockToDefault", "false").strip() == "true",
        (int(version[1]), int(version[2])) if version else None,
    )


def gates_in_source(texts: list[str], minor: tuple[int, int]) -> dict[str, GateState]:
    """Every gate the maps of these files define, with its default and stage for a binary of this minor."""
    names: dict[str, str] = {}
    for text in texts:
        names.update(_CONST.findall(text))
    found: dict[str, GateState] = {}
    for raw in texts:
        text = _COMMENT.sub("", raw)
        for start in _MAP_START.finditer(text):
            brace = start.end() - 1
            body = text[brace + 1 : _matching(text, brace)]
            for key, value in _entries(body):
                name = names.get(key, key.rsplit(".", 1)[-1])
                if start[1] == "FeatureSpec":
                    default, stage, locked, _ = _spec(value)
                else:
                    specs = [_spec(text_) for _, text_ in _entries_of_list(value)]
                    applying = [s for s in specs if s[3] is None or s[3] <= minor]
                    if not applying:
                        continue  # not yet introduced at this binary's own version
                    default, stage, locked, _ = max(applying, key=lambda s: s[3] or (0, 0))
                found[name] = GateState(default, stage, locked)
    return found


def _entries_of_list(value: str) -> list[tuple[int, str]]:
    """The `{...}` elements of a VersionedSpecs list."""
    out: list[tuple[int, str]] = []
    position = value.find("{")
    while position != -1:
        end = _matching(value, position)
        out.append((position, value[position + 1 : end]))
        position = value.find("{", end + 1)
    return out


# ----- Fetching a release's feature files.


def fetch_sources(release: str, keep_zips: bool) -> str:
    """Copy the release's pkg/features/*.go into SOURCES; "read", "refused: ..." or "not read: ..."."""
    target = SOURCES / release
    if (target / ".complete").is_file():
        return "read"
    tag = f"v{release}"
    cache = TOOLS / "go" / "mod"
    archive = cache / "cache" / "download" / "k8s.io" / "kubernetes" / "@v" / f"{tag}.zip"
    tree = cache / "k8s.io" / f"kubernetes@{tag}"
    had_zip, had_tree = archive.is_file(), tree.is_dir()
    if not had_zip:
        (TOOLS / "go").mkdir(parents=True, exist_ok=True)
        env = {**go_environment(TOOLS), "GOFLAGS": "", "GOTOOLCHAIN": "auto"}
        result = run_go(["mod", "download", "-json", f"k8s.io/kubernetes@{tag}"], env, TOOLS / "go", timeout=900)
        try:
            answer = json.loads(result.stdout)
        except json.JSONDecodeError:
            answer = {"Error": (result.stderr.strip().splitlines() or ["no answer"])[-1]}
        error = str(answer.get("Error") or "")
        if error or not archive.is_file():
            short = error.rsplit(": ", 2)[-2:] if error else ["no zip"]
            reason = " ".join(": ".join(short).split())[:160]
            status = f"refused: {reason}" if REFUSED.search(error) else f"not read: {reason}"
            target.mkdir(parents=True, exist_ok=True)
            (target / ".status").write_text(status + "\n")  # what --parse-only says of it
            return status
    try:
        target.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(archive) as zipped:
            for name in zipped.namelist():
                if FEATURE_FILE.match(name):
                    (target / Path(name).name).write_bytes(zipped.read(name))
        (target / ".complete").write_text(tag + "\n")
    finally:
        if not had_tree and tree.is_dir():
            _remove_read_only(tree)
        if not had_zip and not keep_zips:
            for sibling in archive.parent.glob(f"{tag}.*"):
                if sibling.suffix in (".zip", ".ziphash", ".lock"):
                    sibling.unlink(missing_ok=True)
    return "read"


def _remove_read_only(tree: Path) -> None:
    """Remove a module cache tree (Go makes it read-only)."""
    for path in [tree, *tree.rglob("*")]:
        if path.is_dir() and not path.is_symlink():
            path.chmod(path.stat().st_mode | stat.S_IWUSR)
    shutil.rmtree(tree)


# ----- The ledger.


def ledger(statuses: dict[str, str]) -> dict[str, object]:
    """Per gate, its state from each release on where it changed (over the releases read, in release order)."""
    changes: dict[str, list[list[str]]] = {}
    last: dict[str, str] = {}
    for release in sorted(statuses, key=sort_key):
        if statuses[release] != "read":
            continue
        version = sort_key(release)
        texts = [path.read_text() for path in sorted((SOURCES / release).glob("*.go"))]
        states = {name: state.text() for name, state in gates_in_source(texts, (version.major, version.minor)).items()}
        for name in sorted(set(states) | set(last)):
            state = states.get(name, "absent")
            if last.get(name, "absent" if name not in changes else None) != state:
                changes.setdefault(name, []).append([release, state])
            last[name] = state
    return {
        "about": "each feature gate's default and stage at every release of harness/releases.json; regenerate "
        "with tools/gate_ledger.py",
        "read_from": "pkg/features/*.go (kube_features.go; versioned_kube_features.go where a release has one) in "
        "the Go module proxy's zip of k8s.io/kubernetes at each tag",
        "states": "'<stage>:<on|off>[:locked]' from the release named on, until the next one; 'absent': no such "
        "gate; releases not 'read' have no state",
        "read_on": datetime.now(UTC).date().isoformat(),
        "releases": {release: " ".join(statuses[release].split()) for release in sorted(statuses, key=sort_key)},
        "gates": dict(sorted(changes.items())),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=3)
    parser.add_argument("--keep-zips", action="store_true")
    parser.add_argument("--only", default="", help="comma-separated releases (the rest keep their last status)")
    parser.add_argument("--parse-only", action="store_true")
    args = parser.parse_args(argv)
    catalog = published_releases()
    wanted = [r.strip().removeprefix("v") for r in args.only.split(",") if r.strip()] or list(catalog)
    unknown = [r for r in wanted if r not in catalog]
    if unknown or not 1 <= args.jobs <= 8:
        print(
            f"error: not in the release catalog: {', '.join(unknown)}" if unknown else "error: --jobs is 1 to 8",
            file=sys.stderr,
        )
        return 2
    previous: dict[str, str] = {}
    if LEDGER_FILE.is_file():
        previous = dict(json.loads(LEDGER_FILE.read_text())["releases"])
    statuses = {release: previous.get(release, "not read") for release in catalog}
    started = time.monotonic()
    if args.parse_only:
        for release in wanted:
            said = SOURCES / release / ".status"
            if (SOURCES / release / ".complete").is_file():
                statuses[release] = "read"
            elif said.is_file():
                statuses[release] = said.read_text().strip()
    else:
        with ThreadPoolExecutor(args.jobs) as pool:
            for release, status in zip(
                wanted, pool.map(lambda r: fetch_sources(r, args.keep_zips), wanted), strict=True
            ):
                statuses[release] = status
                print(f"{release}: {status}", flush=True)
    fetched = time.monotonic() - started
    data = ledger(statuses)
    LEDGER_FILE.write_text(json.dumps(data, indent=0, separators=(",", ":")) + "\n")
    counts: dict[str, int] = {}
    for status in statuses.values():
        counts[status.split(":")[0]] = counts.get(status.split(":")[0], 0) + 1
    print(
        f"{len(data['gates'])} gates over {len(catalog)} releases ({counts}); fetched in {fetched:.0f} s, "  # type: ignore[arg-type]
        f"all in {time.monotonic() - started:.0f} s; {LEDGER_FILE.stat().st_size} bytes"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
