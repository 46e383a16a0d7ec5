"""The built-in `local` embedding provider, called in this process for `bench/search.py`.

The daemon embeds with `palace.embeddings.providers.LocalProvider` (all-MiniLM-L6-v2 through
onnxruntime); this wraps the same provider, and adds a tokenizer that does not cut, so the
benchmark can make drawers of about 256 tokens (one window of the model) and say how long they
were.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from kernel.profiles import LOCAL_MODEL, LOCAL_PIPELINE
from palace.embeddings import local
from palace.embeddings.providers import LocalProvider


class LocalEmbedder:
    """`documents` and `query` embed as the daemon does; `tokens` and `clip` count tokens as the
    model does ([CLS] and [SEP] included)."""

    def __init__(self) -> None:
        from tokenizers import Tokenizer

        self.provider = LocalProvider()
        self.provider.embed_query("warm up")  # loads the model
        tokenizer = Tokenizer.from_file(str(local.model_dir() / "tokenizer.json"))
        tokenizer.no_truncation()
        tokenizer.no_padding()
        self.tokenizer = tokenizer

    def describe(self) -> str:
        return (
            f"{LOCAL_MODEL} ({LOCAL_PIPELINE}), onnxruntime with {local.THREADS} threads on "
            f"{os.cpu_count()} cores"
        )

    def tokens(self, text: str) -> int:
        return len(self.tokenizer.encode(text).ids)

    def clip(self, text: str, tokens: int) -> str:
        """`text` cut at a word so that it is at most `tokens` tokens long."""
        words = text.split()
        while self.tokens(" ".join(words)) > tokens:
            words = words[: max(1, len(words) - 4)]
        return " ".join(words)

    def documents(self, texts: Sequence[str]) -> None:
        self.provider.embed_documents(texts)

    def query(self, text: str) -> None:
        self.provider.embed_query(text)
