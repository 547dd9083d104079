"""The validation sample (pipeline/train/sample.py): stratified, the same every time, whole documents."""

import numpy as np
import torch
from datasets import Dataset

from pipeline.text.batching import TokenizedRows
from pipeline.train.sample import draw_sample, stratified_sample


def _rows(labels, documents=None):
    count = len(labels)
    columns = {
        "input_ids": [[101, 1000 + i, 102, 0] for i in range(count)],
        "attention_mask": [[1, 1, 1, 0]] * count,
        "label": labels,
        "length": [3] * count,
    }
    if documents is not None:
        columns["document"] = documents
    return TokenizedRows(Dataset.from_dict(columns))


def test_the_sample_keeps_each_class_share_and_is_the_same_for_the_same_seed():
    labels = np.array([0] * 700 + [1] * 200 + [2] * 100)
    np.random.default_rng(3).shuffle(labels)
    chosen = stratified_sample(labels, 100, seed=42)
    assert len(chosen) == 100 and len(set(chosen.tolist())) == 100
    assert np.bincount(labels[chosen]).tolist() == [70, 20, 10]
    assert np.array_equal(chosen, stratified_sample(labels, 100, seed=42))
    assert not np.array_equal(chosen, stratified_sample(labels, 100, seed=43))


def test_rounding_leftovers_go_to_the_largest_remainders():
    labels = np.array([0] * 5 + [1] * 3 + [2] * 2)  # 4 of 10: exact shares 2.0, 1.2, 0.8
    assert np.bincount(labels[stratified_sample(labels, 4, seed=0)], minlength=3).tolist() == [2, 1, 1]


def test_a_split_no_larger_than_the_sample_is_scored_whole():
    rows = _rows([0, 1, 0, 1])
    assert draw_sample(rows, 4, seed=0).is_whole and draw_sample(rows, None, seed=0).rows is rows


def test_the_sample_rows_are_the_chosen_rows_of_the_split():
    rows = _rows([0, 1] * 10)
    sample = draw_sample(rows, 6, seed=1)
    assert not sample.is_whole and len(sample.rows) == 6
    assert torch.equal(sample.rows.input_ids, rows.input_ids[torch.as_tensor(sample.windows)])
    assert sample.rows.labels.tolist().count(0) == 3
    assert sample.rows.row_index.tolist() == list(range(6))


def test_chunked_documents_are_sampled_whole_and_renumbered():
    # 6 documents of 1 to 3 windows; the sample takes 2 documents with all their windows.
    documents = [0, 0, 1, 2, 2, 2, 3, 4, 4, 5]
    labels = [0, 0, 1, 0, 0, 0, 1, 0, 0, 1]
    rows = _rows(labels, documents)
    sample = draw_sample(rows, 2, seed=0)
    picked = sorted(set(np.asarray(documents)[sample.windows].tolist()))
    assert len(picked) == 2
    assert sample.windows.tolist() == [i for i, d in enumerate(documents) if d in picked]
    assert sample.rows.num_documents == 2 and sorted(set(sample.rows.documents.tolist())) == [0, 1]
    assert sorted(sample.rows.document_labels().tolist()) == [0, 1]  # one of each class
