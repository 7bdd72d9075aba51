"""Model providers behind one protocol: scripted, replay, Anthropic and OpenAI."""
