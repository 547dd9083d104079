"""The training loop's contracts: gradient accumulation is exact, resume is exact, the schedule is planned right."""

import json
import shutil

import pytest
import torch
import transformers
from safetensors.torch import load_file

from pipeline import finetune
from pipeline.config.schema import TrainConfig
from pipeline.train.loop import plan_steps
from tests.helpers import multi_label_overrides, reset_accelerate

ENCODER = [
    "model.kind=encoder",
    "model.encoder.hidden_size=32",
    "model.encoder.num_layers=2",
    "model.encoder.num_heads=2",
    "model.encoder.intermediate_size=64",
]


def _weights(path):
    return load_file(str(path))


def _max_difference(a: dict, b: dict) -> float:
    assert a.keys() == b.keys()
    return max((a[k].float() - b[k].float()).abs().max().item() for k in a)


@pytest.fixture(scope="module")
def multi_label(tmp_path_factory, ag_news_train_csv, ag_news_test_csv):
    """Overrides that make tiny_run_config's data multi-label (BCE with pos_weight from balanced class weights)."""
    root = tmp_path_factory.mktemp("multi_label")
    return [*multi_label_overrides(root, ag_news_train_csv, ag_news_test_csv), "train.class_weights=balanced"]


@pytest.mark.slow  # three fine-tuning runs per task
@pytest.mark.parametrize("task", ["single_label", "multi_label"])
def test_gradient_accumulation_matches_one_big_batch_including_a_short_last_window(tiny_run_config, task, request):
    # 60 rows, length-grouped (the default): steps of 8 rows end with a step of 4; with batches of 2 in windows of 4,
    # each step's 8 rows are the same rows cut into 4 slices, and the last step's 4 rows into 4 slices of 1.
    common = [
        *(request.getfixturevalue("multi_label") if task == "multi_label" else []),
        f"run.name={task}",
        "data.max_train_samples=60",
        "train.epochs=1",
        "train.mixed_precision=no",
        "train.learning_rate=1e-3",
        "train.warmup_ratio=0",
    ]
    big = finetune.run(tiny_run_config(*common, f"run.name={task}_big", "train.per_device_batch_size=8"))
    reset_accelerate()
    accumulated = finetune.run(
        tiny_run_config(
            *common,
            f"run.name={task}_accumulated",
            "train.per_device_batch_size=2",
            "train.gradient_accumulation_steps=4",
        )
    )
    reset_accelerate()
    finetune.run(tiny_run_config(*common, f"run.name={task}_small", "train.per_device_batch_size=2"))
    assert big["best"]["metric"] == ("micro_f1" if task == "multi_label" else "accuracy")

    assert big["training"]["global_steps"] == accumulated["training"]["global_steps"] == 8
    assert big["training"]["effective_batch_size"] == accumulated["training"]["effective_batch_size"] == 8
    runs = tiny_run_config().run_dir.parent
    weights = {
        name: _weights(runs / f"{task}_{name}" / "model" / "model.safetensors")
        for name in ("big", "accumulated", "small")
    }
    equivalent = _max_difference(weights["big"], weights["accumulated"])
    different = _max_difference(weights["big"], weights["small"])
    assert equivalent < 1e-5
    assert different > 100 * equivalent  # the comparison can tell training runs apart


