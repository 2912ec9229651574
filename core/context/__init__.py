"""What every request shares, below everything that serves one.

``context.Context`` (connection, config, clock, ids, stage port, home,
``run_request``, ``fault_point``), the registry reader it extends, request
fingerprints, the stage port with its result types, and the lean opens of
``session`` (a reader for navigators, the hook's open).
"""
