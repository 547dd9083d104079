"""Batches for training and evaluation (pipeline/text/batching.py): length-grouped seeded sampling, exact padding trims."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from datasets import Dataset
from transformers import BertForSequenceClassification

from pipeline.config.schema import TokenizerConfig
from pipeline.text.batching import (
    LENGTH_POOL_BATCHES,
    ShuffledBatchSampler,
    TokenizedRows,
    collate_fixed,
    collate_trimmed,
    evaluation_loader,
    training_loader,
)
from pipeline.text.tokenization import tokenize_splits
from tests.helpers import tiny_bert_config

VOCAB_SIZE = 100
PAD_ID = 0


def random_lengths(count: int, seed: int = 0, low: int = 3, high: int = 120) -> np.ndarray:
    return np.random.default_rng(seed).integers(low, high + 1, count)


def padded_rows(lengths, fixed_length: int, seed: int = 0) -> dict[str, torch.Tensor]:
    """A batch as TokenizedRows fetches it: ids and mask padded (with PAD_ID and 0) to one fixed length."""
    generator = torch.Generator().manual_seed(seed)
    count = len(lengths)
    input_ids = torch.full((count, fixed_length), PAD_ID, dtype=torch.int32)
    attention_mask = torch.zeros((count, fixed_length), dtype=torch.int8)
    for row, length in enumerate(lengths):
        input_ids[row, :length] = torch.randint(1, VOCAB_SIZE, (int(length),), generator=generator, dtype=torch.int32)
        attention_mask[row, :length] = 1
    return {
        "input_ids": input_ids,
        "attention_mask": attention_mask,
        "labels": torch.arange(count) % 4,
        "row_index": torch.arange(count),
    }


def tokenized_rows(lengths, fixed_length: int = 64, seed: int = 0) -> TokenizedRows:
    """TokenizedRows over a split laid out as stage 2 caches it (input_ids, attention_mask, label, length)."""
    batch = padded_rows(lengths, fixed_length, seed)
    split = Dataset.from_dict(
        {
            "input_ids": batch["input_ids"].tolist(),
            "attention_mask": batch["attention_mask"].tolist(),
            "label": batch["labels"].tolist(),
            "length": [int(length) for length in lengths],
        }
    )
    return TokenizedRows(split)


def expected_width(longest: int, fixed_length: int) -> int:
    """The trimmed width, computed independently: the longest row rounded up to a multiple of 8, capped."""
    rounded = 8 * -(-max(longest, 1) // 8)
    return min(rounded, fixed_length)


# ---------------------------------------------------------------------------------------------------------------
# ShuffledBatchSampler


@pytest.mark.parametrize("group_by_length", [True, False])
@pytest.mark.parametrize(
    ("count", "batch_size"),
    [(1000, 32), (1024, 32), (5, 8), (1, 1), (257, 16), (3 * 50 * 4 + 7, 4)],
)
def test_every_row_once_per_epoch_and_only_the_last_batch_is_short(count, batch_size, group_by_length):
    sampler = ShuffledBatchSampler(random_lengths(count), batch_size, seed=3, group_by_length=group_by_length)
    for epoch in range(3):
        sampler.set_epoch(epoch)
        batches = list(sampler)
        assert len(batches) == len(sampler) == -(-count // batch_size)
        flat = [index for batch in batches for index in batch]
        assert sorted(flat) == list(range(count))  # every row exactly once
        assert all(len(batch) == batch_size for batch in batches[:-1])
        assert len(batches[-1]) == count - batch_size * (len(batches) - 1)


@pytest.mark.parametrize("group_by_length", [True, False])
def test_order_depends_only_on_seed_and_epoch(group_by_length):
    lengths = random_lengths(500)

    def order(seed: int, epoch: int) -> list[list[int]]:
        sampler = ShuffledBatchSampler(lengths, 16, seed=seed, group_by_length=group_by_length)
        sampler.set_epoch(epoch)
        return list(sampler)

    torch.manual_seed(123)
    np.random.seed(123)
    first = order(7, 0)
    torch.manual_seed(999)  # global RNG state must not matter
    np.random.seed(999)
    assert order(7, 0) == first
    assert order(8, 0) != first  # another seed, another order
    assert order(7, 1) != first  # a new epoch, a new order
    assert order(7, 1) == order(7, 1)

    sampler = ShuffledBatchSampler(lengths, 16, seed=7, group_by_length=group_by_length)
    sampler.set_epoch(1)
    sampler.set_epoch(0)
    assert list(sampler) == first  # set_epoch is a pure function of the epoch, not a counter
    assert list(sampler) == first  # iterating does not advance anything


@pytest.mark.parametrize("group_by_length", [True, False])
@pytest.mark.parametrize(
    ("count", "batch_size", "slices"),
    [(100, 4, 3), (96, 4, 3), (1000, 8, 2), (7, 2, 4), (3 * 50 * 6 + 5, 2, 3)],
)
def test_slices_cut_each_optimizer_steps_batch_as_one_process_would_draw_it(count, batch_size, slices, group_by_length):
    """With accumulation x processes = `slices`, consecutive slices make up exactly the step's big batch."""
    lengths = random_lengths(count, seed=5)
    sliced = ShuffledBatchSampler(lengths, batch_size, seed=1, group_by_length=group_by_length, slices=slices)
    whole = ShuffledBatchSampler(lengths, batch_size * slices, seed=1, group_by_length=group_by_length)
    parts, steps = list(sliced), list(whole)
    assert len(parts) == len(sliced)
    assert sliced.batch_size is None  # accelerate must hand out uneven slices as they are
    position = 0
    for step in steps:
        taken = []
        while sum(map(len, taken)) < len(step):
            taken.append(parts[position])
            position += 1
        assert [index for part in taken for index in part] == step  # the same rows in the same order
        assert len(taken) == min(slices, len(step))
        sizes = [len(part) for part in taken]
        if len(step) == batch_size * slices:
            assert sizes == [batch_size] * slices
        else:  # the short last step, cut as evenly as it goes
            assert step is steps[-1] and max(sizes) - min(sizes) <= 1
    assert position == len(parts)


