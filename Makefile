# make synth: venv + CDK CLI + synth of the default hyperpod.yaml (no AWS account needed)
# make test:  venv + CDK CLI + the whole test suite (PYTEST_WORKERS=0: in one process)
# make init HYPERPOD_CLUSTER=<name> [REGION=...] [INIT_OUTPUT=my-cluster.yaml]: a starter config from a real cluster
# make doctor CONFIG=<file>: read-only checks of the account and the cluster; make bootstrap / diff / deploy / destroy
#   CONFIG=<file> [STACKS=<stack names>] [CDK_ARGS=...]: the CDK CLI with the venv's Python and the pinned Node.js,
#   from any shell (deploy / destroy: every stack of the config files unless STACKS names some)
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
CDK := node_modules/.bin/cdk
NPM_STAMP := node_modules/.installed
STAMP := $(VENV)/.installed
CHECKOV_VENV := .venv-checkov
CHECKOV_STAMP := $(CHECKOV_VENV)/.installed
CHECKOV_VERSION := 3.3.30
export CDK_DISABLE_CLI_TELEMETRY := true
# the venv's python3 (cdk.json runs `python3 app.py`) and the Node 22 that package.json pins (jsii supports ^22 and
# ^24; the system's Node may be older), ahead of everything else
export PATH := $(CURDIR)/$(BIN):$(CURDIR)/node_modules/.bin:$(PATH)
CONFIG ?= hyperpod.yaml
OUT ?= cdk.out
PYTEST_ARGS ?=
# pytest-xdist workers for `make test` (one per core; 0 runs the suite in one process); each test file runs whole on
# one worker, so a file's shared synths are made once
PYTEST_WORKERS ?= auto
HYPERPOD_CLUSTER ?=
REGION ?=
INIT_OUTPUT ?= my-cluster.yaml
DOCTOR_ARGS ?=
OUTPUTS_FILE ?= outputs.json
# stack names for diff / deploy / destroy (default: every stack of CONFIG); more CDK CLI arguments for those and synth
STACKS ?=
CDK_ARGS ?=

.PHONY: synth test lint deps clean schema bench diagram dashboards promtool init doctor bootstrap diff deploy destroy
deps: $(STAMP) $(NPM_STAMP) $(CHECKOV_STAMP) promtool

# promtool (Debian's prometheus package): the tests check the Prometheus rule files with it
promtool:
	@command -v promtool >/dev/null || { SUDO=$$([ "$$(id -u)" = 0 ] || echo sudo); \
		$$SUDO apt-get update || true; $$SUDO apt-get install -y --no-install-recommends prometheus; }

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	$(BIN)/python -m compileall -q $(VENV)/lib > /dev/null
	touch $@

# The package's own bytecode, as pip leaves an installed package's: an editable install has none, and where
# PYTHONDONTWRITEBYTECODE is set no import writes it, so every synth would compile the package again. Only stale
# files are compiled; an edited file without fresh bytecode is compiled in memory, as before.
PACKAGE_BYTECODE = $(BIN)/python -m compileall -q -x '/lambda/' hyperpod_inference > /dev/null

# checkov (tests/e2e/test_security_scans.py) in its own venv: it pins an older boto3 than the project's.
$(CHECKOV_STAMP): Makefile
	test -x $(CHECKOV_VENV)/bin/python || $(PYTHON) -m venv $(CHECKOV_VENV)
	$(CHECKOV_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(CHECKOV_VENV)/bin/python -m pip install --quiet 'checkov==$(CHECKOV_VERSION)'
	touch $@

# the CDK CLI and Node 22 (the npm package `node` brings the binary from the npm registry)
$(NPM_STAMP): package.json package-lock.json
	npm install --no-audit --no-fund --loglevel=error
	touch $@

synth: $(STAMP) $(NPM_STAMP)
	@$(PACKAGE_BYTECODE)
	rm -rf $(OUT)
	$(CDK) synth --no-notices -q -o $(OUT) -c config=$(CONFIG) $(strip $(CDK_ARGS))
	@echo "template: $$(ls $(OUT)/*.template.json)"; echo "manifests: $$(ls $(OUT)/manifests/)"

init: $(STAMP)
	@test -n "$(HYPERPOD_CLUSTER)" || { echo "usage: make init HYPERPOD_CLUSTER=<name or ARN> [REGION=us-west-2] [INIT_OUTPUT=my-cluster.yaml]" >&2; exit 2; }
	$(BIN)/python -m hyperpod_inference init --hyperpod-cluster $(HYPERPOD_CLUSTER) $(if $(REGION),--region $(REGION)) -o $(INIT_OUTPUT)

doctor: $(STAMP)
	$(BIN)/python -m hyperpod_inference doctor -c $(CONFIG) $(DOCTOR_ARGS)

# cdk bootstrap of the account and Region of the config's env
bootstrap: $(STAMP) $(NPM_STAMP)
	$(CDK) bootstrap --no-notices -c config=$(CONFIG)

deploy: $(STAMP) $(NPM_STAMP)
	$(CDK) deploy --no-notices -c config=$(CONFIG) --outputs-file $(OUTPUTS_FILE) $(strip $(CDK_ARGS) $(or $(STACKS),--all))

destroy: $(STAMP) $(NPM_STAMP)
	$(CDK) destroy --no-notices -c config=$(CONFIG) $(strip $(CDK_ARGS) $(or $(STACKS),--all))

# what a deploy would change (read before every upgrade: docs/upgrades.md)
diff: $(STAMP) $(NPM_STAMP)
	$(CDK) diff --no-notices -c config=$(CONFIG) $(strip $(CDK_ARGS) $(STACKS))

test: deps
	$(BIN)/ruff check hyperpod_inference tests benchmarks tools
	$(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist loadfile $(PYTEST_ARGS)

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
