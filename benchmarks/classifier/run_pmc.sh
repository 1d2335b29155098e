#!/usr/bin/env bash
# PMC-Sents-FULL rows of the classifier/encoder benchmarks (CPU configs).
# Only the dev file of PMC-Sents-FULL is public, so it is split by article twice with
# `spacy-rhetoric split` (sorted PMC ids, numpy default_rng shuffle):
#   dev.jsonl -> train (80 % of the ids, seed 0) | test (20 %)   = bench_embeddings.py's split
#   train     -> train_fit (90 %, seed 1)        | valid (10 %)  = model-best selection
# Models are trained on train_fit, chosen on valid, and reported on test (never seen in training
# or selection). Sentences of an article are in random order in the released file, so the
# models are isolated-sentence ones (SentenceCorpus: one example per sentence).
#   bash benchmarks/classifier/run_pmc.sh [MAX_STEPS] [LOSSES...]
set -eu
cd "$(dirname "$0")/../.."
STEPS=${1:-1500}
shift 1 2>/dev/null || true
LOSSES=${*:-"SoftmaxLoss BatchAllTripletLoss ArcFaceLoss MultiSimilarityLoss NTXentLoss"}
PY=${PY:-.venv/bin/python}
DATA=${SPACY_RHETORIC_DATA:-../shared/data}
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
C=corpus/pmc
mkdir -p $C benchmarks/out/pmc
[ -f $C/pmc_dev.spacy ] || $PY -m spacy_rhetoric convert pmc $DATA/pmc-sents-full/dev.jsonl $C/pmc_dev.spacy
[ -f $C/test.spacy ] || $PY -m spacy_rhetoric split $C/pmc_dev.spacy $C/train.spacy $C/test.spacy --share 0.8 --seed 0
[ -f $C/valid.spacy ] || $PY -m spacy_rhetoric split $C/train.spacy $C/train_fit.spacy $C/valid.spacy --share 0.9 --seed 1
# classifier (isolated sentences)
out=training/pmc/classifier
if [ ! -d $out/model-best ]; then
  $PY -m spacy train benchmarks/common/configs/classifier_isolated_cpu.cfg --output $out \
    --paths.train $C/train_fit.spacy --paths.dev $C/valid.spacy \
    --corpora.train.@readers spacy_rhetoric.SentenceCorpus.v1 --corpora.dev.@readers spacy_rhetoric.SentenceCorpus.v1 \
    --training.max_steps "$STEPS" --training.eval_frequency 150 > benchmarks/out/pmc/classifier_train.log 2>&1
fi
$PY -m spacy_rhetoric evaluate $out/model-best $C/test.spacy --unit sentence --output benchmarks/out/pmc/classifier.json
# encoder, one run per metric loss
for loss in $LOSSES; do
  out=training/pmc/encoder_$loss
  if [ ! -d $out/model-best ]; then
    $PY -m spacy train configs/encoder.cfg --output $out \
      --paths.train $C/train_fit.spacy --paths.dev $C/valid.spacy \
      --components.rhetoric_sentence_encoder.loss.@misc "spacy_rhetoric.${loss}.v1" \
      --training.max_steps "$STEPS" --training.eval_frequency 150 \
      --training.optimizer.learn_rate.warmup_steps 20 > benchmarks/out/pmc/encoder_${loss}_train.log 2>&1
  fi
  $PY -m spacy_rhetoric evaluate $out/model-best $C/test.spacy --train $C/train.spacy --unit sentence \
    --output benchmarks/out/pmc/encoder_$loss.json
done
