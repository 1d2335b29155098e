#!/usr/bin/env bash
# Train configs/encoder_trf.cfg once per metric loss on CSAbstruct train (PK batches) and
# score model-best on CSAbstruct dev with benchmarks/bench_encoder.py.
#   bash benchmarks/run_encoder_losses.sh [TIME_LIMIT] [MAX_STEPS] [LOSSES...]
# Runs all losses in parallel (1 torch thread each, nice 10). Each training is bounded by
# MAX_STEPS and by TIME_LIMIT (GNU timeout); model-best is selected on the first 300 dev
# sentences every 25 steps, so a run cut by the time limit still leaves a model-best.
set -u
cd "$(dirname "$0")/.."
LIMIT=${1:-55m}
STEPS=${2:-400}
shift 2 2>/dev/null || shift $#
LOSSES=${*:-"SoftmaxLoss BatchAllTripletLoss ArcFaceLoss MultiSimilarityLoss NTXentLoss"}
TRAIN=${TRAIN:-corpus/csabstruct/train.spacy}
DEV=${DEV:-corpus/csabstruct/dev.spacy}
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
for loss in $LOSSES; do
  out=training/encoder_${loss}
  mkdir -p "$out"
  (
    date -u +"start %F %T UTC" > "$out/train.log"
    timeout "$LIMIT" nice -n 10 .venv/bin/python -m spacy train configs/encoder_trf.cfg \
      --output "$out" --paths.train "$TRAIN" --paths.dev "$DEV" \
      --components.rhetoric_sentence_encoder.loss.@misc "spacy_rhetoric.${loss}.v1" \
      --training.max_steps "$STEPS" --training.eval_frequency 25 \
      --training.optimizer.learn_rate.warmup_steps 20 --corpora.dev.limit 300 >> "$out/train.log" 2>&1
    echo "exit $?" >> "$out/train.log"
    date -u +"end %F %T UTC" >> "$out/train.log"
    nice -n 10 .venv/bin/python benchmarks/bench_encoder.py "$out/model-best" "$DEV" --unit both \
      --out "benchmarks/out/encoder_${loss}.json" > "$out/eval.log" 2>&1
  ) &
done
wait
