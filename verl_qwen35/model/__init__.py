"""The domain: the layout verl will run, the pipeline split, and the memory model (arithmetic, no torch)."""
