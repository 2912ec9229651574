"""The whole fleet at once: restore after every tmux server is gone, retention of old evidence.

Everything here goes through the engine's public requests (project entry, frame
start, focus, mode) so a fleet-wide command behaves exactly like the keys a person
would press one view at a time.
"""
