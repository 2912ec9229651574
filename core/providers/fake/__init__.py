"""Simulators of the provider CLIs (a fake agent, its argv parser, an MCP client) for
the demo and the tests: they accept and refuse what the real CLIs do. The demo is
their only product user.
"""
