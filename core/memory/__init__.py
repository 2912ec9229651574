"""Memory that does not grow with the fleet: parked navigators, one agent-tool server."""
