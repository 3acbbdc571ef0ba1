# LM Warden — the two commands: `make run` and `make test`. Everything else is a step of those.
BUILD      ?= build
ASAN_BUILD ?= build-asan
JOBS       ?= $(shell nproc)
CMAKE_FLAGS = -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo

# Let ccache share objects between checkouts in different folders (CI clones afresh each run).
export CCACHE_BASEDIR := $(CURDIR)
export CCACHE_NOHASHDIR := 1

.PHONY: all setup build build-asan test test-unit test-asan run bench format clean

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

test-asan: build-asan
	ctest --test-dir $(ASAN_BUILD) --output-on-failure -j $(JOBS) -L unit

test-unit: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS) -L unit

# Every test: format check, unit, integration (real processes on 127.0.0.1), SDK and browser tests, ASan+UBSan.
test: build build-asan
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)
	ctest --test-dir $(ASAN_BUILD) --output-on-failure -j $(JOBS) -L unit

# Starts the demo: simulated replicas, the warden and its console.
run: build
	@TIME_SCALE=$(TIME_SCALE) bash scripts/run-demo.sh $(BUILD)/lm-warden

bench: build
	@for b in $(BUILD)/bench/*_bench; do echo "== $$b"; $$b; done

format:
	@git ls-files -co --exclude-standard 'src/*.[ch]pp' 'tests/*.[ch]pp' 'bench/*.[ch]pp' | xargs -r clang-format -i

clean:
	rm -rf $(BUILD) $(ASAN_BUILD)
