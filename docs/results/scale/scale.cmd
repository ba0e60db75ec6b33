memkit bench-scale --size 1000x100 --size 1x10000 --queries 1000 --out docs/results/scale
