"""Session evidence: command runs, artifacts, diagnostics, lineage, debug records."""
