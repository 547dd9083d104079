"""How labels name classes (pipeline/data/labels.py): class names that are values (numbers), matched by value rather
than read as ids; label sets written in one cell (StackExchange tags "<python><pandas>", "|python|pandas|"), and
class names that join several classes (by a separator, by a space, as tags), told apart from names of several words.
Files are small CSVs in tmp_path."""

import csv
import logging
import random
from pathlib import Path

import numpy as np
import pytest

from pipeline.common.errors import DataError
from pipeline.config.schema import DataConfig
from pipeline.data.label_forms import _spaces_join_classes, set_hint, set_joining
from pipeline.data.label_scheme import UnknownLabels, leave_out_hint
from pipeline.data.load import load_data, read_labelled_file
from pipeline.data.splits import labels_of

LABELS_LOGGER = "pipeline.data.labels"
TAGS = ["c++", "java", "pandas", "python", "spring"]
# Words that StackOverflow's tags are made of, plain (no digit, dot or hyphen in them): sets of them are told from
# names of several words by how they combine, not by how they look.
WORDS_WRITTEN = (
    "python pandas java spring android ios swift kotlin react angular django flask numpy regex sql mysql postgresql "
    "docker linux bash git json xml html css php ruby rails scala rust go haskell excel vba matlab arrays string "
    "csv api http windows"
)
WORDS = WORDS_WRITTEN.split()
# arXiv's categories, as the data set's "categories" field joins them (by a space), in the user's sweep.
ARXIV = {1: "cs.LG", 2: "math.ST stat.ML", 3: "cs.LG stat.ML", 4: "cs.CL cs.LG"}
# Class names of several words that must not read as sets.
# CPC patent codes as patent offices write them (subclass, space, main group): one code each, in two places.
CPC = ["A61K 31/00", "A61K 9/20", "A61P 35/00", "A61P 29/00", "G06F 17/30", "G06F 3/01", "H04L 29/06", "H04L 9/32"]
# Complaint categories of two words that share words in both places: compounds, not sets.
COMPLAINTS = [
    "bus delay", "train delay", "delay compensation", "bus ticket", "train ticket", "ticket refund",
    "train cancellation", "bus cancellation", "refund request",
]  # fmt: skip
SST5 = ["very negative", "negative", "neutral", "positive", "very positive"]
TOPICS = ["Science and Technology", "Arts and Culture", "Business and Finance", "Sports", "World"]
CITIES = ["New York", "Los Angeles", "New Jersey", "New Mexico", "Chicago"]
DBPEDIA = ["Company", "EducationalInstitution", "Artist", "MeanOfTransportation", "NaturalPlace", "WrittenWork"]
BANKING77_INTENTS = (
    "activate_my_card age_limit apple_pay_or_google_pay atm_support automatic_top_up "
    "balance_not_updated_after_bank_transfer balance_not_updated_after_cheque_or_cash_deposit "
    "beneficiary_not_allowed cancel_transfer card_about_to_expire card_acceptance card_arrival "
    "card_delivery_estimate card_linking card_not_working card_payment_fee_charged card_payment_not_recognised "
    "card_payment_wrong_exchange_rate card_swallowed cash_withdrawal_charge cash_withdrawal_not_recognised "
    "change_pin compromised_card contactless_not_working country_support declined_card_payment "
    "declined_cash_withdrawal declined_transfer direct_debit_payment_not_recognised disposable_card_limits "
    "edit_personal_details exchange_charge exchange_rate exchange_via_app extra_charge_on_statement "
    "failed_transfer fiat_currency_support get_disposable_virtual_card get_physical_card getting_spare_card "
    "getting_virtual_card lost_or_stolen_card lost_or_stolen_phone order_physical_card passcode_forgotten "
    "pending_card_payment pending_cash_withdrawal pending_top_up pending_transfer pin_blocked receiving_money "
    "Refund_not_showing_up request_refund reverted_card_payment? supported_cards_and_currencies "
    "terminate_account top_up_by_bank_transfer_charge top_up_by_card_charge top_up_by_cash_or_cheque "
    "top_up_failed top_up_limits top_up_reverted topping_up_by_card transaction_charged_twice "
    "transfer_fee_charged transfer_into_account transfer_not_received_by_recipient transfer_timing "
    "unable_to_verify_identity verify_my_identity verify_source_of_funds verify_top_up "
    "virtual_card_not_working visa_or_mastercard why_verify_identity wrong_amount_of_cash_received "
    "wrong_exchange_rate_for_cash_withdrawal"
)
BANKING77 = [name.replace("_", " ") for name in BANKING77_INTENTS.split()]
HUFFPOST = [
    "POLITICS", "WELLNESS", "ENTERTAINMENT", "TRAVEL", "STYLE & BEAUTY", "PARENTING", "HEALTHY LIVING",
    "QUEER VOICES", "FOOD & DRINK", "BUSINESS", "COMEDY", "SPORTS", "BLACK VOICES", "HOME & LIVING", "PARENTS",
    "THE WORLDPOST", "WEDDINGS", "WOMEN", "IMPACT", "DIVORCE", "CRIME", "MEDIA", "WEIRD NEWS", "GREEN", "WORLDPOST",
    "RELIGION", "STYLE", "SCIENCE", "WORLD NEWS", "TASTE", "TECH", "MONEY", "ARTS", "FIFTY", "GOOD NEWS",
    "ARTS & CULTURE", "ENVIRONMENT", "COLLEGE", "LATINO VOICES", "CULTURE & ARTS", "EDUCATION", "U.S. NEWS",
]  # fmt: skip
# A grid of two places (device, action): more combinations than words, every word reused, but each in its place.
SMART_HOME = [
    f"{device} {action}" for device in ("light", "fan", "tv", "heater", "door") for action in ("on", "off", "up")
]


