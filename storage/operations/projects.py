"""Mirror the projects, repositories and checkouts named by config into the registry.

Frames and work contexts reference these rows, so a mutation that touches a
project first makes sure its config entry exists here, in the same transaction.
"""

from __future__ import annotations

import sqlite3


def upsert_repository(conn: sqlite3.Connection, host_id: str, repository_id: str,
                      name: str) -> None:
    conn.execute(
        "INSERT INTO repositories (repository_id, host_id, name) VALUES (?, ?, ?)"
        " ON CONFLICT(repository_id) DO UPDATE SET name = excluded.name",
        (repository_id, host_id, name))


def upsert_checkout(conn: sqlite3.Connection, host_id: str, checkout_id: str,
                    repository_id: str | None, path: str) -> None:
    conn.execute(
        "INSERT INTO checkouts (checkout_id, host_id, repository_id, path) VALUES (?, ?, ?, ?)"
        " ON CONFLICT(checkout_id) DO UPDATE SET repository_id = excluded.repository_id,"
        " path = excluded.path",
        (checkout_id, host_id, repository_id, path))


def upsert_project(conn: sqlite3.Connection, host_id: str, project_id: str, name: str,
                   checkout_id: str, now: int) -> None:
    conn.execute(
        "INSERT INTO projects (project_id, host_id, name, checkout_id, created_at)"
        " VALUES (?, ?, ?, ?, ?) ON CONFLICT(project_id) DO UPDATE SET name = excluded.name",
        (project_id, host_id, name, checkout_id, now))
    if checkout_id:
        row = conn.execute("SELECT repository_id FROM checkouts WHERE checkout_id = ?",
                           (checkout_id,)).fetchone()
        if row is not None and row["repository_id"]:
            conn.execute(
                "INSERT OR IGNORE INTO project_repositories (project_id, repository_id)"
                " VALUES (?, ?)", (project_id, row["repository_id"]))
