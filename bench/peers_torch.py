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
    """warm-up, then one forward and one backward; returns (out, ms fwd, ms bwd). inputs: every
    tensor attn.h differentiates too (all of them get requires_grad, so autograd's backward
    does the same work as attn.h's)"""
    for t in inputs:
        t.requires_grad_()
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
    out, f, b = timed(lambda: rwkv_linear_attention_cpu(td, tf, k, v)[0], [td, tf, k, v], dout)
    return f, b, out, ref_out, k.grad, ref_dk, "transformers %s" % transformers.__version__


def mamba(torch, buf, B, D, L, N):
    """HF MambaMixer.slow_forward's selective scan, transcribed from transformers 5.24's
    modeling_mamba.py (it is inline in slow_forward; tests/fixtures/ssm_bwd_torch.py 'mreal'):
    dt = softplus(delta + dt_proj.bias), A = -exp(A_log), per-token B, C, D skip, SiLU gate."""
    import transformers
    u, delta, A, Bm, Cm, Dk, z, dbias, dout, ref_y, ref_du = take(
        buf, [(B, D, L), (B, D, L), (D, N), (B, N, L), (B, N, L), (D,), (B, D, L), (D,), (B, D, L), (B, D, L), (B, D, L)])

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

    out, f, b = timed(scan, [u, delta, A, Bm, Cm, Dk, z, dbias], dout)
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
    tr = lambda x: x.transpose(1, 2)
    out, f, b = timed(lambda: tr(naive_recurrent_rwkv6(tr(r), tr(k), tr(v), tr(w), u, scale=None)[0]),
                      [r, k, v, w, u], dout)
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
    att.query, att.key, att.value = Leaf(q), Leaf(k), Leaf(v)
    x = torch.zeros(B, S, H * D)
    out, f, b = timed(lambda: att(x)[0], [q, k, v, att.conv.weight], dout)   # attn.h: dq, dk, dv, dconv
    return f, b, out, ref_o, q.grad, ref_dq, "transformers %s" % transformers.__version__


def given(torch, t):
    """a projection module class whose forward ignores its input and returns fn(t): the given
    tensor(s), the leaves autograd differentiates, e.g. transposed, or copied where the peer
    scales its projection in place"""
    class Given(torch.nn.Module):
        def __init__(self, fn):
            super().__init__()
            self.fn = fn

        def forward(self, x):
            return self.fn(t)
    return Given


def bigbird(torch, buf, B, S, H, D, BLK, R):
    """HF BigBirdBlockSparseAttention.bigbird_block_sparse_attention on q, k, v [B, H, S, D]
    (tests/fixtures/bigbird_bwd_hf.py), training mode (eval's rand_attn is all zeros) with the
    random draw returning bench_peers.c's table (one [S/BLK - 2, R] array per head)"""
    import transformers
    from transformers import BigBirdConfig, BigBirdModel
    from transformers.models.big_bird.modeling_big_bird import BigBirdBlockSparseAttention
    nb = S // BLK
    q, k, v, table, dout, ref_o, ref_dq = take(
        buf, [(B, S, H, D), (B, S, H, D), (B, S, H, D), (H, nb - 2, R), (B, S, H, D), (B, S, H, D), (B, S, H, D)])
    tables = [t.long().numpy() for t in table]
    cfg = BigBirdConfig(hidden_size=H * D, num_attention_heads=H, block_size=BLK, num_random_blocks=R,
                        attention_type="block_sparse", max_position_embeddings=S)
    layer = BigBirdBlockSparseAttention(cfg, seed=0).train()
    blocked, band, from_mask, to_mask = BigBirdModel.create_masks_for_block_sparse_attn(torch.ones(B, S), BLK)
    tr = lambda x: x.transpose(1, 2)

    def run():
        heads = iter(tables)   # S 1024/3072/4096: one _bigbird_block_rand_mask call per head; else _with_head
        layer._bigbird_block_rand_mask = lambda *a, **kw: next(heads)
        layer._bigbird_block_rand_mask_with_head = lambda *a, **kw: list(tables)
        return layer.bigbird_block_sparse_attention(tr(q), tr(k), tr(v), band, from_mask, to_mask, blocked, blocked,
                                                    H, R, D, BLK, BLK, B, S, S, seed=layer.seed,
                                                    plan_from_length=None, plan_num_rand_blocks=None)[0]

    out, f, b = timed(run, [q, k, v], dout)   # out is [B, S, H, D]
    return f, b, out, ref_o, q.grad, ref_dq, "transformers %s" % transformers.__version__