def tag_sets(count: int, seed: int = 0) -> list[list[str]]:
    rng = np.random.default_rng(seed)
    return [sorted(rng.choice(TAGS, size=rng.choice([1, 1, 2, 3]), replace=False).tolist()) for _ in range(count)]


def word_sets(count: int, seed: int = 0) -> list[str]:
    """`count` distinct sets of WORDS joined by spaces, drawn by Zipf's law (a few tags common, most rare), in the
    order drawn: StackOverflow's tags at the scale of a dump, not of a test file."""
    rng = random.Random(seed)
    weights = [1 / (rank + 1) for rank in range(len(WORDS))]
    found: dict[str, None] = {}
    while len(found) < count:
        drawn: list[str] = []
        for _ in range(rng.choice([2, 2, 3, 4])):
            word = rng.choices(WORDS, weights)[0]
            drawn += [] if word in drawn else [word]
        found[" ".join(drawn)] = None
    return list(found)


def write_csv(path: Path, header: list[str], rows: list[list[str]]) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)
    return path


def labelled(path: Path, labels: list[str]) -> Path:
    """A CSV of `labels`, each beside a distinct text, as StackExchange's dump and arXiv's metadata give them."""
    return write_csv(
        path, ["text", "label"], [[f"question {index} about code", label] for index, label in enumerate(labels)]
    )


def config(train: Path, **settings) -> DataConfig:
    return DataConfig(**{"source": "files", "train_file": str(train), "deduplicate": "none", **settings})


# ---------------------------------------------------------------------------------------------------------------
# Class names that are values


# The user sweep's ratings: train written as a spreadsheet exports them ("4.0"), with half stars ("4.5").
STARS = ["1.0", "2.0", "3.0", "4.0", "4.5", "5.0"]


def gold(data, split: str = "test") -> dict[str, str]:
    """Each text of a split with the class name its label was read as."""
    rows = data.splits[split]
    return {text: data.labels[label] for text, label in zip(rows["text"], rows["label"])}


@pytest.mark.parametrize("names", [None, STARS], ids=["inferred", "label-names"])
def test_an_integer_label_is_the_class_of_equal_value_never_its_position(tmp_path, names):
    """Test stars 1..5 against train's 1.0..5.0 and 4.5: an error without data.label_names, and with them (as the
    error advised) each integer read as a position counting from 0, 4 as 4.5 and 1 as 2.0, without a word."""
    train = labelled(tmp_path / "train.csv", STARS * 10)
    test = labelled(tmp_path / "test.csv", ["4", "1", "5", "+3", "4.50", "2.00"])
    data = load_data(config(train, test_file=str(test), label_names=names), seed=0)
    assert data.labels == STARS
    assert list(gold(data).values()) == ["4.0", "1.0", "5.0", "3.0", "4.5", "2.0"]
    assert data.summary["label_reading"] == {"names": True, "ids": False, "index_base": 0}


