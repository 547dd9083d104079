"""Stage 1: files or the Hub -> train/validation/test splits of texts and labels."""