def test_batches_are_not_in_length_order():
    """Grouping must not mean longest-first: the batches themselves are shuffled."""
    lengths = random_lengths(32 * LENGTH_POOL_BATCHES * 2)
    batches = list(ShuffledBatchSampler(lengths, 32, seed=0, group_by_length=True))
    longest = [lengths[batch].max() for batch in batches]
    assert longest != sorted(longest, reverse=True)
    assert longest != sorted(longest)


def test_grouping_by_length_makes_batches_homogeneous():
    lengths = random_lengths(4000, seed=1, low=5, high=200)

    def mean_spread(group_by_length: bool) -> float:
        batches = list(ShuffledBatchSampler(lengths, 32, seed=0, group_by_length=group_by_length))
        return float(np.mean([np.ptp(lengths[batch]) for batch in batches]))

    grouped, random = mean_spread(True), mean_spread(False)
    assert random > 150  # 32 uniform draws from 5..200 span most of the range
    assert grouped < random / 10


def test_grouping_saves_most_of_the_padding_after_trimming():
    lengths = random_lengths(2000, seed=2, low=5, high=128)

    def padded_tokens(group_by_length: bool) -> int:
        batches = list(ShuffledBatchSampler(lengths, 32, seed=0, group_by_length=group_by_length))
        return sum(len(batch) * expected_width(int(lengths[batch].max()), 128) for batch in batches)

    assert padded_tokens(True) < 0.7 * padded_tokens(False)
    assert padded_tokens(True) >= lengths.sum()


# ---------------------------------------------------------------------------------------------------------------
# collate_trimmed / collate_fixed


@pytest.mark.parametrize(
    ("lengths", "fixed_length"),
    [
        ([3, 1, 2], 64),  # longest 3 -> 8
        ([8, 5], 64),  # exactly a multiple of 8 -> 8
        ([9, 2, 2, 2], 64),  # 9 -> 16
        ([17, 40, 33], 64),  # 40 -> 40
        ([41], 64),  # 41 -> 48
        ([64, 1], 64),  # a full row: nothing to drop
        ([27, 3], 30),  # 27 -> 32 would exceed the fixed length of 30: capped at 30
        ([0, 0], 64),  # all padding: at least 8 columns stay
    ],
)
def test_trim_drops_exactly_the_all_padding_trailing_columns_rounded_up_to_8(lengths, fixed_length):
    batch = padded_rows(lengths, fixed_length)
    trimmed = collate_trimmed(batch)
    width = expected_width(max(lengths), fixed_length)
    assert trimmed["input_ids"].shape == trimmed["attention_mask"].shape == (len(lengths), width)
    assert trimmed["input_ids"].dtype == trimmed["attention_mask"].dtype == torch.long
    # What is kept is the untouched prefix; what is dropped was padding in every row.
    assert torch.equal(trimmed["input_ids"], batch["input_ids"][:, :width].long())
    assert torch.equal(trimmed["attention_mask"], batch["attention_mask"][:, :width].long())
    assert not batch["attention_mask"][:, width:].any()
    assert (batch["input_ids"][:, width:] == PAD_ID).all()
    assert trimmed["attention_mask"].sum().item() == sum(lengths)  # no real token lost
    assert torch.equal(trimmed["labels"], batch["labels"])
    assert torch.equal(trimmed["row_index"], batch["row_index"])