@pytest.mark.parametrize("names", [None, STARS], ids=["inferred", "label-names"])
def test_a_number_that_is_no_class_is_an_error_naming_it_not_a_position(tmp_path, names):
    train = labelled(tmp_path / "train.csv", STARS * 10)
    test = labelled(tmp_path / "test.csv", ["4", "0", "2"])
    with pytest.raises(DataError) as error:
        load_data(config(train, test_file=str(test), label_names=names), seed=0)
    origin = "data.label_names" if names else "the classes found in train"
    assert str(error.value) == (
        f"{test}, line 3, column 'label': label '0' is not a known class; allowed: the names "
        f"{', '.join(STARS)} ({origin}; a number names the class of equal value, never an id)"
    )


def test_integers_against_listed_numbers_read_by_value_with_no_id_base_to_say(tmp_path):
    """Train's integers 1..5 against classes "1.0".."5.0": the classes of equal value, not ids 1..5 whose missing 0
    asked for data.label_index_base (names that are words still do: test_ids_against_label_names_without_a_zero)."""
    written = ["1", "2", "3", "4", "5", "4.5"] * 10
    data = load_data(config(labelled(tmp_path / "train.csv", written), label_names=STARS), seed=0)
    for split in ("train", "validation", "test"):
        for text, name in gold(data, split).items():
            assert float(name) == float(written[int(text.split()[1])]), text


def test_a_file_scored_against_a_model_of_number_classes_reads_its_labels_by_value(tmp_path):
    """pipeline.evaluate reads a file's labels as training read its own (data.label_reading): by value, no ids."""
    settings = config(labelled(tmp_path / "train.csv", STARS * 10), label_names=STARS)
    reading = load_data(settings, seed=0).summary["label_reading"]
    scored = labelled(tmp_path / "scored.csv", ["4", "1.00"])
    dataset, _, _ = read_labelled_file(settings, str(scored), "--input", STARS, reading)
    assert [STARS[label] for label in labels_of(dataset)] == ["4.0", "1.0"]
    with pytest.raises(DataError) as error:
        read_labelled_file(settings, str(labelled(scored, ["4", "7", "2"])), "--input", STARS, reading)
    assert str(error.value) == (
        f"{scored}, line 3, column 'label': label '7' is not a known class; allowed: the names {', '.join(STARS)} "
        "(the model's classes, read as in training; a number names the class of equal value, never an id)"
    )


@pytest.mark.parametrize("names", [None, ["True", "False"]], ids=["inferred", "label-names"])
def test_booleans_written_as_1_and_0_are_the_classes_they_mean_never_positions(tmp_path, names):
    """Train's True/False against a test file's 1/0: refused without data.label_names, and with ["True", "False"]
    every 1 read as the second class (False) and every 0 as the first, each label inverted without a word."""
    train = labelled(tmp_path / "train.csv", ["True", "False"] * 10)
    test = labelled(tmp_path / "test.csv", ["1", "0", "1.0", "true", "FALSE", "Yes", "no"])
    data = load_data(config(train, test_file=str(test), label_names=names), seed=0)
    assert list(gold(data).values()) == ["True", "False", "True", "True", "False", "True", "False"]
    assert data.summary["label_reading"]["ids"] is False
    with pytest.raises(DataError) as error:
        load_data(config(train, test_file=str(labelled(tmp_path / "two.csv", ["1", "2"])), label_names=names), seed=0)
    origin = "data.label_names" if names else "the classes found in train"
    assert str(error.value).startswith(
        f"{tmp_path / 'two.csv'}, line 3, column 'label': label '2' is not a known class"
    )
    assert str(error.value).endswith(
        f"({origin}; 1/0, true/false and yes/no name the classes by meaning, never as ids)"
    )


