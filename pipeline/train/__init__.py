"""Stage 3: the training loop, optimizer, losses, checkpoints and CPU dropout."""
