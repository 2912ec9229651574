"""Reconcile and recovery: compare tmux with the registry, settle what a dead
process left, and the recovery commands a person runs."""