def test_a_column_mixing_boolean_spellings_is_read_by_listing_the_classes(tmp_path, caplog):
    """The user sweep's column of true and 1, false and 0: with data.label_names ["False", "True"] '1 is a class id
    but earlier labels of this column are class names'. Unlisted, its four spellings are four classes, as any
    variants are, and the warning about variants names them with the way out."""
    written = ["true", "1", "false", "0", "TRUE", "No", "yes", "0.0"] * 5
    train = labelled(tmp_path / "train.csv", written)
    data = load_data(config(train, label_names=["False", "True"]), seed=0)
    meaning = {"true": "True", "1": "True", "yes": "True", "false": "False", "0": "False", "no": "False"}
    for split in ("train", "validation", "test"):
        for text, name in gold(data, split).items():
            assert name == meaning[written[int(text.split()[1])].casefold().removesuffix(".0")], text
    with caplog.at_level(logging.WARNING, logger=LABELS_LOGGER):
        assert len(load_data(config(train), seed=0).labels) == 8
    assert "are separate classes: '0', '0.0', 'No', 'false'; '1', 'TRUE', 'true', 'yes';" in caplog.text
    assert "list the classes in data.label_names" in caplog.text


def test_unknown_labels_that_are_the_classes_written_another_way_say_so_instead_of_leaving_rows_out(tmp_path):
    """Train's 0/1 (ids) against a test file's true/false: the error offered to add 'true', 'false' to
    data.missing_label_values and drop, every row of the file. It names the listing that reads them by value."""
    train = labelled(tmp_path / "train.csv", ["0", "1"] * 10)
    test = labelled(tmp_path / "test.csv", ["true", "false", "TRUE"])
    settings = config(train, test_file=str(test))
    with pytest.raises(UnknownLabels) as error:
        load_data(settings, seed=0)
    assert str(error.value).endswith(
        "allowed: ids 0..1 (data.label_index_base=0); the classes 1, 0 written another way? Where data.label_names "
        """lists the classes, labels match them by value (true is 1): 'data.label_names=["0", "1"]'"""
    )
    assert leave_out_hint(settings, error.value.labels) == ""
    data = load_data(config(train, test_file=str(test), label_names=["0", "1"]), seed=0)
    assert list(gold(data).values()) == ["1", "0", "1"]


def test_leaving_out_the_rows_of_unknown_labels_is_offered_only_where_rows_would_remain(tmp_path):
    """Unknown labels on every row of a file (another column's values, the classes written otherwise) are no stray
    classes: the settings that leave their rows out would leave none."""
    train = labelled(tmp_path / "train.csv", ["pos", "neg"] * 10)
    everywhere = labelled(tmp_path / "test.csv", ["good", "bad"] * 10)
    settings = config(train, test_file=str(everywhere))
    with pytest.raises(UnknownLabels) as error:
        load_data(settings, seed=0)
    assert str(error.value).endswith("; 20 of 20 rows, too many to leave out: is 'label' the label column?")
    assert leave_out_hint(settings, error.value.labels) == ""
    stray = labelled(tmp_path / "stray.csv", ["pos", "neg"] * 9 + ["meh", "meh"])
    with pytest.raises(UnknownLabels) as error:
        load_data(config(train, test_file=str(stray)), seed=0)
    assert error.value.labels == ["meh"] and "too many to leave out" not in str(error.value)


# ---------------------------------------------------------------------------------------------------------------
# Class names written another way


# The user sweep's product categories, one of them typed without its spaces ("accessories;Toys>Games").
PRODUCTS = ["Accessories", "Electronics > Phones", "Home & Garden > Kitchen", "Toys > Games"]


@pytest.mark.parametrize("task", ["single_label", "multi_label"])
def test_names_that_differ_only_in_spacing_are_warned_about_and_listed_read_as_one(tmp_path, caplog, task):
    """'Toys>Games' beside 'Toys > Games' became a class of its own without a word, where 'accessories' beside
    'Accessories' was named in a warning: spacing is one more way of writing a name, warned about alike, and the
    way out the warning gives (data.label_names) reads it as the class."""
    written = [*PRODUCTS, "Toys>Games", "Home&Garden > Kitchen", "Electronics  >  Phones"] * 5
    train = labelled(tmp_path / "train.csv", written)
    settings = {"task": task, "label_separator": ";"} if task == "multi_label" else {}
    with caplog.at_level(logging.WARNING, logger=LABELS_LOGGER):
        assert len(load_data(config(train, **settings), seed=0).labels) == 7
    assert (
        "labels that differ only in case, spacing, number or boolean format are separate classes: 'Electronics  >  "
        "Phones', 'Electronics > Phones'; 'Home & Garden > Kitchen', 'Home&Garden > Kitchen'; 'Toys > Games', "
        "'Toys>Games'; write each class one way" in caplog.text
    )
    data = load_data(config(train, label_names=PRODUCTS, **settings), seed=0)
    rows = data.splits["train"]
    for text, label in zip(rows["text"], rows["labels" if task == "multi_label" else "label"]):
        index = label.index(1.0) if task == "multi_label" else label
        assert written[int(text.split()[1])].replace(" ", "") == PRODUCTS[index].replace(" ", ""), text


