"""Self-supervised pre-training of the shared transformer: SENT-MASK
(``sentmask``) and COSAEMB section-aware chunk embeddings (``cosaemb``);
``windows`` holds their window/chunk arithmetic."""
