"""Modal screens of the navigator: help, confirmation, complete-and-return."""
