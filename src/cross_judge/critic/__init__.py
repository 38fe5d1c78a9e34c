"""One critic: request building, the call path, parsing, prompts and the response cache.

The documented paths are :mod:`cross_judge.core` (the critic), :mod:`cross_judge.prompts`
and :mod:`cross_judge.cache`; this face is what the layers above import, every name loaded
on first use, so importing it loads no module of the package."""

from typing import TYPE_CHECKING

from .._lazy import LazyExports

__all__ = [
    "APPLICATION_ID",
    "CACHE_DIR_ENV",
    "CACHE_FILE_NAME",
    "DEFAULT_BUSY_TIMEOUT",
    "DEFAULT_MAX_ITEM_CHARS",
    "DEFAULT_PROMPT_TEMPLATE",
    "DEFAULT_SYSTEM_PROMPT",
    "DEFAULT_USER_PROMPT_TEMPLATE",
    "LABEL_KEYS",
    "REASONING_KEYS",
    "SCHEMA_VERSION",
    "AnswerJournal",
    "CacheStats",
    "ConfidenceMode",
    "Critic",
    "Effort",
    "ExampleAnswer",
    "JsonMode",
    "KeptShare",
    "PromptExample",
    "PromptSpec",
    "ResponseCache",
    "Structured",
    "Template",
    "UnusableCacheError",
    "active_job",
    "active_journal",
    "charge_unreported_usage",
    "combine_samples",
    "database_files",
    "default_cache_path",
    "dump_prompt_fields",
    "endpoint_key",
    "extract_json",
    "is_file",
    "journal_path",
    "journaling",
    "judging_item",
    "list_prompts",
    "load_prompt",
    "next_version",
    "normalize_label",
    "parse_answer",
    "parse_prompt",
    "prompt_file_name",
    "prompt_yaml",
    "render_user_prompt",
    "reset_active_job",
    "resolve_cache",
    "sample_request",
    "set_active_job",
    "steps_taken",
    "warm_up",
    "write_prompt",
]

# The names the layers above use from this package's modules, imported on first use.
if TYPE_CHECKING:
    from ._assembly import combine_samples
    from ._cache import (
        APPLICATION_ID,
        CACHE_DIR_ENV,
        CACHE_FILE_NAME,
        DEFAULT_BUSY_TIMEOUT,
        SCHEMA_VERSION,
        CacheStats,
        ResponseCache,
        UnusableCacheError,
        database_files,
        default_cache_path,
        resolve_cache,
    )
    from ._calls import charge_unreported_usage
    from ._critic import (
        DEFAULT_MAX_ITEM_CHARS,
        DEFAULT_PROMPT_TEMPLATE,
        DEFAULT_SYSTEM_PROMPT,
        ConfidenceMode,
        Critic,
        Effort,
        JsonMode,
        Structured,
    )
    from ._journal import (
        AnswerJournal,
        KeptShare,
        active_journal,
        journal_path,
        journaling,
        judging_item,
    )
    from ._parking import active_job, reset_active_job, set_active_job
    from ._parsing import (
        LABEL_KEYS,
        REASONING_KEYS,
        ExampleAnswer,
        extract_json,
        normalize_label,
        parse_answer,
    )
    from ._prompt_examples import PromptExample
    from ._prompt_versions import (
        dump_prompt_fields,
        next_version,
        prompt_file_name,
        prompt_yaml,
        write_prompt,
    )
    from ._prompts import (
        DEFAULT_USER_PROMPT_TEMPLATE,
        PromptSpec,
        is_file,
        list_prompts,
        load_prompt,
        parse_prompt,
        render_user_prompt,
    )
    from ._request import sample_request
    from ._stepdown import endpoint_key, steps_taken
    from ._template import Template
    from ._warmup import warm_up

_exports = LazyExports(
    __name__,
    {
        "APPLICATION_ID": "._cache",
        "AnswerJournal": "._journal",
        "CACHE_DIR_ENV": "._cache",
        "CACHE_FILE_NAME": "._cache",
        "CacheStats": "._cache",
        "ConfidenceMode": "._critic",
        "Critic": "._critic",
        "DEFAULT_BUSY_TIMEOUT": "._cache",
        "DEFAULT_MAX_ITEM_CHARS": "._critic",
        "DEFAULT_PROMPT_TEMPLATE": "._critic",
        "DEFAULT_SYSTEM_PROMPT": "._critic",
        "DEFAULT_USER_PROMPT_TEMPLATE": "._prompts",
        "Effort": "._critic",
        "ExampleAnswer": "._parsing",
        "JsonMode": "._critic",
        "KeptShare": "._journal",
        "LABEL_KEYS": "._parsing",
        "PromptExample": "._prompt_examples",
        "PromptSpec": "._prompts",
        "REASONING_KEYS": "._parsing",
        "ResponseCache": "._cache",
        "SCHEMA_VERSION": "._cache",
        "Structured": "._critic",
        "Template": "._template",
        "UnusableCacheError": "._cache",
        "active_job": "._parking",
        "active_journal": "._journal",
        "charge_unreported_usage": "._calls",
        "combine_samples": "._assembly",
        "database_files": "._cache",
        "default_cache_path": "._cache",
        "endpoint_key": "._stepdown",
        "extract_json": "._parsing",
        "is_file": "._prompts",
        "journal_path": "._journal",
        "journaling": "._journal",
        "judging_item": "._journal",
        "list_prompts": "._prompts",
        "load_prompt": "._prompts",
        "normalize_label": "._parsing",
        "parse_answer": "._parsing",
        "dump_prompt_fields": "._prompt_versions",
        "next_version": "._prompt_versions",
        "parse_prompt": "._prompts",
        "prompt_file_name": "._prompt_versions",
        "prompt_yaml": "._prompt_versions",
        "write_prompt": "._prompt_versions",
        "render_user_prompt": "._prompts",
        "reset_active_job": "._parking",
        "resolve_cache": "._cache",
        "sample_request": "._request",
        "set_active_job": "._parking",
        "steps_taken": "._stepdown",
        "warm_up": "._warmup",
    },
)


def __getattr__(name: str) -> object:
    return _exports.load(name)


def __dir__() -> list[str]:
    return _exports.names(globals())
