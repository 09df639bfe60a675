"""The PyTorch side of bench/bench_peers.c: one round of one family's reference implementation,
run in its own process between attn.h's rounds (never at the same time).

    python bench/peers_torch.py <family> <inputs.bin> <dims...>

inputs.bin holds float32 arrays that bench_peers.c wrote, in the order each function below reads
them: the inputs, dout (the loss is sum(out * dout)), then attn.h's output and one gradient, so
the same inputs run here and the difference is printed. One thread; one untimed warm-up, then
one timed forward and one timed backward (loss.backward() of the op alone). Prints four
numbers, one a line: forward ms, backward ms, max |attn.h - peer| of the output and of the
gradient; then a last line 'versions: ...'. A missing package prints 'skip: <why>' instead.
The call conventions are those of the fixture scripts in tests/fixtures/ (named per family)."""
import sys
import time


def timed(fn, inputs, dout):
    """warm-up, then one forward and one backward; returns (out, ms fwd, ms bwd), grads on inputs"""
    for rep in range(2):
        for t in inputs:
            t.grad = None
        t0 = time.perf_counter()
        out = fn()
        t1 = time.perf_counter()
        (out * dout).sum().backward()
        t2 = time.perf_counter()
    return out, (t1 - t0) * 1e3, (t2 - t1) * 1e3


def take(buf, shapes):
    """split the flat float32 tensor into the given shapes, in order"""
    out, o = [], 0
    for s in shapes:
        n = 1
        for d in s:
            n *= d
        out.append(buf[o:o + n].reshape(s).clone())
        o += n
    assert o == buf.numel(), "inputs file size %d, expected %d" % (buf.numel(), o)
    return out


def rwkv4(torch, buf, B, T, C):
    """HF RWKV-4's WKV, rwkv_linear_attention_cpu (tests/fixtures/rwkv4_hf.py): time_decay raw"""
    import transformers
    from transformers.models.rwkv.modeling_rwkv import rwkv_linear_attention_cpu
    td, tf, k, v, dout, ref_out, ref_dk = take(buf, [(C,), (C,), (B, T, C), (B, T, C), (B, T, C), (B, T, C), (B, T, C)])
    k.requires_grad_()
    out, f, b = timed(lambda: rwkv_linear_attention_cpu(td, tf, k, v)[0], [k], dout)
    return f, b, out, ref_out, k.grad, ref_dk, "transformers %s" % transformers.__version__


def mamba(torch, buf, B, D, L, N):
    """HF MambaMixer.slow_forward's selective scan, transcribed from transformers 5.24's
    modeling_mamba.py (it is inline in slow_forward; tests/fixtures/ssm_bwd_torch.py 'mreal'):
    dt = softplus(delta + dt_proj.bias), A = -exp(A_log), per-token B, C, D skip, SiLU gate."""
    import transformers
    u, delta, A, Bm, Cm, Dk, z, dbias, dout, ref_y, ref_du = take(
        buf, [(B, D, L), (B, D, L), (D, N), (B, N, L), (B, N, L), (D,), (B, D, L), (D,), (B, D, L), (B, D, L), (B, D, L)])
    u.requires_grad_()

    def scan():
        dt = torch.nn.functional.softplus(delta + dbias[None, :, None])             # [B, D, L]
        discrete_A = torch.exp(A[None, :, None, :] * dt[:, :, :, None])             # [B, D, L, N]
        discrete_B = dt[:, :, :, None] * Bm.transpose(1, 2)[:, None, :, :]          # [B, D, L, N]
        deltaB_u = discrete_B * u[:, :, :, None]
        C = Cm.transpose(1, 2)                                                      # [B, L, N]
        ssm_state = torch.zeros(B, D, N)
        scan_outputs = []
        for i in range(L):
            ssm_state = discrete_A[:, :, i, :] * ssm_state + deltaB_u[:, :, i, :]
            scan_outputs.append(torch.matmul(ssm_state, C[:, i, :].unsqueeze(-1))[:, :, 0])
        y = torch.stack(scan_outputs, dim=-1)
        y = y + u * Dk[None, :, None]
        return y * torch.nn.functional.silu(z)

    out, f, b = timed(scan, [u], dout)
    return f, b, out, ref_y, u.grad, ref_du, "transformers %s (slow_forward scan)" % transformers.__version__


