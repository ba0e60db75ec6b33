python scripts/measure_local_model.py --out docs/results/local-model