@pytest.mark.slow  # two fine-tuning runs per task
@pytest.mark.parametrize("task", ["single_label", "multi_label"])
def test_resume_continues_exactly_where_the_checkpoint_left_off(tiny_run_config, task, request):
    # 40 rows in batches of 4 with 2 accumulation steps: 5 optimizer steps an epoch. The checkpoint at step 4 is
    # mid-epoch; the resumed run must skip the batches already seen, cross into epoch 1, and restore dropout RNG.
    common = [
        *(request.getfixturevalue("multi_label") if task == "multi_label" else []),
        "data.max_train_samples=40",
        "train.per_device_batch_size=4",
        "train.gradient_accumulation_steps=2",
        "train.max_steps=8",
        "train.save_every_steps=4",
        "train.eval_every_steps=4",
        "model.encoder.dropout=0.1",
        "train.learning_rate=1e-3",
        "train.log_every_steps=1",
        *ENCODER,
    ]
    straight = finetune.run(tiny_run_config(*common, f"run.name={task}_straight"))
    straight_dir = tiny_run_config(f"run.name={task}_straight").run_dir
    straight_final = _weights(straight_dir / "checkpoints" / "step_8" / "model.safetensors")

    # Simulate a crash right after the step-4 checkpoint: later state is gone, the best model so far stays.
    resumed_dir = straight_dir.parent / f"{task}_resumed"
    shutil.copytree(straight_dir, resumed_dir)
    shutil.rmtree(resumed_dir / "checkpoints" / "step_8")
    (resumed_dir / "metrics.json").unlink()
    reset_accelerate()
    resumed = finetune.run(tiny_run_config(*common, f"run.name={task}_resumed", "train.resume=true"))

    resumed_final = _weights(resumed_dir / "checkpoints" / "step_8" / "model.safetensors")
    assert _max_difference(straight_final, resumed_final) < 1e-6
    assert resumed["training"]["global_steps"] == 8
    assert resumed["test"]["accuracy"] == straight["test"]["accuracy"]
    straight_history = (straight_dir / "history.jsonl").read_text().splitlines()
    resumed_history = (resumed_dir / "history.jsonl").read_text().splitlines()
    assert len(resumed_history) == len(straight_history)
    for a, b in zip(straight_history, resumed_history):
        a, b = json.loads(a), json.loads(b)
        assert a["step"] == b["step"]
        for key in ("loss", "eval_accuracy"):
            if key in a:
                assert b[key] == pytest.approx(a[key], abs=1e-5)

    # Resuming the finished run evaluates it again without redoing (or recording twice) its last validation.
    reset_accelerate()
    again = finetune.run(tiny_run_config(*common, f"run.name={task}_resumed", "train.resume=true"))
    assert (resumed_dir / "history.jsonl").read_text().splitlines() == resumed_history
    assert again["test"]["accuracy"] == straight["test"]["accuracy"]


def test_resume_without_checkpoint_is_a_clear_error(tiny_run_config, capsys):
    config = tiny_run_config("run.name=nothing_saved", "train.resume=true", "train.max_steps=1")
    with pytest.raises(finetune.RunError, match="no run to resume"):
        finetune.run(config)


def test_plan_counts_a_shorter_last_window():
    plan = plan_steps(batches_per_epoch=10, config=TrainConfig(epochs=2, gradient_accumulation_steps=4))
    assert (plan.steps_per_epoch, plan.total_steps) == (3, 6)  # windows of 4, 4, 2 batches
    assert plan_steps(10, TrainConfig(max_steps=7, warmup_ratio=0.5)).total_steps == 7
    assert plan_steps(10, TrainConfig(max_steps=7, warmup_ratio=0.5)).warmup_steps == 4


# --- Class-weighted and focal losses stay exact under accumulation (the loss is a sum; the loop divides by rows)


def _tiny_rows(count: int = 8):
    """`count` rows of a few real token ids, labels mostly class 0 (imbalanced), as stage 2 would hand them over."""
    from datasets import Dataset

    from pipeline.text.batching import TokenizedRows

    generator = torch.Generator().manual_seed(1)
    lengths = [4, 9, 6, 12, 5, 8, 11, 7][:count]
    ids = [
        [101] + torch.randint(1000, 5000, (n - 2,), generator=generator).tolist() + [102] + [0] * (16 - n)
        for n in lengths
    ]
    masks = [[1] * n + [0] * (16 - n) for n in lengths]
    labels = [0, 0, 1, 0, 0, 0, 1, 0][:count]
    return TokenizedRows(
        Dataset.from_dict({"input_ids": ids, "attention_mask": masks, "label": labels, "length": lengths})
    )


