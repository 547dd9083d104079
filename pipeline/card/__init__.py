"""Model cards: the README.md a model folder carries."""
