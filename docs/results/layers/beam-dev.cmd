python scripts/measure_layers.py --data ../shared/devdata/beam/100K --format beam --name beam-dev --jobs 2 --out docs/results/layers