def _gradients_of_one_step(tiny_bert_dir, run_dir, batch: int, accumulation: int, **settings) -> dict:
    """Train one optimizer step through the real loop and return the gradients the optimizer stepped with."""
    from transformers import BertForSequenceClassification

    from pipeline.data.labels import ClassCounts
    from pipeline.train.loop import Trainer, create_accelerator

    reset_accelerate()
    rows = _tiny_rows()
    model = BertForSequenceClassification.from_pretrained(tiny_bert_dir)
    config = TrainConfig(
        report_to="none",  # MLflow's store would cost more than these steps
        per_device_batch_size=batch,
        gradient_accumulation_steps=accumulation,
        max_steps=1,
        learning_rate=1e-3,
        warmup_ratio=0.0,
        max_grad_norm=0.0,
        mixed_precision="no",
        group_by_length=False,
        log_every_steps=1,
        **settings,
    )
    accelerator = create_accelerator(config, run_dir)
    trainer = Trainer(
        model,
        rows,
        rows,
        config,
        accelerator,
        run_dir,
        seed=0,
        label_names=["a", "b"],
        eval_batch_size=8,
        save_best=lambda best: None,
        class_counts=ClassCounts(["a", "b"], [6, 2], 8),
    )
    seen = {}

    def record_gradients(optimizer, args, kwargs):
        seen.update(
            {name: p.grad.detach().clone() for name, p in trainer.model.named_parameters() if p.grad is not None}
        )

    # A pre-step hook on the wrapped torch optimizer, not a replaced .step(): the scheduler warns about the latter.
    trainer.optimizer.optimizer.register_step_pre_hook(record_gradients)
    trainer.run()
    reset_accelerate()
    return seen


@pytest.mark.parametrize(
    "settings",
    [
        {"class_weights": "balanced"},
        {"class_weights": {"a": 0.5, "b": 4.0}},
        {"class_weights": "balanced", "loss": "focal", "focal_gamma": 2.0},
    ],
)
def test_weighted_loss_over_one_batch_of_8_equals_4_micro_batches_of_2(tiny_bert_dir, tmp_path, settings):
    one_batch = _gradients_of_one_step(tiny_bert_dir, tmp_path / "big", 8, 1, **settings)
    accumulated = _gradients_of_one_step(tiny_bert_dir, tmp_path / "accumulated", 2, 4, **settings)
    assert one_batch.keys() == accumulated.keys() and one_batch
    for name in one_batch:
        torch.testing.assert_close(accumulated[name], one_batch[name], rtol=1e-4, atol=1e-7)

    # The sum over weighted rows divided by the rows: checked against the loss written out by hand.
    from transformers import BertForSequenceClassification

    from pipeline.data.labels import ClassCounts
    from pipeline.train.losses import resolve_class_weights

    rows = _tiny_rows()
    model = BertForSequenceClassification.from_pretrained(tiny_bert_dir)
    logits = model(input_ids=rows.input_ids.long(), attention_mask=rows.attention_mask.long()).logits
    weights = torch.tensor(
        list(resolve_class_weights(TrainConfig(**settings), ClassCounts(["a", "b"], [6, 2], 8)).values())
    )
    log_true = logits.log_softmax(-1).gather(1, rows.labels[:, None]).squeeze(1)
    focal = (1 - log_true.exp()) ** settings.get("focal_gamma", 0.0) if settings.get("loss") == "focal" else 1.0
    (-(weights[rows.labels] * focal * log_true).sum() / 8).backward()
    by_hand = dict(model.named_parameters())["classifier.weight"].grad
    torch.testing.assert_close(one_batch["classifier.weight"], by_hand, rtol=1e-4, atol=1e-7)


def test_balanced_weights_are_inverse_frequency_and_bad_names_are_refused():
    from pipeline.config.schema import ConfigError
    from pipeline.data.labels import ClassCounts
    from pipeline.train.losses import resolve_class_weights

    counts = ClassCounts(["big", "small", "absent"], [90, 10, 0], 100)
    weights = resolve_class_weights(TrainConfig(class_weights="balanced"), counts)
    assert weights == {"big": 100 / (3 * 90), "small": 100 / (3 * 10), "absent": 1.0}
    assert resolve_class_weights(TrainConfig(), counts) is None
    assert resolve_class_weights(TrainConfig(class_weights={"small": 5.0}), counts) == {
        "big": 1.0,
        "small": 5.0,
        "absent": 1.0,
    }
    with pytest.raises(ConfigError, match=r"train\.class_weights\.Nope: no such class"):
        resolve_class_weights(TrainConfig(class_weights={"Nope": 2.0}), counts)
    multi = ClassCounts(["x", "y"], [20, 5], 100, multi_label=True)
    assert resolve_class_weights(TrainConfig(class_weights="balanced"), multi) == {"x": 80 / 20, "y": 95 / 5}


def test_weights_must_be_positive(tmp_path):
    from pipeline.config.load import load_config
    from pipeline.config.schema import ConfigError

    with pytest.raises(ConfigError, match=r"train\.class_weights\.World: must be a finite number > 0"):
        load_config(None, ["train.class_weights={World: 0}"])
    with pytest.raises(ConfigError, match=r"train\.class_weights\.World: must be a finite number > 0"):
        load_config(None, ["train.class_weights={World: -1.5}"])


