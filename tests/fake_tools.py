"""Stand-ins for the `kind` and `docker` executables, written as scripts into a bin directory for PATH.

They are not kind or Docker: `kind create cluster` writes a kubeconfig pointing at the stand-in API server
(tests/fake_apiserver.py) and every call is appended to a log; `docker info` answers (as the suite's
engine when asked for its default runtime, so hosts lacking CAP_SYS_RESOURCE pass harness/engine.py), and
`docker exec <node> crictl ps -a -o json` prints a scripted container list.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

KIND = """#!{python}
import json, pathlib, sys
args = sys.argv[1:]
with open({log!r}, "a") as log:
    log.write(json.dumps(args) + "\\n")
if args[:1] == ["version"]:
    print("kind v0.20.0 go1.20.4 linux/amd64")
elif args[:2] == ["create", "cluster"]:
    name = args[args.index("--name") + 1]
    kubeconfig = pathlib.Path(args[args.index("--kubeconfig") + 1])
    kubeconfig.write_text(
        "apiVersion: v1\\nkind: Config\\ncurrent-context: kind-" + name + "\\n"
        "clusters: [{{name: kind-" + name + ", cluster: {{server: '{url}'}}}}]\\n"
        "users: [{{name: u, user: {{token: t}}}}]\\n"
        "contexts: [{{name: kind-" + name + ", context: {{cluster: kind-" + name + ", user: u}}}}]\\n"
    )
elif args[:2] == ["get", "clusters"]:
    pass
"""

DOCKER = """#!{python}
import json, sys
args = sys.argv[1:]
with open({log!r}, "a") as log:
    log.write(json.dumps(["docker"] + args) + "\\n")
if args[:1] == ["info"] and "{{{{.DefaultRuntime}}}}" in args:
    print("plp-runc")  # the suite's engine (harness/engine.py): privileged containers work on any host
elif args[:1] == ["info"]:
    print("24.0.7")
elif args[:1] == ["exec"] and "inspecti" in args:
    sys.exit(1)  # the stand-in node has no image of its own: the suite must load or pull it
elif args[:1] == ["exec"] and "crictl" in args:
    print(json.dumps({{"containers": {containers}}}))
else:
    sys.exit(1)
"""


def install(bin_dir: Path, log: Path, apiserver_url: str, node_containers: list[dict[str, object]]) -> None:
    bin_dir.mkdir(parents=True, exist_ok=True)
    for name, template in (("kind", KIND), ("docker", DOCKER)):
        script = bin_dir / name
        script.write_text(
            template.format(
                python=sys.executable, log=str(log), url=apiserver_url, containers=json.dumps(node_containers)
            )
        )
        script.chmod(0o755)


def calls(log: Path) -> list[list[str]]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
