# Ponder: `make run` starts the app, `make test` runs every test tier.
# Both install what is missing first (scripts/setup.sh), and are quiet when it is all there.

CARGO ?= cargo
export PONDER_TEST_MODELS ?= $(HOME)/.cache/ponder/test-models
TARGET_DIR := $(or $(CARGO_TARGET_DIR),target)

.PHONY: run test setup setup-run ui app build test-rust test-ui test-browser test-e2e clean

run: setup-run build
	$(TARGET_DIR)/release/ponder-app

test: setup build
	$(MAKE) --no-print-directory test-rust test-ui test-browser test-e2e

setup:
	@bash scripts/setup.sh

setup-run:
	@bash scripts/setup.sh --run

ui:
	cd ui && npm run --silent build

# One release build for everything: the app, the CLI and the tests share its artifacts.
build: ui
	$(CARGO) build --release --workspace --bins

test-rust:
	$(CARGO) test --release --workspace

test-ui:
	cd ui && npx tsc --noEmit && npx vitest run

test-browser: ui
	cd ui && node --test tests/browser/

test-e2e:
	node --test --test-concurrency=1 tests/e2e/

clean:
	$(CARGO) clean
	rm -rf ui/dist test-output