@pytest.mark.slow  # two fine-tuning runs
def test_weighted_accumulation_matches_one_big_batch_through_whole_runs(tiny_run_config):
    common = [
        "data.max_train_samples=48",
        "train.epochs=1",
        "train.mixed_precision=no",
        "train.learning_rate=1e-3",
        "train.warmup_ratio=0",
        "train.class_weights={World: 3.0, Sports: 0.5}",
        "train.calibrate=false",
        "eval.baseline=none",
        "eval.predict_speed_rows=0",
    ]
    big = finetune.run(tiny_run_config("run.name=weighted_big", "train.per_device_batch_size=8", *common))
    reset_accelerate()
    finetune.run(
        tiny_run_config(
            "run.name=weighted_accumulated",
            "train.per_device_batch_size=2",
            "train.gradient_accumulation_steps=4",
            *common,
        )
    )
    assert big["training"]["class_weights"] == {"World": 3.0, "Sports": 0.5, "Business": 1.0, "Sci/Tech": 1.0}
    runs = tiny_run_config().run_dir.parent
    weights = {
        name: _weights(runs / name / "model" / "model.safetensors") for name in ("weighted_big", "weighted_accumulated")
    }
    assert _max_difference(weights["weighted_big"], weights["weighted_accumulated"]) < 1e-5


def test_a_new_head_on_a_pretrained_model_learns_at_the_head_learning_rate(tiny_bert_dir, bert_tokenizer):
    """build_model names the parameters the checkpoint lacked (a 3-class head on a 2-class checkpoint), and one
    Adam step moves those by about train.head_learning_rate and the pretrained ones by about train.learning_rate."""
    from pipeline.config.schema import ModelConfig
    from pipeline.models import build_model
    from pipeline.train.loop import build_optimizer

    model, new = build_model(
        ModelConfig(kind="pretrained", name_or_path=str(tiny_bert_dir)), ["a", "b", "c"], bert_tokenizer
    )
    assert new == {"classifier.weight", "classifier.bias"}
    config = TrainConfig(learning_rate=1e-4, head_learning_rate=1e-2, weight_decay=0.0)
    optimizer = build_optimizer(model, config, new)
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    model(input_ids=torch.tensor([[101, 2054, 102], [101, 2129, 102]]), labels=torch.tensor([0, 2])).loss.backward()
    optimizer.step()
    moved = {name: (p.detach() - before[name]).abs().max().item() for name, p in model.named_parameters()}
    # Adam's first step moves every parameter with a gradient by about its learning rate.
    assert moved["classifier.weight"] == pytest.approx(1e-2, rel=0.05)
    assert moved["bert.encoder.layer.0.attention.self.query.weight"] == pytest.approx(1e-4, rel=0.05)
    # Unset, the head learns at the body's rate.
    unset = build_optimizer(model, TrainConfig(learning_rate=1e-4, head_learning_rate=None), new)
    assert {group["lr"] for group in unset.param_groups} == {1e-4}


def test_a_checkpoint_saved_in_half_precision_trains_and_predicts_in_fp32(tiny_bert_dir, bert_tokenizer, tmp_path):
    """transformers 5 loads a checkpoint in the dtype its config.json names: an fp16 one would train fp16 weights."""
    from transformers import AutoModelForSequenceClassification

    from pipeline.config.schema import ModelConfig
    from pipeline.models import build_model
    from pipeline.predict.source import load_model_and_tokenizer

    half = tmp_path / "half"
    AutoModelForSequenceClassification.from_pretrained(tiny_bert_dir).half().save_pretrained(half)
    bert_tokenizer.save_pretrained(half)
    if int(transformers.__version__.split(".")[0]) >= 5:  # what it would be: 5 loads the config's dtype, 4.x fp32
        assert AutoModelForSequenceClassification.from_pretrained(half).dtype == torch.float16
    model, _ = build_model(ModelConfig(kind="pretrained", name_or_path=str(half)), ["a", "b"], bert_tokenizer)
    assert {p.dtype for p in model.parameters()} == {torch.float32}
    predictor_model, _ = load_model_and_tokenizer(half)
    assert {p.dtype for p in predictor_model.parameters()} == {torch.float32}


