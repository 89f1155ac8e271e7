"""`verl-qwen35 import`: a verl launch script (or a list of overrides) as a `--config-dir` preset."""
