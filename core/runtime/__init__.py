"""What carries a transition out on tmux: the sagas, launches and start bundles,
claims, the stage that maps registry rows onto the tmux adapter, dialog reads and
the preview. Takes a ``core.context.Context``; reconcile and the engine drive it.
"""