def test_names_that_are_one_name_spaced_otherwise_each_keep_their_exact_spelling(tmp_path):
    """Two listed classes spaced apart only ('a>b', 'a > b') are ambiguous by their form: each takes only its own
    spelling, as two classes differing only in case do, and a third spelling names neither."""
    train = labelled(tmp_path / "train.csv", ["a>b", "a > b"] * 10)
    listed = ["a>b", "a > b"]
    exact = labelled(tmp_path / "exact.csv", ["a > b", "a>b"])
    assert list(gold(load_data(config(train, test_file=str(exact), label_names=listed), seed=0)).values()) == [
        "a > b",
        "a>b",
    ]
    other = labelled(tmp_path / "other.csv", ["a > b", "a >b"])
    with pytest.raises(DataError, match=r"other\.csv, line 3, column 'label': label 'a >b' is not a known class"):
        load_data(config(train, test_file=str(other), label_names=listed), seed=0)


# ---------------------------------------------------------------------------------------------------------------
# Tags in a multi-label task


@pytest.mark.parametrize(
    ("cell", "settings"),
    [
        (lambda tags: "".join(f"<{tag}>" for tag in tags), {}),  # the data dump's Tags column
        (lambda tags: "".join(f"<{tag}>" for tag in tags), {"label_separator": "><"}),  # the sweep's attempt
        (lambda tags: f"|{'|'.join(tags)}|", {}),  # newer dumps: the separator encloses the set
    ],
    ids=["tags", "tags-with-separator-between-tags", "enclosing-separator"],
)
def test_stackexchange_tag_cells_read_as_the_sets_they_write(tmp_path, cell, settings):
    """Each combination of tags was one class ('<python><pandas>'), or split at '><' into '<python', 'pandas>'."""
    sets = tag_sets(90)
    written = load_data(
        config(labelled(tmp_path / "tags.csv", [cell(tags) for tags in sets]), task="multi_label", **settings), seed=3
    )
    joined = load_data(
        config(labelled(tmp_path / "joined.csv", ["|".join(tags) for tags in sets]), task="multi_label"), seed=3
    )
    assert written.labels == joined.labels == sorted({tag for tags in sets for tag in tags})
    for split in ("train", "validation", "test"):
        np.testing.assert_array_equal(labels_of(written.splits[split]), labels_of(joined.splits[split]))


@pytest.mark.parametrize(
    ("cell", "message"),
    [
        (
            "python||pandas",
            r"line 3, column 'label': an empty label in 'python\|\|pandas'; two data.label_separator '\|' with "
            r"nothing between: remove one \(a separator at either end of a cell is read as none\)$",
        ),
        ('["python", ""]', r"line 3, column 'label': an empty label in \['python', ''\]; remove the empty name"),
        ("<python><c|sharp>", r"line 3, column 'label': label 'c\|sharp' contains data.label_separator '\|'"),
    ],
    ids=["separators-with-nothing-between", "empty-name-in-a-list", "tag-holding-the-separator"],
)
def test_tag_cells_that_cannot_be_read_as_sets_are_errors_naming_the_row(tmp_path, cell, message):
    train = labelled(tmp_path / "train.csv", ["python", cell, *["java", "python"] * 5])
    with pytest.raises(DataError, match=message):
        load_data(config(train, task="multi_label"), seed=0)


@pytest.mark.parametrize(
    "cells",
    [["Toys > Games; ", "Toys > Games; Accessories; "], [" ; Toys > Games", "; Toys > Games ; Accessories"]],
    ids=["trailing", "leading"],
)
def test_a_separator_at_one_end_of_a_cell_joins_nothing(tmp_path, cells):
    """A join that writes the separator after each label (the user sweep's 'Toys > Games; ') stopped with 'an empty
    label', no fix offered, where '|python|pandas|' enclosing the set was read: either end, spaces aside, is none."""
    settings = {"task": "multi_label", "label_separator": ";"}
    written = load_data(config(labelled(tmp_path / "ends.csv", cells * 10), **settings), seed=0)
    plain = ["Toys > Games", "Toys > Games; Accessories"]
    joined = load_data(config(labelled(tmp_path / "plain.csv", plain * 10), **settings), seed=0)
    assert written.labels == joined.labels == ["Accessories", "Toys > Games"]
    for split in ("train", "validation", "test"):
        np.testing.assert_array_equal(labels_of(written.splits[split]), labels_of(joined.splits[split]))


