#!/usr/bin/env bash
# The per-fold trainings of benchmarks/fullpaper/bench_fullpaper.py: for each MuLMS-AZ fold, the full-paper classifier
# (configs/classifier.cfg) trained on CSAbstruct train + the other four folds'
# papers (each paper 3 times), model-last kept (no model selection on the held-out fold).
# CORESC=1: every field -- also the ART / CoreSC papers of four of its five folds (readers.coresc.coresc_folds;
# MuLMS-AZ fold trainK is held out with ART fold foldK, written to <fold>/heldout_coresc.spacy), scored on both
# by bench_fullpaper.py --cv-dir and bench_fields.py --cv-dir. ART is CC BY-NC: so are models trained on it.
# CORESC=only: the CoreSC classifier (configs/coresc_classifier.cfg, the 11 concepts as the fine label) on the
# ART papers alone, per ART fold fold1..fold5 (held out: <fold>/heldout.spacy), scored by
# bench_fields.py --coresc-cv-dir. FOLDS="fold1": only those folds. CLSCISUMM=1: also the CL-SciSumm reference
# papers, their cited sentences labelled by the citances' discourse facets (section_labels --clscisumm), as the demo.
# AZ=1: also the AZ-CL papers (computational linguistics) of four of its five folds (readers.az.az_folds; MuLMS-AZ
# fold trainK is held out with AZ-CL fold foldK, written to <fold>/heldout_az.spacy), scored by bench_fields.py
# --az-cv-dir. AZ=only: the AZ classifier (configs/az_classifier.cfg, the 7 zones as the fine label) on the AZ-CL
# papers alone, per AZ-CL fold fold1..fold5. EXTRA_CORPUS_ARGS: more section_labels options (e.g. --mulms-copies 2).
#   CV_DIR=training/fullpaper_cv STEPS=2000 PARALLEL=2 bash benchmarks/fullpaper/run_fullpaper_cv.sh [extra spacy train overrides]
# A fold whose training ended (<fold>/trained) is skipped (rerun to resume). Logs: $CV_DIR/<fold>/train.log.
set -euo pipefail
cd "$(dirname "$0")/../.."
CV_DIR=${CV_DIR:-training/fullpaper_cv}
STEPS=${STEPS:-2000}
PARALLEL=${PARALLEL:-1}
DATA=${SPACY_RHETORIC_DATA:-../shared/data}
PY=${PY:-.venv/bin/python}
CORESC=${CORESC:-0}
CLSCISUMM=${CLSCISUMM:-0}
AZ=${AZ:-0}
export HF_HUB_OFFLINE=1 OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
CONFIG=configs/classifier.cfg
if [ "$CORESC" = only ]; then
  CONFIG=configs/coresc_classifier.cfg
  FOLDS=${FOLDS:-fold1 fold2 fold3 fold4 fold5}
fi
if [ "$AZ" = only ]; then
  CONFIG=configs/az_classifier.cfg
  FOLDS=${FOLDS:-fold1 fold2 fold3 fold4 fold5}
fi
FOLDS=${FOLDS:-train1 train2 train3 train4 train5}
run_fold() {
  local fold=$1; shift
  local dir=$CV_DIR/$fold
  # spacy train writes model-last at every evaluation: only the marker says the training ended
  [ -f "$dir/trained" ] && { echo "$fold: done"; return 0; }
  local corpus=(--fullpaper --heldout-folds "$fold")
  [ "$CORESC" = 1 ] && corpus+=(--coresc --coresc-heldout-folds "fold${fold#train}")
  [ "$CLSCISUMM" = 1 ] && corpus+=(--clscisumm)
  [ "$AZ" = 1 ] && corpus+=(--az --az-heldout-folds "fold${fold#train}")
  [ "$CORESC" = only ] && corpus=(--coresc-only --heldout-folds "$fold")
  [ "$AZ" = only ] && corpus=(--az-only --heldout-folds "$fold")
  # shellcheck disable=SC2206
  corpus+=(${EXTRA_CORPUS_ARGS:-})
  [ -f "$dir/train.spacy" ] || $PY -m spacy_rhetoric.readers.section_labels "$dir" --data "$DATA" \
      "${corpus[@]}" > "$dir.corpus.json"
  $PY -m spacy train "$CONFIG" --output "$dir/model" \
    --paths.train "$dir/train.spacy" --paths.dev "$dir/dev.spacy" --training.max_steps "$STEPS" \
    --training.eval_frequency 1000 "$@" > "$dir/train.log" 2>&1
  touch "$dir/trained"
  echo "$fold: trained"
}
mkdir -p "$CV_DIR"
pids=()
for fold in $FOLDS; do
  run_fold "$fold" "$@" &
  pids+=($!)
  if [ "${#pids[@]}" -ge "$PARALLEL" ]; then wait "${pids[0]}"; pids=("${pids[@]:1}"); fi
done
wait
