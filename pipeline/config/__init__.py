"""Settings: the typed config dataclasses (schema), their checks, YAML loading and dotted overrides."""
