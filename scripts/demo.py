"""make demo: placeholder until the first component lands."""
import spacy_rhetoric

print("spacy_rhetoric", spacy_rhetoric.__version__)
