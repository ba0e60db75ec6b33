python scripts/measure_embedders.py --turns 48 --queries 100 --rounds 2 --out docs/results/embedders
