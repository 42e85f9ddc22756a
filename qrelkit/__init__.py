"""qrelkit: make relevance judgments with models, and audit them."""

__version__ = "0.1.0"
