"""Config: defaults in one place, YAML says what differs, dotted overrides, errors that name the key."""

import pytest

from pipeline.config.load import apply_overrides, load_config, save_config
from pipeline.config.schema import ConfigError, PipelineConfig
from tests.helpers import REPO_ROOT

CONFIGS = REPO_ROOT / "configs"


def test_no_file_gives_the_dataclass_defaults():
    assert load_config(None) == PipelineConfig()


@pytest.mark.parametrize("path", sorted(CONFIGS.glob("*.yaml")), ids=lambda p: p.name)
def test_every_shipped_config_loads_and_opens_with_its_command(path):
    config = load_config(path)
    assert isinstance(config, PipelineConfig)
    first_lines = path.read_text().splitlines()[:4]
    assert all(line.startswith("#") for line in first_lines[:1])
    assert any("python -m pipeline.finetune --config configs/" + path.name in line for line in first_lines)


def test_main_config_is_bert_base_fixed_128_effective_batch_32_by_accumulation():
    config = load_config(CONFIGS / "ag_news_bert.yaml")
    assert config.model.name_or_path == config.tokenizer.name_or_path == "bert-base-uncased"
    assert config.data.source == "hub" and config.data.hub_name == "fancyzhx/ag_news"
    assert config.tokenizer.max_length == 128
    assert config.train.gradient_accumulation_steps > 1
    assert config.train.per_device_batch_size * config.train.gradient_accumulation_steps == 32
    assert config.train.mixed_precision == "auto"


def test_dotted_overrides_are_typed():
    config = load_config(
        CONFIGS / "ag_news_bert.yaml",
        [
            "train.learning_rate=3e-5",
            "data.max_train_samples=500",
            "data.text_columns=title,description",
            "tokenizer.max_length=auto",
            "train.eval_every_steps=null",
            "model.encoder.num_layers=2",
            "train.mixed_precision=no",
        ],
    )
    assert config.train.learning_rate == pytest.approx(3e-5)  # YAML alone would read "3e-5" as a string
    assert config.data.max_train_samples == 500
    assert config.data.text_columns == ["title", "description"]
    assert config.tokenizer.max_length == "auto"
    assert config.train.eval_every_steps is None
    assert config.model.encoder.num_layers == 2
    assert config.train.mixed_precision == "no"  # YAML alone would read a bare no as false


def test_extends_merges_sections(tmp_path):
    (tmp_path / "base.yaml").write_text("train:\n  epochs: 5\n  learning_rate: 1.0e-4\n")
    (tmp_path / "child.yaml").write_text("extends: base.yaml\ntrain:\n  epochs: 2\n")
    config = load_config(tmp_path / "child.yaml")
    assert (config.train.epochs, config.train.learning_rate) == (2.0, 1e-4)


@pytest.mark.parametrize(
    "override, named",
    [
        ("train.learnin_rate=1e-3", "train.learnin_rate"),
        ("trian.epochs=1", "trian"),
        ("train.epochs=three", "train.epochs"),
        ("train.per_device_batch_size=8.5", "train.per_device_batch_size"),
        ("train.per_device_batch_size=0", "train.per_device_batch_size"),
        ("train.resume=maybe", "train.resume"),
        ("train.mixed_precision=fp8", "train.mixed_precision"),
        ("train.mixed_precision=yes", "train.mixed_precision"),
        ("model.kind=gpt", "model.kind"),
        ("model.encoder.norm=middle", "norm"),
        ("model.encoder.hidden_size=30", "hidden_size"),
        ("tokenizer.max_length=long", "tokenizer.max_length"),
        ("data.validation_fraction=1.5", "data.validation_fraction"),
        ("data.source=files", "data.train_file"),
        ("no_equals_sign", "no_equals_sign"),
        ("train.selection_metric=f1", "train.selection_metric"),
        ("train.selection_metric=micro_f1", "train.selection_metric"),  # single-label: micro-F1 is accuracy
        ("data.delimiter=@@", "data.delimiter"),
        ("data.delimiter='\"'", "data.delimiter"),
    ],
)
def test_bad_keys_and_values_raise_naming_the_key(override, named):
    with pytest.raises(ConfigError, match=named.replace(".", r"\.")):
        load_config(CONFIGS / "ag_news_bert.yaml", [override])


