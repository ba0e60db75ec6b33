memkit bench-scale --size 1000x100 --size 1x10000 --seed 0 --seed 1 --seed 2 --queries 1000 --out docs/results/scale
