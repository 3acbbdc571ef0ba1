# LM Warden — the two commands: `make run` and `make test`. Everything else is a step of those.
BUILD      ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?= request sse prometheus usage config kv_events
JOBS       ?= $(shell nproc)
CMAKE_FLAGS = -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo

# Let ccache share objects between checkouts in different folders (CI clones afresh each run).
export CCACHE_BASEDIR := $(CURDIR)
export CCACHE_NOHASHDIR := 1
# The build uses precompiled headers (cmake/warden.cmake); ccache caches such compiles only when told to
# ignore the header's __DATE__/__TIME__ and -D differences it cannot see through.
export CCACHE_SLOPPINESS := pch_defines,time_macros

.PHONY: all setup build build-asan build-fuzz test test-unit test-asan fuzz run bench bench-wardens deb format clean

all: build

setup:
	@bash scripts/setup.sh

$(BUILD)/build.ninja:
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS)

build: setup $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)

$(ASAN_BUILD)/build.ninja:
	cmake -S . -B $(ASAN_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Debug -DWARDEN_SANITIZE=ON -DWARDEN_PURE_ONLY=ON

# The pure layers' unit tests again under AddressSanitizer + UndefinedBehaviorSanitizer.
build-asan: setup $(ASAN_BUILD)/build.ninja
	cmake --build $(ASAN_BUILD) -j $(JOBS)

# The fuzz targets of fuzz/ with clang and libFuzzer (the pure libraries instrumented, ASan + UBSan).
$(FUZZ_BUILD)/build.ninja:
	CC=clang CXX=clang++ cmake -S . -B $(FUZZ_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWARDEN_FUZZ=ON

build-fuzz: setup $(FUZZ_BUILD)/build.ninja
	cmake --build $(FUZZ_BUILD) -j $(JOBS) --target fuzz_targets

# Each target for FUZZ_SECONDS on its corpus (fuzz/corpus/NAME, merged back only with FUZZ_MERGE=1).
fuzz: build-fuzz
	@bash scripts/fuzz.sh $(FUZZ_BUILD) $(FUZZ_SECONDS) $(FUZZ_TARGETS)

test-asan: build-asan
	ctest --test-dir $(ASAN_BUILD) --output-on-failure -j $(JOBS) -L unit

test-unit: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS) -L unit

# Every test: format check, unit (with one pass of each fuzz target over its corpus), integration (real
# processes on 127.0.0.1), SDK and browser tests, ASan+UBSan.
test: build build-asan
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)
	ctest --test-dir $(ASAN_BUILD) --output-on-failure -j $(JOBS) -L unit

# Starts the demo: simulated replicas, the warden and its console (WARDENS=2: a second warden on the same
# replicas, sharing conversation homes through a local redis-server; PRESET=rtx5090-qwen3.6-27b REPLICAS=7:
# another engine preset and number of ranks). Builds only the binary it runs, not the tests and benchmarks.
run: setup $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS) --target lm-warden
	@TIME_SCALE=$(TIME_SCALE) WARDENS=$(WARDENS) ENGINE_ARGS="$(ENGINE_ARGS)" PRESET=$(PRESET) REPLICAS=$(REPLICAS) \
	  bash scripts/run-demo.sh $(BUILD)/lm-warden

bench: build
	@for b in $(BUILD)/bench/*_bench; do echo "== $$b"; $$b; done

# `lm-warden bench` against one warden, then over two sharing homes through Redis, side by side (a few
# minutes: LEVELS, DURATION, TIME_SCALE, SEED or SEEDS (medians over several seeds), OUT as in
# scripts/bench-wardens.sh).
bench-wardens: build
	@bash scripts/bench-wardens.sh $(BUILD)/lm-warden

# The Debian package (binary, systemd unit, /etc/lm-warden/warden.yaml, dashboards): docs/deployment.md.
deb: setup $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS) --target lm-warden
	@bash scripts/make-deb.sh $(BUILD)

format:
	@git ls-files -co --exclude-standard 'src/*.[ch]pp' 'tests/*.[ch]pp' 'bench/*.[ch]pp' 'fuzz/*.[ch]pp' | xargs -r clang-format -i

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD)