def test_single_item_fetches_collate_like_a_whole_batch():
    rows = tokenized_rows([5, 20, 11], fixed_length=64)
    whole = collate_trimmed(rows.__getitems__([0, 1, 2]))
    single = collate_trimmed([rows[0], rows[1], rows[2]])
    assert whole.keys() == single.keys()
    for key in whole:
        assert torch.equal(whole[key], single[key]), key
    fixed = collate_fixed([rows[0], rows[1], rows[2]])
    assert fixed["input_ids"].shape == (3, 64) and fixed["input_ids"].dtype == torch.long


def test_trimmed_and_untrimmed_batches_give_the_same_logits():
    torch.manual_seed(0)
    config = tiny_bert_config(VOCAB_SIZE, max_position_embeddings=128, num_labels=4, pad_token_id=PAD_ID)
    model = BertForSequenceClassification(config).eval()
    batch = padded_rows([5, 13, 2, 30, 9], fixed_length=96, seed=1)
    trimmed, fixed = collate_trimmed(batch), collate_fixed(batch)
    assert trimmed["input_ids"].shape[1] == 32 < fixed["input_ids"].shape[1] == 96
    with torch.no_grad():
        short = model(input_ids=trimmed["input_ids"], attention_mask=trimmed["attention_mask"]).logits
        full = model(input_ids=fixed["input_ids"], attention_mask=fixed["attention_mask"]).logits
    torch.testing.assert_close(short, full, atol=1e-5, rtol=0)
    assert short.std(dim=0).max() > 1e-4  # rows really differ, so equality is not trivial


def test_batches_of_real_tokenized_texts_drop_only_columns_that_are_padding_everywhere(bert_tokenizer):
    from datasets import ClassLabel, DatasetDict, Features, Value

    features = Features({"text": Value("string"), "label": ClassLabel(names=["a", "b"])})
    texts = {"train": ["a", "a b c d e f g h i j k"], "validation": ["a"], "test": ["a"]}
    splits = DatasetDict(
        {
            name: Dataset.from_dict({"text": rows, "label": [0] * len(rows)}, features=features)
            for name, rows in texts.items()
        }
    )
    tokenized, _ = tokenize_splits(splits, bert_tokenizer, TokenizerConfig(max_length=64, cache=False), None)
    rows = TokenizedRows(tokenized["train"])
    batch = collate_trimmed(rows.__getitems__([0, 1]))
    assert batch["input_ids"].shape == (2, 16)  # longest row is 13 tokens -> 16
    assert batch["attention_mask"][1].sum() == 13
    single = collate_trimmed(rows.__getitems__([0]))
    assert single["input_ids"].shape == (1, 8)


# ---------------------------------------------------------------------------------------------------------------
# Loaders


def test_tokenized_rows_hold_the_split_as_tensors():
    lengths = [4, 9, 1, 17]
    rows = tokenized_rows(lengths, fixed_length=24)
    assert len(rows) == 4
    assert rows.input_ids.shape == (4, 24) and rows.attention_mask.shape == (4, 24)
    assert rows.lengths.tolist() == lengths
    assert rows.attention_mask.sum(dim=1).tolist() == lengths
    fetched = rows.__getitems__([3, 1])
    assert fetched["row_index"].tolist() == [3, 1]
    assert torch.equal(fetched["input_ids"], rows.input_ids[[3, 1]])
    assert rows[2]["labels"].item() == rows.labels[2].item()


@pytest.mark.parametrize("trim", [True, False])
@pytest.mark.parametrize("group_by_length", [True, False])
def test_training_loader_covers_every_row_once_per_epoch(trim, group_by_length):
    lengths = random_lengths(203, seed=4, low=1, high=60)
    rows = tokenized_rows(lengths, fixed_length=64)
    loader = training_loader(rows, batch_size=16, seed=5, group_by_length=group_by_length, trim=trim)
    assert len(loader) == 13

    def epoch(number: int) -> list[torch.Tensor]:
        loader.batch_sampler.set_epoch(number)
        return [batch["row_index"] for batch in loader]

    seen = []
    for batch in loader:
        index = batch["row_index"]
        seen.extend(index.tolist())
        assert batch["input_ids"].dtype == torch.long
        assert torch.equal(batch["labels"], rows.labels[index])
        width = expected_width(int(lengths[index.numpy()].max()), 64) if trim else 64
        assert batch["input_ids"].shape == (len(index), width)
        assert torch.equal(batch["input_ids"], rows.input_ids[index, :width].long())
    assert sorted(seen) == list(range(203))
    first = epoch(0)
    assert [b.tolist() for b in epoch(0)] == [b.tolist() for b in first]  # iterating again: the same batches
    assert [b.tolist() for b in epoch(1)] != [b.tolist() for b in first]


