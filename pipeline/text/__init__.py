"""Stage 2: tokenization to one fixed length, windows of long texts, and batching."""
