"""The benchmark commands' defaults, in a module that imports nothing, so ``memkit --help`` lists them at once."""

DEFAULT_STRATEGIES = ("full", "window", "summary", "two-layer:keyed", "two-layer:similarity")
# bench --jobs: each worker process is replaced by a fresh one after this many jobs, which bounds the memory
# Chroma keeps of every closed store (chroma-core/chroma#3296)
RECYCLE = 250
DEFAULT_SIZES = ("100x10", "100x100", "100x1000", "1x10000", "1000x100", "10000x10")  # bench-scale USERSxITEMS
