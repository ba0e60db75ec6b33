python scripts/measure_layers.py --data '../shared/devdata/realtalk/Chat_[1-5]_*.json' --format realtalk --name realtalk-dev --jobs 2 --out docs/results/layers
