"""The hook path: provider hooks in, activity and attention out. Kept lean."""
