"""Knowledge distillation: a trained teacher's logits travel with every training row as soft targets.

source = resolve_teacher(config.train.distill)                     # before any work: a model, or ConfigError
check_teacher(source, labels, config.data)                        # single-label, the data's classes and texts
splits, counts = with_transfer_split(config, data, tokenizer.mask_token)   # + "transfer": unlabelled, augmented
rows, record = student_rows(config, splits, tokenized, labels, source, counts)   # + the teacher's logits
"""

from pipeline.distill.teacher import (
    TeacherLabeller,
    check_labels,
    check_teacher,
    init_student_embeddings,
    resolve_teacher,
)
from pipeline.distill.transfer import (
    NO_LABEL,
    TRANSFER_SPLIT,
    augment,
    augmented_texts,
    read_unlabeled,
    student_rows,
    with_transfer_split,
)

__all__ = [
    "NO_LABEL",
    "TRANSFER_SPLIT",
    "TeacherLabeller",
    "augment",
    "augmented_texts",
    "check_labels",
    "check_teacher",
    "init_student_embeddings",
    "read_unlabeled",
    "resolve_teacher",
    "student_rows",
    "with_transfer_split",
]
