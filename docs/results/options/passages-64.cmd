# each "passages 64" row: scripts/measure_recall_options.py --only 'two-layer, passages 64' on that split (the
# defaults rows are those of the options tables above, and of docs/results/beam-confirm at 93c7294 for BEAM 500K, its first 6 conversations)
python scripts/measure_recall_options.py --data '../shared/devdata/realtalk/Chat_[1-5]_*.json' --format realtalk --budget 400,1200 --jobs 2 --only 'two-layer, passages 64'
python scripts/measure_recall_options.py --data ../shared/devdata/beam/100K --format beam --budget 400,1200 --jobs 2 --only 'two-layer, passages 64'
python scripts/measure_recall_options.py --data '../shared/devdata/realtalk/Chat_[6-9]_*.json' '../shared/devdata/realtalk/Chat_10_*.json' --format realtalk --budget 400,1200 --jobs 2 --only 'two-layer, passages 64'
python scripts/measure_recall_options.py --data ../shared/devdata/beam/500K --format beam --limit 6 --budget 400,1200 --jobs 2 --only 'two-layer, passages 64'
