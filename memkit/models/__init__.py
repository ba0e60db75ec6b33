"""The models memkit runs or calls: the offline embedders (``embed``; their cache is the store's,
``memkit.store.embed_cache``), the tokenizer (``tokens``), any OpenAI-compatible chat endpoint (``llm``, probed
by ``memkit.write.llm_check``) and the loopback server llama.cpp runs in (``server``)."""
