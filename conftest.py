"""Root pytest configuration: isolate every test and notebook kernel from the developer's home and endpoints.

Runs at import, before any test or nbval kernel starts, so kernels inherit the clean environment.
"""

from __future__ import annotations

import os
import tempfile

_HOME = tempfile.mkdtemp(prefix="memkit-test-home-")
os.environ["HOME"] = _HOME                                   # tiktoken cache, onnxruntime, jupyter dirs
os.environ["MEMKIT_CACHE_DIR"] = os.path.join(_HOME, "memkit-cache")
os.environ["JUPYTER_RUNTIME_DIR"] = os.path.join(_HOME, "jupyter-runtime")
os.environ["ANONYMIZED_TELEMETRY"] = "False"
for _name in list(os.environ):
    if _name.startswith(("MEMKIT_LLM", "MEMKIT_EMBED", "OPENAI_")):
        del os.environ[_name]                               # no test sees a real endpoint or key
