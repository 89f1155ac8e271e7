"""Review: what a config change really changes, key by key."""
