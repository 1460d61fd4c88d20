"""Go modules as the proxy serves them: a module downloaded (where its source is, which commit), which versions of
a batch it serves, and links to module directories a `go mod edit -replace` can name.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from harness.base.paths import TOOLS
from harness.gobuild.go import BuildError, go_environment, run_go
from harness.gobuild.toolchain import lookup_toolchain

# How the go command reports that the proxy refused a module version (the proxy's HTTP status), as opposed to any
# other failure of a look-up (a Go too old for the module, the network, a bad version string).
_REFUSED = re.compile(r"\b(403 Forbidden|404 Not Found|410 Gone)\b")


def proxy_refused(error: str) -> str | None:
    """The proxy's refusal in a go command's error ('403 Forbidden'), or None when the error is not one."""
    found = _REFUSED.search(error)
    return found[1] if found else None


def lookup_failure(module: str, version: str, error: str) -> str:
    """One line on why module@version could not be looked up: the proxy blamed only when it refused (403/404/410)."""
    lines = [line.strip() for line in error.splitlines() if line.strip()] or ["no answer"]
    refused = proxy_refused(error)
    if refused:
        response = next((line for line in lines if line.startswith("server response:")), "")
        return f"the Go module proxy refuses {module}@{version} ({refused}{': ' + response if response else ''})"
    return f"{module}@{version} could not be looked up: {lines[0]}"


def with_module_toolchain(module: str, version: str, env: Mapping[str, str], cwd: Path) -> dict[str, str]:
    """`env` with the GOTOOLCHAIN a look-up of module@version needs: the Go its go.mod asks for when the Go `env`
    runs is older (toolchain.lookup_toolchain); unchanged otherwise. Its go.mod is read through `go list -m`, which
    fetches only the .info and .mod files and needs no particular Go."""
    answers = _json_answers(["list", "-m", "-e", "-json", f"{module}@{version}"], {**env, "GOFLAGS": ""}, cwd)
    go_mod = next((Path(a["GoMod"]) for a in answers if a.get("GoMod") and not a.get("Error")), None)
    if go_mod is None or not go_mod.is_file():
        return dict(env)  # the download that follows says why
    running = run_go(["env", "GOVERSION"], env, cwd, timeout=300).stdout.strip()
    if not running:
        return dict(env)
    toolchain = lookup_toolchain(go_mod.read_text(), running, env, cwd)
    return dict(env) if toolchain is None else {**env, "GOTOOLCHAIN": toolchain}


def download_module(module: str, version: str, env: Mapping[str, str], cwd: Path) -> dict[str, Any]:
    """`go mod download -json module@version` with the Go its go.mod asks for: where the source is, and the VCS
    commit the proxy reports."""
    result = run_go(
        ["mod", "download", "-json", f"{module}@{version}"], with_module_toolchain(module, version, env, cwd), cwd
    )
    try:
        info: dict[str, Any] = json.loads(result.stdout)
    except json.JSONDecodeError:
        info = {"Error": (result.stderr or result.stdout).strip()}
    if info.get("Error") or "Dir" not in info:
        raise BuildError(lookup_failure(module, version, str(info.get("Error") or result.stderr)))
    return info


def _download_answers(pairs: list[tuple[str, str]], env: Mapping[str, str], cwd: Path) -> list[dict[str, Any]]:
    """Every answer of one `go mod download -json` for the whole batch (a refused version answers an Error)."""
    if not pairs:
        return []
    return _json_answers(["mod", "download", "-json", *(f"{m}@{v}" for m, v in pairs)], env, cwd)


def _json_answers(args: list[str], env: Mapping[str, str], cwd: Path) -> list[dict[str, Any]]:
    """The JSON objects one go command prints one after another (`go mod download -json`, `go list -m -json`)."""
    result = run_go(args, env, cwd)
    answers = []
    decoder = json.JSONDecoder()
    text, position = result.stdout, 0
    while True:
        while position < len(text) and text[position].isspace():
            position += 1
        if position >= len(text):
            break
        try:
            info, position = decoder.raw_decode(text, position)
        except json.JSONDecodeError:
            break
        answers.append(info)
    return answers


def served_modules(pairs: list[tuple[str, str]], env: Mapping[str, str], cwd: Path) -> set[tuple[str, str]]:
    """Which of these module versions the proxy serves: one `go mod download -json` for the whole batch.

    The checksum database is not asked here (GONOSUMDB=k8s.io): this only tells what can be downloaded; the
    build itself verifies checksums and says when it has to go without them.
    """
    answers = _download_answers(pairs, {**env, "GONOSUMDB": "k8s.io"}, cwd)
    return {(str(a["Path"]), str(a["Version"])) for a in answers if not a.get("Error") and "Dir" in a}


def download_errors(pairs: list[tuple[str, str]], env: Mapping[str, str], cwd: Path) -> dict[tuple[str, str], str]:
    """Why each of these module versions could not be downloaded ("" when it was): one batched download."""
    answers = {(str(a.get("Path")), str(a.get("Version"))): a for a in _download_answers(pairs, env, cwd)}
    out = {}
    for pair in pairs:
        answer = answers.get(pair) or {"Error": "no answer from the go command"}
        out[pair] = "" if not answer.get("Error") and "Dir" in answer else str(answer.get("Error") or "no source")
    return out


def module_dirs(pairs: list[tuple[str, str]], env: Mapping[str, str], cwd: Path) -> dict[str, Path]:
    """Where each of these module versions is in the module cache (downloaded if it is not yet)."""
    answers = _download_answers(pairs, {**env, "GONOSUMDB": "k8s.io"}, cwd)
    return {str(a["Path"]): Path(a["Dir"]) for a in answers if not a.get("Error") and "Dir" in a}


def module_version(module: str, env: Mapping[str, str], cwd: Path) -> str:
    """The version of a module the throw-away module builds with (its replacement's, when replaced)."""
    result = run_go(["list", "-m", "-json", module], env, cwd)
    try:
        info = json.loads(result.stdout)
    except json.JSONDecodeError:
        return "unknown"
    return str((info.get("Replace") or {}).get("Version") or info.get("Version") or "unknown")


def module_links(directory: Path, modules: Mapping[str, Path], staging: Sequence[str] = ()) -> dict[str, str]:
    """`./modules/<module path>` in the build directory for each module's directory in the module cache, for
    `go mod edit -replace` (which takes an '@' in a directory's path for a version); {module: './modules/...'}.

    A module in `staging` (a published twin) gets a directory of its own holding its go.mod with every staging
    sibling required at v0.0.0, as in k8s.io/kubernetes's staging tree, and a link to each of its other entries:
    the twins' published go.mod files require their siblings at the patch's version (k8s.io/apimachinery
    v0.24.2), which the module graph would select, and the compile cache's key names that version. Any other
    module (k8s.io/kubernetes itself) is one link to its directory.
    """
    links = directory / "modules"
    shutil.rmtree(links, ignore_errors=True)
    siblings = re.compile(r"^(\s*(?:require\s+)?(?:" + "|".join(map(re.escape, staging)) + r"))\s+v\S+", re.M)
    out = {}
    for module, target in modules.items():
        link = links / module
        link.parent.mkdir(parents=True, exist_ok=True)
        if module in staging and (target / "go.mod").is_file():
            link.mkdir()
            for entry in target.iterdir():
                if entry.name != "go.mod":
                    (link / entry.name).symlink_to(entry, target_is_directory=entry.is_dir())
            (link / "go.mod").write_text(siblings.sub(r"\1 v0.0.0", (target / "go.mod").read_text()))
        else:
            link.symlink_to(target, target_is_directory=True)
        out[module] = f"./modules/{module}"
    return out


# ----- What the proxy serves, asked without downloading sources (`go list -m`: a version's .info and .mod only).


def listed_module_answers(pairs: list[tuple[str, str]], tools: Path = TOOLS) -> list[dict[str, Any]]:
    """One `go list -m -e -json module@version ...` for the whole batch: each answer has its Version, and an Error
    when the proxy does not serve it (403 "not available"), or its GoMod (the go.mod file in the module cache)."""
    if not pairs:
        return []
    (tools / "go").mkdir(parents=True, exist_ok=True)
    env = {**go_environment(tools), "GOFLAGS": "", "GONOSUMDB": "k8s.io"}
    return _json_answers(["list", "-m", "-e", "-json", *(f"{m}@{v}" for m, v in pairs)], env, tools / "go")


def served_versions(pairs: list[tuple[str, str]], tools: Path = TOOLS) -> set[tuple[str, str]]:
    """Which of these module versions the proxy serves (their .info; nothing else is downloaded)."""
    answers = listed_module_answers(pairs, tools)
    return {(str(a["Path"]), str(a["Version"])) for a in answers if not a.get("Error") and a.get("Version")}


def listed_kubernetes_versions(tools: Path = TOOLS) -> list[str]:
    """The k8s.io/kubernetes versions the proxy lists (`go list -m -versions`). The list can lack versions it
    serves (seen: no pre-release listed, v1.38.0-alpha.0 served), so ask for those by name (served_versions)."""
    (tools / "go").mkdir(parents=True, exist_ok=True)
    env = {**go_environment(tools), "GOFLAGS": ""}
    result = run_go(["list", "-m", "-versions", "k8s.io/kubernetes"], env, tools / "go", timeout=120)
    if result.returncode != 0:
        if proxy_refused(result.stderr):
            raise BuildError(f"the Go module proxy does not list k8s.io/kubernetes ({proxy_refused(result.stderr)})")
        last = (result.stderr.strip().splitlines() or ["no answer"])[-1]
        raise BuildError(f"the k8s.io/kubernetes versions could not be listed: {last}")
    return [word for word in result.stdout.split()[1:] if word.startswith("v1.")]