def test_the_from_scratch_encoder_has_no_pretrained_part_to_set_apart(bert_tokenizer):
    from pipeline.config.schema import ModelConfig
    from pipeline.models import build_model

    _, new = build_model(ModelConfig(kind="encoder"), ["a", "b"], bert_tokenizer)
    assert new == frozenset()


def test_the_best_models_validation_logits_are_what_its_saved_weights_give(tiny_bert_dir, tmp_path):
    """Stage 4 reuses the loop's validation logits of the best model instead of scoring it again, so they must be
    exactly what the saved weights, loaded as stage 4 loads them, produce (here with dropout on and bf16 on the CPU:
    the loop's fast dropout and attention swap must leave evaluation unchanged)."""
    from transformers import AutoModelForSequenceClassification, BertForSequenceClassification

    from pipeline.scoring.evaluation import predict_logits
    from pipeline.train.loop import Trainer, create_accelerator

    reset_accelerate()
    rows = _tiny_rows()
    model = BertForSequenceClassification.from_pretrained(
        tiny_bert_dir, hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1
    )
    config = TrainConfig(per_device_batch_size=4, max_steps=4, learning_rate=1e-2, eval_every_steps=1, report_to="none")
    accelerator = create_accelerator(config, tmp_path)
    saved = []

    def save_best(best) -> None:
        best.save_pretrained(tmp_path / f"best_{len(saved)}")
        saved.append(tmp_path / f"best_{len(saved)}")

    trainer = Trainer(model, rows, rows, config, accelerator, tmp_path, 0, ["a", "b"], 8, save_best)
    result = trainer.run()
    assert result.fast_dropout_modules > 0
    reloaded = accelerator.prepare_model(
        AutoModelForSequenceClassification.from_pretrained(saved[-1]), evaluation_mode=True
    )
    fresh = predict_logits(reloaded, rows, accelerator, 8)
    assert result.best_validation_logits is not None
    assert torch.equal(result.best_validation_logits, fresh)
    reset_accelerate()


def _validating_trainer(tiny_bert_dir, run_dir, kept: list, **settings):
    """A Trainer over _tiny_rows (gold: 0 0 1 0 0 0 1 0) whose validation results the test hands in; `kept` gathers
    the steps whose model it saves as the best."""
    from transformers import BertForSequenceClassification

    from pipeline.train.loop import Trainer, create_accelerator

    rows = _tiny_rows()
    config = TrainConfig(per_device_batch_size=4, max_steps=3, learning_rate=1e-3, report_to="none")
    trainer = Trainer(
        BertForSequenceClassification.from_pretrained(tiny_bert_dir),
        rows,
        rows,
        config,
        create_accelerator(config, run_dir),
        run_dir,
        0,
        ["a", "b"],
        8,
        lambda best: kept.append(trainer.state.global_step),
        **settings,
    )
    trainer.history.start_fresh()
    return trainer


def test_on_imbalanced_classes_the_best_model_is_the_one_with_the_best_validation_macro_f1(tiny_bert_dir, tmp_path):
    """train.selection_metric auto, train classes at 7:1: of two validation results, the one with the higher
    macro-F1 is kept although the other is more accurate (it labels every row with the majority class)."""
    from pipeline.data.labels import ClassCounts

    reset_accelerate()
    kept = []
    trainer = _validating_trainer(tiny_bert_dir, tmp_path, kept, class_counts=ClassCounts(["a", "b"], [7, 1], 8))
    majority = torch.tensor([[2.0, 0.0]] * 8)  # all "a": accuracy 0.75, macro-F1 0.43
    both = torch.tensor([[2.0, 0.0]] + [[0.0, 2.0]] * 4 + [[2.0, 0.0], [0.0, 2.0], [2.0, 0.0]])  # 0.625, 0.62
    for step, logits in enumerate([majority, both], start=1):
        trainer.state.global_step = step
        trainer._record_validation(logits, step / 2)
    history = [json.loads(line) for line in (tmp_path / "history.jsonl").read_text().splitlines()]
    (first, second) = [(record["eval_accuracy"], record["eval_macro_f1"]) for record in history]
    assert first[0] > second[0] and first[1] < second[1]
    assert trainer.selection_metric == "macro_f1" and kept == [1, 2] and trainer.state.best_step == 2
    reset_accelerate()