def test_single_label_tag_sets_are_warned_about_naming_the_setting(tmp_path, caplog):
    cells = ["<python>", "<python><pandas>", "<java><spring>", "<c++><java>"] * 10
    train = labelled(tmp_path / "train.csv", cells)
    with caplog.at_level(logging.WARNING, logger=LABELS_LOGGER):
        assert "<python><pandas>" in load_data(config(train), seed=0).labels
    assert (
        "3 classes look like several classes written as tags ('<python><pandas>', '<java><spring>', '<c++><java>'): "
        "a set of labels per row? Set data.task=multi_label" in caplog.text
    )
    assert load_data(config(train, task="multi_label"), seed=0).labels == TAGS  # the setting said
    caplog.clear()
    single = labelled(tmp_path / "single.csv", ["<python>", "<java>", "<c++>"] * 10)  # one tag each: classes
    with caplog.at_level(logging.WARNING, logger=LABELS_LOGGER):
        load_data(config(single), seed=0)
    assert "look like several classes" not in caplog.text


# ---------------------------------------------------------------------------------------------------------------
# Classes joined by a space, told from names of several words


def spaced(names: list[str]) -> tuple[list[list[str]], set[str]]:
    """Names as set_joining hands them to _spaces_join_classes: the parts of those holding a space, and the others."""
    return [name.split() for name in names if " " in name], {name for name in names if " " not in name}


@pytest.mark.parametrize(
    "names",
    [list(ARXIV.values()), ["401.9", "250.00 401.9", "272.4 401.9", "250.00 272.4"], word_sets(300)],
    ids=["arxiv-codes", "icd9-codes", "plain-word-tags-at-scale"],
)
def test_space_joined_sets_are_found_whether_coded_or_combined_at_scale(names):
    assert set_joining(names, None) == " "
    assert set_joining(names, " ") is None  # already the separator: read as sets


@pytest.mark.parametrize(
    "names",
    [SST5, TOPICS, CITIES, DBPEDIA, BANKING77, HUFFPOST, SMART_HOME, word_sets(12), CPC, COMPLAINTS],
    ids=[
        "sst5",
        "topics-with-and",
        "cities",
        "dbpedia",
        "banking77",
        "huffpost",
        "grid-of-two-places",
        "few-sets",
        "cpc-codes",
        "two-word-compounds",
    ],
)
def test_names_of_several_words_are_not_read_as_space_joined_sets(names):
    """Whatever set_joining's first test (each joined name has a part that is a class or recurs) lets through, the
    space's own rule refuses: words of names are few combinations, in fixed places, or mostly one-offs. A dozen
    plain-word sets are too few to tell from names: the warning waits for the scale of real data (or codes)."""
    assert set_joining(names, None) is None
    assert not _spaces_join_classes(*spaced(names))


def test_titles_are_not_read_as_space_joined_sets(ag_news_train_csv):
    """A text column chosen as the label column: its words combine into more texts than there are words at scale,
    in every order, but most words are one-offs."""
    with open(ag_news_train_csv, newline="", encoding="utf-8") as handle:
        titles = sorted({row["title"].strip() for row in csv.DictReader(handle)})
    assert not _spaces_join_classes(*spaced(titles))


@pytest.mark.parametrize(
    ("labels", "settings"),
    [
        (CPC, {}),
        ([f"{a},{b}" for a, b in zip(CPC, CPC[1:] + CPC[:1])], {"task": "multi_label", "label_separator": ","}),
        (COMPLAINTS, {}),
    ],
    ids=["cpc-single-label", "cpc-multi-label", "complaints"],
)
def test_codes_in_two_places_and_two_word_names_are_read_without_a_warning(tmp_path, caplog, labels, settings):
    """CPC's "A61K 31/00" (a class and its group) and "bus delay" beside "delay compensation" warned as space-joined
    sets; codes in two fixed places and names of two words are names, while arXiv's combinations still warn."""
    train = labelled(tmp_path / "train.csv", labels * 20)
    with caplog.at_level(logging.WARNING, logger=LABELS_LOGGER):
        load_data(config(train, **settings), seed=0)
    assert "look like several classes" not in caplog.text


