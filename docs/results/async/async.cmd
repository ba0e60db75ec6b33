python scripts/measure_async.py --users 8 --turns 8 --backend persistent --backend http --backend postgres --out docs/results/async
