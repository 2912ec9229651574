"""The one terminal text Switchboard ever types into an agent (control.claim.v1).

Kept alone, with no imports, so the hook path, the tmux adapter, the engine
and the fake provider all read the same constant without loading each other.
No brief, handoff, title, path or token is ever interpolated into it.
"""

TEMPLATE_VERSION = "control.claim.v1"
CONTROL_TEMPLATE = "Call transition_claim() and follow the returned transition instructions."
