# attn.h - build, test, bench.  `make` builds the examples, `make test` runs the whole suite.
CC      ?= cc
CLANG   ?= clang
CXX     ?= g++
WARN    = -std=c99 -Wall -Wextra -pedantic -Werror
CFLAGS  ?= -O2
LIBS    = -lm -pthread
BUILD   = build
# Build the test binaries side by side (one job per core); the tests themselves run one by one.
NPROC  := $(shell nproc 2>/dev/null || echo 2)
MAKEFLAGS += -j$(NPROC)

EXAMPLES = $(patsubst examples/%.c,$(BUILD)/%,$(wildcard examples/*.c))
TEST_SRC = tests/main.c tests/attn_impl.c $(wildcard tests/test_*.c)
TEST_DEP = $(TEST_SRC) $(wildcard tests/*.h) attn.h
HAVE_CLANG := $(shell command -v $(CLANG) >/dev/null 2>&1 && echo yes)
# NEON kernels: cross-compiled for AArch64 and run under qemu where both are installed.
ARM_CC  ?= aarch64-linux-gnu-gcc
HAVE_ARM := $(shell command -v $(ARM_CC) >/dev/null 2>&1 && command -v qemu-aarch64 >/dev/null 2>&1 && echo yes)

# Test builds: the default compiler (best kernels this CPU has), the AVX2 kernels, the scalar
# fallback, no threads, ASan+UBSan (best kernels, and AVX2 ones), clang.
TEST_BINS = $(BUILD)/test_cc $(BUILD)/test_avx2 $(BUILD)/test_scalar $(BUILD)/test_nothreads $(BUILD)/test_sanitize \
            $(BUILD)/test_sanitize_avx2
ifeq ($(HAVE_CLANG),yes)
TEST_BINS += $(BUILD)/test_clang
endif
ifeq ($(HAVE_ARM),yes)
TEST_BINS += $(BUILD)/test_neon
endif

.PHONY: all examples run test bench clean
all: examples
examples: $(EXAMPLES)

# The zoo tour: every mechanism on the same inputs, a table and zoo.svg (under a minute).
run: $(BUILD)/zoo
	./$(BUILD)/zoo

$(BUILD):
	@mkdir -p $(BUILD)

$(BUILD)/%: examples/%.c attn.h | $(BUILD)
	$(CC) $(WARN) $(CFLAGS) -I. $< -o $@ $(LIBS)

$(BUILD)/test_cc: $(TEST_DEP) | $(BUILD)
	$(CC) $(WARN) $(CFLAGS) -I. $(TEST_SRC) -o $@ $(LIBS)
$(BUILD)/test_clang: $(TEST_DEP) | $(BUILD)
	$(CLANG) $(WARN) $(CFLAGS) -I. $(TEST_SRC) -o $@ $(LIBS)
$(BUILD)/test_avx2: $(TEST_DEP) | $(BUILD)
	$(CC) $(WARN) $(CFLAGS) -DATTN_NO_AVX512 -I. $(TEST_SRC) -o $@ $(LIBS)
$(BUILD)/test_scalar: $(TEST_DEP) | $(BUILD)
	$(CC) $(WARN) $(CFLAGS) -DATTN_NO_SIMD -I. $(TEST_SRC) -o $@ $(LIBS)
$(BUILD)/test_nothreads: $(TEST_DEP) | $(BUILD)
	$(CC) $(WARN) $(CFLAGS) -DATTN_NO_THREADS -I. $(TEST_SRC) -o $@ -lm
$(BUILD)/test_sanitize: $(TEST_DEP) | $(BUILD)
	$(CC) $(WARN) -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer \
	    -DATTN_TEST_QUICK -I. $(TEST_SRC) -o $@ $(LIBS)
$(BUILD)/test_sanitize_avx2: $(TEST_DEP) | $(BUILD)
	$(CC) $(WARN) -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer \
	    -DATTN_TEST_QUICK -DATTN_NO_AVX512 -I. $(TEST_SRC) -o $@ $(LIBS)

$(BUILD)/test_neon: $(TEST_DEP) | $(BUILD)
	$(ARM_CC) $(WARN) $(CFLAGS) -static -DATTN_TEST_QUICK -I. $(TEST_SRC) -o $@ $(LIBS)

# Every test binary, then the header compile checks; the last line is "N passed, N failed".
test: $(TEST_BINS) $(EXAMPLES)
	@sh tests/run_all.sh "$(CC)" "$(CLANG)" "$(CXX)" $(TEST_BINS)

# Every bench/bench*.c is one program (bench.c: exact attention; bench_<family>.c: the others);
# `make bench` builds and runs them all, `make build/bench_<family>` builds one.
# bench_generation_avx2: decoding on the AVX2 kernels (-DATTN_NO_AVX512) on the same machine.
BENCHES = $(patsubst bench/%.c,$(BUILD)/%,$(wildcard bench/bench*.c))
bench: $(BENCHES) $(BUILD)/bench_generation_avx2
	@for b in $(BENCHES) $(BUILD)/bench_generation_avx2; do echo "== $$b"; ./$$b || exit 1; done
$(BENCHES): $(BUILD)/%: bench/%.c bench/bench_util.h attn.h | $(BUILD)
	$(CC) -std=c99 -O3 -march=native -Wall -Wextra -I. $< -o $@ $(LIBS)
$(BUILD)/bench_generation_avx2: bench/bench_generation.c bench/bench_util.h attn.h | $(BUILD)
	$(CC) -std=c99 -O3 -march=native -Wall -Wextra -DATTN_NO_AVX512 -I. $< -o $@ $(LIBS)

clean:
	rm -rf $(BUILD)
