"""The label audit of a labelled file against a trained run: `python -m pipeline.audit --model RUN --input FILE`.

Writes label_issues.csv as a run's own audit does (pipeline.scoring.label_audit): the model's probabilities and
the baseline cross-validated over the file are the evidence; near duplicates with conflicting labels are listed.
"""

from pipeline.audit.file import AuditedFile, audit_file

__all__ = ["AuditedFile", "audit_file"]
