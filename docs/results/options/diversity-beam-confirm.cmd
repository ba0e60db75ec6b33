python scripts/measure_recall_options.py --data ../shared/devdata/beam/500K --format beam --budget 400,1200 --only 'two-layer (defaults)' --only 'two-layer, diversity 0' --jobs 2 --embed-cache /work/cache/embeddings.sqlite3 --name diversity-beam-confirm --out docs/results/options
# run at 4133e02, whose defaults had diversity 0.6 (the 'two-layer (defaults)' rows); 0 is the default since
