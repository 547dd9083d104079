"""Near duplicates (pipeline.data.near_duplicates): texts equal but for case, punctuation, whitespace or a URL, with
conflicting labels, grouped; and counted by stage 1's duplicate report."""

import datasets

from pipeline.data.near_duplicates import NearRow, conflicting_groups, near_key
from pipeline.data.splits import deduplicate


def test_the_key_ignores_case_punctuation_whitespace_and_urls():
    plain = near_key("Stocks rally as oil falls")
    assert near_key("STOCKS rally, as oil falls!") == plain
    assert near_key("  Stocks\trally as   oil falls ") == plain
    assert near_key("Stocks rally as oil falls https://example.com/a?b=1") == plain
    assert near_key("Stocks rally as oil falls (www.example.com)") == plain
    assert near_key("Stocks rally as oil rises") != plain


def _rows(*items):
    return [NearRow("train", index, str(index + 1), text, label) for index, (text, label) in enumerate(items)]


def test_groups_with_conflicting_labels_are_listed_and_others_are_not():
    rows = _rows(
        ("Oil prices fall.", 2),
        ("oil prices fall", 0),  # near copy, another label: listed
        ("Team wins the cup", 1),
        ("TEAM WINS THE CUP!", 1),  # near copy, same label: not listed
        ("Exact copy here", 3),
        ("Exact copy here", 0),  # exact copies only: stage 1's conflict count, not a near duplicate
        ("!!!", 0),
        ("???", 1),  # punctuation alone is no evidence
    )
    groups = conflicting_groups(rows)
    assert [[row.row_id for row in group] for group in groups] == [["1", "2"]]


def test_stage_one_counts_near_conflicts_across_splits():
    features = datasets.Features(
        {
            "text": datasets.Value("string"),
            "label": datasets.ClassLabel(names=["a", "b"]),
            "row_id": datasets.Value("string"),
        }
    )
    train = datasets.Dataset.from_dict(
        {"text": ["Hello world", "Other text", "Other text"], "label": [0, 1, 0], "row_id": ["2", "3", "4"]}, features
    )
    test = datasets.Dataset.from_dict({"text": ["hello, WORLD"], "label": [1], "row_id": ["2"]}, features)
    _, _, report = deduplicate({"train": train, "test": test}, "none", ["a", "b"])
    assert (report.conflicts, report.near_conflicts) == (1, 1)
