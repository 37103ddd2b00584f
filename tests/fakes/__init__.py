"""Real stand-ins for outside services the tests need (a scripted model endpoint)."""
