# Ponder: `make run` starts the app, `make test` runs every test tier.
# Both install what is missing first (scripts/setup.sh), and are quiet when it is all there.

CARGO ?= cargo
export PONDER_TEST_MODELS ?= $(HOME)/.cache/ponder/test-models
TARGET_DIR := $(or $(CARGO_TARGET_DIR),target)

.PHONY: run test setup setup-run ui app build package bindings lint test-rust test-ui test-browser test-e2e test-package fuzz bench bench-app soak clean

run: setup-run build
	$(TARGET_DIR)/release/ponder-app

test: setup build
	$(MAKE) --no-print-directory lint test-rust test-ui test-browser test-e2e test-package

setup:
	@bash scripts/setup.sh

setup-run:
	@bash scripts/setup.sh --run

ui:
	cd ui && npm run --silent build

# One release build for everything: the app, the CLI and the tests share its artifacts.
build: ui
	$(CARGO) build --release --workspace --bins --examples

# The Debian package (target/release/bundle/deb/Ponder_<version>_amd64.deb): the app, the
# `ponder` CLI, the desktop entry and icons, with dependencies read from the binaries.
package: build
	@bash scripts/package.sh

# The tree's habits, checked first so that a slip fails in a minute: one format, no clippy
# warnings (unsafe blocks each with a SAFETY comment, see Cargo.toml's lints), and module imports
# that point one way only.
lint:
	$(CARGO) fmt --all --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	python3 scripts/check-module-cycles.py

# The window's TypeScript types (ui/src/lib/bindings.ts), generated from the Rust types; a test
# in test-rust fails while the file is stale.
bindings:
	PONDER_WRITE_BINDINGS=1 $(CARGO) test --release -p ponder-app --lib bindings

# Inside a D-Bus session with a keyring of its own (the app's key storage is tested for real).
test-rust:
	dbus-run-session -- scripts/with-keyring.sh $(CARGO) test --release --workspace

test-ui:
	cd ui && npx tsc --noEmit && npx svelte-check --tsconfig ./tsconfig.json --fail-on-warnings && npx vitest run

test-browser: ui
	cd ui && node --test tests/browser/

test-e2e:
	node --test --test-concurrency=1 tests/e2e/

# Packs what `make build` built (as test-e2e, it does not build first: a second `make build`
# would rebuild the app around a freshly built UI), installs the package with apt-get (as root or
# through sudo, replacing an installed `ponder`), opens the installed app in a new user's home
# under Xvfb, then removes the package.
test-package:
	@bash scripts/package.sh
	node --test tests/package/

# Coverage-guided fuzzing of the question-file readers and the answer checker (not part of
# `make test`, which replays the corpus and mutations of it in crates/jobs/tests/fuzz_smoke.rs).
FUZZ_SECONDS ?= 60
fuzz:
	@command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
	cd fuzz && for t in read_file equivalence; do \
	  RUSTC_BOOTSTRAP=1 cargo fuzz run $$t -- -max_total_time=$(FUZZ_SECONDS) || exit 1; done

# Engine speed on the 1.5B test model with 2 threads (medians of 3 runs), as JSON: once with
# candle's K-quant kernels (the baseline), once with Ponder's (the default); peak memory with
# eight 4,096-token contexts, f16 cache then 8-bit cache, each in a run that does little else;
# prefill and 16 sequences against the engine issue 18 measured, in turns
# (scripts/bench-baseline.py, which builds that commit's CLI once); then the kernels alone on
# real weights (the 1.5B's K-quants, the 0.5B's Q5_0 and Q8_0), decode attention at depth, and
# the CPU's vpdpbusd rate beside each instruction the kernels add (criterion).
bench: setup
	$(CARGO) build --release -p ponder-cli
	$(TARGET_DIR)/release/ponder --threads 2 --model $(PONDER_TEST_MODELS)/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf bench --json --kernels candle
	$(TARGET_DIR)/release/ponder --threads 2 --model $(PONDER_TEST_MODELS)/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf bench --json --kernels ponder
	for kv in f16 q8_0; do $(TARGET_DIR)/release/ponder --threads 2 --model $(PONDER_TEST_MODELS)/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf bench --json --kv-cache $$kv --runs 1 --batch 1 --depths 0 --speculative-tokens 0 || exit 1; done
	python3 scripts/bench-baseline.py $(TARGET_DIR)/release/ponder $(PONDER_TEST_MODELS)/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf
	$(CARGO) bench -p ponder-engine --bench kquants
	$(CARGO) bench -p ponder-engine --bench legacy_quants
	$(CARGO) bench -p ponder-engine --bench attention
	$(CARGO) bench -p ponder-engine --bench vector_ports
	$(CARGO) bench -p ponder-jobs --bench read_file
	$(MAKE) --no-print-directory bench-app

# The app's chat in the real window against `ponder bench`'s single-stream rate on the same model,
# in turns (a bench run before each reply, as this machine's speed drifts), and the window's web
# process's share of a core while ~1,000-token replies stream (tests/e2e/stream-speed.mjs;
# medians of 3, as JSON).
bench-app: setup build
	node tests/e2e/stream-speed.mjs

# `ponder serve` on the 0.5B test model under 1,000 chat requests at concurrency 16, a tenth of
# them streaming clients that hang up early: no error but the intended 503s, and resident memory
# at the end within 10 % of after the first hundred (scripts/soak.py; `make test` runs 96).
SOAK_REQUESTS ?= 1000
soak: setup
	$(CARGO) build --release -p ponder-cli
	python3 scripts/soak.py --ponder $(TARGET_DIR)/release/ponder --model $(PONDER_TEST_MODELS)/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf --requests $(SOAK_REQUESTS)

clean:
	$(CARGO) clean
	rm -rf ui/dist test-output
