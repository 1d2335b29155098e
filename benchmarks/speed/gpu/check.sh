#!/usr/bin/env bash
# The GPU checks, in steps that each need only one part of bundle.sh's output on the GPU machine
# (parts arrive one per transfer; what is installed, and the data, stay outside the checkout, in /tmp):
#   bash benchmarks/speed/gpu/check.sh install-a   # .gpu/wheels-a present
#   bash benchmarks/speed/gpu/check.sh install-b   # .gpu/wheels-b, .gpu/data present
#   bash benchmarks/speed/gpu/check.sh model       # .gpu/model present: float32 copy in a Hugging Face cache
#   bash benchmarks/speed/gpu/check.sh run OUT     # .demo/pipeline present: the checks, logs and JSON in OUT
#   bash benchmarks/speed/gpu/check.sh tests OUT   # after `model`: pytest -m gpu alone (4 workers), log in OUT
# `run`: bench_throughput.py --gpu-id 0 (annotate against plain MiniLM encode and TF-IDF + LogReg, each
# twice), `annotate --gpu-id 0` as a user runs it, and `pytest -m gpu` (one `spacy train --gpu-id 0`
# step of every shipped config).
set -uo pipefail
cd "$(dirname "$0")/../../.."
# installed parts live outside the checkout (the checkout is re-synced at each transfer)
SITE=${GPU_SITE:-/tmp/gpu-site} HFDIR=${GPU_HF_HOME:-/tmp/gpu-hf} DATA=${GPU_DATA:-/tmp/gpu-data}
export PYTHONPATH=$PWD:$SITE HF_HOME=$HFDIR HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 \
       TOKENIZERS_PARALLELISM=false PYTHONUNBUFFERED=1
PIP=(python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE")
need() { [ -e "$1" ] || { echo "missing $1 (${2:-an earlier step}): this machine did not keep it" >&2; exit 3; }; }
gpu_tests() {  # OUT: every gpu-marked test, one `spacy train --gpu-id 0` step per shipped config
  timeout 240 python3 -m pytest -q -rA --durations=0 -p no:cacheprovider -n 4 -m gpu tests/test_devices.py 2>&1 \
      | tee "$1/pytest_gpu.log" | grep -v -i warning | tail -40
}
case "${1:-}" in
  install-a)
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
    python3 -c "import sys, torch, cupy; print(sys.version.split()[0], torch.__version__, cupy.__version__, torch.cuda.get_device_name(0))"
    need .gpu/wheels-a "bundle.sh"; mkdir -p "$SITE" && "${PIP[@]}" .gpu/wheels-a/*.whl ;;
  install-b)
    need "$SITE"/spacy "install-a"; need .gpu/wheels-b "bundle.sh"
    rm -rf "$DATA" && cp -r .gpu/data "$DATA" && "${PIP[@]}" .gpu/wheels-b/*.whl && rm -rf "$SITE"/spacy_rhetoric  # the checkout's package runs; its dist-info gives the entry points
    python3 -c "
import spacy, thinc, transformers, sentence_transformers, spacy_rhetoric
from spacy.util import registry
registry.architectures.get('spacy_rhetoric.FullPaperSentenceClassifier.v4')
spacy.require_gpu(0)
print('spacy', spacy.__version__, 'thinc', thinc.__version__, 'transformers', transformers.__version__,
      'sentence-transformers', sentence_transformers.__version__, spacy_rhetoric.__file__)" ;;
  model)
    need "$SITE"/transformers "install-b"; need .gpu/model/model16.safetensors "bundle.sh"
    python3 - <<'PY'
import os, shutil
from safetensors.torch import load_file, save_file
rev = "0" * 40
base = os.environ["HF_HOME"] + "/hub/models--sentence-transformers--all-MiniLM-L6-v2"
snap = f"{base}/snapshots/{rev}"
os.makedirs(snap, exist_ok=True); os.makedirs(f"{base}/refs", exist_ok=True)
with open(f"{base}/refs/main", "w") as f:
    f.write(rev)
for name in os.listdir(".gpu/model"):
    src = os.path.join(".gpu/model", name)
    if name == "model16.safetensors":
        save_file({k: v.float() for k, v in load_file(src).items()}, f"{snap}/model.safetensors", metadata={"format": "pt"})
    elif os.path.isdir(src):
        shutil.copytree(src, f"{snap}/{name}", dirs_exist_ok=True)
    else:
        shutil.copy(src, snap)
PY
    python3 -c "
from sentence_transformers import SentenceTransformer
m = SentenceTransformer('sentence-transformers/all-MiniLM-L6-v2', device='cuda')
print(m.encode(['We propose a parser.']).shape, m.device)" ;;
  run)
    OUT=${2:?run OUT}; mkdir -p "$OUT"; need "$HFDIR"/hub "model"; need .demo/pipeline/config.cfg "the pipeline"
    timeout 280 python3 benchmarks/speed/bench_throughput.py --gpu-id 0 --pipeline .demo/pipeline --data "$DATA" --components \
        --out "$OUT/throughput_gpu.json" 2>&1 | tee "$OUT/bench_throughput.log" | grep -v -i warning
    TIME=(); [ -x /usr/bin/time ] && TIME=(/usr/bin/time -v)
    "${TIME[@]}" timeout 120 python3 -m spacy_rhetoric annotate .demo/pipeline "$DATA"/paper-formats \
        -o /tmp/gpu-check-annotate --gpu-id 0 > "$OUT/annotate.log" 2>&1; echo "annotate exit $?"; tail -25 "$OUT/annotate.log"
    gpu_tests "$OUT" ;;
  tests)
    OUT=${2:?tests OUT}; mkdir -p "$OUT"; need "$HFDIR"/hub "model"; gpu_tests "$OUT" ;;
  *) echo "usage: check.sh install-a | install-b | model | run OUT | tests OUT" >&2; exit 2 ;;
esac
