#!/usr/bin/env python3
"""A runc for Docker on hosts whose root lacks CAP_SYS_RESOURCE: the capability is dropped, then runc runs.

`docker run --privileged` asks runc for every capability; where the host's bounding set lacks
CAP_SYS_RESOURCE (nested VMs, some CI sandboxes, this project's machines) runc fails with "unable to apply
caps: operation not permitted", and kind, whose nodes are privileged containers, cannot create a cluster.
Registered as the engine's default runtime (`dockerd --add-runtime plp-runc=<this file> --default-runtime
plp-runc`, see harness/clusters/kind/engine.py), this wrapper deletes CAP_SYS_RESOURCE from the capability sets of
- the bundle's config.json, for `runc create` and `runc run` (`--bundle DIR`, default: the working directory);
- the process spec of `runc exec --process FILE` (what `docker exec` uses: without it, `docker exec` into a
  privileged container fails the same way),
and then replaces itself with the real runc, arguments unchanged. Nothing else is touched.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

CAPABILITY = "CAP_SYS_RESOURCE"
REAL_RUNC = os.environ.get("PLP_REAL_RUNC", "/usr/sbin/runc")
# runc's global options that take a value (runc --help): the command is the first other word.
_GLOBAL_WITH_VALUE = {"--root", "--log", "--log-format", "--criu", "--rootless"}


def command_and_options(argv: list[str]) -> tuple[str | None, list[str]]:
    """(runc command, the words after it): `--root R --log L create --bundle B id` -> ('create', [...])."""
    index = 0
    while index < len(argv):
        word = argv[index]
        if word in _GLOBAL_WITH_VALUE:
            index += 2
        elif word.startswith("-"):
            index += 1
        else:
            return word, argv[index + 1 :]
    return None, []


def option_value(options: list[str], *names: str) -> str | None:
    """The value of `--name VALUE` or `--name=VALUE` among a command's options."""
    for index, word in enumerate(options):
        for name in names:
            if word == name and index + 1 < len(options):
                return options[index + 1]
            if word.startswith(name + "="):
                return word.split("=", 1)[1]
    return None


def drop_capability(capabilities: dict[str, Any]) -> bool:
    """Remove CAP_SYS_RESOURCE from every set; True if any set held it."""
    changed = False
    for name, values in capabilities.items():
        if isinstance(values, list) and CAPABILITY in values:
            capabilities[name] = [value for value in values if value != CAPABILITY]
            changed = True
    return changed


def patch_spec(path: Path, process_only: bool) -> bool:
    """Drop the capability from an OCI config.json (process.capabilities) or a process spec (capabilities)."""
    if not path.is_file():
        return False
    spec = json.loads(path.read_text())
    process = spec if process_only else spec.get("process") or {}
    capabilities = process.get("capabilities")
    if not isinstance(capabilities, dict) or not drop_capability(capabilities):
        return False
    path.write_text(json.dumps(spec))
    return True


def prepare(argv: list[str], cwd: Path) -> None:
    """Patch whatever spec this runc invocation will read."""
    command, options = command_and_options(argv)
    if command in ("create", "run"):
        bundle = option_value(options, "--bundle", "-b")
        patch_spec((cwd / bundle if bundle else cwd) / "config.json", process_only=False)
    elif command == "exec":
        process = option_value(options, "--process", "-p")
        if process:
            patch_spec(cwd / process, process_only=True)


def main() -> None:
    argv = sys.argv[1:]
    prepare(argv, Path.cwd())
    os.execv(REAL_RUNC, [REAL_RUNC, *argv])


if __name__ == "__main__":
    main()
