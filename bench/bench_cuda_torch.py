#!/usr/bin/env python3
"""bench/bench_cuda_torch.py - attn_cuda beside PyTorch on one GPU, in one process.

attn_cuda's forward, backward and decode are reached through build/libattn_cuda_shim.so
(bench/bench_cuda_shim.cu, extern "C" over device pointers); PyTorch's peers are
scaled_dot_product_attention with the FlashAttention-2 backend, the cuDNN backend, and the default
dispatch where those refuse a shape. Every pair runs on the same torch-allocated inputs, on the same
stream, timed with the same CUDA events (median of the timed repeats after warm-ups), interleaved
config by config. Each row also records max |attn_cuda - torch| over the outputs (gradients),
divided by max |torch|, so a fast wrong kernel cannot pass unnoticed.

Sections (each writes one CSV under OUT_DIR, default bench/; results_cuda_peer_<section>.csv):
  peak      measured ceilings: a bf16 8192^3 matmul (TFLOP/s) and a device-to-device copy (GB/s)
                                                                                results_cuda_peak.csv
  fwd       f16/bf16, B 4, H 16 (and GQA 32/8), D 64/128, causal and not; S 1k-16k (every
            power of two for f16 H 16 D 128, else 1k, 4k, 16k)                          _fwd
  decode    one query token over a paged cache (page 16 and 256), batch 1-64, 4k-128k
            tokens, Hq 32, Hkv 8, D 128; torch on the same cache laid out contiguously  _decode
  bwd       the fwd shapes, the backward alone (forward outside the timed region)    _bwd
  tf32      f32 q, k, v: attn_cuda allow_tf32 / fp32 against torch with allow_tf32   _tf32

FLOPs: forward 4 B Hq Sq Sk D (halved when causal), backward 2.5x that (FlashAttention's count:
five S x S x D products against the forward's two). Decode GB/s counts the K and V bytes of the
cache read once. Usage: python3 bench/bench_cuda_torch.py [section ...] (default: all), with
BENCH_BUDGET_S (default 300) as a soft wall-clock budget shared in order (fwd until 35% of it,
decode 50%, bwd 85%, tf32 the rest): the configs a section has not reached by then are skipped
with one line."""
import ctypes
import csv
import math
import os
import sys
import time

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.environ.get("OUT_DIR", os.path.join(ROOT, "bench"))
os.makedirs(OUT, exist_ok=True)
BUDGET = float(os.environ.get("BENCH_BUDGET_S", "300"))
# BENCH_DRY=1: a rehearsal without a GPU, on tiny shapes, with the shim built for the CPU emulator
# (make build/libattn_cuda_shim_emu.so): every call, layout and comparison runs, only the times mean
# nothing. Run it before spending device time.
DRY = os.environ.get("BENCH_DRY") == "1"
T0 = time.time()
DEV = torch.device("cpu" if DRY else "cuda")
lib = ctypes.CDLL(os.environ.get("ATTN_SHIM", os.path.join(ROOT, "build", "libattn_cuda_shim_emu.so" if DRY else "libattn_cuda_shim.so")))
lib.shim_status_str.restype = ctypes.c_char_p
P = ctypes.c_void_p
I = ctypes.c_int
SZ = ctypes.c_size_t
lib.shim_forward.argtypes = [P, P, P, P, P] + [I] * 9 + [P]
lib.shim_backward_workspace.argtypes = [P, P, P] + [I] * 8 + [ctypes.POINTER(SZ)]
lib.shim_backward.argtypes = [P] * 10 + [SZ] + [I] * 8 + [P]
lib.shim_decode_workspace.argtypes = [P] * 5 + [I] * 8 + [ctypes.POINTER(SZ)]
lib.shim_decode.argtypes = [P, P, P, P, P, P, P, SZ] + [I] * 8 + [P]
DT = {torch.float32: 0, torch.float16: 1, torch.bfloat16: 2}
NAME = {torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16"}


def ptr(t):
    if t is None:
        return ctypes.c_void_p(0)
    if DRY:  # the emulator accepts only pointers it knows as "device" memory
        lib.shim_emu_register(ctypes.c_void_p(t.data_ptr()), ctypes.c_size_t(t.numel() * t.element_size()))
    return ctypes.c_void_p(t.data_ptr())


def stream():
    return ctypes.c_void_p(0 if DRY else torch.cuda.current_stream().cuda_stream)


def sync():
    if not DRY:
        torch.cuda.synchronize()


def check(status, what):
    if status != 0:
        raise RuntimeError("%s: %s" % (what, lib.shim_status_str(status).decode()))


def timeit(fn, min_reps=5, max_reps=20, target_ms=400.0):
    """median ms of fn() over repeats timed with CUDA events, after two warm-ups"""
    if DRY:
        t = time.perf_counter(); fn()
        return (time.perf_counter() - t) * 1e3
    fn(); fn()
    torch.cuda.synchronize()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record(); fn(); b.record(); b.synchronize()
    first = max(a.elapsed_time(b), 1e-3)
    reps = int(max(min_reps, min(max_reps, target_ms / first)))
    ts = []
    for _ in range(reps):
        a.record(); fn(); b.record(); b.synchronize()
        ts.append(a.elapsed_time(b))
    ts.sort()
    return ts[len(ts) // 2]


def reldiff(x, ref):
    m = ref.float().abs().max().item()
    return (x.float() - ref.float()).abs().max().item() / (m if m > 0 else 1.0)


class Writer:
    def __init__(self, name, fields):
        self.path = os.path.join(OUT, name)
        self.f = open(self.path, "w", newline="")
        self.w = csv.writer(self.f)
        self.gpu = "dry run (CPU emulator)" if DRY else torch.cuda.get_device_name(0)
        self.w.writerow(["gpu"] + fields)

    def row(self, values):
        self.w.writerow([self.gpu] + ["%.4g" % v if isinstance(v, float) else v for v in values])
        self.f.flush()


# each section may run until its share of the budget is spent (cumulative: fwd until 35%, ...)
SHARE = {"fwd": 0.35, "decode": 0.5, "bwd": 0.85, "tf32": 1.0, "profile": 1.0, "ab": 1.0}


def over_budget(section):
    limit = BUDGET * SHARE[section]
    if time.time() - T0 > limit:
        print("%s: the rest skipped (past %.0f s of BENCH_BUDGET_S = %.0f s)" % (section, limit, BUDGET), flush=True)
        return True
    return False


def torch_sdpa(backend, q, k, v, causal):
    """(callable, why-not) for torch's SDPA on one backend, GQA through enable_gqa"""
    gqa = q.shape[1] != k.shape[1]
    def run():
        if backend is None:
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=gqa)
        with sdpa_kernel([backend]):
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=gqa)
    try:
        run(); sync()
        return run, ""
    except Exception as e:  # the backend refuses this shape/dtype
        sync()
        return None, str(e).splitlines()[0][:120] if str(e) else type(e).__name__


