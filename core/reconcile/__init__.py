"""Reconcile and recovery: compare tmux with the registry, settle what a dead
process left, and the recovery commands a person runs.

Where to look:

- ``reconcile``: one pass, as an ordered list of steps (``reconcile()``,
  ``ReconcileReport``); each step lives in the module of its concern:
  ``surfaces`` (panes lost or found again), ``views`` (a window against its
  row; every view recovery's sentence), ``launches`` (interrupted starts,
  bind timeouts), ``runtimes`` (exited providers), ``transitions``
  (executors whose lease expired), ``controls`` (the watchdog backstop),
  ``panes`` (stray panes, navigators respawned); ``pane_evidence`` holds the
  questions they all ask of one tmux reading.
- ``recovery``: what a person does with a recovery (list, show, resolve,
  dismiss, run; ``enter_view``); ``recover_view`` is what running a view's
  recovery does.
- ``settlement``, ``unclaimed``, ``stop_worker``, ``provider_checks``: waits
  that cannot end on their own, a Stop's deferred work, stale activity. The
  home's server (``core.server.housekeeping``) runs ``reconcile`` every interval.
"""
