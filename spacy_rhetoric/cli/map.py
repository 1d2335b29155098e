"""``spacy-rhetoric map``: (being written)."""