# ---- peak -------------------------------------------------------------------------------------
def section_peak():
    w = Writer("results_cuda_peak.csv", ["what", "value", "unit"])
    n = 256 if DRY else 8192
    a = torch.randn(n, n, device=DEV, dtype=torch.bfloat16)
    b = torch.randn(n, n, device=DEV, dtype=torch.bfloat16)
    ms = timeit(lambda: a @ b, min_reps=10, max_reps=10)
    tf = 2 * n ** 3 / ms * 1e-9
    x = torch.randint(0, 255, (1 << (20 if DRY else 30),), dtype=torch.uint8, device=DEV)
    y = torch.empty_like(x)
    ms2 = timeit(lambda: y.copy_(x), min_reps=10, max_reps=10)
    gbs = 2 * x.numel() / ms2 * 1e-6
    print("peak: bf16 8192^3 matmul %.0f TFLOP/s, device copy %.0f GB/s (read + write)" % (tf, gbs), flush=True)
    w.row(["bf16_gemm_8192", tf, "TFLOP/s"])
    w.row(["d2d_copy_1GiB", gbs, "GB/s"])
    del a, b, x, y
    return tf, gbs


# ---- forward / backward -------------------------------------------------------------------------
def shapes():
    """the issue's grid, most important first: f16 then bf16, MHA then GQA, D 128 then 64"""
    for dt in (torch.float16, torch.bfloat16):
        for hq, hkv in (((2, 2), (4, 2)) if DRY else ((16, 16), (32, 8))):
            for D in (128, 64):
                for causal in (0, 1):
                    full = dt == torch.float16 and hq == hkv and D == 128   # the full sweep for the headline shape
                    for S in ((96, 160) if DRY else (1024, 2048, 4096, 8192, 16384) if full else (1024, 4096, 16384)):
                        yield dt, hq, hkv, D, causal, S


