# make synth: venv + CDK CLI + synth of the default hyperpod.yaml (no AWS account needed)
# make test:  venv + CDK CLI + the whole test suite (PYTEST_WORKERS=0: in one process)
#   Both install exactly what the locks name: uv.lock (Python), package-lock.json (Node), security/checkov-requirements.txt
# make lock: refresh the locks to the newest versions pyproject.toml, package.json and security/checkov.in allow
# make test-latest: the same suite in .venv-latest, with the newest versions pyproject.toml allows (not the lock)
# make init HYPERPOD_CLUSTER=<name> [REGION=...] [INIT_OUTPUT=my-cluster.yaml] [KUBECTL_ROLE_ARN=<role ARN>]: a
#   starter config from a real cluster (KUBECTL_ROLE_ARN: the cluster-admin role, needed where only aws-auth maps one)
# make doctor CONFIG=<file>: read-only checks of the account and the cluster; make bootstrap / diff / deploy / destroy
#   CONFIG=<file> [STACKS=<stack names>] [CDK_ARGS=...]: the CDK CLI with the venv's Python and the pinned Node.js,
#   from any shell (deploy / destroy: every stack of the config files unless STACKS names some; the cloud assembly
#   goes to OUT). Without a prompt, as CI runs them: make deploy ... APPROVAL=never, make destroy ... FORCE=1
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
CDK := node_modules/.bin/cdk
NPM_STAMP := node_modules/.installed
STAMP := $(VENV)/.installed
CHECKOV_VENV := .venv-checkov
CHECKOV_STAMP := $(CHECKOV_VENV)/.installed
# uv (pinned by hash in tools/uv-requirements.txt) installs from and refreshes the lock; it runs $(PYTHON), never a
# Python it would download
UV_VENV := .venv-uv
UV := $(UV_VENV)/bin/uv
UV_STAMP := $(UV_VENV)/.installed
LATEST_VENV := .venv-latest
export UV_PYTHON_DOWNLOADS := never
export CDK_DISABLE_CLI_TELEMETRY := true
# the venv's python3 (cdk.json runs `python3 app.py`) and the Node 22 that package.json pins (jsii supports ^22 and
# ^24; the system's Node may be older), ahead of everything else (VENV may be a relative or an absolute path)
export PATH := $(abspath $(BIN)):$(CURDIR)/node_modules/.bin:$(PATH)
CONFIG ?= hyperpod.yaml
OUT ?= cdk.out
PYTEST_ARGS ?=
# pytest-xdist workers for `make test` (one per core; 0 runs the suite in one process); each test file runs whole on
# one worker, so a file's shared synths are made once
PYTEST_WORKERS ?= auto
HYPERPOD_CLUSTER ?=
REGION ?=
INIT_OUTPUT ?= my-cluster.yaml
KUBECTL_ROLE_ARN ?=
DOCTOR_ARGS ?=
OUTPUTS_FILE ?= outputs.json
# stack names for diff / deploy / destroy (default: every stack of CONFIG); more CDK CLI arguments for those and synth
STACKS ?=
CDK_ARGS ?=
# deploy / destroy without a prompt: APPROVAL=never (cdk deploy --require-approval never; or any-change, broadening),
# FORCE=1 (cdk destroy --force)
APPROVAL ?=
FORCE ?=

.PHONY: synth test test-latest lock lint deps clean schema bench diagram dashboards promtool init doctor bootstrap diff deploy destroy
deps: $(STAMP) $(NPM_STAMP) $(CHECKOV_STAMP) promtool

# promtool (Debian's prometheus package): the tests check the Prometheus rule files with it
promtool:
	@command -v promtool >/dev/null || { SUDO=$$([ "$$(id -u)" = 0 ] || echo sudo); \
		$$SUDO apt-get update || true; $$SUDO apt-get install -y --no-install-recommends prometheus; }

$(UV_STAMP): tools/uv-requirements.txt
	test -x $(UV_VENV)/bin/python || $(PYTHON) -m venv $(UV_VENV)
	$(UV_VENV)/bin/python -m pip install --quiet --require-hashes --no-deps -r tools/uv-requirements.txt
	touch $@

