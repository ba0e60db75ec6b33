python scripts/measure_async.py --users 16 --turns 16 --backend persistent --backend http --backend postgres --out docs/results/async