def test_bad_yaml_file_is_named(tmp_path):
    path = tmp_path / "broken.yaml"
    path.write_text("train: [unclosed\n")
    with pytest.raises(ConfigError, match="broken.yaml"):
        load_config(path)
    with pytest.raises(ConfigError, match="not found"):
        load_config(tmp_path / "missing.yaml")


def test_resolved_config_round_trips(tmp_path):
    config = load_config(CONFIGS / "ag_news_quick.yaml", ["train.learning_rate=3e-5"])
    save_config(config, tmp_path / "config.yaml")
    assert load_config(tmp_path / "config.yaml") == config
    assert not list(tmp_path.glob("*.tmp"))


def test_saved_config_names_local_files_absolute_so_it_loads_from_any_directory(tmp_path, monkeypatch):
    """A run's config.yaml re-creates its data (pipeline.export verifies on it) from wherever it is read."""
    (tmp_path / "data").mkdir()
    (tmp_path / "models" / "mini").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    overrides = ["data.source=files", "data.train_file=data/train.csv", "data.test_file=./data/../data/test.csv"]
    local = ["model.name_or_path=models/mini", "tokenizer.name_or_path=models/mini", "data.validation_file='-'"]
    config = load_config(None, overrides + local)
    save_config(config, tmp_path / "config.yaml")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    saved = load_config(tmp_path / "config.yaml")
    assert saved.data.train_file == str(tmp_path / "data" / "train.csv")
    assert saved.data.test_file == str(tmp_path / "data" / "test.csv")
    assert saved.model.name_or_path == saved.tokenizer.name_or_path == str(tmp_path / "models" / "mini")
    assert saved.data.validation_file == "-"  # standard input is no file
    assert config.data.train_file == "data/train.csv"  # the config in hand keeps the user's spelling
    hub = load_config(None, ["model.name_or_path=bert-base-uncased"])
    save_config(hub, tmp_path / "hub.yaml")
    assert load_config(tmp_path / "hub.yaml").model.name_or_path == "bert-base-uncased"  # a Hub id, no such folder


def test_the_batch_token_budget_is_auto_by_default_and_takes_a_number_or_null():
    assert load_config(None).eval.max_batch_tokens == "auto"
    assert load_config(None, ["eval.max_batch_tokens=2048"]).eval.max_batch_tokens == 2048
    assert load_config(None, ["eval.max_batch_tokens=null"]).eval.max_batch_tokens is None
    with pytest.raises(ConfigError, match="eval.max_batch_tokens"):
        load_config(None, ["eval.max_batch_tokens=many"])


def test_a_delimiter_is_one_character_given_as_written():
    assert load_config(None).data.delimiter is None  # the format's own
    assert load_config(None, ["data.delimiter=@"]).data.delimiter == "@"  # YAML cannot read a bare @: kept as text
    with pytest.raises(ConfigError, match="data.delimiter: must be one character"):
        load_config(None, ["data.delimiter=@@"])


def test_a_bare_pipe_is_the_character_on_the_command_line_and_asks_for_quotes_in_a_file(tmp_path):
    """YAML reads a bare | (or >) as an empty block of text: `data.label_separator=|` was refused as empty, and a
    pipe-separated file could not be given its delimiter."""
    config = load_config(None, ["data.delimiter=|", "data.label_separator=|", "data.text_separator=>"])
    assert (config.data.delimiter, config.data.label_separator, config.data.text_separator) == ("|", "|", ">")
    path = tmp_path / "pipe.yaml"
    for key in ("delimiter", "label_separator"):
        path.write_text(f"data:\n  {key}: |\n  task: multi_label\n")
        with pytest.raises(ConfigError, match=f'data.{key}: must .* quote a \\| or >: "\\|"'):
            load_config(path)
        path.write_text(f'data:\n  {key}: "|"\n')
        assert getattr(load_config(path).data, key) == "|"


def test_yes_and_no_are_class_names_and_a_bare_true_asks_for_quotes(tmp_path):
    """Binary label sets are often yes/no: YAML 1.1 would read them as booleans."""
    overrides = ["eval.threshold={yes: 0.3}", "train.class_weights={no: 1, yes: 3}", "data.label_names=[no, yes]"]
    config = load_config(None, overrides)
    assert config.eval.threshold == {"yes": 0.3} and config.train.class_weights == {"no": 1.0, "yes": 3.0}
    assert config.data.label_names == ["no", "yes"]
    (tmp_path / "c.yaml").write_text("eval:\n  threshold: {yes: 0.3}\ntrain:\n  calibrate: no\n")
    from_file = load_config(tmp_path / "c.yaml")
    assert from_file.eval.threshold == {"yes": 0.3} and from_file.train.calibrate is False  # a setting: a boolean
    assert load_config(None, ["train.mixed_precision=no"]).train.mixed_precision == "no"
    with pytest.raises(ConfigError, match=r"data.label_names\[0\]: expected a string, got True .*quote it"):
        load_config(None, ["data.label_names=[true, false]"])


