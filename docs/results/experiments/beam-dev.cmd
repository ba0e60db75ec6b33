# each row: the patch applied to 3c78a18, then (MEMKIT_EXP_KEYS=prev|facts, or MEMKIT_EXP_PRF=5,3,1)
git apply docs/results/experiments/episode-keys.diff   # or feedback.diff
python scripts/measure_recall_options.py --data ../shared/devdata/beam/100K --format beam --budget 400,1200 --only 'two-layer (defaults)' --jobs 2
# sessions rows: docs/results/experiments/sessions.diff applied to 55d0222, then MEMKIT_EXP_SESSIONS=<sessions>,<weight>,<sum|max>
# assistant's verb rows: docs/results/experiments/assistant-verb.diff applied to e5fd6f0, then the command above with --embed-cache; the row "at e5fd6f0" is e5fd6f0 unpatched
# lexical confidence rows: docs/results/experiments/lexical-confidence.diff applied to 821685d, then MEMKIT_EXP_LEXCONF=<half|double> and the
# command above with --embed-cache; the row "at e5fd6f0" is also 821685d unpatched (the reads between changed no BEAM result)
# dates for time questions rows: docs/results/experiments/dates-asked.diff applied to ce43a60, then MEMKIT_EXP_DATES_ASKED=1 and the
# command above with --embed-cache; the row "at ce43a60" is ce43a60 unpatched
# scores fused rows: docs/results/experiments/convex.diff applied to 63b7ef3, then MEMKIT_EXP_CC=0.7,1,mm and the command above with
# --embed-cache; the row "at 63b7ef3" is 63b7ef3 unpatched
# deeper read rows: docs/results/experiments/deeper-read.diff applied to af1b60e, then
# python scripts/measure_recall_options.py --data ../shared/devdata/beam/100K --format beam --budget 400,1200 --only 'two-layer, deeper read when room is left' --only 'two-layer, no deeper read' --jobs 2 --embed-cache /work/cache/embeddings.sqlite3