# the venv exactly as uv.lock has it (--locked: refused when pyproject.toml changed and the lock was not refreshed)
# aws-cdk-lib and its dependency aws-cdk.cloud-assembly-schema both ship aws_cdk/cloud_assembly_schema/__init__.py;
# aws-cdk-lib's must win (the other breaks jsii: "Unknown interface: aws-cdk-lib.cloud_assembly_schema.MetadataEntry").
# pip installs a dependency first, uv sync does not, so aws-cdk-lib is installed again on its own.
CDK_LIB_LAST = --reinstall-package aws-cdk-lib
$(STAMP): pyproject.toml uv.lock $(UV_STAMP)
	UV_PROJECT_ENVIRONMENT=$(VENV) $(UV) sync --quiet --locked --extra dev --python $(PYTHON)
	UV_PROJECT_ENVIRONMENT=$(VENV) $(UV) sync --quiet --locked --extra dev --python $(PYTHON) $(CDK_LIB_LAST)
	$(BIN)/python -m compileall -q $(VENV)/lib > /dev/null
	touch $@

# The package's own bytecode, as pip leaves an installed package's: an editable install has none, and where
# PYTHONDONTWRITEBYTECODE is set no import writes it, so every synth would compile the package again. Only stale
# files are compiled; an edited file without fresh bytecode is compiled in memory, as before.
PACKAGE_BYTECODE = $(BIN)/python -m compileall -q -x '/lambda/' hyperpod_inference > /dev/null

# checkov (tests/e2e/test_security_scans.py) in its own venv: it pins an older boto3 than the project's.
$(CHECKOV_STAMP): security/checkov-requirements.txt $(UV_STAMP)
	test -x $(CHECKOV_VENV)/bin/python || $(PYTHON) -m venv $(CHECKOV_VENV)
	$(UV) pip sync --quiet --require-hashes --python $(CHECKOV_VENV)/bin/python security/checkov-requirements.txt
	touch $@

# the CDK CLI and Node 22 (the npm package `node` brings the binary from the npm registry)
$(NPM_STAMP): package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

synth: $(STAMP) $(NPM_STAMP)
	@$(PACKAGE_BYTECODE)
	rm -rf $(OUT)
	$(CDK) synth --no-notices -q -o $(OUT) -c config=$(CONFIG) $(strip $(CDK_ARGS))
	@echo "template: $$(ls $(OUT)/*.template.json)"; echo "manifests: $$(ls $(OUT)/manifests/)"

init: $(STAMP)
	@test -n "$(HYPERPOD_CLUSTER)" || { echo "usage: make init HYPERPOD_CLUSTER=<name or ARN> [REGION=us-west-2] [INIT_OUTPUT=my-cluster.yaml] [KUBECTL_ROLE_ARN=<role ARN>]" >&2; exit 2; }
	$(BIN)/python -m hyperpod_inference init $(strip --hyperpod-cluster $(HYPERPOD_CLUSTER) $(if $(REGION),--region \
		$(REGION)) $(if $(KUBECTL_ROLE_ARN),--kubectl-role-arn $(KUBECTL_ROLE_ARN))) -o $(INIT_OUTPUT)

doctor: $(STAMP)
	$(BIN)/python -m hyperpod_inference doctor -c $(CONFIG) $(DOCTOR_ARGS)

# cdk bootstrap of the account and Region of the config's env
bootstrap: $(STAMP) $(NPM_STAMP)
	$(CDK) bootstrap --no-notices -o $(OUT) -c config=$(CONFIG)

deploy: $(STAMP) $(NPM_STAMP)
	$(CDK) deploy --no-notices -o $(OUT) -c config=$(CONFIG) --outputs-file $(OUTPUTS_FILE) $(strip $(if $(APPROVAL),--require-approval $(APPROVAL)) $(CDK_ARGS) $(or $(STACKS),--all))

destroy: $(STAMP) $(NPM_STAMP)
	$(CDK) destroy --no-notices -o $(OUT) -c config=$(CONFIG) $(strip $(if $(filter 1 true yes,$(FORCE)),--force) $(CDK_ARGS) $(or $(STACKS),--all))

# what a deploy would change (read before every upgrade: docs/upgrades.md)
diff: $(STAMP) $(NPM_STAMP)
	$(CDK) diff --no-notices -o $(OUT) -c config=$(CONFIG) $(strip $(CDK_ARGS) $(STACKS))

