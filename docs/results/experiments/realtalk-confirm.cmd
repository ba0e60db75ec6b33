# a hypothesis that gained on the dev splits, reported on the confirm split before it is kept
# dates for time questions rows: docs/results/experiments/dates-asked.diff applied to ce43a60, then MEMKIT_EXP_DATES_ASKED=1 and
# the command below; the row "at ce43a60" is ce43a60 unpatched
python scripts/measure_recall_options.py --data '../shared/devdata/realtalk/Chat_[6-9]_*.json' '../shared/devdata/realtalk/Chat_10_*.json' --format realtalk --budget 400,1200 --only 'two-layer (defaults)' --jobs 2 --embed-cache /work/cache/embeddings.sqlite3
