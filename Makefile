# make synth: venv + CDK CLI + synth of the default hyperpod.yaml (no AWS account needed)
# make test:  venv + CDK CLI + the whole test suite
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
CDK := node_modules/.bin/cdk
STAMP := $(VENV)/.installed
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20
export CDK_DISABLE_CLI_TELEMETRY := true
export PATH := $(CURDIR)/$(BIN):$(PATH)
CONFIG ?= hyperpod.yaml
OUT ?= cdk.out
PYTEST_ARGS ?=

.PHONY: synth test lint deps clean schema bench
deps: $(STAMP) $(CDK)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	$(BIN)/python -m compileall -q $(VENV)/lib > /dev/null
	touch $@

$(CDK): package.json
	npm install --no-audit --no-fund --loglevel=error
	touch $@

synth: deps
	rm -rf $(OUT)
	$(CDK) synth --no-notices -q -o $(OUT) -c config=$(CONFIG)
	@echo "template: $$(ls $(OUT)/*.template.json)"; echo "manifests: $$(ls $(OUT)/manifests/)"

test: deps
	$(BIN)/python -m pytest $(PYTEST_ARGS)

lint: deps
	$(BIN)/ruff check hyperpod_inference tests benchmarks

schema: deps
	$(BIN)/python -m hyperpod_inference schema

clean:
	rm -rf $(OUT) .pytest_cache
