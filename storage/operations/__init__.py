"""Named workflow operations: the only code that writes registry rows.

Each function runs inside a caller-owned write transaction, performs its
compare-and-swap in SQL (``WHERE ... AND revision = ?``) and raises a domain
error when the row moved; the database refuses illegal edges on its own too.
"""
