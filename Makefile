# The two commands of the README. Everything else is meson.
#   make demo   bootstrap, build, run the demo on built-in defaults
#   make test   bootstrap, build, run every test
BUILD ?= build
MESON_FLAGS ?=

.PHONY: all build bootstrap demo test test-asan bench fuzz clean format

all: build

bootstrap:
	@scripts/bootstrap

$(BUILD)/build.ninja:
	meson setup $(BUILD) $(MESON_FLAGS)

build: bootstrap $(BUILD)/build.ninja
	@ninja -C $(BUILD) >/dev/null || ninja -C $(BUILD)

demo: build
	@$(BUILD)/paddock demo

test: build
	@tests/run --build $(BUILD)

test-asan: bootstrap
	@[ -f build-asan/build.ninja ] || meson setup build-asan -Db_sanitize=address,undefined -Db_lundef=false
	@ninja -C build-asan >/dev/null || ninja -C build-asan
	@tests/run --build build-asan

bench: build
	@bench/run $(BUILD)

fuzz: bootstrap
	@[ -f build-fuzz/build.ninja ] || CC=clang meson setup build-fuzz -Dfuzz=true -Db_sanitize=address,undefined -Db_lundef=false
	@ninja -C build-fuzz
	@fuzz/run build-fuzz

format:
	@clang-format -i src/*/*.c src/*/*.h tests/unit/*.c tests/unit/*.h tests/probe/*.c fuzz/*.c

clean:
	rm -rf $(BUILD) build-asan build-fuzz
