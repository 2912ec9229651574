"""One module per navigator panel; widgets get state from the app and post intents."""
