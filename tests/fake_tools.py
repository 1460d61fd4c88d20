"""Stand-ins for the `kind` and `docker` executables, written as scripts into a bin directory for PATH.

They are not kind or Docker: `kind create cluster` writes a kubeconfig pointing at the stand-in API server
(tests/fake_apiserver.py) and every call is appended to a log; `docker info` answers (as the suite's
engine when asked for its default runtime, so hosts lacking CAP_SYS_RESOURCE pass harness/clusters/kind/engine.py), and
`docker exec <node> crictl ps -a -o json` prints a scripted container list.

Each is a Python script run as `python -IS` (isolated, no site: neither the venv's packages nor the editable
install's finder are loaded, which the standard library they use does not need) and appends its call to the log
as a JSON array through `_json.encode_basestring_ascii`, the C encoder json.dumps itself uses for strings, not
through `json` (its import brings `re` and `enum`): each of the ~130 calls the tests make took 26-28 ms of CPU,
now 10-11 ms (a `go list -m -e -json` answer, which imports json, 19 ms).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

# Each stand-in's first lines: its call (LOGGED_AS and its arguments) appended to the log as a JSON array (`calls`)
LOGGED_CALL = """#!{python} -IS
import sys
from _json import encode_basestring_ascii as quoted
args = sys.argv[1:]
with open({log!r}, "a") as log:
    log.write("[" + ", ".join(map(quoted, LOGGED_AS args)) + "]\\n")
"""

KIND = (
    LOGGED_CALL.replace("LOGGED_AS ", "")
    + """\
if args[:1] == ["version"]:
    print("kind v0.20.0 go1.20.4 linux/amd64")
elif args[:2] == ["create", "cluster"]:
    name = args[args.index("--name") + 1]
    with open(args[args.index("--kubeconfig") + 1], "w") as kubeconfig:
        kubeconfig.write(
            "apiVersion: v1\\nkind: Config\\ncurrent-context: kind-" + name + "\\n"
            "clusters: [{{name: kind-" + name + ", cluster: {{server: '{url}'}}}}]\\n"
            "users: [{{name: u, user: {{token: t}}}}]\\n"
            "contexts: [{{name: kind-" + name + ", context: {{cluster: kind-" + name + ", user: u}}}}]\\n"
        )
elif args[:2] == ["get", "clusters"]:
    pass
"""
)

DOCKER = (
    LOGGED_CALL.replace("LOGGED_AS ", '["docker"] + ')
    + """\
if args[:1] == ["info"] and "{{{{.DefaultRuntime}}}}" in args:
    print("plp-runc")  # the suite's engine (harness/clusters/kind/engine.py): privileged containers work on any host
elif args[:1] == ["info"]:
    print("24.0.7")
elif args[:1] == ["pull"]:
    pass  # a registry answers: the pinned node image pulls
elif args[:1] == ["exec"] and "inspecti" in args:
    sys.exit(1)  # the stand-in node has no image of its own: the suite must load or pull it
elif args[:1] == ["exec"] and "crictl" in args:
    print({crictl_json!r})
else:
    sys.exit(1)
"""
)


def install(bin_dir: Path, log: Path, apiserver_url: str, node_containers: list[dict[str, object]]) -> None:
    bin_dir.mkdir(parents=True, exist_ok=True)
    for name, template in (("kind", KIND), ("docker", DOCKER)):
        script = bin_dir / name
        script.write_text(
            template.format(
                python=sys.executable,
                log=str(log),
                url=apiserver_url,
                crictl_json=json.dumps({"containers": node_containers}),
            )
        )
        script.chmod(0o755)


def calls(log: Path) -> list[list[str]]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


GO = (
    LOGGED_CALL.replace("LOGGED_AS ", '["go"] + ')
    + """\
served, listed, go_mods = {served!r}, {listed!r}, {go_mods!r}
if args[:1] == ["version"]:
    print("go version go1.26.8 linux/amd64")
elif args[:4] == ["list", "-m", "-versions", "k8s.io/kubernetes"]:
    print(" ".join(["k8s.io/kubernetes", *listed]))
elif args[:4] == ["list", "-m", "-e", "-json"]:
    import json
    for query in args[4:]:
        path, version = query.split("@")
        answer = {{"Path": path, "Version": version}}
        if query not in served:
            refused = ": 403 Forbidden\\n\\tserver response: This module version is not available."
            answer["Error"] = {{"Err": query + refused}}
        elif query in go_mods:
            answer["GoMod"] = go_mods[query]
        print(json.dumps(answer, indent="\\t"))
else:
    sys.exit(1)
"""
)


def install_go(
    bin_dir: Path, log: Path, served: set[str], listed: list[str], go_mods: dict[str, str] | None = None
) -> None:
    """A stand-in for `go` as the radar asks the Go module proxy through it: `go list -m -versions` prints `listed`,
    `go list -m -e -json module@version ...` answers each query as served (with the go.mod file `go_mods` names
    for it) or refused with the proxy's 403. Not Go: it builds nothing; every call is appended to the log."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    script = bin_dir / "go"
    script.write_text(
        GO.format(python=sys.executable, log=str(log), served=sorted(served), listed=listed, go_mods=go_mods or {})
    )
    script.chmod(0o755)
