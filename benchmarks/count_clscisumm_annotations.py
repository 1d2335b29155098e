"""Count CL-SciSumm annotation records as parsed by spacy_rhetoric.readers.clscisumm
(records, skipped, manual records and their cited-span sizes, 5 = 5 or more).

    .venv/bin/python benchmarks/count_clscisumm_annotations.py [DATA_DIR]
"""
import sys
from collections import Counter
DATA = sys.argv[1] if len(sys.argv) > 1 else "../shared/data"
from spacy_rhetoric.readers.clscisumm import iter_topics, read_annotations
total = skipped = manual = 0
spans = Counter()
for root in [f"{DATA}/cl-scisumm/training-40-manual", f"{DATA}/cl-scisumm/scisummnet-2019-auto"]:
    for t in iter_topics(root):
        for f in t.annotation_files:
            recs, sk = read_annotations(f, topic=t.topic_id)
            total += len(recs); skipped += sk
            if not t.auto:
                manual += len(recs)
                spans.update(min(len(r.reference_offsets), 5) for r in recs)
print("records", total, "skipped", skipped, "manual", manual, "cited spans", dict(sorted(spans.items())))
