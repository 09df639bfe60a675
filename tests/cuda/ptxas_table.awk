# ptxas -v output (nvcc -Xptxas -v, names demangled by c++filt) -> a markdown table of every
# kernel: registers, stack, spills, shared memory. Exits 1 when a kernel of attn_cuda.cuh (acu_*) spills.
# Dynamic shared memory is not in ptxas's output: for acu_fwd_mma<D, T> (T: 0 f16, 1 bf16, 2 tf32)
# it is attn_cuda.cuh's acu_cfg<D, T>::SMEM = (64 + 4 BN) (RB + 16) bytes, RB = D x 2 (f16, bf16) or
# D x 4 (tf32) bytes a row, BN = 64 keys for RB <= 256, 32 for RB <= 512, else 16; for
# acu_bwd_mma_dkdv / acu_bwd_mma_dq<D, *> acu_bwd_cfg<D>: (128 + 4 B) (D + 8) 2 with B = 32 for D > 64, else 64.
/Compiling entry function/ {
    name = $0; sub(/.*Compiling entry function '/, "", name); sub(/' for '.*/, "", name)
    arch = $0; sub(/.*' for '/, "", arch); sub(/'.*/, "", arch)
    stack = 0; sst = 0; sld = 0
}
/bytes stack frame/ { stack = $1; sst = $5; sld = $9 }
/Used [0-9]+ registers/ {
    regs = $0; sub(/.*Used /, "", regs); sub(/ registers.*/, "", regs)
    smem = 0
    if ($0 ~ /bytes smem/) { smem = $0; sub(/ bytes smem.*/, "", smem); sub(/.*, /, "", smem) }
    dyn = "-"
    if (name ~ /acu_fwd_mma</) {
        d = name; sub(/.*acu_fwd_mma</, "", d); t = d; sub(/,.*/, "", d); d += 0
        sub(/^[0-9]+, */, "", t); sub(/>.*/, "", t); t += 0
        rb = d * (t == 2 ? 4 : 2)
        bn = rb <= 256 ? 64 : rb <= 512 ? 32 : 16
        dyn = (64 + 4 * bn) * (rb + 16)
    }
    if (name ~ /acu_bwd_mma_(dkdv|dq)</) {
        d = name; sub(/.*acu_bwd_mma_[a-z]*</, "", d); sub(/,.*/, "", d); d += 0
        bq = d > 64 ? 32 : 64
        dyn = (128 + 4 * bq) * (d + 8) * 2
    }
    short = name; sub(/\(.*/, "", short); sub(/^void /, "", short)
    rows[++n] = sprintf("| %-26s | %-5s | %4s | %5s | %8s | %8s | %13s | %14s |", short, arch, regs, stack, sst, sld, smem, dyn)
    if (short ~ /^acu_/ && (sst > 0 || sld > 0)) { bad = bad " " short "(" arch ")" }
}
END {
    print "| kernel                     | arch  | regs | stack | spill st | spill ld | smem (static) | smem (dynamic) |"
    print "|----------------------------|-------|------|-------|----------|----------|---------------|----------------|"
    for (i = 1; i <= n; ++i) print rows[i]
    if (bad != "") { print "ptxas: spills in main kernels:" bad > "/dev/stderr"; exit 1 }
}
