"""tune.space: ranges and choices parsed, and bad input refused in one line naming the key."""

from __future__ import annotations

import pytest

from pipeline.config.schema import ConfigError
from pipeline.tune.space import Choice, Range, check_space, overrides_for, parse_space


def test_ranges_and_choices_are_parsed():
    space = parse_space({"train.learning_rate": {"low": 1e-5, "high": 1e-3, "log": True}, "train.epochs": [1, 2]})
    assert space == [Range("train.learning_rate", 1e-5, 1e-3, log=True), Choice("train.epochs", (1, 2))]
    assert parse_space({"train.max_steps": {"low": 10, "high": 50}})[0].integer


@pytest.mark.parametrize(
    ("space", "message"),
    [
        ({}, "tune.space: empty"),
        (
            {"train.learning_rate": {"low": 1e-3, "high": 1e-5}},
            "tune.space.train.learning_rate: low (0.001) must not be above high",
        ),
        ({"train.learning_rate": {"low": 0.0, "high": 1e-3, "log": True}}, "a log range needs low > 0"),
        ({"run.seed": [1, 2]}, "tune.space.run.seed: run.* and tune.* keys"),
        ({"train.epochs": {"low": 1}}, "a range is {low, high"),
    ],
)
def test_an_impossible_space_is_one_line_naming_the_key(space, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)").replace("*", r"\*")):
        parse_space(space)


def test_an_unknown_key_or_a_refused_value_names_the_space_key():
    with pytest.raises(
        ConfigError, match="tune.space.train.learnin_rate: the value 0.1 is refused: unknown config key"
    ):
        check_space(None, [], parse_space({"train.learnin_rate": [0.1]}))
    with pytest.raises(ConfigError, match="tune.space.train.per_device_batch_size: the value 0 is refused"):
        check_space(None, [], parse_space({"train.per_device_batch_size": [0, 16]}))


def test_overrides_read_back_as_the_values():
    assert overrides_for({"train.learning_rate": 1e-4, "tokenizer.long_text": "chunk", "train.calibrate": False}) == [
        "train.learning_rate=0.0001",
        "tokenizer.long_text=chunk",
        "train.calibrate=false",
    ]
