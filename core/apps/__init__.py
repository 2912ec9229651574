"""Applications of the engine: the typed client the navigator and CLI use, the demo,
doctor, and the detached workers. Nothing in core imports them.
"""
