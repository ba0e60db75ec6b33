python scripts/measure_local_model.py --layers ../shared/devdata/beam/100K --format beam --limit 3 --out docs/results/model-layers
