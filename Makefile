# The two commands a new user runs: `make run` and `make test`.
GO      ?= go
PKGS    ?= ./...
FUZZTIME ?= 10s
GOLANGCI_VERSION = v2.15.0
GOLANGCI_LINT = bin/golangci-lint-$(GOLANGCI_VERSION)

.PHONY: run test build lint fuzz certify-memory certify-hetzner certify-proxmox certify-hetzner-robot clean images compose-up compose-down test-compose console-screenshots

## run: embedded NATS, every service and the Hetzner Cloud and Proxmox VE emulators on loopback (Ctrl-C stops)
run: build
	./bin/compute up

## test: every test, with the race detector
test:
	$(GO) test -race -count=1 -timeout 30m $(PKGS)

## build: the compute binary in ./bin
build:
	CGO_ENABLED=0 $(GO) build -trimpath -o bin/compute ./cmd/compute

## lint: gofmt, go vet and golangci-lint (.golangci.yml) must be clean
lint: $(GOLANGCI_LINT)
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GOLANGCI_LINT) run $(PKGS)

# The pinned golangci-lint (GOLANGCI_VERSION, at the top), installed into
# ./bin under a name that carries its version: a missing or other version
# installs it, the next run reuses it. A cold install (fresh GOBIN) took 8 s
# here with the Go module and build caches warm; a clean CI runner also
# downloads and compiles the linter's modules (not measured here, expect
# longer): cache GOMODCACHE, GOCACHE and ./bin between runs.
$(GOLANGCI_LINT):
	GOBIN=$(CURDIR)/bin $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_VERSION)
	mv bin/golangci-lint $@

## fuzz: run every fuzz target for FUZZTIME each
fuzz:
	@for pkg in $$($(GO) list $(PKGS)); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg 2>/dev/null | grep '^Fuzz'); do \
	    echo "== $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
	  done; \
	done

## certify-<provider>: the conformance program, credential-free (emulator, provider and secrets in-process);
## prints VERDICT: … and CERTIFIED: <provider> passed … (or fails naming the first failing behaviour);
## report.json and junit.xml in conformance-report/<provider>. PROFILE=core,cloud,… chooses profiles,
## PORT=… the emulator's loopback port, SEED_COUNT=… the machines seeded for the scale lane.
PROFILE ?=
PORT ?=
SEED_COUNT ?=
CERTIFY_FLAGS = $(if $(PROFILE),--profile $(PROFILE)) $(if $(PORT),--port $(PORT)) $(if $(SEED_COUNT),--seed-count $(SEED_COUNT))
certify-memory certify-hetzner certify-proxmox certify-hetzner-robot: certify-%:
	$(GO) run ./cmd/compute certify --provider $* --fake $(CERTIFY_FLAGS)

## report-<provider>: the same run under the name of BigFleet's page (make report-hetzner PROFILE=core,cloud)
report-%:
	$(GO) run ./cmd/compute certify --provider $* --fake $(CERTIFY_FLAGS)

## console-screenshots: rewrite docs/console/*.png from the console's browser tests (needs chromium)
console-screenshots:
	$(GO) test -count=1 -run 'TestBrowser' ./services/console -update

clean:
	rm -rf bin data reports conformance-report

# --- docker compose: a 3-node NATS cluster and every service (deploy/compose.yaml)

# `docker compose` (v2) when the engine has it, else docker-compose (v1.29+).
COMPOSE ?= $(shell docker compose version >/dev/null 2>&1 && echo "docker compose" || echo docker-compose)
COMPOSE_PROJECT ?= compute
COMPOSE_ARGS = -p $(COMPOSE_PROJECT) -f deploy/compose.yaml --env-file deploy/.env
IMAGES = better-compute/compute:local better-compute/nats-server:local
NATS_VERSION = $(shell $(GO) list -m -f '{{.Version}}' github.com/nats-io/nats-server/v2)
CA_BUNDLE ?= /etc/ssl/certs/ca-certificates.crt

## images: the compute and nats-server images, FROM scratch, from static binaries built here
images:
	@mkdir -p deploy/build/empty
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags='-s -w' -o deploy/build/compute ./cmd/compute
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags='-s -w' -o deploy/build/nats-server github.com/nats-io/nats-server/v2
	@cmp -s $(CA_BUNDLE) deploy/build/ca-certificates.crt || cp $(CA_BUNDLE) deploy/build/ca-certificates.crt
	docker build -q -f deploy/compute.Dockerfile -t better-compute/compute:local deploy/build
	docker build -q -f deploy/nats.Dockerfile -t better-compute/nats-server:local \
	  -t better-compute/nats-server:$(NATS_VERSION) deploy/build

deploy/.env:
	sh deploy/gen-env.sh $@

# the TLS certificates, also for a deploy/.env written before they existed
deploy/tls/ca.pem:
	sh deploy/gen-env.sh deploy/.env

## compose-up: start the stack in the background (builds the images if missing; writes deploy/.env and deploy/tls once)
compose-up: deploy/.env deploy/tls/ca.pem
	@docker image inspect $(IMAGES) >/dev/null 2>&1 || $(MAKE) images
	$(COMPOSE) $(COMPOSE_ARGS) up -d

## compose-down: stop and remove the containers and network; volumes stay (DOWN_ARGS=-v drops them too)
compose-down:
	@[ -e deploy/.env ] || { echo "no deploy/.env: nothing was started with make compose-up"; exit 0; } && \
	  $(COMPOSE) $(COMPOSE_ARGS) down --remove-orphans $(DOWN_ARGS)

## test-compose: the compose stack: walkthrough, scale-out, node loss, rolling and cluster restarts (Docker; ~10 min)
test-compose:
	@if docker info >/dev/null 2>&1; then $(MAKE) --no-print-directory images; \
	  else echo "test-compose: no Docker engine reachable: no images built, the test skips"; fi
	COMPUTE_COMPOSE_TEST=1 COMPOSE="$(COMPOSE)" $(GO) test -count=1 -v -timeout 25m ./deploy/composetest/
