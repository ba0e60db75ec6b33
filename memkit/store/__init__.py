"""The semantic layer's store: ``FactStore`` composed of a vector index (Chroma or pgvector), a text index
(tantivy or PostgreSQL full-text), the records and the event log. docs/architecture.md §2 and §8."""

from .base import (BULK_SIZE, DEFAULT_FLOOR, IMPORTANCE_WEIGHT, SIMILARITY_WEIGHT, TextIndex, VectorIndex, owner_of,
                   rank_score)
from .composed import FactStore

__all__ = ["BULK_SIZE", "DEFAULT_FLOOR", "FactStore", "IMPORTANCE_WEIGHT", "SIMILARITY_WEIGHT", "TextIndex",
           "VectorIndex", "owner_of", "rank_score"]