@pytest.mark.parametrize(
    ("override", "message"),
    [
        (
            "eval.threshold={Sports: [1]}",
            "eval.threshold.Sports: expected a number, 'best_f1' or a mapping of names to a number, got [1]",
        ),
        ("train.class_weights={Sports: heavy}", "train.class_weights.Sports: expected a number, got 'heavy'"),
        (
            "train.class_weights=3",
            "train.class_weights: expected 'none', 'balanced' or a mapping of names to a number, got 3",
        ),
        ("data.text_columns={a: 1}", "data.text_columns: expected a list of strings, got {'a': 1}"),
        (
            "data.text_columns=[title, Label ]",
            "data.text_columns: holds the label column 'label' (data.label_column); the model would read each row's "
            "answer in its text",
        ),
    ],
)
def test_a_wrong_type_names_the_innermost_key_and_the_choices_once(override, message):
    """A mapping inside a union is checked as that mapping, so the error names the class key; choices are listed
    flat, each once."""
    with pytest.raises(ConfigError) as caught:
        load_config(None, [override])
    assert str(caught.value) == message


def test_overrides_leave_the_callers_values_alone():
    values = {"train": {"epochs": 1}}
    assert apply_overrides(values, ["train.epochs=3", "data.task=multi_label"]) == {
        "train": {"epochs": 3},
        "data": {"task": "multi_label"},
    }
    assert values == {"train": {"epochs": 1}}


def test_extends_merges_sections_but_replaces_a_mapping_value_whole(tmp_path):
    (tmp_path / "base.yaml").write_text(
        "train:\n  epochs: 5\n  class_weights: {world: 2}\n  distill: {alpha: 0.3, temperature: 4}\n"
        "eval:\n  threshold: {precision: 0.9}\n"
    )
    (tmp_path / "child.yaml").write_text(
        "extends: base.yaml\ntrain:\n  class_weights: {sports: 3}\n  distill: {alpha: 0.7}\n"
        "eval:\n  threshold: {sports: 0.4}\n"
    )
    config = load_config(tmp_path / "child.yaml")
    assert config.train.epochs == 5 and (config.train.distill.alpha, config.train.distill.temperature) == (0.7, 4.0)
    assert config.train.class_weights == {"sports": 3.0}
    assert config.eval.threshold == {"sports": 0.4}


def test_extends_a_list_later_files_win(tmp_path):
    (tmp_path / "a.yaml").write_text("train:\n  epochs: 5\n  learning_rate: 1.0e-4\n")
    (tmp_path / "b.yaml").write_text("train:\n  epochs: 7\nrun:\n  name: b\n")
    (tmp_path / "c.yaml").write_text("extends: [a.yaml, b.yaml]\nrun:\n  name: c\n")
    config = load_config(tmp_path / "c.yaml")
    assert (config.train.epochs, config.train.learning_rate, config.run.name) == (7.0, 1e-4, "c")


def test_a_string_override_keeps_the_text_that_yaml_reads_as_a_mapping_or_null():
    """TREC's labels (`DESC:`) read as a mapping, and a space as null: a string setting takes the text written."""
    config = load_config(None, ["data.label_column=DESC:", "data.delimiter= ", "data.text_separator=  "])
    assert (config.data.label_column, config.data.delimiter, config.data.text_separator) == ("DESC:", " ", "  ")
    assert load_config(None, ["data.hub_config=a: b"]).data.hub_config == "a: b"
    # Null written as null, ~ or nothing at all still unsets an optional string.
    for written in ("", "null", "~", " NULL "):
        assert load_config(None, [f"data.delimiter={written}"]).data.delimiter is None
    # Other settings keep YAML's reading: a mapping for a mapping, and a mapping where none is taken is an error.
    assert load_config(None, ["data.hub_splits={test: dev}"]).data.hub_splits == {"test": "dev"}
    with pytest.raises(ConfigError, match=r"data\.text_columns: expected a list of strings, got \{'DESC': None\}"):
        load_config(None, ["data.text_columns=DESC:"])
