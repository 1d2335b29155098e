"""``spacy-rhetoric render``: (being written)."""
