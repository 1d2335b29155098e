#!/usr/bin/env bash
# Train an encoder config once per metric loss on CSAbstruct train (PK batches) and
# score model-best on CSAbstruct dev with benchmarks/encoder/bench_encoder.py.
#   [CONFIG=benchmarks/common/configs/encoder_trf.cfg] [UNIT=sentence|doc|both] [EVAL_EVERY=25] \
#     bash benchmarks/encoder/run_encoder_losses.sh [TIME_LIMIT] [MAX_STEPS] [LOSSES...]
# Models go to training/encoder_<loss>/ (training/encoder_cpu_<loss>/ for configs/encoder.cfg).
# Runs all losses in parallel (1 torch thread each, nice 10). Each training is bounded by
# MAX_STEPS and by TIME_LIMIT (GNU timeout); model-best is selected on the first 300 dev
# sentences every EVAL_EVERY steps, so a run cut by the time limit still leaves a model-best.
set -u
cd "$(dirname "$0")/../.."
LIMIT=${1:-55m}
STEPS=${2:-400}
shift 2 2>/dev/null || shift $#
LOSSES=${*:-"SoftmaxLoss BatchAllTripletLoss ArcFaceLoss MultiSimilarityLoss NTXentLoss"}
TRAIN=${TRAIN:-corpus/csabstruct/train.spacy}
DEV=${DEV:-corpus/csabstruct/dev.spacy}
CONFIG=${CONFIG:-benchmarks/common/configs/encoder_trf.cfg}
UNIT=${UNIT:-both}
EVAL_EVERY=${EVAL_EVERY:-25}
case "$CONFIG" in configs/encoder.cfg|*/configs/encoder.cfg) PREFIX=encoder_cpu_ ;; *) PREFIX=encoder_ ;; esac
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
for loss in $LOSSES; do
  out=training/${PREFIX}${loss}
  mkdir -p "$out"
  (
    date -u +"start %F %T UTC" > "$out/train.log"
    timeout "$LIMIT" nice -n 10 .venv/bin/python -m spacy train "$CONFIG" \
      --output "$out" --paths.train "$TRAIN" --paths.dev "$DEV" \
      --components.rhetoric_sentence_encoder.loss.@misc "spacy_rhetoric.${loss}.v1" \
      --training.max_steps "$STEPS" --training.eval_frequency "$EVAL_EVERY" \
      --training.optimizer.learn_rate.warmup_steps 20 --corpora.dev.limit 300 >> "$out/train.log" 2>&1
    echo "exit $?" >> "$out/train.log"
    date -u +"end %F %T UTC" >> "$out/train.log"
    nice -n 10 .venv/bin/python benchmarks/encoder/bench_encoder.py "$out/model-best" "$DEV" --unit "$UNIT" \
      --out "benchmarks/out/${PREFIX}${loss}.json" > "$out/eval.log" 2>&1
  ) &
done
wait
