# gpushare.cluster — developer and CI entry points.
# `make demo` plans the bundled example inventory; `make test` runs every check CI runs.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

PYTHON ?= python3.11
VENV := $(CURDIR)/.venv
BIN := $(VENV)/bin
BUILD := $(CURDIR)/build
COLLECTIONS := $(BUILD)/collections
COLLECTION_LINK := $(COLLECTIONS)/ansible_collections/gpushare/cluster
VERSION := $(shell sed -n 's/^version: *//p' galaxy.yml)

# System packages the tests need (Debian/Ubuntu names) and the commands proving they are there:
# podman, runc, debootstrap for Molecule images; promtool for rules; chromium for the report;
# shellcheck for sanity; dpkg-dev and gpg for the local apt mirror; skopeo and
# docker-registry for the mirror sync tests; qemu for the real-kernel VM (molecule/vm); iptables
# and nftables for the reset's packet filter cleanup (run in a network namespace of its own).
SYSTEM_PACKAGES := podman runc debootstrap prometheus chromium fonts-dejavu-core shellcheck dpkg-dev gpg skopeo docker-registry qemu-system-x86 qemu-utils iptables nftables
SYSTEM_COMMANDS := podman runc debootstrap promtool chromium shellcheck dpkg-scanpackages gpg skopeo docker-registry qemu-system-x86_64 qemu-img iptables-restore nft

export PATH := $(BIN):$(PATH)
export ANSIBLE_COLLECTIONS_PATH := $(COLLECTIONS)
export CONTAINERS_CONF := $(CURDIR)/molecule/_shared/containers.conf
export GPUSHARE_REFERENCE_DIR ?= $(abspath $(CURDIR)/../shared/reference)
export ANSIBLE_NOCOLOR := 1
export PY_COLORS := 0

# The rehearsal's control-plane binaries are built from roles/rehearsal/files/go into a cache
# outside the repository, keyed by every version (a second build builds nothing).
REHEARSAL_GO_DIR := $(CURDIR)/roles/rehearsal/files/go
REHEARSAL_CACHE ?= $(HOME)/.cache/gpushare/rehearsal
export GPUSHARE_REHEARSAL_CACHE := $(REHEARSAL_CACHE)

