"""The fixed terminal lines Switchboard ever types into an agent.

control.claim.v1 (a transition's claim) and, since issue 26, control.continue.v1
(an agent whose turn ended on a usage limit, once the limit has reset). Kept
alone, with no imports, so the hook path, the tmux adapter, the engine and the
fake provider all read the same constants without loading each other. No
brief, handoff, title, path or token is ever interpolated into either.
"""

TEMPLATE_VERSION = "control.claim.v1"
CONTROL_TEMPLATE = "Call transition_claim() and follow the returned transition instructions."

CONTINUE_VERSION = "control.continue.v1"
CONTINUE_TEMPLATE = "Continue the task from where you stopped; the usage limit has reset."

FIXED_LINES = (CONTROL_TEMPLATE, CONTINUE_TEMPLATE)
"""Every line the tmux adapter will type; it refuses any other text."""