def test_a_tied_validation_score_keeps_the_model_with_the_lower_loss_and_says_so(tiny_bert_dir, tmp_path, caplog):
    """A score that does not move (accuracy in steps of 1/N here; a multi-label micro-F1 of 0 before any class passes
    0.5) cannot choose the checkpoint: the lower validation loss does, and a run whose score never moved says so."""
    reset_accelerate()
    kept = []
    trainer = _validating_trainer(tiny_bert_dir, tmp_path, kept)
    hesitant = torch.tensor([[0.2, 0.0]] * 8)  # all "a": accuracy 0.75 each time, the loss differs
    for step, logits in enumerate([hesitant, 5 * hesitant, 10 * hesitant], start=1):
        trainer.state.global_step = step
        trainer._record_validation(logits, step / 3)
    losses = [record["eval_loss"] for record in trainer.history.records]
    assert losses[1] < losses[2] < losses[0]
    assert kept == [1, 2] and trainer.state.best_step == 2 and trainer.state.evals_without_improvement == 1
    with caplog.at_level("WARNING", logger="pipeline.train.loop"):
        trainer._warn_if_undecided()
    assert "Validation accuracy was 0.7500 at every one of 3 evaluations" in caplog.text
    assert "model kept (step 2) is the one with the lowest validation loss" in caplog.text
    # train.max_steps, not train.epochs, ended this run: the advice names the setting that makes it longer.
    assert "; more train.max_steps (now 3) or a higher train.learning_rate lets the scores move" in caplog.text
    caplog.clear()
    trainer.config.max_steps = None
    with caplog.at_level("WARNING", logger="pipeline.train.loop"):
        trainer._warn_if_undecided()
    assert "; more train.epochs (now 3) or a higher train.learning_rate" in caplog.text
    # A checkpoint from before the loss was recorded (best_loss None) keeps its model on a tie, as it did.
    trainer.state.best_loss = None
    trainer.state.global_step = 4
    trainer._record_validation(5.5 * hesitant, 4 / 3)  # the least loss of all (a margin of ln 3)
    assert trainer.history.records[-1]["eval_loss"] < losses[1]
    assert kept == [1, 2] and trainer.state.best_step == 2
    reset_accelerate()


def test_a_multi_label_progress_bar_shows_the_selection_f1_not_subset_accuracy():
    """Subset accuracy (every class of a row right) stays near 0 for long on many classes and reads as a broken run:
    a multi-label run's bar shows the F1 that selects its model, under its name, counted since the last log line."""
    from pipeline.train.meter import RunningMeter, progress_score

    meter = RunningMeter(torch.device("cpu"), global_step=0, train_seconds=0.0)
    # Rows x classes: class 0 right on both rows, class 1 one false positive, class 2 one false negative.
    logits = torch.tensor([[2.0, 1.0, -1.0], [3.0, -1.0, -2.0]])
    labels = torch.tensor([[1.0, 0.0, 1.0], [1.0, 0.0, 0.0]])
    meter.add(torch.tensor(1.0), logits, labels)
    record = meter.read_and_reset(global_step=2, train_seconds=1.0, effective_batch_size=2)
    assert record["train_accuracy"] == 0.5  # row 1 has every class right, row 0 does not
    assert record["train_micro_f1"] == pytest.approx(2 * 2 / (2 * 2 + 2))  # 2 true positives, 1 FP, 1 FN
    assert record["train_macro_f1"] == pytest.approx((1.0 + 0.0 + 0.0) / 3)  # classes 1 and 2 occur or are predicted
    assert progress_score(record, "micro_f1") == {"micro_f1": "0.667"}
    assert progress_score(record, "macro_f1") == {"macro_f1": "0.333"}
    assert progress_score(record, "accuracy") == {"subset_acc": "0.500"}
    # Counts start afresh after each reading; a single-label run keeps its accuracy.
    meter.add(torch.tensor(1.0), logits[:1], labels[:1])
    assert meter.read_and_reset(3, 2.0, 2)["train_micro_f1"] == pytest.approx(2 * 1 / (2 * 1 + 2))
    meter.add(torch.tensor(1.0), logits, torch.tensor([0, 1]))
    single = meter.read_and_reset(4, 3.0, 2)
    assert "train_micro_f1" not in single and progress_score(single, "macro_f1") == {"acc": "0.500"}
