"""Remote hosts followed live: one ssh per host streaming HostState (follower, publish),
and the person's requests on remote frames run by the remote engine (actions, channel)."""
