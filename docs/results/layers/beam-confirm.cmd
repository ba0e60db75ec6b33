python scripts/measure_layers.py --data ../shared/devdata/beam/500K --format beam --name beam-confirm --jobs 2 --rows /tmp/exp/l500-it-rows.csv --out docs/results/layers
