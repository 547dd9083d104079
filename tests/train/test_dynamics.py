"""Training dynamics (pipeline.train.dynamics): each training row's probabilities as training saw them, averaged
over epochs, with every (epoch, row) counted once however many processes saw it."""

import numpy as np
import torch

from pipeline.scoring.label_signals import CONFIDENT_LEARNING, flag
from pipeline.train.dynamics import Seen, TrainingDynamics, merge


def _seen(batches):
    record = Seen()
    for epoch, rows, probabilities in batches:
        record.epochs.append(epoch)
        record.rows.append(np.asarray(rows))
        record.probabilities.append(np.asarray(probabilities, dtype=np.float32))
    return record


def test_rows_are_averaged_over_epochs_and_unseen_rows_are_nan():
    record = _seen([(0, [0, 1], [[0.9, 0.1], [0.2, 0.8]]), (1, [0], [[0.5, 0.5]])])
    merged = merge([record], 3, 2)
    np.testing.assert_allclose(merged[:2], [[0.7, 0.3], [0.2, 0.8]], rtol=1e-6)
    assert np.isnan(merged[2]).all()


def test_several_processes_flag_the_same_rows_as_one():
    """Rows dealt to two processes as accelerate does, the last batch padded with a repeat of the first rows (with
    probabilities that differ, as a repeat's dropout would): the merge equals one process's, and so do the flags."""
    rng = np.random.default_rng(0)
    num_rows, classes = 40, 3
    labels = rng.integers(0, classes, num_rows)
    probabilities = np.full((num_rows, classes), 0.05, dtype=np.float32)
    probabilities[np.arange(num_rows), labels] = 0.9
    planted = [3, 17, 29]
    for row in planted:  # the evidence points elsewhere
        probabilities[row] = np.roll(probabilities[row], 1)
    one = _seen([(0, list(range(num_rows)), probabilities)])
    order = rng.permutation(num_rows).tolist()
    order += order[:2]  # padded to an even share per process with the epoch's first rows, as accelerate does
    shards = []
    for start in (0, 1):
        share = order[start::2]
        batches = [share[at : at + 4] for at in range(0, len(share), 4)]  # 21 rows: the last batch holds the repeat
        shards.append(_seen([(0, rows, probabilities[rows]) for rows in batches]))
        shards[-1].probabilities[-1][-1] = [1.0, 0.0, 0.0]  # the repeat's own (dropout) probabilities must not count
    merged_one, merged_two = merge([one], num_rows, classes), merge(shards, num_rows, classes)
    np.testing.assert_array_equal(merged_one, merged_two)
    flagged = flag(labels, merged_two, CONFIDENT_LEARNING).rows
    assert sorted(flagged.tolist()) == planted == sorted(flag(labels, merged_one, CONFIDENT_LEARNING).rows.tolist())


def test_collection_takes_the_logits_softmax_and_is_off_when_disabled():
    dynamics = TrainingDynamics(2, enabled=True)
    dynamics.add(torch.tensor([1, 0]), torch.tensor([[0.0, 0.0], [2.0, 0.0]]), epoch=0)
    np.testing.assert_allclose(merge([dynamics.seen], 2, 2)[1], [0.5, 0.5])
    off = TrainingDynamics(2, enabled=False)
    off.add(torch.tensor([0]), torch.tensor([[1.0, 0.0]]), epoch=0)
    assert off.seen.rows == []
