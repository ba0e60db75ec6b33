python scripts/measure_read_stages.py --size 64x100 --size 1x10000 --reads 1000 --out docs/results/read-stages
