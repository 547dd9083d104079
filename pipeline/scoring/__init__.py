"""Stage 4: evaluation, calibration, decision thresholds, the lexical baseline and the metrics."""