def test_the_hint_about_sets_is_not_given_for_texts_and_stays_cheap():
    """A text column given as the label column: its words recur at scale like tags, which made the error end with
    "several classes joined by ' '" after seconds of looking; texts are no sets, and a sample is enough to tell."""
    rng = random.Random(0)
    texts = sorted({" ".join(rng.choices(WORDS, k=12)) for _ in range(50_000)})
    assert set_hint(texts, None) == ""
    assert "joined by ' '" in set_hint(sorted(word_sets(5_000)), None)  # sets at scale: sampled, still told


def test_space_joined_categories_warn_in_a_single_label_task_with_the_setting_that_reads_them(tmp_path, caplog):
    """arXiv's categories ("cs.LG stat.ML") became classes without a word, while "cs.LG|stat.ML" warned."""
    train = labelled(tmp_path / "arxiv.csv", [ARXIV[index % 4 + 1] for index in range(40)])
    with caplog.at_level(logging.WARNING, logger=LABELS_LOGGER):
        assert load_data(config(train), seed=0).labels == sorted(ARXIV.values())
    assert (
        "3 classes look like several classes joined by ' ' ('math.ST stat.ML', 'cs.LG stat.ML', 'cs.CL cs.LG'): a set "
        "of labels per row? Set data.task=multi_label data.label_separator=' '" in caplog.text
    )
    assert load_data(config(train, task="multi_label", label_separator=" "), seed=0).labels == [
        "cs.CL", "cs.LG", "math.ST", "stat.ML",
    ]  # fmt: skip
    caplog.clear()
    sst = labelled(tmp_path / "sst.csv", SST5 * 8)
    with caplog.at_level(logging.WARNING, logger=LABELS_LOGGER):
        assert load_data(config(sst), seed=0).labels == sorted(SST5)
    assert "look like several classes" not in caplog.text


@pytest.mark.parametrize(
    ("train_labels", "test_label", "settings", "hint"),
    [
        # Train's classes are combinations; the test file has a new one, whose parts are not all classes alone.
        (list(ARXIV.values()), "cs.CL stat.ML", {}, "joined by ' '? A multi-label task reads them with "
         "data.task=multi_label and data.label_separator=' '"),
        (TAGS, "<python><pandas>", {"label_names": TAGS}, "written as tags? A multi-label task reads them with "
         "data.task=multi_label"),
    ],
    ids=["space-joined", "tags"],
)  # fmt: skip
def test_an_unknown_label_joining_classes_names_the_setting_in_its_error(
    tmp_path, train_labels, test_label, settings, hint
):
    train = labelled(tmp_path / "train.csv", train_labels * 10)
    test = labelled(tmp_path / "test.csv", [train_labels[0], test_label])
    with pytest.raises(DataError, match=r"test\.csv, line 3, column 'label': label .* is not a known class") as error:
        load_data(config(train, test_file=str(test), **settings), seed=0)
    assert str(error.value).endswith(f"; several classes {hint}")


def test_too_many_combinations_to_be_classes_are_named_as_sets_in_the_error(tmp_path):
    """At the scale of a dump (thousands of combinations) the classes are refused before any warning: the error
    that refuses them says what they look like, with the setting, in either task."""
    combinations = word_sets(1001)
    train = labelled(tmp_path / "train.csv", combinations * 2)  # each twice: no one-off labels
    with pytest.raises(DataError, match="more than 1000: is data.label_column a text or id column") as error:
        load_data(config(train), seed=0)
    first = ", ".join([repr(name) for name in sorted(combinations) if " " in name][:3])  # a draw may repeat a tag
    assert str(error.value).endswith(
        f"; or are they sets of labels, several classes joined by ' ' ({first})? Set data.task=multi_label "
        "data.label_separator=' '"
    )
    with pytest.raises(DataError, match=r"more than 1000: list the classes in data.label_names; or are they sets"):
        load_data(config(train, task="multi_label"), seed=0)  # read with '|': each combination one class
    assert load_data(config(train, task="multi_label", label_separator=" "), seed=0).labels == sorted(
        {word for combination in combinations for word in combination.split()}
    )
