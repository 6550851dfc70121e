# The two commands a new user runs: `make run` and `make test`.
GO      ?= go
PKGS    ?= ./...
FUZZTIME ?= 10s

.PHONY: run test build lint fuzz certify-memory certify-hetzner clean

## run: embedded NATS, every service and the Hetzner emulator on loopback (Ctrl-C stops)
run:
	$(GO) run ./cmd/compute up

## test: every test, with the race detector
test:
	$(GO) test -race -count=1 $(PKGS)

## build: the compute binary in ./bin
build:
	CGO_ENABLED=0 $(GO) build -trimpath -o bin/compute ./cmd/compute

## lint: gofmt and go vet must be clean
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)

## fuzz: run every fuzz target for FUZZTIME each
fuzz:
	@for pkg in $$($(GO) list $(PKGS)); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg 2>/dev/null | grep '^Fuzz'); do \
	    echo "== $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
	  done; \
	done

clean:
	rm -rf bin data
