#!/usr/bin/env python3
"""PyTorch's time for what `build/minilm MODEL_DIR --bench FILE` times (make bench-minilm runs
both): transformers' BertModel + mean pooling + L2 normalisation, f32, inference mode, the same
sentences sorted by token length and cut into batches of 1 and 32 padded to their longest, as
build/minilm does (and sentence-transformers' encode). Prints sentences/s, median of 5 runs.
    python3 bench/minilm_torch.py MODEL_DIR FILE [THREADS]     (THREADS: e.g. 1; default 1 and 2)
"""
import statistics
import sys
import time

import torch
from transformers import BertModel, BertTokenizer


def main():
    model_dir, path = sys.argv[1], sys.argv[2]
    thread_counts = [int(sys.argv[3])] if len(sys.argv) > 3 else [1, 2]
    with open(path, encoding="utf-8") as f:
        sentences = f.read().split("\n")
    if sentences and sentences[-1] == "":
        sentences.pop()
    tok = BertTokenizer.from_pretrained(model_dir)
    model = BertModel.from_pretrained(model_dir).eval()
    ids = tok(sentences, truncation=True, max_length=256)["input_ids"]
    order = sorted(range(len(ids)), key=lambda i: len(ids[i]))

    def run(batch):
        out = [None] * len(ids)
        for s in range(0, len(order), batch):
            idx = order[s:s + batch]
            S = max(len(ids[i]) for i in idx)
            x = torch.zeros(len(idx), S, dtype=torch.long)
            mask = torch.zeros(len(idx), S, dtype=torch.long)
            for r, i in enumerate(idx):
                x[r, :len(ids[i])] = torch.tensor(ids[i])
                mask[r, :len(ids[i])] = 1
            h = model(input_ids=x, attention_mask=mask).last_hidden_state
            m = mask.unsqueeze(-1).to(h.dtype)
            e = torch.nn.functional.normalize((h * m).sum(1) / m.sum(1).clamp(min=1e-9), dim=1)
            for r, i in enumerate(idx):
                out[i] = e[r]
        return out

    print("PyTorch %s (%s), transformers BertModel + mean pooling, %d sentences, median of 5 runs"
          % (torch.__version__, torch.backends.cpu.get_cpu_capability(), len(ids)))
    print("%-7s %-8s %14s" % ("batch", "threads", "sentences/s"))
    with torch.inference_mode():
        for batch in (1, 32):
            for threads in thread_counts:
                torch.set_num_threads(threads)
                run(batch)
                t = []
                for _ in range(5):
                    t0 = time.perf_counter()
                    run(batch)
                    t.append(time.perf_counter() - t0)
                print("%-7d %-8d %14.1f" % (batch, threads, len(ids) / statistics.median(t)))
                sys.stdout.flush()


if __name__ == "__main__":
    main()