def make_qkv(dt, B, hq, hkv, S, D, grad=False):
    g = torch.Generator(device=DEV).manual_seed(S * 131 + D * 7 + hq)
    q = torch.randn(B, hq, S, D, device=DEV, dtype=dt, generator=g)
    k = torch.randn(B, hkv, S, D, device=DEV, dtype=dt, generator=g)
    v = torch.randn(B, hkv, S, D, device=DEV, dtype=dt, generator=g)
    return q, k, v


def attn_fwd(q, k, v, out, lse, causal, tf32=0):
    B, hq, S, D = q.shape
    check(lib.shim_forward(ptr(q), ptr(k), ptr(v), ptr(out), ptr(lse), DT[q.dtype], B, hq, k.shape[1], S, k.shape[2], D,
                           causal, tf32, stream()), "attn_cuda_forward")


def section_fwd(peak):
    w = Writer("results_cuda_peer_fwd.csv", ["dtype", "B", "Hq", "Hkv", "D", "causal", "S", "attn_ms", "attn_tflops", "attn_pct_peak",
                                "flash_ms", "flash_tflops", "cudnn_ms", "cudnn_tflops", "attn_vs_flash", "attn_vs_cudnn",
                                "maxdiff_vs_flash", "note"])
    B = 2 if DRY else 4
    print("fwd: %-4s %4s %4s %4s %6s %6s | %9s %7s | %9s %7s | %9s %7s | %6s %6s %9s" % (
        "dt", "Hq", "Hkv", "D", "causal", "S", "attn ms", "TFLOP/s", "flash ms", "TFLOP/s", "cudnn ms", "TFLOP/s",
        "/flash", "/cudnn", "diff"), flush=True)
    for dt, hq, hkv, D, causal, S in shapes():
        if over_budget("fwd"):
            return
        q, k, v = make_qkv(dt, B, hq, hkv, S, D)
        out = torch.empty_like(q)
        lse = torch.empty(B, hq, S, device=DEV, dtype=torch.float32)
        flop = 4.0 * B * hq * S * S * D * (0.5 if causal else 1.0)
        ta = timeit(lambda: attn_fwd(q, k, v, out, lse, causal))
        note = []
        fl, why = torch_sdpa(SDPBackend.FLASH_ATTENTION, q, k, v, bool(causal))
        if fl is None:
            note.append("flash: " + why)
        cu, why2 = torch_sdpa(SDPBackend.CUDNN_ATTENTION, q, k, v, bool(causal))
        if cu is None:
            note.append("cudnn: " + why2)
        tfl = timeit(fl) if fl else float("nan")
        tcu = timeit(cu) if cu else float("nan")
        attn_fwd(q, k, v, out, lse, causal)
        if fl or cu:
            diff = reldiff(out, (fl or cu)())
        else:  # neither fused peer takes the shape: the math backend on batch 0's first KV group
            g = hq // hkv
            diff = reldiff(out[:1, :g], F.scaled_dot_product_attention(q[:1, :g], k[:1, :1].expand(1, g, S, D),
                                                                       v[:1, :1].expand(1, g, S, D), is_causal=bool(causal)))
        ga, gf, gc = flop / ta * 1e-9, flop / tfl * 1e-9, flop / tcu * 1e-9
        print("fwd: %-4s %4d %4d %4d %6d %6d | %9.3f %7.1f | %9.3f %7.1f | %9.3f %7.1f | %5.2fx %5.2fx %9.2e" % (
            NAME[dt], hq, hkv, D, causal, S, ta, ga, tfl, gf, tcu, gc, tfl / ta, tcu / ta, diff), flush=True)
        w.row([NAME[dt], B, hq, hkv, D, causal, S, ta, ga, 100.0 * ga / peak, tfl, gf, tcu, gc, tfl / ta, tcu / ta, diff,
               "; ".join(note)])
        del q, k, v, out, lse


