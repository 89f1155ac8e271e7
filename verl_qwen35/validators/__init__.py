"""The real validators on CPU: megatron-core's TransformerConfig, verl's config dataclasses.

Used by dry_run=full and the launch only (they import torch).
"""
