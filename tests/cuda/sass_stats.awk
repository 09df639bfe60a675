# tests/cuda/sass_stats.awk - per kernel of `cuobjdump -sass` output: instruction count and the most
# frequent opcodes (HMMA, MUFU, LDSM, LDGSTS, local LDL/STL, ...), to read a kernel's mix without a GPU
# profiler. Usage: cuobjdump -sass build/test_cuda | awk -f tests/cuda/sass_stats.awk
function flush(   n, i, j, t, keys, line) {
    if (fn == "") return
    n = 0
    for (op in cnt) keys[++n] = op
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (cnt[keys[j]] > cnt[keys[i]]) { t = keys[i]; keys[i] = keys[j]; keys[j] = t }
    line = sprintf("%-60s %6d:", substr(fn, 1, 60), total)
    for (i = 1; i <= n && i <= 14; i++) line = line sprintf(" %s %d", keys[i], cnt[keys[i]])
    print line
    delete cnt; total = 0
}
/Function :/ { flush(); fn = $3; next }
/^[ \t]*\/\*[0-9a-f]+\*\/[ \t]/ {
    op = $2
    if (op ~ /^@/) op = $3
    sub(/\..*/, "", op); sub(/;$/, "", op)
    if (op == "") next
    cnt[op]++; total++
}
END { flush() }
