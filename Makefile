# wopeval — the two commands a new user needs: `make demo` and `make test`.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
INSTALLED := $(VENV)/.installed
MUTATION_INSTALLED := $(VENV)/.installed-mutation
DATA_DIR ?= .wopeval
# What `make mutation` mutates, and the fast tests it runs against each mutant. Empty: the
# default groups of scripts/mutation.py (evals/; engine/runlog/runlog.py and
# engine/recording/boundary.py; the MCP endpoint api/routes/mcp.py; the model proxy
# api/routes/model_proxy.py; the bundles, recordings/_bundles.py and store/bundle.py;
# engine/runs/erasure.py), each with its own tests. MUTATION_GROUPS: only these groups, by
# name (e.g. "bundle erasure"). MUTATION_JOBS: mutmut's workers (default: CPUs).
MUTATE ?=
MUTATION_TESTS ?=
MUTATION_GROUPS ?=
MUTATION_JOBS ?=

.PHONY: install demo serve test lint format mutation clean frameworks reference

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# Reinstalled whenever pyproject.toml changes.
$(INSTALLED): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	touch $(INSTALLED)

# The examples' frameworks (PydanticAI), for the test suite only: `make demo` stays lean.
# One pip run installs both extras (and so stands for $(INSTALLED) too): a second run after
# `.[dev]` would resolve the whole tree again (CI starts from no venv).
EXAMPLES := $(VENV)/.examples-installed
$(EXAMPLES): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev,examples]'
	touch $(INSTALLED) $(EXAMPLES)

install: $(INSTALLED)

# The agent frameworks of examples/frameworks/ (docs/frameworks.md), for the framework tier
# (tests/frameworks/). Their pins conflict, so they live in two virtualenvs beside the
# project's: mcp 1 with openai 2 (LangGraph, CrewAI, smolagents) and mcp 2 with openai 2
# (LlamaIndex, ADK + LiteLLM); the OpenAI Agents SDK, PydanticAI and Anthropic's SDK share
# the project's mcp 2 and openai 3 (its `examples` extra). Rebuilt when a requirements file
# changes; `make -j2 frameworks` builds both at once.
FRAMEWORK_VENVS := .venv-frameworks-mcp1 .venv-frameworks-openai2

.venv-frameworks-%/.installed: examples/frameworks/requirements-%.txt
	rm -rf .venv-frameworks-$*
	$(PYTHON) -m venv .venv-frameworks-$*
	.venv-frameworks-$*/bin/python -m pip install --quiet --disable-pip-version-check -r $<
	touch $@

## frameworks: the examples' extra and the two framework virtualenvs the framework tier runs
frameworks: $(EXAMPLES) $(FRAMEWORK_VENVS:%=%/.installed)

$(MUTATION_INSTALLED): pyproject.toml $(INSTALLED)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev,mutation]'
	touch $(MUTATION_INSTALLED)

## demo: install, then run the main job on the embedded SQLite store: record five production
## runs, change the agent, replay them against the change and compare with the baseline
demo: install
	$(BIN)/wopeval demo

## serve: install, then start the host on http://127.0.0.1:8737 with the embedded SQLite store
serve: install
	@echo "wopeval: data and the 'dev' tenant's API key live in $(DATA_DIR)/ (key file: $(DATA_DIR)/dev-api-key)"
	$(BIN)/wopeval serve --data-dir $(DATA_DIR)

## lint: ruff (lint + format check) over the repository, mypy --strict over src and tests,
## vulture for names nothing uses (allowlist: vulture_allowlist.py)
lint: $(EXAMPLES)
	$(BIN)/ruff check
	$(BIN)/ruff format --check
	$(BIN)/mypy
	$(BIN)/vulture

## test: lint, the whole test suite (unit, migration, end-to-end on SQLite and PostgreSQL),
## then `wopeval conformance` against a fresh `wopeval serve` on both databases
# Two pytest workers, each taking whole test files (their module fixtures stay shared); the
# files that take minutes go first (tests/conftest.py, LONG_FILES), so short ones fill the end
# of the run. Three workers on two cores were slower (1,604 s of pytest against 1,339 s).
#
# PYTHONDONTWRITEBYTECODE is set on some machines (CI's among them): every `wopeval`, agent and
# server process the suite starts (hundreds) would compile the project's modules afresh.
# Unset for the run, the first process writes them to __pycache__ (git-ignored) and the
# rest read them; nothing a test proves depends on it.
test: lint frameworks
	env -u PYTHONDONTWRITEBYTECODE $(BIN)/pytest -n 2 --dist loadfile --no-loadscope-reorder
	env -u PYTHONDONTWRITEBYTECODE $(BIN)/python scripts/conformance_self_check.py

## mutation: mutation testing (mutmut) of src/wopeval/evals/, engine/runlog/runlog.py,
## engine/recording/boundary.py, engine/runs/erasure.py, the bundles, the MCP endpoint and the
## model proxy, each against its fast tests, then the score of each path; slow, so not part
## of `make test`. Some groups: make mutation MUTATION_GROUPS="bundle erasure". Other paths:
##   make mutation MUTATE="src/wopeval/engine/runlog/fence.py" MUTATION_TESTS="tests/unit/engine"
mutation: $(MUTATION_INSTALLED)
	$(BIN)/python scripts/mutation.py $(if $(MUTATE),--mutate $(MUTATE) --tests $(MUTATION_TESTS)) \
		$(foreach group,$(MUTATION_GROUPS),--group $(group)) \
		$(if $(MUTATION_JOBS),--jobs $(MUTATION_JOBS))

## reference: regenerate docs/reference.md (every field of wopeval.toml, workflow and suite
## files) from the models the host validates with; tests/unit/test_reference.py fails until it is
reference: install
	$(BIN)/python scripts/reference.py

## format: rewrite the code in the house style
format: install
	$(BIN)/ruff format
	$(BIN)/ruff check --fix

clean:
	rm -rf $(VENV) $(FRAMEWORK_VENVS) .mypy_cache .ruff_cache .pytest_cache .hypothesis .mutation
