"""Where Switchboard lives and what the person set: the config file (each section a
dataclass whose fields say how they are read), the home layout, the registry file,
and agents' capabilities. The bottom of everything that opens a home.
"""
