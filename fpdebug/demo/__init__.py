"""Built-in demo scenarios, runnable offline on the scripted provider."""
