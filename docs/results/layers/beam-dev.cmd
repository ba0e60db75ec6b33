python scripts/measure_layers.py --data ../shared/devdata/beam/100K --format beam --name beam-dev --jobs 1 --embed-cache /work/cache/embeddings.sqlite3 --out docs/results/layers
