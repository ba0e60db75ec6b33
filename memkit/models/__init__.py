"""The models memkit runs or calls: the offline embedders and their cache (``embed``, ``embed_cache``), the
tokenizer (``tokens``), any OpenAI-compatible chat endpoint (``llm``, probed by ``llm_check``) and the
servers memkit starts on loopback (``server``: llama.cpp's with a packaged model, and ``chroma run``)."""