def longformer(torch, buf, B, S, H, D, W, NG):
    """HF LongformerSelfAttention (tests/fixtures/longformer_hf_bwd.py): attention_window 2W, the
    six Linear projections return the given tensors, NG global tokens at g S / NG; its
    attention_mask is LongformerModel's (+10000 global, 0 local); dq is the local query's"""
    import transformers
    from transformers import LongformerConfig
    from transformers.models.longformer.modeling_longformer import LongformerSelfAttention
    q, k, v, qg, kg, vg, dout, ref_o, ref_dq = take(buf, [(B, S, H * D)] * 9)
    cfg = LongformerConfig(hidden_size=H * D, num_attention_heads=H, attention_window=[2 * W],
                           attention_probs_dropout_prob=0.0)
    att = LongformerSelfAttention(cfg, layer_id=0).eval()
    pos = torch.arange(NG) * (S // NG)
    seq_first = lambda t: t.transpose(0, 1)   # HF's [S, B, E]
    att.query = given(torch, q)(lambda t: seq_first(t).clone())   # HF divides it in place
    att.key, att.value = given(torch, k)(seq_first), given(torch, v)(seq_first)
    att.query_global = given(torch, qg)(lambda t: seq_first(t)[pos])   # HF projects only the global rows
    att.key_global, att.value_global = given(torch, kg)(seq_first), given(torch, vg)(seq_first)
    mask = torch.zeros(B, S)
    mask[:, pos] = 10000.0
    x = torch.zeros(B, S, H * D)
    out, f, b = timed(lambda: att(x, attention_mask=mask, is_index_masked=mask < 0, is_index_global_attn=mask > 0,
                                  is_global_attn=True)[0], [q, k, v, qg, kg, vg], dout)
    return f, b, out, ref_o, q.grad, ref_dq, "transformers %s" % transformers.__version__


def lsh(torch, buf, B, S, H, D, CH, NH, NBK):
    """HF LSHSelfAttention, eval, encoder (tests/fixtures/reformer_hf_grad.py): query_key and
    value return the given tensors; _hash_vectors' torch.randn draw returns bench_peers.c's
    rotations [H, D, NH, NBK/2], so both sides hash alike; dqk is the shared tensor's gradient"""
    import transformers
    from transformers import ReformerConfig
    from transformers.models.reformer.modeling_reformer import LSHSelfAttention
    qk, v, rot, dout, ref_o, ref_dqk = take(
        buf, [(B, S, H * D), (B, S, H * D), (H, D, NH, NBK // 2), (B, S, H * D), (B, S, H * D), (B, S, H * D)])
    cfg = ReformerConfig(hidden_size=H * D, num_attention_heads=H, attention_head_size=D, lsh_attn_chunk_length=CH,
                         num_hashes=NH, num_buckets=NBK, hash_seed=0, is_decoder=False, max_position_embeddings=S,
                         lsh_attention_probs_dropout_prob=0.0, attn_layers=["lsh"])
    att = LSHSelfAttention(cfg).eval()
    att.query_key, att.value = given(torch, qk)(lambda t: t), given(torch, v)(lambda t: t)
    randn = torch.randn

    def rotations(*a, **kw):
        return rot.clone() if tuple(a[0]) == tuple(rot.shape) else randn(*a, **kw)

    x = torch.zeros(B, S, H * D)
    torch.randn = rotations
    try:
        out, f, b = timed(lambda: att(x).hidden_states, [qk, v], dout)
    finally:
        torch.randn = randn
    return f, b, out, ref_o, qk.grad, ref_dqk, "transformers %s" % transformers.__version__


def performer(torch, buf, B, S, H, D, M):
    """performer-pytorch FastAttention, softmax kernel, non-causal (tests/fixtures/
    performer_pytorch_bwd.py): projection_matrix = bench_peers.c's W [M, D]; [B, H, S, D] views"""
    from importlib.metadata import version
    from performer_pytorch.performer_pytorch import FastAttention
    q, k, v, w, dout, ref_o, ref_dq = take(
        buf, [(B, S, H, D), (B, S, H, D), (B, S, H, D), (M, D), (B, S, H, D), (B, S, H, D), (B, S, H, D)])
    fa = FastAttention(dim_heads=D, nb_features=M, causal=False).eval()
    fa.projection_matrix.copy_(w)
    tr = lambda x: x.transpose(1, 2)
    out, f, b = timed(lambda: tr(fa(tr(q), tr(k), tr(v))), [q, k, v], dout)
    return f, b, out, ref_o, q.grad, ref_dq, "performer-pytorch %s" % version("performer-pytorch")


def routing(torch, buf, B, S, H, D, WIN):
    """routing-transformer's KmeansAttention (SelfAttention(..., local_attn_heads=0, shared_qk=True)
    .global_attn, eval; tests/fixtures/routing_transformer_bwd.py): its Kmeans buffer = bench_peers.c's
    centroids; one tensor as q and k ([B, H, S, D] views); dqk is that tensor's gradient"""
    from importlib.metadata import version
    from routing_transformer.routing_transformer import SelfAttention
    nc = S // WIN
    qk, v, means, dout, ref_o, ref_dqk = take(
        buf, [(B, S, H, D), (B, S, H, D), (H, nc, D), (B, S, H, D), (B, S, H, D), (B, S, H, D)])
    layer = SelfAttention(H * D, depth=1, max_seq_len=S, heads=H, local_attn_heads=0, window_size=WIN, dim_head=D,
                          causal=False, shared_qk=True).eval()
    att = layer.global_attn
    assert att.kmeans.means.shape == means.shape, att.kmeans.means.shape
    att.kmeans.means.copy_(means)
    att.kmeans.initted.fill_(True)
    tr = lambda x: x.transpose(1, 2)
    out, f, b = timed(lambda: tr(att(tr(qk), tr(qk), tr(v))[0]), [qk, v], dout)
    return f, b, out, ref_o, qk.grad, ref_dqk, "routing-transformer %s" % version("routing-transformer")


def nystrom_lr(torch, buf, B, S, H, D, M, KC):
    """lucidrains' nystrom-attention NystromAttention (tests/fixtures/nystrom_attention_lucidrains_bwd.py):
    to_qkv returns the given q, k, v, to_out dropped (attn.h gives the merged heads), no mask.
    oneDNN's depthwise conv weight gradient is wrong from 33 taps (that script's note): the
    native kernel runs the conv (mkldnn off)"""
    from importlib.metadata import version
    from nystrom_attention import NystromAttention
    torch.backends.mkldnn.enabled = False
    q, k, v, conv, dout, ref_o, ref_dq = take(
        buf, [(B, S, H * D), (B, S, H * D), (B, S, H * D), (H, 1, KC, 1), (B, S, H * D), (B, S, H * D), (B, S, H * D)])
    att = NystromAttention(dim=H * D, dim_head=D, heads=H, num_landmarks=M, residual_conv_kernel=KC).eval()
    with torch.no_grad():
        att.res_conv.weight.copy_(conv)
    att.to_qkv = given(torch, (q, k, v))(lambda t: torch.cat(t, dim=-1))
    att.to_out = torch.nn.Identity()
    x = torch.zeros(B, S, H * D)
    out, f, b = timed(lambda: att(x), [q, k, v, att.res_conv.weight], dout)   # attn.h: dq, dk, dv, dconv
    return f, b, out, ref_o, q.grad, ref_dq, "nystrom-attention %s" % version("nystrom-attention")


def linear(torch, buf, B, S, H, D):
    """linear attention, elu + 1 features, non-causal: the fast-transformers LinearAttention
    einsums under autograd (bench/bench_linear.c part 5), eps 1e-6"""
    F = torch.nn.functional
    q, k, v, dout, ref_o, ref_dq = take(buf, [(B, S, H, D)] * 6)

    def fwd():
        Q, K = F.elu(q) + 1, F.elu(k) + 1
        KV = torch.einsum("nshd,nshm->nhmd", K, v)
        Z = 1 / (torch.einsum("nlhd,nhd->nlh", Q, K.sum(dim=1)) + 1e-6)
        return torch.einsum("nlhd,nhmd,nlh->nlhm", Q, KV, Z)

    out, f, b = timed(fwd, [q, k, v], dout)
    return f, b, out, ref_o, q.grad, ref_dq, "einsums"


FAMILIES = {"rwkv4": rwkv4, "mamba": mamba, "rwkv6": rwkv6, "nystrom": nystrom, "bigbird": bigbird,
            "longformer": longformer, "lsh": lsh, "performer": performer, "routing": routing,
            "nystrom_lr": nystrom_lr, "linear": linear}


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
