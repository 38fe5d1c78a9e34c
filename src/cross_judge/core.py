"""The :class:`Critic`: one LLM, on one vendor, with one prompt, judging one item at a time.

This is the documented path; the implementation lives in :mod:`cross_judge.critic.critic`.
"""

from .critic.critic import (
    DEFAULT_MAX_ITEM_CHARS,
    DEFAULT_PROMPT_TEMPLATE,
    DEFAULT_SYSTEM_PROMPT,
    Critic,
    _extract_json,
    combine_samples,
    sample_request,
)
from .critic.critic import (
    LABEL_KEYS as LABEL_KEYS,
)
from .critic.critic import (
    REASONING_KEYS as REASONING_KEYS,
)
from .critic.critic import (
    Answer as Answer,
)
from .critic.critic import (
    Budget as Budget,
)
from .critic.critic import (
    CallFailure as CallFailure,
)
from .critic.critic import (
    ChatRequest as ChatRequest,
)
from .critic.critic import (
    Completion as Completion,
)
from .critic.critic import (
    ConfidenceCalibration as ConfidenceCalibration,
)
from .critic.critic import (
    ConfigError as ConfigError,
)
from .critic.critic import (
    ErrorKind as ErrorKind,
)
from .critic.critic import (
    ExampleAnswer as ExampleAnswer,
)
from .critic.critic import (
    Gate as Gate,
)
from .critic.critic import (
    HTTPSession as HTTPSession,
)
from .critic.critic import (
    HttpxSession as HttpxSession,
)
from .critic.critic import (
    ItemTooLongError as ItemTooLongError,
)
from .critic.critic import (
    JsonMode as JsonMode,
)
from .critic.critic import (
    MissingAPIKeyError as MissingAPIKeyError,
)
from .critic.critic import (
    Price as Price,
)
from .critic.critic import (
    PromptError as PromptError,
)
from .critic.critic import (
    Redactor as Redactor,
)
from .critic.critic import (
    SyncDuckSession as SyncDuckSession,
)
from .critic.critic import (
    Template as Template,
)
from .critic.critic import (
    Usage as Usage,
)
from .critic.critic import (
    VendorConfig as VendorConfig,
)
from .critic.critic import (
    VendorGate as VendorGate,
)
from .critic.critic import (
    Verdict as Verdict,
)
from .critic.critic import (
    aclose_sessions as aclose_sessions,
)
from .critic.critic import (
    active_job as active_job,
)
from .critic.critic import (
    call_totals as call_totals,
)
from .critic.critic import (
    call_with_retries as call_with_retries,
)
from .critic.critic import (
    estimate_prompt_tokens as estimate_prompt_tokens,
)
from .critic.critic import (
    extract_json as extract_json,
)
from .critic.critic import (
    get_vendor as get_vendor,
)
from .critic.critic import (
    logger as logger,
)
from .critic.critic import (
    normalize_label as normalize_label,
)
from .critic.critic import (
    openai_compat as openai_compat,
)
from .critic.critic import (
    parse_answer as parse_answer,
)
from .critic.critic import (
    price_for as price_for,
)
from .critic.critic import (
    redacted_exception as redacted_exception,
)
from .critic.critic import (
    redactor_for as redactor_for,
)
from .critic.critic import (
    registry_generation as registry_generation,
)
from .critic.critic import (
    resolve_api_key as resolve_api_key,
)
from .critic.critic import (
    secrets_of as secrets_of,
)
from .critic.critic import (
    shared_session as shared_session,
)
from .critic.critic import (
    with_base_url as with_base_url,
)
from .critic.critic import (
    worst_case_cost as worst_case_cost,
)

__all__ = [
    "DEFAULT_MAX_ITEM_CHARS",
    "DEFAULT_PROMPT_TEMPLATE",
    "DEFAULT_SYSTEM_PROMPT",
    "Critic",
    "_extract_json",
    "combine_samples",
    "sample_request",
]