test: deps
	$(BIN)/ruff check hyperpod_inference tests benchmarks tools
	$(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist loadfile $(PYTEST_ARGS)

# The newest versions the ranges in pyproject.toml allow, resolved afresh on every run (the lock is not read or
# written); their list is kept in $(LATEST_VENV)/versions.txt, and its stamp lets a `make <target>
# VENV=$(LATEST_VENV)` that a test runs use it as it is. A failure here and not in `make test` is a new release
# of a dependency: fix the code or narrow the range, then `make lock`.
test-latest: $(UV_STAMP) $(NPM_STAMP) $(CHECKOV_STAMP) promtool
	rm -rf $(LATEST_VENV)
	$(UV) venv --quiet --python $(PYTHON) $(LATEST_VENV)
	$(UV) pip install --quiet --python $(LATEST_VENV)/bin/python --resolution highest -e '.[dev]'
	$(UV) pip install --quiet --python $(LATEST_VENV)/bin/python --no-deps --reinstall \
		"$$($(UV) pip freeze --python $(LATEST_VENV)/bin/python | grep '^aws-cdk-lib==')"
	$(UV) pip freeze --python $(LATEST_VENV)/bin/python > $(LATEST_VENV)/versions.txt
	touch $(LATEST_VENV)/.installed
	$(LATEST_VENV)/bin/ruff check hyperpod_inference tests benchmarks tools
	PATH=$(CURDIR)/$(LATEST_VENV)/bin:$$PATH $(LATEST_VENV)/bin/python -m pytest -n $(PYTEST_WORKERS) --dist loadfile $(PYTEST_ARGS)

# Refresh every lock to the newest versions allowed: uv.lock from pyproject.toml, package-lock.json from package.json,
# security/checkov-requirements.txt from security/checkov.in. Review the diff, run `make test`, commit the locks.
lock: $(UV_STAMP)
	$(UV) lock --upgrade --python $(PYTHON)
	$(UV) pip compile --quiet --upgrade --universal --python-version 3.11 --generate-hashes --no-header \
		security/checkov.in -o security/checkov-requirements.txt
	npm install --package-lock-only --no-audit --no-fund --loglevel=error

lint: $(STAMP)
	$(BIN)/ruff check hyperpod_inference tests benchmarks

# make schema: hyperpod.schema.json (the config file's JSON Schema, for editors) and docs/config-reference.md from it
schema: $(STAMP)
	@$(BIN)/python -m hyperpod_inference schema -o hyperpod.schema.json
	@$(BIN)/python tools/config_reference.py --schema hyperpod.schema.json --out docs/config-reference.md

# make diagram: docs/architecture.png (+ .dot) from a fresh synth of the default hyperpod.yaml (in $(DIAGRAM_OUT),
# whatever $(OUT) holds); tests/test_diagram.py fails when the committed ones are not what this draws
DIAGRAM_OUT ?= .diagram.out
diagram: $(STAMP) $(NPM_STAMP)
	@command -v dot >/dev/null || { SUDO=$$([ "$$(id -u)" = 0 ] || echo sudo); \
		$$SUDO apt-get update || true; $$SUDO apt-get install -y --no-install-recommends graphviz; }
	$(MAKE) synth OUT=$(DIAGRAM_OUT) CONFIG=hyperpod.yaml CDK_ARGS=
	$(BIN)/python tools/diagram.py --cdk-out $(DIAGRAM_OUT) --dot docs/architecture.dot --png docs/architecture.png
	rm -rf $(DIAGRAM_OUT)

# make dashboards: docs/dashboard-preview.png and one PNG per stack under $(OUT)/dashboards/ (the CloudWatch layout)
dashboards: $(STAMP)
	@ls $(OUT)/*.template.json >/dev/null 2>&1 || $(MAKE) synth
	@test -f /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf || { SUDO=$$([ "$$(id -u)" = 0 ] || echo sudo); \
		$$SUDO apt-get update || true; $$SUDO apt-get install -y --no-install-recommends fonts-dejavu-core; }
	$(BIN)/python tools/dashboard_preview.py --cdk-out $(OUT) --docs-png docs/dashboard-preview.png

clean:
	rm -rf $(OUT) $(DIAGRAM_OUT) .pytest_cache
