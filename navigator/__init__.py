"""navigator package."""
