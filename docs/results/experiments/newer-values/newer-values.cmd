# newer-values.diff applied to 8bc0b71 (ReadOptions.newer_values = 0.2 by default), then, alone, with the embedding cache warm:
python scripts/measure_layers.py --data ../shared/devdata/beam/100K --format beam --name beam-dev --jobs 2 --variant two-layer --out docs/results/experiments/newer-values
python scripts/measure_layers.py --data ../shared/devdata/beam/500K --format beam --name beam-confirm --jobs 2 --variant two-layer --out docs/results/experiments/newer-values
# compare with the two-layer rows of docs/results/layers/beam-dev.csv and beam-confirm.csv, made at 1939f86: re-run at 8bc0b71 they
# come out the same in evidence, answer-in-context and stale content (on BEAM 500K 4 of 2,800 rows differ in context tokens)
