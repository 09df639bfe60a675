#!/bin/sh
# Runs every test binary given, plus compile checks of attn.h as C99 (gcc, clang) and C++,
# and prints the totals as the last line: "N passed, N failed". Exits non-zero on any failure.
cc="$1"; clang="$2"; cxx="$3"; shift 3
passed=0; failed=0
tmp=$(mktemp -d)
printf '#define ATTN_IMPLEMENTATION\n#include "attn.h"\nint main(void){return 0;}\n' > "$tmp/c.c"
check() {   # name, command...
    name=$1; shift
    if "$@" > "$tmp/log" 2>&1; then passed=$((passed + 1)); echo "ok    $name"
    else failed=$((failed + 1)); echo "FAIL  $name"; sed 's/^/    /' "$tmp/log" | head -20; fi
}
check "C99 with $cc"   $cc -std=c99 -Wall -Wextra -pedantic -Werror -I. -c "$tmp/c.c" -o "$tmp/a.o"
if command -v "$clang" >/dev/null 2>&1; then
    check "C99 with $clang" $clang -std=c99 -Wall -Wextra -pedantic -Werror -I. -c "$tmp/c.c" -o "$tmp/b.o"
fi
check "C++ with $cxx"  $cxx -x c++ -Wall -Wextra -Werror -I. -c "$tmp/c.c" -o "$tmp/d.o"
check "C++ -O2 with $cxx"  $cxx -x c++ -O2 -Wall -Wextra -Werror -I. -c "$tmp/c.c" -o "$tmp/f.o"
check "C99 ATTN_NO_THREADS ATTN_NO_SIMD ATTN_STATIC" $cc -std=c99 -Wall -Wextra -pedantic -Werror -Wno-unused-function \
    -DATTN_NO_THREADS -DATTN_NO_SIMD -DATTN_STATIC -I. -c "$tmp/c.c" -o "$tmp/e.o"
# the build matrix beyond C99 (issue 16): C11, C++11 and C++17, 32-bit x86 where gcc -m32 links
# (.ci/run installs gcc-N-multilib; the whole suite also runs as build/test_m32)
check "C11 with $cc"   $cc -std=c11 -Wall -Wextra -pedantic -Werror -I. -c "$tmp/c.c" -o "$tmp/g.o"
check "C++11 with $cxx" $cxx -x c++ -std=c++11 -Wall -Wextra -pedantic -Werror -I. -c "$tmp/c.c" -o "$tmp/h.o"
check "C++17 with $cxx" $cxx -x c++ -std=c++17 -Wall -Wextra -pedantic -Werror -I. -c "$tmp/c.c" -o "$tmp/i.o"
if command -v "$clang" >/dev/null 2>&1; then
    check "C11 with $clang" $clang -std=c11 -Wall -Wextra -pedantic -Werror -I. -c "$tmp/c.c" -o "$tmp/j.o"
    check "C++17 with $clang" $clang -x c++ -std=c++17 -Wall -Wextra -pedantic -Werror -I. -c "$tmp/c.c" -o "$tmp/k.o"
fi
# clang -Weverything with four warnings off, each for a stated reason (tests/README.md):
#   sign-conversion: extents are int by API design, validated >= 0 before use, then widened to
#     size_t for byte counts; a cast at each of ~600 widenings would hide the arithmetic.
#   padded: reports struct padding, not a defect; public structs keep a readable field order.
#   float-equal: the exact comparisons are intended (-inf row sentinels, x == 0 skips, x != x).
#   covered-switch-default: public enums arrive from callers and may hold any int; the default
#     answers those, so it stays even when every named value has a case.
if command -v "$clang" >/dev/null 2>&1; then
    weverything="-Weverything -Wno-sign-conversion -Wno-padded -Wno-float-equal -Wno-covered-switch-default -Werror"
    check "clang -Weverything (best SIMD)" $clang -std=c99 $weverything -I. -c "$tmp/c.c" -o "$tmp/w1.o"
    check "clang -Weverything (AVX2)" $clang -std=c99 $weverything -DATTN_NO_AVX512 -I. -c "$tmp/c.c" -o "$tmp/w2.o"
    check "clang -Weverything (scalar, no threads)" $clang -std=c99 $weverything \
        -DATTN_NO_SIMD -DATTN_NO_THREADS -I. -c "$tmp/c.c" -o "$tmp/w3.o"
    if $clang --target=aarch64-linux-gnu -fsyntax-only -x c "$tmp/c.c" -I. >/dev/null 2>&1; then
        check "clang -Weverything (AArch64 NEON)" $clang --target=aarch64-linux-gnu -std=c99 $weverything -I. \
            -fsyntax-only "$tmp/c.c"
    fi
fi
if printf 'int main(void){return 0;}' | $cc -m32 -x c - -o "$tmp/m32" >/dev/null 2>&1; then
    check "C99 -m32 with $cc" $cc -m32 -std=c99 -Wall -Wextra -pedantic -Werror -I. -c "$tmp/c.c" -o "$tmp/l.o"
fi
# fuzz targets (tests/fuzz): the seed corpus and seeded random inputs under ASan + UBSan
if [ -n "${FUZZ_DRIVER:-}" ]; then
    check "fuzz: $FUZZ_DRIVER" $FUZZ_DRIVER
    grep "^fuzz " "$tmp/log" | sed "s/^/    /"
fi

# The emulated binaries (qemu) are the slowest and mostly wait on translation, so they start
# first in the background; their output is read in order below like the others'.
i=0
for bin in "$@"; do
    i=$((i + 1))
    case "$bin" in
        *_neon) ( qemu-aarch64 "./$bin" > "$tmp/out$i" 2>&1; echo $? > "$tmp/rc$i" ) & ;;
    esac
done
i=0
for bin in "$@"; do
    i=$((i + 1))
    case "$bin" in
        *_neon) wait ;;
        *.exe)  WINEDEBUG=-all "$WINE" "./$bin" 2>&1 | tr -d '\r' > "$tmp/out$i"; grep -qE '^[0-9]+ passed, 0 failed$' "$tmp/out$i"
                echo $? > "$tmp/rc$i" ;;   # mingw-w64 build under wine (CRLF output; wine's own exit status is lost in the pipe)
        *)      "./$bin" > "$tmp/out$i" 2>&1; echo $? > "$tmp/rc$i" ;;
    esac
    echo "== $bin"
    rc=$(cat "$tmp/rc$i")
    grep -v '^ok ' "$tmp/out$i" | tail -n 40
    line=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$tmp/out$i" | tail -n 1)
    if [ -z "$line" ]; then
        failed=$((failed + 1)); echo "FAIL  $bin exited $rc without a summary line"
        continue
    fi
    p=$(echo "$line" | cut -d' ' -f1); f=$(echo "$line" | cut -d' ' -f3)
    passed=$((passed + p)); failed=$((failed + f))
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then failed=$((failed + 1)); echo "FAIL  $bin exited $rc"; fi
done
rm -rf "$tmp"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