def section_bwd(peak):
    w = Writer("results_cuda_peer_bwd.csv", ["dtype", "B", "Hq", "Hkv", "D", "causal", "S", "attn_ms", "attn_tflops", "attn_pct_peak",
                                "flash_ms", "flash_tflops", "cudnn_ms", "cudnn_tflops", "attn_vs_flash", "attn_vs_cudnn",
                                "maxdiff_dq", "maxdiff_dk", "maxdiff_dv", "note"])
    B = 2 if DRY else 4
    print("bwd: %-4s %4s %4s %4s %6s %6s | %9s %7s | %9s %7s | %9s %7s | %6s %6s %9s" % (
        "dt", "Hq", "Hkv", "D", "causal", "S", "attn ms", "TFLOP/s", "flash ms", "TFLOP/s", "cudnn ms", "TFLOP/s",
        "/flash", "/cudnn", "diff dq/dk/dv"), flush=True)
    for dt, hq, hkv, D, causal, S in shapes():
        if over_budget("bwd"):
            return
        q, k, v = make_qkv(dt, B, hq, hkv, S, D)
        dout = torch.randn_like(q)
        out = torch.empty_like(q)
        lse = torch.empty(B, hq, S, device=DEV, dtype=torch.float32)
        dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
        ws = SZ(0)
        check(lib.shim_backward_workspace(ptr(q), ptr(k), ptr(v), DT[dt], B, hq, hkv, S, S, D, causal, ctypes.byref(ws)), "workspace")
        wsb = torch.empty(max(ws.value, 1), dtype=torch.uint8, device=DEV)
        attn_fwd(q, k, v, out, lse, causal)

        def attn_bwd():
            check(lib.shim_backward(ptr(q), ptr(k), ptr(v), ptr(out), ptr(dout), ptr(lse), ptr(dq), ptr(dk), ptr(dv),
                                    ptr(wsb), ws.value, DT[dt], B, hq, hkv, S, S, D, causal, stream()), "attn_cuda_backward")
        ta = timeit(attn_bwd)
        flop = 2.5 * 4.0 * B * hq * S * S * D * (0.5 if causal else 1.0)
        note, res = [], {}
        for name, backend in (("flash", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION)):
            qr, kr, vr = (t.detach().clone().requires_grad_(True) for t in (q, k, v))
            o = None
            fn, why = torch_sdpa(backend, qr, kr, vr, bool(causal))
            if fn is None:
                note.append(name + ": " + why)
                res[name] = (float("nan"), None)
                continue
            try:
                o = fn()
                grads = lambda: torch.autograd.grad(o, (qr, kr, vr), dout, retain_graph=True)
                t = timeit(grads)
                res[name] = (t, grads())
            except Exception as e:
                note.append(name + " backward: " + str(e).splitlines()[0][:100])
                res[name] = (float("nan"), None)
            del o
        ref = res["flash"][1] or res["cudnn"][1]
        attn_bwd()
        diffs = [reldiff(a, r) for a, r in zip((dq, dk, dv), ref)] if ref else [float("nan")] * 3
        tfl, tcu = res["flash"][0], res["cudnn"][0]
        ga, gf, gc = flop / ta * 1e-9, flop / tfl * 1e-9, flop / tcu * 1e-9
        print("bwd: %-4s %4d %4d %4d %6d %6d | %9.3f %7.1f | %9.3f %7.1f | %9.3f %7.1f | %5.2fx %5.2fx %.1e/%.1e/%.1e" % (
            NAME[dt], hq, hkv, D, causal, S, ta, ga, tfl, gf, tcu, gc, tfl / ta, tcu / ta, *diffs), flush=True)
        w.row([NAME[dt], B, hq, hkv, D, causal, S, ta, ga, 100.0 * ga / peak, tfl, gf, tcu, gc, tfl / ta, tcu / ta, *diffs,
               "; ".join(note)])
        del q, k, v, dout, out, lse, dq, dk, dv, wsb, res, ref


