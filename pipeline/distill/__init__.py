"""Knowledge distillation: a trained teacher's logits as soft targets for a student."""
