"""Shared by every layer: errors and their messages, text helpers, atomic file output, hardware."""
