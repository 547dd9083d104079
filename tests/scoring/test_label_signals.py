"""The label audit's evidence and flags (pipeline.scoring.label_signals): planted flips in a tiny corpus are found
by the cross-validated baseline, under confident learning and under the margin rule."""

import numpy as np
import pytest

from pipeline.scoring.label_signals import (
    CONFIDENT_LEARNING,
    MARGIN,
    baseline_cv_probabilities,
    combine,
    flag,
)

TOPICS = {
    0: "election minister parliament vote government treaty",
    1: "match goal team season coach league",
    2: "shares profit market earnings bank investors",
    3: "software chip internet computer research space",
}


def tiny_corpus(rows_per_class: int = 40, flips: int = 8, seed: int = 0):
    """Texts of four topics' words (a few shared filler words), and labels with `flips` of them changed."""
    rng = np.random.default_rng(seed)
    texts, labels = [], []
    for label, words in TOPICS.items():
        vocabulary = words.split()
        for _ in range(rows_per_class):
            chosen = rng.choice(vocabulary, size=4).tolist() + rng.choice(["the", "a", "new", "today"], 2).tolist()
            texts.append(" ".join(rng.permutation(chosen)))
            labels.append(label)
    given = np.asarray(labels)
    planted = rng.choice(len(given), size=flips, replace=False)
    given[planted] = (given[planted] + rng.integers(1, 4, size=flips)) % 4
    return texts, given, sorted(planted.tolist())


@pytest.mark.parametrize("method", [CONFIDENT_LEARNING, MARGIN])
def test_planted_flips_in_a_tiny_corpus_are_flagged(method):
    texts, given, planted = tiny_corpus()
    probabilities = baseline_cv_probabilities(texts, given, seed=0)
    assert probabilities.shape == (len(texts), 4)
    flags = flag(given, probabilities, method)
    found = set(flags.rows.tolist())
    assert len(found & set(planted)) >= 6, (method, sorted(found), planted)
    assert len(found - set(planted)) <= 2
    assert all(flags.suggested[row] != given[row] for row in found)
    # Ranked: the most contradicted first.
    assert list(flags.score[flags.rows]) == sorted(flags.score[flags.rows], reverse=True)


def test_clean_labels_flag_almost_nothing():
    texts, given, _ = tiny_corpus(flips=0)
    flags = flag(given, baseline_cv_probabilities(texts, given, seed=0), CONFIDENT_LEARNING)
    assert len(flags.rows) <= 2


def test_too_few_rows_of_a_class_is_a_clear_error():
    with pytest.raises(ValueError, match="a class has 1 training rows"):
        baseline_cv_probabilities(["a b", "c d", "e f"], np.array([0, 0, 1]), seed=0)


def test_combination_skips_rows_a_signal_did_not_score():
    one = np.array([[0.8, 0.2], [0.4, 0.6]], dtype=np.float32)
    other = np.array([[0.6, 0.4], [np.nan, np.nan]], dtype=np.float32)
    np.testing.assert_allclose(combine([one, other]), [[0.7, 0.3], [0.4, 0.6]], rtol=1e-6)
    # A row no signal scored is never flagged.
    assert flag(np.array([0, 0]), np.array([[0.0, 1.0], [np.nan, np.nan]]), MARGIN).rows.tolist() == [0]
