# Strata: `make demo` and `make test` set up a fresh Debian 12 machine (missing packages are
# installed with apt-get), build, and run the demo or the whole test suite.

SHARED   ?= $(abspath ../shared)
MODEL    ?= $(SHARED)/models/stories260K/stories260K.gguf
PROMPT   ?= Once upon a time
JOBS     ?= $(shell nproc)
BUILD    ?= build/release
ASAN_BUILD ?= build/asan
TSAN_BUILD ?= build/tsan
E2E_DIR  := tests/e2e
E2E_STAMP := $(E2E_DIR)/node_modules/.installed
E2E_RUN  = cd $(E2E_DIR) && STRATA_BIN=$(abspath $(BUILD))/strata STRATA_SHARED=$(SHARED) \
           node --test --test-concurrency=1 *.test.mjs

DEB_PACKAGES := build-essential cmake g++ pkg-config libcpp-httplib-dev nlohmann-json3-dev \
                libcli11-dev libgtest-dev libgmock-dev libbenchmark-dev libssl-dev python3 \
                python3-jinja2 python3-regex python3-jsonschema unicode-data clang curl nodejs chromium

# The aarch64 test build (make test-arm) only: cross compiler and user-mode emulator.
ARM_DEB_PACKAGES := g++-aarch64-linux-gnu qemu-user-static
ARM_BUILD ?= build/arm

SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: setup configure build build-strata demo test test-sanitize build-sanitize test-tsan build-tsan fuzz \
        format clean test-e2e setup-arm test-arm

setup:
	@missing=""; for p in $(DEB_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing"; \
	  $(SUDO) apt-get update -q && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -q $$missing; \
	fi

setup-arm: setup
	@missing=""; for p in $(ARM_DEB_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing"; \
	  $(SUDO) apt-get update -q && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -q $$missing; \
	fi

# The kernel layers (core, formats, quant, backend) cross-compiled for aarch64 and their tests
# run under qemu-user (CPU "max": NEON, DotProd and I8MM, so every per-level test runs). Not part
# of `make test`: emulation makes it several times slower.
test-arm: setup-arm
	cmake -S . -B $(ARM_BUILD) -DCMAKE_BUILD_TYPE=Release -DSTRATA_SHARED_DIR=$(SHARED) \
	  -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake -DSTRATA_KERNELS_ONLY=ON
	cmake --build $(ARM_BUILD) -j $(JOBS)
	cd $(ARM_BUILD) && STRATA_SHARED=$(SHARED) ctest --output-on-failure -j $(JOBS)

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DSTRATA_SHARED_DIR=$(SHARED)

configure: setup $(BUILD)/CMakeCache.txt

# Everything: the binary, the test suites and the micro-benchmarks.
build: configure
	cmake --build $(BUILD) -j $(JOBS)

# The demo needs only the `strata` binary.
build-strata: configure
	cmake --build $(BUILD) -j $(JOBS) --target strata

demo: build-strata
	$(BUILD)/strata run -m "$(MODEL)" -p "$(PROMPT)" -n 200 --temp 0.8 --seed 42

# The line saying which kernel ISA levels this CPU let the tests cover (the last line of a run).
ISA_LINE = $(1)/tests/test_backend --gtest_filter='IsaCoverage.*' | grep '^ISA levels tested'

test: build $(E2E_STAMP)
	cd $(BUILD) && STRATA_SHARED=$(SHARED) ctest --output-on-failure -j $(JOBS)
	$(E2E_RUN)
	@$(call ISA_LINE,$(BUILD))

# End-to-end tests of `strata serve` with the official openai npm package (Node's test runner);
# the packages come from tests/e2e/package-lock.json (npm ci), nothing else is downloaded.
test-e2e: build $(E2E_STAMP)
	$(E2E_RUN)

$(E2E_STAMP): $(E2E_DIR)/package-lock.json | setup
	cd $(E2E_DIR) && npm ci --no-audit --no-fund
	touch $@

build-sanitize: setup
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSTRATA_SANITIZE=ON \
	  -DSTRATA_SHARED_DIR=$(SHARED)
	cmake --build $(ASAN_BUILD) -j $(JOBS)

test-sanitize: build-sanitize
	cd $(ASAN_BUILD) && STRATA_SHARED=$(SHARED) ctest --output-on-failure -j $(JOBS)
	@$(call ISA_LINE,$(ASAN_BUILD))

# ThreadSanitizer over the multi-threaded layers: the engine's step loop and the HTTP server.
build-tsan: setup
	cmake -S . -B $(TSAN_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSTRATA_TSAN=ON \
	  -DSTRATA_SHARED_DIR=$(SHARED)
	cmake --build $(TSAN_BUILD) -j $(JOBS) --target test_engine test_server

# A race report fails its test at once; tests/tsan.supp says what is not reported and why.
TSAN_RUN_OPTIONS ?= halt_on_error=1 second_deadlock_stack=1 suppressions=$(abspath tests/tsan.supp)

test-tsan: build-tsan
	cd $(TSAN_BUILD) && STRATA_SHARED=$(SHARED) TSAN_OPTIONS="$(TSAN_RUN_OPTIONS)" \
	  ctest --output-on-failure -j $(JOBS) -L '^(engine|server)$$'

fuzz: setup
	CC=clang CXX=clang++ cmake -S . -B build/fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DSTRATA_SANITIZE=ON -DSTRATA_FUZZ=ON -DSTRATA_BUILD_TESTS=OFF
	cmake --build build/fuzz -j $(JOBS) --target fuzz_all

format:
	find src tests bench fuzz -name '*.cpp' -o -name '*.h' | xargs clang-format -i

clean:
	rm -rf build
