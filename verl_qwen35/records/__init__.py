"""Run records: the files a run leaves behind, their formats, writers and readers, one definition each.

launch.yaml (launch.py), a job's verdict.json (verdict.py), a sweep's summary.csv and summary.json (summary.py),
the metrics files verl's loggers write and a start keeps (metrics.py), and the mode-600 writer and the
writability check of the files a run is launched from (private_files.py). `run/` writes them and `review/`
reads them; this layer imports neither, so `review/` needs no `run/` module.
"""
