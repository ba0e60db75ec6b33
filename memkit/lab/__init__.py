"""What the notebooks show and run: plotly views (``viz``), ipywidgets explorers (``widgets``), the
Tuesday/Friday demo (``demo``) and the notebooks' copy-out (``notebooks_copy``)."""
