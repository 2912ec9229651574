"""The one engine: the ``Engine`` facade and its requests (``commands``), and how a
command opens one (``open``)."""
