"""Settings. values: reading and type-checking a value; schema (with data_config, train_config): the typed config
dataclasses and each setting's docs; checks: range and consistency checks; load: YAML files, `extends`, dotted
overrides, saving; options: command-line options derived from the data settings; reference: the config reference
page; reading: the defaults and rules that the data readers share."""

from pipeline.common.lazy import lazy_exports

__getattr__, __dir__, __all__ = lazy_exports(
    __name__,
    {
        "load": "load_config save_config",
        "schema": "ConfigError PipelineConfig",
    },
)