# Molecule scenarios: every molecule/<name>/molecule.yml except the shared base, the
# delegated `cluster` scenario, which needs real machines (docs/testing.md), and the real-kernel
# `vm` scenario, which `make test` runs as a step of its own (`ci-vm-test`).
MOLECULE_SCENARIOS ?= $(filter-out _shared cluster vm,$(notdir $(patsubst %/molecule.yml,%,$(wildcard molecule/*/molecule.yml))))

.PHONY: help deps venv collection-link build demo lint sanity unit integration images vm-image vm-test suites molecule test clean rehearsal-binaries rehearsal rehearsal-test collect

help: ## Show the targets
	@awk -F ':.*## ' '/^[a-z-]+:.*## / {printf "  %-16s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

deps: ## Install the system packages the tests need (root), or say which are missing
	@missing=""; \
	for cmd in $(SYSTEM_COMMANDS); do command -v $$cmd >/dev/null 2>&1 || missing="$$missing $$cmd"; done; \
	if [ -z "$$missing" ]; then echo "deps: system packages present"; exit 0; fi; \
	if [ "$$(id -u)" -ne 0 ]; then \
	  echo "deps: missing commands:$$missing"; \
	  echo "deps: as root run: apt-get update && apt-get install -y $(SYSTEM_PACKAGES)"; exit 1; \
	fi; \
	echo "deps: installing$$missing"; \
	apt-get update -qq; \
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(SYSTEM_PACKAGES) >/dev/null

venv: $(VENV)/.installed ## Create .venv with the pinned Python requirements

$(VENV)/.installed: requirements.txt
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --upgrade 'pip>=24'
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements.txt
	@touch $@

collection-link: ## Make the checkout importable as gpushare.cluster
	@mkdir -p $(dir $(COLLECTION_LINK))
	@ln -sfn ../../../.. $(COLLECTION_LINK)

build: venv ## Build the collection tarball into build/
	@mkdir -p $(BUILD)
	$(BIN)/ansible-galaxy collection build --force --output-path $(BUILD) .

demo: venv collection-link ## Plan the bundled example inventory (no host is touched)
	@test -f playbooks/plan.yml || { echo "demo: playbooks/plan.yml is not part of this checkout yet" >&2; exit 1; }
	$(BIN)/ansible-playbook -i inventories/example playbooks/plan.yml

lint: venv collection-link ## yamllint, ansible-lint (production profile) and every test module imported
	$(BIN)/yamllint --strict .
	@# ansible-lint looks first in $$ANSIBLE_HOME/collections (~/.ansible), where an earlier
	@# install may have left a copy of this collection that would shadow the checkout.
	ANSIBLE_HOME=$(BUILD)/ansible-home $(BIN)/ansible-lint --strict
	$(MAKE) --no-print-directory collect

# Every suite's modules imported, no test run: a broken import between test modules fails here in
# seconds rather than after the rehearsal's binaries are built. One pytest per suite, as the
# suites are run, since their modules share basenames.
collect: venv collection-link ## Import every test module of each suite (pytest --collect-only)
	@mkdir -p $(BUILD)
	@for suite in "tests/unit" "$(INTEGRATION_TESTS)" "tests/integration/rehearsal tests/integration/etcd_backup"; do \
	  echo "collect: $$suite"; \
	  $(BIN)/python -m pytest $$suite --collect-only -q -p no:cacheprovider > $(BUILD)/collect.log 2>&1 \
	    || { cat $(BUILD)/collect.log; exit 1; }; \
	done

sanity: venv ## ansible-test sanity from a temporary ansible_collections tree
	bash tools/sanity.sh

unit: venv collection-link ## Unit tests: the Python code in-process, no playbook, server or browser (tests/unit, seconds)
	$(BIN)/python -m pytest tests/unit -q -p no:cacheprovider

# Integration tests that need no Go-built binaries: playbooks and roles run by ansible-playbook
# on localhost, promtool and Prometheus, headless Chromium, a local registry and skopeo.
INTEGRATION_TESTS := $(filter-out tests/integration/rehearsal tests/integration/etcd_backup,$(wildcard tests/integration/*))

integration: venv collection-link ## Integration tests: ansible-playbook, Prometheus, Chromium, registry (tests/integration, minutes)
	$(BIN)/python -m pytest $(INTEGRATION_TESTS) -q -rs -p no:cacheprovider

images: deps ## Build the Molecule systemd images (cached)
	bash tools/build-images.sh

vm-image: deps ## Build the real-kernel test VM's disk image (cached outside the repository)
	bash tools/vm-image.sh >/dev/null

vm-test: venv collection-link vm-image ## host_prep on a real kernel: molecule/vm (qemu, software emulation)
	$(BIN)/molecule test -s vm

suites: ## The unit, integration and rehearsal tests in turn (what `make test` runs beside the VM); fails if any fails
	@rc=0; \
	$(MAKE) --no-print-directory unit || rc=$$?; \
	$(MAKE) --no-print-directory integration || rc=$$?; \
	$(MAKE) --no-print-directory rehearsal-test || rc=$$?; \
	exit $$rc

molecule: venv collection-link images ## Run every container Molecule scenario (the real-kernel VM: make vm-test)
	@for scenario in $(MOLECULE_SCENARIOS); do \
	  echo "== molecule test -s $$scenario"; \
	  start=$$(date +%s); \
	  $(BIN)/molecule test -s $$scenario; \
	  echo "== molecule $$scenario: $$(( $$(date +%s) - start )) s"; \
	done

# The build needs only Go and Python's standard library, so the machine's Python runs it, before
# (or while) the venv is made.
rehearsal-binaries: collection-link ## Build etcd, kube-*, Kueue and kwok for the rehearsal (cached by version)
	PYTHONPATH=$(COLLECTIONS) $(PYTHON) tools/rehearsal.py build $(REHEARSAL_GO_DIR) $(REHEARSAL_CACHE)

rehearsal: venv collection-link rehearsal-binaries ## Rehearse the worked day of inventories/example on a real control plane (docs/rehearsal.md)
	$(BIN)/ansible-playbook -i inventories/example playbooks/rehearse.yml -e gpushare_plan_dir=$(BUILD)/plan $(REHEARSAL_ARGS)

rehearsal-test: rehearsal-binaries ## Test on the rehearsal's real control plane and etcd (tests/integration/rehearsal, etcd_backup)
	$(BIN)/python -m pytest tests/integration/rehearsal tests/integration/etcd_backup -q -rs -p no:cacheprovider $(REHEARSAL_XDIST)

install-check: build ## Install the built tarball and list its plugins with ansible-doc
	bash tools/install-check.sh $(BUILD)/gpushare-cluster-$(VERSION).tar.gz

# `make test`: every check CI runs, as one dependency graph of three lanes run with
# `make -j3 -k -Otarget`, so what waits overlaps and each step's output is printed whole when it ends:
#   rehearsal: the Go build of the rehearsal binaries, then the rehearsal tests (two xdist workers:
#              they mostly wait on the control plane), then lint, sanity and install-check;
#   checks:    venv (after the system packages), unit, integration (the longest suite, so nothing
#              waits behind it);
#   hosts:     the Molecule and VM images (debootstrap), the VM scenario.
# The container scenarios then come from one queue (tools/scenario_queue.sh): every lane, once its
# own steps are done, takes the next scenario nobody has taken, so they overlap with the slowest lane.
# The Go build starts at once (Go is part of the machine) while apt, pip and debootstrap mostly wait
# on the network; the rehearsal lane runs at normal priority and the other two under `nice`, so the
# two cores go to the critical path first and to the rest whenever it waits. Each step is timed by
# tools/steps.sh; the run ends with the table of each step's start, wall and CPU time and the 15
# slowest tests of each pytest suite (build/junit).
STEP = bash tools/steps.sh run
NICE = nice -n 10
PYTEST_SUITE = $(BIN)/python -m pytest -q -rs -p no:cacheprovider --durations=15
REHEARSAL_XDIST = -n 2 --dist loadscope

test: ## Everything CI runs, ending with the table of each step's wall and CPU time
	@bash tools/steps.sh begin
	@rm -rf $(MOLECULE_QUEUE)
	@rc=0; $(MAKE) --no-print-directory -j3 -k -Otarget ci || rc=$$?; bash tools/steps.sh table; exit $$rc

.PHONY: ci ci-deps ci-venv ci-lint ci-sanity ci-unit ci-integration ci-rehearsal-binaries ci-rehearsal-test \
	ci-images ci-vm-image ci-vm-test ci-install-check ci-molecule-rehearsal ci-molecule-checks ci-molecule-hosts

ci: ci-molecule-rehearsal ci-molecule-checks ci-molecule-hosts

# rehearsal lane
ci-rehearsal-binaries:
	@$(STEP) rehearsal-binaries $(MAKE) --no-print-directory rehearsal-binaries
ci-rehearsal-test: ci-rehearsal-binaries ci-venv
	@$(STEP) rehearsal-test $(PYTEST_SUITE) $(REHEARSAL_XDIST) tests/integration/rehearsal tests/integration/etcd_backup \
	  --junitxml=$(BUILD)/junit/rehearsal.xml
# lint, sanity and install-check need only the venv; they follow the rehearsal tests, which end
# well before integration does, instead of adding their 400 s after integration's end.
ci-lint: ci-rehearsal-test ci-venv
	@$(STEP) lint $(NICE) $(MAKE) --no-print-directory lint
ci-sanity: ci-lint
	@$(STEP) sanity $(NICE) $(MAKE) --no-print-directory sanity
ci-install-check: ci-sanity
	@$(STEP) install-check $(NICE) $(MAKE) --no-print-directory install-check

# checks lane
ci-deps:
	@$(STEP) deps $(MAKE) --no-print-directory deps
ci-venv: ci-deps
	@$(STEP) venv $(NICE) $(MAKE) --no-print-directory venv collection-link
ci-unit: ci-venv
	@$(STEP) unit $(NICE) $(PYTEST_SUITE) tests/unit --junitxml=$(BUILD)/junit/unit.xml
ci-integration: ci-unit
	@$(STEP) integration $(NICE) $(PYTEST_SUITE) $(INTEGRATION_TESTS) --junitxml=$(BUILD)/junit/integration.xml

# hosts lane
ci-images: ci-deps
	@$(STEP) molecule-images $(NICE) bash tools/build-images.sh
ci-vm-image: ci-images
	@$(STEP) vm-image $(NICE) bash tools/vm-image.sh >/dev/null
ci-vm-test: ci-vm-image ci-venv
	@$(STEP) vm-test $(NICE) $(BIN)/molecule test -s vm

# The container scenarios, each a step, from the queue every lane takes from once its own steps are
# done (they share the Molecule image, so each waits for it and for the venv).
MOLECULE_QUEUE := $(BUILD)/molecule-queue
SCENARIO_QUEUE = bash tools/scenario_queue.sh $(MOLECULE_QUEUE) $(BIN)/molecule $(MOLECULE_SCENARIOS)
ci-molecule-rehearsal: ci-install-check ci-images
	@$(SCENARIO_QUEUE)
ci-molecule-checks: ci-integration ci-images
	@$(SCENARIO_QUEUE)
ci-molecule-hosts: ci-vm-test
	@$(SCENARIO_QUEUE)

clean: ## Remove build output (keeps .venv)
	rm -rf $(BUILD)