# ---- decode -------------------------------------------------------------------------------------
def section_decode(hbm):
    w = Writer("results_cuda_peer_decode.csv", ["dtype", "batch", "ctx", "Hq", "Hkv", "D", "page", "attn_ms", "attn_gbs", "attn_pct_hbm",
                                   "torch_ms", "torch_gbs", "attn_vs_torch", "maxdiff", "note"])
    hq, hkv, D, dt = 32, 8, 128, torch.float16
    print("decode: %5s %7s %5s | %9s %7s %6s | %9s %7s | %6s %9s  (torch: the faster of SDPA enable_gqa and the"
          " group's query heads as rows of one KV head)" % (
        "batch", "ctx", "page", "attn ms", "GB/s", "%HBM", "torch ms", "GB/s", "ratio", "diff"), flush=True)
    grid = ((1, 512), (3, 1024)) if DRY else ((1, 4096), (1, 32768), (1, 131072), (8, 4096), (8, 32768), (8, 131072),
                                              (32, 4096), (32, 32768), (64, 4096), (64, 32768))
    for B, ctx in grid:
        if over_budget("decode"):
            return
        g = torch.Generator(device=DEV).manual_seed(B * 7919 + ctx)
        kc = torch.randn(B, hkv, ctx, D, device=DEV, dtype=dt, generator=g)   # torch's contiguous cache
        vc = torch.randn(B, hkv, ctx, D, device=DEV, dtype=dt, generator=g)
        q = torch.randn(B, hq, 1, D, device=DEV, dtype=dt, generator=g)
        ref = F.scaled_dot_product_attention(q, kc, vc, enable_gqa=True)
        t_gqa = timeit(lambda: F.scaled_dot_product_attention(q, kc, vc, enable_gqa=True))
        # one token: the hq / hkv query heads of a group are rows of one query over their KV head
        qg = q.view(B, hkv, hq // hkv, D)
        t_rows = timeit(lambda: F.scaled_dot_product_attention(qg, kc, vc))
        tt, how = (t_gqa, "torch: SDPA enable_gqa") if t_gqa <= t_rows else (t_rows, "torch: group heads as rows")
        nbytes = 2.0 * B * ctx * hkv * D * 2
        for page in ((16, 64) if DRY else (256, 16)):
            npg = ctx // page
            perm = torch.randperm(B * npg, generator=torch.Generator().manual_seed(page + B), dtype=torch.int32)
            table = perm.view(B, npg).to(DEV)
            # page p of sequence b holds tokens [p * page, (p + 1) * page): [n_pages, page, Hkv, D]
            kp = torch.empty(B * npg, page, hkv, D, device=DEV, dtype=dt)
            vp = torch.empty_like(kp)
            kp[table.view(-1).long()] = kc.permute(0, 2, 1, 3).reshape(B * npg, page, hkv, D)
            vp[table.view(-1).long()] = vc.permute(0, 2, 1, 3).reshape(B * npg, page, hkv, D)
            lens = torch.full((B,), ctx, dtype=torch.int32, device=DEV)
            out = torch.empty(B, 1, hq, D, device=DEV, dtype=dt)
            ws = SZ(0)
            check(lib.shim_decode_workspace(ptr(q), ptr(kp), ptr(vp), ptr(lens), ptr(table), DT[dt], B, hq, hkv, D, page, npg,
                                            B * npg, ctypes.byref(ws)), "decode workspace")
            wsb = torch.empty(max(ws.value, 1), dtype=torch.uint8, device=DEV)

            def dec():
                check(lib.shim_decode(ptr(q), ptr(kp), ptr(vp), ptr(lens), ptr(table), ptr(out), ptr(wsb), ws.value, DT[dt], B,
                                      hq, hkv, D, page, npg, B * npg, stream()), "attn_cuda_decode")
            ta = timeit(dec)
            dec()
            diff = reldiff(out.view(B, hq, D), ref.view(B, hq, D))
            ga, gt = nbytes / ta * 1e-6, nbytes / tt * 1e-6
            print("decode: %5d %7d %5d | %9.4f %7.0f %5.1f%% | %9.4f %7.0f | %5.2fx %9.2e" % (
                B, ctx, page, ta, ga, 100 * ga / hbm, tt, gt, tt / ta, diff), flush=True)
            w.row(["f16", B, ctx, hq, hkv, D, page, ta, ga, 100 * ga / hbm, tt, gt, tt / ta, diff, how])
            del kp, vp, table, lens, out, wsb
        del kc, vc, q, ref
        if not DRY:
            torch.cuda.empty_cache()


# ---- TF32 ---------------------------------------------------------------------------------------
def section_tf32():
    w = Writer("results_cuda_peer_tf32.csv", ["D", "causal", "S", "attn_tf32_ms", "attn_tf32_tflops", "attn_f32_ms", "attn_f32_tflops",
                                 "torch_ms", "torch_tflops", "torch_math_ms", "torch_math_tflops", "attn_tf32_vs_torch",
                                 "reldiff_attn_tf32", "reldiff_torch", "reldiff_torch_math"])
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    B, H = (1, 2) if DRY else (4, 16)
    print("tf32: %4s %6s %6s | %9s %7s | %9s %7s | %9s %7s | %9s %7s | %6s  diff vs f64: attn tf32, torch, torch math" % (
        "D", "causal", "S", "tf32 ms", "TFLOP/s", "f32 ms", "TFLOP/s", "torch ms", "TFLOP/s", "math ms", "TFLOP/s",
        "ratio"), flush=True)
    for D in (128, 64):
        for causal in (0, 1):
            for S in ((64, 128) if DRY else (1024, 4096, 8192)):
                if over_budget("tf32"):
                    return
                q, k, v = make_qkv(torch.float32, B, H, H, S, D)
                out, out32 = torch.empty_like(q), torch.empty_like(q)
                lse = torch.empty(B, H, S, device=DEV, dtype=torch.float32)
                flop = 4.0 * B * H * S * S * D * (0.5 if causal else 1.0)
                t1 = timeit(lambda: attn_fwd(q, k, v, out, lse, causal, 1))
                t2 = timeit(lambda: attn_fwd(q, k, v, out32, lse, causal, 0), min_reps=3, max_reps=5)
                fn = torch_sdpa(None, q, k, v, bool(causal))[0]
                # the math backend materialises B H S S floats twice: 8.6 GB at S 4096, so not beyond
                fm = torch_sdpa(SDPBackend.MATH, q, k, v, bool(causal))[0] if S <= 4096 else None
                tt, tm = timeit(fn), timeit(fm) if fm else float("nan")
                attn_fwd(q, k, v, out, lse, causal, 1)
                ref = F.scaled_dot_product_attention(q[:1, :2].double(), k[:1, :2].double(), v[:1, :2].double(),
                                                     is_causal=bool(causal))
                d1, d2 = reldiff(out[:1, :2], ref), reldiff(fn()[:1, :2], ref)
                d3 = reldiff(fm()[:1, :2], ref) if fm else float("nan")
                g1, g2, gt, gm = (flop / t * 1e-9 for t in (t1, t2, tt, tm))
                print("tf32: %4d %6d %6d | %9.3f %7.1f | %9.3f %7.1f | %9.3f %7.1f | %9.3f %7.1f | %5.2fx  %.1e %.1e %.1e" % (
                    D, causal, S, t1, g1, t2, g2, tt, gt, tm, gm, tt / t1, d1, d2, d3), flush=True)
                w.row([D, causal, S, t1, g1, t2, g2, tt, gt, tm, gm, tt / t1, d1, d2, d3])
                del q, k, v, out, out32, lse, ref


# ---- profile / ab: single calls for ncu, and A/B of two builds of the shim ------------------------
def section_profile():
    """one call of each main kernel (for ncu --launch-count): forward f16 D 128 S 4096, decode B 64
    over 32k tokens (page 256), the backward of the same forward, TF32 forward S 4096"""
    S = 128 if DRY else 4096
    q, k, v = make_qkv(torch.float16, 4, 16, 16, S, 128)
    out, lse = torch.empty_like(q), torch.empty(4, 16, S, device=DEV)
    attn_fwd(q, k, v, out, lse, 0)
    dout, dq, dk, dv = torch.randn_like(q), torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
    ws = SZ(0)
    check(lib.shim_backward_workspace(ptr(q), ptr(k), ptr(v), 1, 4, 16, 16, S, S, 128, 0, ctypes.byref(ws)), "ws")
    wsb = torch.empty(max(ws.value, 1), dtype=torch.uint8, device=DEV)
    check(lib.shim_backward(ptr(q), ptr(k), ptr(v), ptr(out), ptr(dout), ptr(lse), ptr(dq), ptr(dk), ptr(dv), ptr(wsb),
                            ws.value, 1, 4, 16, 16, S, S, 128, 0, stream()), "bwd")
    (B, ctx), page = ((2, 512) if DRY else (64, 32768)), 256
    npg = ctx // page
    kp = torch.randn(B * npg, page, 8, 128, device=DEV, dtype=torch.float16)
    vp = torch.randn_like(kp)
    table = torch.arange(B * npg, dtype=torch.int32, device=DEV).view(B, npg)
    lens = torch.full((B,), ctx, dtype=torch.int32, device=DEV)
    qd, od = torch.randn(B, 1, 32, 128, device=DEV, dtype=torch.float16), torch.empty(B, 1, 32, 128, device=DEV, dtype=torch.float16)
    check(lib.shim_decode_workspace(ptr(qd), ptr(kp), ptr(vp), ptr(lens), ptr(table), 1, B, 32, 8, 128, page, npg, B * npg,
                                    ctypes.byref(ws)), "ws")
    wsd = torch.empty(max(ws.value, 1), dtype=torch.uint8, device=DEV)
    check(lib.shim_decode(ptr(qd), ptr(kp), ptr(vp), ptr(lens), ptr(table), ptr(od), ptr(wsd), ws.value, 1, B, 32, 8, 128, page,
                          npg, B * npg, stream()), "decode")
    q32 = q.float()
    attn_fwd(q32, k.float(), v.float(), torch.empty_like(q32), lse, 0, 1)
    sync()
    print("profile: one forward, backward, decode and TF32 forward launched", flush=True)


def section_ab():
    """the headline shapes on this build (A) and on each build listed in ATTN_SHIM_B (B, C, ...;
    colon-separated paths), alternated round by round on the same inputs: forward f16 and decode"""
    global lib
    others = [p for p in os.environ.get("ATTN_SHIM_B", "").split(":") if p and os.path.exists(p)]
    if not others:
        print("ab: no ATTN_SHIM_B build, skipped", flush=True)
        return
    base = lib
    libs = {"A": lib}
    for n, path in zip("BCDEFG", others):
        libs[n] = ctypes.CDLL(path)
    for l in libs.values():
        l.shim_status_str.restype = ctypes.c_char_p
        for f in ("shim_forward", "shim_decode_workspace", "shim_decode"):
            getattr(l, f).argtypes = getattr(base, f).argtypes
    print("ab: " + ", ".join("%s = %s" % (n, l._name) for n, l in libs.items()), flush=True)

    def rounds(fn):
        global lib
        t = {n: [] for n in libs}
        for _ in range(3):
            for n in libs:
                lib = libs[n]
                t[n].append(timeit(fn))
        lib = base
        return {n: sorted(v)[1] for n, v in t.items()}
    for D, causal, S in (((128, 0, 64),) if DRY else ((128, 0, 4096), (128, 1, 4096), (64, 0, 4096), (128, 0, 16384))):
        q, k, v = make_qkv(torch.float16, 4, 16, 16, S, D)
        out, lse = torch.empty_like(q), torch.empty(4, 16, S, device=DEV)
        flop = 4.0 * 4 * 16 * S * S * D * (0.5 if causal else 1.0)
        m = rounds(lambda: attn_fwd(q, k, v, out, lse, causal))
        print("ab fwd f16 D %d causal %d S %d: " % (D, causal, S) + "  ".join(
            "%s %.3f ms %.1f TFLOP/s (%.2fx A)" % (n, t, flop / t * 1e-9, m["A"] / t) for n, t in m.items()), flush=True)
    hq, hkv, D = 32, 8, 128
    for B, ctx in (((2, 512),) if DRY else ((1, 131072), (64, 32768))):
        npg, page = ctx // 256, 256
        kp = torch.randn(B * npg, page, hkv, D, device=DEV, dtype=torch.float16)
        vp = torch.randn_like(kp)
        table = torch.randperm(B * npg, dtype=torch.int32).view(B, npg).to(DEV)
        lens = torch.full((B,), ctx, dtype=torch.int32, device=DEV)
        qd, od = torch.randn(B, 1, hq, D, device=DEV, dtype=torch.float16), torch.empty(B, 1, hq, D, device=DEV, dtype=torch.float16)
        ws = SZ(0)
        check(lib.shim_decode_workspace(ptr(qd), ptr(kp), ptr(vp), ptr(lens), ptr(table), 1, B, hq, hkv, D, page, npg, B * npg,
                                        ctypes.byref(ws)), "ws")
        wsd = torch.empty(max(ws.value, 1), dtype=torch.uint8, device=DEV)
        nbytes = 2.0 * B * ctx * hkv * D * 2
        m = rounds(lambda: check(lib.shim_decode(ptr(qd), ptr(kp), ptr(vp), ptr(lens), ptr(table), ptr(od), ptr(wsd), ws.value, 1,
                                                 B, hq, hkv, D, page, npg, B * npg, stream()), "decode"))
        print("ab decode B %d ctx %d page 256: " % (B, ctx) + "  ".join(
            "%s %.4f ms %.0f GB/s (%.2fx A)" % (n, t, nbytes / t * 1e-6, m["A"] / t) for n, t in m.items()), flush=True)
        del kp, vp


def main():
    which = sys.argv[1:] or ["peak", "fwd", "decode", "bwd", "tf32"]
    print("GPU: %s, torch %s, CUDA %s, cuDNN %s" % ("none (dry run)" if DRY else torch.cuda.get_device_name(0),
                                                  torch.__version__, torch.version.cuda, torch.backends.cudnn.version()),
          flush=True)
    peak, hbm = 989.0, 3350.0
    if "peak" in which:
        peak_meas, hbm_meas = section_peak()
        print("peaks used for %%: dense bf16 %.0f TFLOP/s (datasheet, H100 SXM), HBM %.0f GB/s (datasheet); measured above" % (
            peak, hbm), flush=True)
    for name, fn in (("fwd", lambda: section_fwd(peak)), ("decode", lambda: section_decode(hbm)),
                     ("bwd", lambda: section_bwd(peak)), ("tf32", section_tf32), ("profile", section_profile),
                     ("ab", section_ab)):
        if name in which:
            try:
                fn()
            except Exception as e:
                import traceback
                traceback.print_exc()
                print("%s: FAILED: %s" % (name, e), flush=True)
            if not DRY:
                torch.cuda.empty_cache()
    print("bench_cuda_torch: done in %.0f s" % (time.time() - T0), flush=True)


if __name__ == "__main__":
    main()
