"""The engine's requests, one module per thing they act on; ``core.engine.engine``
binds them to the ``Engine`` facade."""
