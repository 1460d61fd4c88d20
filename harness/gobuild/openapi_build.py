"""zz_generated.openapi.go made for a tag that lacks it (harness/gobuild/openapi.py says what the tag's Makefile
asks for): openapi-gen built in the throw-away module with the tag's toolchain and run there, its output put into a
writable copy of the tag's source that the components are then built from."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Mapping
from pathlib import Path

from harness.gobuild import openapi
from harness.gobuild.go import BuildError
from harness.gobuild.modules import module_dirs, module_version


def generate_openapi(
    source: Path, directory: Path, versions: Mapping[str, str], env: Mapping[str, str], run: Callable[[list[str]], None]
) -> dict[str, str]:
    """zz_generated.openapi.go for a tag that lacks it, the way upstream's `make` made it; build from a copy.

    openapi-gen is built in the throw-away module, whose replace lines pin k8s.io/kube-openapi and k8s.io/gengo
    at the tag's versions, with the tag's toolchain, and run there in module mode over the input packages the
    tag's Makefile would give it (harness/gobuild/openapi.py). Its output goes to a scratch dir, then into a
    writable copy of the tag's source, `src/`, which `replace k8s.io/kubernetes => ./src` makes the source the
    components are built from: the tag plus this one file. Its API rule report is compared with the tag's
    known violations, as the Makefile does (a difference is recorded, not fatal: the Makefile's check guards
    the API source, which a tag cannot change).
    """
    try:
        return _generate_openapi_steps(source, directory, versions, env, run)
    except openapi.OpenAPIError as error:
        raise BuildError(f"cannot generate {openapi.OPENAPI_FILE} as upstream did: {error}") from error


def _generate_openapi_steps(
    source: Path, directory: Path, versions: Mapping[str, str], env: Mapping[str, str], run: Callable[[list[str]], None]
) -> dict[str, str]:
    settings = openapi.makefile_settings(source)
    twins = module_dirs(sorted(versions.items()), env, directory)
    # A twin served nowhere (k8s.io/sample-cli-plugin at some tags) cannot be scanned; it is said in the
    # record, and the API rule comparison below shows whether the inputs still match upstream's.
    unscanned = sorted(set(versions) - set(twins))
    packages = openapi.input_packages(source, twins, settings)
    scratch = directory / "openapi-gen"
    if scratch.exists():
        shutil.rmtree(scratch)
    scratch.mkdir()
    openapi.writable_copy(source, directory / "src")
    run(["go", "mod", "edit", "-replace=k8s.io/kubernetes=./src"])
    run(["go", "build", "-o", str(scratch / "openapi-gen"), "k8s.io/kube-openapi/cmd/openapi-gen"])
    report = scratch / "violations.report"
    boilerplate = openapi.boilerplate_path(source, twins, settings)
    run([str(scratch / "openapi-gen"), *openapi.generator_args(packages, settings, boilerplate, report, scratch)])
    output = scratch / openapi.KUBERNETES / openapi.OPENAPI_FILE
    if not output.is_file():
        raise BuildError(f"openapi-gen wrote no {openapi.OPENAPI_FILE} (see {directory / 'build.log'})")
    shutil.copyfile(output, directory / "src" / openapi.OPENAPI_FILE)
    known = source / settings.known_violations if settings.known_violations else None
    if known is not None and known.is_file() and report.is_file():
        same = report.read_text() == known.read_text()
        check = f"API rule violations {'the same as' if same else 'DIFFER from'} the tag's {settings.known_violations}"
    else:
        check = "API rule violations not compared (no known-violations list in the tag)"
    if unscanned:
        check += f"; staging modules not served, not scanned: {', '.join(unscanned)}"
    generator = module_version("k8s.io/kube-openapi", env, directory)
    shutil.rmtree(scratch)
    return {
        openapi.OPENAPI_FILE: f"openapi-gen of k8s.io/kube-openapi@{generator}, {len(packages)} input packages; {check}"
    }