def test_iterating_a_loader_leaves_the_global_random_state_alone():
    """Otherwise every later dropout mask shifts, and a resumed run no longer matches an uninterrupted one."""
    rows = tokenized_rows(random_lengths(40), fixed_length=128)
    torch.manual_seed(0)
    before = torch.get_rng_state()
    for loader in (training_loader(rows, 8, seed=1, group_by_length=True, trim=True), evaluation_loader(rows, 8)):
        for _ in loader:
            pass
    assert torch.equal(torch.get_rng_state(), before)


def test_evaluation_loader_goes_longest_first_and_covers_every_row_once():
    lengths = random_lengths(45, seed=6, low=1, high=64)
    rows = tokenized_rows(lengths, fixed_length=64)
    loader = evaluation_loader(rows, batch_size=8)
    assert loader.batch_sampler.batch_size == 8  # accelerate shards by it
    assert len(loader) == 6
    batches = list(loader)
    order = np.concatenate([batch["row_index"].numpy() for batch in batches])
    assert sorted(order.tolist()) == list(range(45))
    assert (np.diff(lengths[order]) <= 0).all()  # longest first
    widths = [batch["input_ids"].shape[1] for batch in batches]
    assert widths == [expected_width(int(lengths[b["row_index"].numpy()].max()), 64) for b in batches]
    assert widths == sorted(widths, reverse=True) and widths[-1] < widths[0]
    assert [len(batch["row_index"]) for batch in batches] == [8, 8, 8, 8, 8, 5]


def test_a_token_budget_gives_long_rows_smaller_batches_and_covers_every_row_once():
    lengths = random_lengths(90, seed=8, low=1, high=128)
    rows = tokenized_rows(lengths, fixed_length=128)
    loader = evaluation_loader(rows, batch_size=24, max_tokens=512)
    assert loader.batch_sampler.batch_size is None  # batches of varying size: accelerate hands them out whole
    batches = list(loader)
    order = np.concatenate([batch["row_index"].numpy() for batch in batches])
    assert sorted(order.tolist()) == list(range(90)) and (np.diff(lengths[order]) <= 0).all()
    for batch in batches:
        rows_in_batch, width = batch["input_ids"].shape
        assert width == expected_width(int(lengths[batch["row_index"].numpy()].max()), 128)
        assert rows_in_batch <= 24 and (rows_in_batch * width <= 512 or rows_in_batch == 1)
    sizes = [len(batch["row_index"]) for batch in batches]
    assert sizes[0] == 512 // batches[0]["input_ids"].shape[1] < sizes[-1] == min(24, len(order) - sum(sizes[:-1]))
    # Each batch took as many rows as the budget allowed: one more would have broken it.
    for batch in batches[:-1]:
        rows_in_batch, width = batch["input_ids"].shape
        assert rows_in_batch == 24 or (rows_in_batch + 1) * width > 512
    # A row longer than the budget goes alone; without a budget, batch_size rows whatever their length.
    assert [len(b["row_index"]) for b in evaluation_loader(rows, batch_size=24, max_tokens=64)][:3] == [1, 1, 1]
    assert len(evaluation_loader(rows, batch_size=24).batch_sampler.batches[0]) == 24


def test_untrimmed_evaluation_loader_keeps_row_order_and_the_fixed_length():
    lengths = random_lengths(19, seed=7, low=1, high=30)
    rows = tokenized_rows(lengths, fixed_length=32)
    batches = list(evaluation_loader(rows, batch_size=4, trim=False))
    assert np.concatenate([b["row_index"].numpy() for b in batches]).tolist() == list(range(19))
    assert {b["input_ids"].shape[1] for b in batches} == {32}


@pytest.mark.parametrize("group_by_length", [True, False])
def test_slices_of_a_step_are_the_rows_one_big_batch_would_take(group_by_length):
    """Accumulation x processes: each optimizer step trains on the rows one process with the big batch would."""
    lengths = np.random.default_rng(3).integers(5, 120, size=203)
    big = ShuffledBatchSampler(lengths, 16, seed=7, group_by_length=group_by_length)
    sliced = ShuffledBatchSampler(lengths, 4, seed=7, group_by_length=group_by_length, slices=4)
    for epoch in (0, 1):
        big.set_epoch(epoch)
        sliced.set_epoch(epoch)
        slices = sliced.batches()
        assert len(slices) == len(sliced)
        steps, position = [], 0
        for batch in big.batches():
            count = min(len(batch), 4)
            steps.append(sorted(row for part in slices[position : position + count] for row in part))
            position += count
        assert position == len(slices)
        assert steps == [sorted(batch) for batch in big.batches()]
    assert sliced.batch_size is None  # accelerate hands out uneven slices as they are
