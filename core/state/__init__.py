"""Read models: the host and navigator state, their envelopes, remotes and queries."""
