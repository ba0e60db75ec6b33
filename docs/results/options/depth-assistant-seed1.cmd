python scripts/measure_recall_options.py --suite assistant --budget 200,400 --only 'two-layer, depth 50' --only 'two-layer, depth 40' --only 'two-layer, depth 30' --only rag:bm25 --jobs 2 --embed-cache /work/cache/embeddings.sqlite3 --name depth-assistant-seed1 --out docs/results/options
# run at db889a9, where 30 is the default