def rwkv6(torch, buf, B, T, H, K):
    """fla's naive_recurrent_rwkv6 (tests/fixtures/rwkv6_fla.py): [B, T, H, K] transposed to head
    first for the call, w the log decay, scale None = K^-1/2; attn.h's dr arrives times the scale"""
    try:
        import fla
        from fla.ops.rwkv6.recurrent_naive import naive_recurrent_rwkv6
    except Exception as e:
        return "fla does not import (%s)" % type(e).__name__
    r, k, v, w, u, dout, ref_o, ref_dr = take(
        buf, [(B, T, H, K), (B, T, H, K), (B, T, H, K), (B, T, H, K), (H, K), (B, T, H, K), (B, T, H, K), (B, T, H, K)])
    r.requires_grad_()
    tr = lambda x: x.transpose(1, 2)
    out, f, b = timed(lambda: tr(naive_recurrent_rwkv6(tr(r), tr(k), tr(v), tr(w), u, scale=None)[0]), [r], dout)
    return f, b, out, ref_o, r.grad, ref_dr, "fla %s naive_recurrent_rwkv6" % getattr(fla, "__version__", "?")


def nystrom(torch, buf, B, S, H, D, M, KC):
    """HF NystromformerSelfAttention with its defaults (tests/fixtures/nystromformer_hf_bwd.py):
    the query/key/value Linear layers return q, k, v themselves; no mask; conv weight [H, 1, KC, 1]"""
    import transformers
    from transformers import NystromformerConfig
    from transformers.models.nystromformer.modeling_nystromformer import NystromformerSelfAttention

    class Leaf(torch.nn.Module):
        def __init__(self, t):
            super().__init__()
            self.t = t

        def forward(self, x):
            return self.t

    q, k, v, conv, dout, ref_o, ref_dq = take(
        buf, [(B, S, H * D), (B, S, H * D), (B, S, H * D), (H, 1, KC, 1), (B, S, H * D), (B, S, H * D), (B, S, H * D)])
    cfg = NystromformerConfig(hidden_size=H * D, num_attention_heads=H, num_landmarks=M, segment_means_seq_len=S,
                              conv_kernel_size=KC, attention_probs_dropout_prob=0.0)
    att = NystromformerSelfAttention(cfg).eval()
    with torch.no_grad():
        att.conv.weight.copy_(conv)
    q.requires_grad_()
    att.query, att.key, att.value = Leaf(q), Leaf(k), Leaf(v)
    x = torch.zeros(B, S, H * D)
    out, f, b = timed(lambda: att(x)[0], [q], dout)
    return f, b, out, ref_o, q.grad, ref_dq, "transformers %s" % transformers.__version__


FAMILIES = {"rwkv4": rwkv4, "mamba": mamba, "rwkv6": rwkv6, "nystrom": nystrom}


def main():
    fam, path, dims = sys.argv[1], sys.argv[2], [int(x) for x in sys.argv[3:]]
    try:
        import numpy
        import torch
    except Exception as e:
        print("skip: torch/numpy do not import (%s)" % e)
        return
    torch.set_num_threads(1)
    buf = torch.from_numpy(numpy.fromfile(path, dtype=numpy.float32))
    try:
        res = FAMILIES[fam](torch, buf, *dims)
    except ImportError as e:
        print("skip: %s" % e)
        return
    if isinstance(res, str):
        print("skip: " + res)
        return
    f, b, out, ref_out, grad, ref_grad, ver = res
    print("%.4f\n%.4f" % (f, b))
    print("%.3e\n%.3e" % ((out.detach() - ref_out).abs().max().item(), (grad - ref_grad).abs().max().item()))
    print("versions: %s, torch %s" % (ver, torch.__version__))


if __name__ == "__main__":
    main()
