"""The models a deployment offers: several providers and models from a file in the style of mcp.json
(`APTIX_MODELS_CONFIG`, default `models.json`), or one model from the `OPENAI_*` variables, or the
built-in offline model when nothing is configured (so `make run` needs no configuration).

    {
      "providers": {
        "openai": {"baseUrl": "https://api.openai.com/v1", "apiKey": "${OPENAI_API_KEY}"},
        "local": {"baseUrl": "http://127.0.0.1:8081/v1", "apiKey": "${LOCAL_KEY}", "headers": {}}
      },
      "models": {
        "gpt-4.1": {"provider": "openai", "model": "gpt-4.1", "label": "GPT-4.1", "contextTokens": 128000,
                    "tools": true, "vision": true, "reasoning": false,
                    "price": {"input": 2.0, "output": 8.0}},
        "qwen-small": {"provider": "local", "model": "local", "contextTokens": 8192, "askFollowup": true}
      },
      "default": "gpt-4.1"
    }

Secrets come only from the environment: `apiKey` and header values must be `${VAR}` references (a
literal key in the file is refused, naming the field); an unset variable is an error naming it. A
mode may name a model (the catalog's `model` field) and a user may pick another for a session;
`model_for(session, mode)` decides which one a turn uses.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import openai
from django.conf import settings
from django.core import checks

from files.knowledge.embeddings import EmbeddingModel
from tools.mcp import ENV_REF_RE, EnvExpander, Signature, signature

logger = logging.getLogger("aptix.models")

PROVIDER_KEYS = {"baseUrl", "apiKey", "headers"}
MODEL_KEYS = {
    "provider",
    "model",
    "label",
    "contextTokens",
    "tools",
    "vision",
    "reasoning",
    "askFollowup",
    "price",
    "embedding",
    "temperature",
}
OFFLINE_KEY = "offline"


class ModelsConfigError(ValueError):
    """The models file is wrong; the message names the entry and the problem."""


@dataclass(frozen=True)
class Provider:
    name: str
    base_url: str | None
    api_key: str = field(repr=False, default="")
    headers: tuple[tuple[str, str], ...] = field(repr=False, default=())


@dataclass(frozen=True)
class ModelSpec:
    """One model a turn can use. `provider` None is the built-in offline model."""

    key: str
    model: str
    label: str
    provider: Provider | None
    context_tokens: int | None = None  # None: APTIX_CONTEXT_TOKENS
    tools: bool = True
    vision: bool = False
    reasoning: bool = False
    # Ask's second model call after internal tool results (spec 004): a small model that answers a
    # question with a tool call and no text needs it. None: the mode's setting or APTIX_ASK_FOLLOWUP.
    ask_followup: bool | None = None
    # What the provider charges per million tokens: `"price": {"input": 2.5, "output": 10}` in the file.
    # None: the cost of its turns is unknown (their tokens are still counted).
    price: Price | None = None
    # An embedding model (`"embedding": true`): knowledge search embeds passages with it through
    # /v1/embeddings (files/knowledge/embeddings.py); never offered as a chat model.
    embedding: bool = False
    # Sampling temperature sent with each request (`"temperature": 0` for repeatable answers from a
    # small local model); None: the server's default (llama.cpp's is 0.8).
    temperature: float | None = None


@dataclass(frozen=True)
class Price:
    """Per million tokens, in the deployment's currency (the file does not say which)."""

    input: Decimal
    output: Decimal

    def cost(self, prompt_tokens: int, completion_tokens: int) -> Decimal:
        return (prompt_tokens * self.input + completion_tokens * self.output) / MILLION


MILLION = Decimal(1_000_000)


@dataclass(frozen=True)
class ModelsConfig:
    models: dict[str, ModelSpec]  # the chat models
    default: str
    source: str  # "file", "environment" or "offline"
    embedding: ModelSpec | None = None  # the one `"embedding": true` entry, if any

    def get(self, key: str | None) -> ModelSpec | None:
        return self.models.get(key or "")

    @property
    def choices(self) -> list[ModelSpec]:
        return list(self.models.values())


def load_models_config(path: str | os.PathLike, environ: Mapping[str, str] | None = None) -> ModelsConfig:
    file = Path(path)
    try:
        raw = json.loads(file.read_text())
    except (OSError, ValueError) as exc:
        raise ModelsConfigError(f"{file}: cannot read the models configuration ({exc})") from None
    return parse_models_config(raw, environ=os.environ if environ is None else environ, where=str(file))


def parse_models_config(raw: Any, *, environ: Mapping[str, str], where: str = "models.json") -> ModelsConfig:
    if not isinstance(raw, dict) or not isinstance(raw.get("models"), dict) or not raw["models"]:
        raise ModelsConfigError(f'{where}: needs a "models" object with at least one model')
    providers = {name: _provider(name, entry, environ, where) for name, entry in (raw.get("providers") or {}).items()}
    every = {key: _model(key, entry, providers, where) for key, entry in raw["models"].items()}
    embeddings = [spec for spec in every.values() if spec.embedding]
    if len(embeddings) > 1:
        names = ", ".join(f'"{spec.key}"' for spec in embeddings)
        raise ModelsConfigError(f'{where}: only one model may be "embedding": true; {names} are')
    models = {key: spec for key, spec in every.items() if not spec.embedding}
    if not models:
        raise ModelsConfigError(f'{where}: needs at least one chat model besides the "embedding": true one')
    default = raw.get("default") or next(iter(models))
    if default not in models:
        what = "an embedding model" if default in every else 'not in "models"'
        raise ModelsConfigError(f'{where}: "default" names "{default}", which is {what}')
    return ModelsConfig(models=models, default=default, source="file", embedding=embeddings[0] if embeddings else None)


def _provider(name: str, entry: Any, environ: Mapping[str, str], where: str) -> Provider:
    def fail(problem: str) -> ModelsConfigError:
        return ModelsConfigError(f'{where}: provider "{name}": {problem}')

    if not isinstance(entry, dict):
        raise fail("must be an object")
    unknown = sorted(set(entry) - PROVIDER_KEYS)
    if unknown:
        raise fail(f'unknown key "{unknown[0]}" (known keys: {", ".join(sorted(PROVIDER_KEYS))})')
    expand = EnvExpander(environ, fail)
    headers = entry.get("headers") or {}
    if not isinstance(headers, dict) or not all(isinstance(v, str) for v in headers.values()):
        raise fail('"headers" must be an object of strings')
    for field_name, value in [("apiKey", entry.get("apiKey", "")), *((f"headers.{k}", v) for k, v in headers.items())]:
        if value and not ENV_REF_RE.search(value):
            raise fail(f'"{field_name}" must come from the environment, as "${{VAR}}" (no secrets in the file)')
    base_url = entry.get("baseUrl")
    if base_url is not None and not isinstance(base_url, str):
        raise fail('"baseUrl" must be a string')
    return Provider(
        name=name,
        base_url=expand(base_url, "baseUrl") if base_url else None,
        api_key=expand(entry.get("apiKey") or "", "apiKey"),
        headers=tuple((k, expand(v, f"headers.{k}")) for k, v in headers.items()),
    )


def _model(key: str, entry: Any, providers: dict[str, Provider], where: str) -> ModelSpec:
    def fail(problem: str) -> ModelsConfigError:
        return ModelsConfigError(f'{where}: model "{key}": {problem}')

    if not isinstance(entry, dict):
        raise fail("must be an object")
    unknown = sorted(set(entry) - MODEL_KEYS)
    if unknown:
        raise fail(f'unknown key "{unknown[0]}" (known keys: {", ".join(sorted(MODEL_KEYS))})')
    provider = entry.get("provider")
    if provider not in providers:
        raise fail(f'"provider" must be one of: {", ".join(providers) or "(none declared)"}')
    context = entry.get("contextTokens")
    if context is not None and (not isinstance(context, int) or context < 1000):
        raise fail('"contextTokens" must be a whole number of at least 1000')
    defaults = {"tools": True, "vision": False, "reasoning": False}
    flags = {name: entry.get(name, default) for name, default in defaults.items()}
    if not all(isinstance(v, bool) for v in flags.values()):
        raise fail('"tools", "vision" and "reasoning" must be true or false')
    embedding = entry.get("embedding", False)
    if not isinstance(embedding, bool):
        raise fail(f'"embedding" must be true or false, not {json.dumps(embedding)}')
    ask_followup = entry.get("askFollowup")
    if ask_followup is not None and not isinstance(ask_followup, bool):
        raise fail(f'"askFollowup" must be true or false, not {json.dumps(ask_followup)}')
    temperature = entry.get("temperature")
    if temperature is not None and (
        isinstance(temperature, bool) or not isinstance(temperature, int | float) or not 0 <= temperature <= 2
    ):
        raise fail(f'"temperature" must be a number from 0 to 2, not {json.dumps(temperature)}')
    return ModelSpec(
        key=key,
        model=str(entry.get("model") or key),
        label=str(entry.get("label") or key),
        provider=providers[provider],
        context_tokens=context,
        ask_followup=ask_followup,
        price=_price(entry.get("price"), fail),
        embedding=embedding,
        temperature=None if temperature is None else float(temperature),
        **flags,
    )


def _price(value: Any, fail: Callable[[str], ModelsConfigError]) -> Price | None:
    """`{"input": 2.5, "output": 10}`: non-negative numbers per million tokens; absent or null: unknown."""
    if value is None:
        return None
    problem = '"price" must be {"input": <number>, "output": <number>} per million tokens, both 0 or more'
    if not isinstance(value, dict) or set(value) != {"input", "output"}:
        raise fail(problem)
    amounts = [value["input"], value["output"]]
    if not all(isinstance(v, int | float) and not isinstance(v, bool) and v >= 0 for v in amounts):
        raise fail(problem)
    # Through str: 2.5 stays exactly 2.5 (Decimal(float) would carry the float's binary error).
    return Price(input=Decimal(str(amounts[0])), output=Decimal(str(amounts[1])))


def environment_config() -> ModelsConfig:
    """No models file: today's variables define one model, or the offline model serves."""
    api_key, base_url = settings.OPENAI_API_KEY or "", settings.OPENAI_BASE_URL or ""
    if api_key or base_url:
        name = settings.APTIX_LLM_MODEL or "gpt-4o-mini"
        provider = Provider(name="environment", base_url=base_url or None, api_key=api_key)
        spec = ModelSpec(key=name, model=name, label=name, provider=provider)
        return ModelsConfig(models={name: spec}, default=name, source="environment")
    spec = ModelSpec(key=OFFLINE_KEY, model=OFFLINE_KEY, label=OFFLINE_KEY, provider=None)
    return ModelsConfig(models={OFFLINE_KEY: spec}, default=OFFLINE_KEY, source="offline")


RELOAD_POLL = 2.0  # seconds between two looks at the models file (an os.stat) while serving


@dataclass
class _Loaded:
    """What this process serves, and whether the file on disk says otherwise."""

    config: ModelsConfig | None = None
    path: Path | None = None
    signature: Signature = None  # the file's (mtime, size, inode) when last read
    looked: float = 0.0  # monotonic time of the last look at the file
    problem: str | None = None  # why the file cannot be used (the last good configuration serves)
    fallback: bool = False  # no good configuration yet: turns fail, saying so, until the file is fixed


_loaded = _Loaded()
_lock = threading.Lock()


def _models_path() -> Path:
    path = Path(settings.APTIX_MODELS_CONFIG)
    return path if path.is_absolute() else Path(settings.BASE_DIR) / path


def models_config() -> ModelsConfig:
    """The deployment's models. The file is looked at again every RELOAD_POLL seconds: a change that
    validates is used from the next call on; one that does not is logged and reported
    (`models_config_problem`, /readyz, the admin) while the last good configuration keeps serving."""
    config, now = _loaded.config, time.monotonic()
    if config is not None and now - _loaded.looked < RELOAD_POLL:
        return config
    with _lock:
        path = _models_path()
        seen = signature(path)
        if _loaded.config is not None and (path, seen) == (_loaded.path, _loaded.signature):
            _loaded.looked = now
            return _loaded.config
        try:
            fresh = load_models_config(path) if path.is_file() else environment_config()
        except ModelsConfigError as exc:
            if _loaded.problem != str(exc):
                logger.error(
                    "%s (the last good models configuration keeps serving)", exc, extra={"event": "models.invalid"}
                )
            _loaded.problem = str(exc)
            if _loaded.config is None:
                _loaded.config, _loaded.fallback = environment_config(), True
        else:
            if _loaded.config is not None:
                logger.info("Models configuration read again from %s", path.name, extra={"event": "models.reloaded"})
            _loaded.config, _loaded.problem, _loaded.fallback = fresh, None, False
        _loaded.path, _loaded.signature, _loaded.looked = path, seen, now
        return _loaded.config


def models_config_problem() -> tuple[str, bool] | None:
    """Why the models file cannot be used, and whether a good configuration serves meanwhile (False:
    none ever did in this process, so turns fail saying so); None when it is fine."""
    models_config()
    if _loaded.problem is None:
        return None
    return _loaded.problem, not _loaded.fallback


def check_models_config(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """System check (registered in agents/apps.py): a models file that cannot be used stops
    `manage.py check`, `aptix_serve`, `aptix_worker` and `migrate` at start-up, naming the file, the
    entry and the problem, instead of failing the first turn."""
    reset_models_config()
    problem = models_config_problem()
    reset_models_config()  # what serves is read when it is first used
    if problem is not None:
        return [checks.Error(problem[0], hint="Fix the models configuration (docs/models.md).", id="aptix.E001")]
    return []


def reset_models_config() -> None:
    """Read the configuration again on next use (tests, after changing it)."""
    global _loaded  # noqa: PLW0603 - the one configuration of this process
    _loaded = _Loaded()


def model_for(*, session_model: str = "", mode_model: str = "") -> ModelSpec:
    """The model a turn uses: the session's pick, else its mode's, else the default (a name no longer
    configured falls through to the next)."""
    config = models_config()
    for key in (session_model, mode_model):
        if spec := config.get(key):
            return spec
    return config.models[config.default]


def embedding_model() -> EmbeddingModel | None:
    """The configured embedding model as knowledge search calls it (files/knowledge/embeddings.py is
    handed this function at start-up, agents/apps.py), or None: BM25 alone."""
    spec = models_config().embedding
    if spec is None or spec.provider is None:
        return None
    provider = spec.provider
    return EmbeddingModel(
        key=spec.key, model=spec.model, base_url=provider.base_url, api_key=provider.api_key, headers=provider.headers
    )


def sdk_client(spec: ModelSpec) -> openai.AsyncOpenAI:
    provider = spec.provider
    if provider is None:
        raise ValueError("The offline model has no provider.")
    return openai.AsyncOpenAI(
        api_key=provider.api_key or "not-needed",  # local servers (Ollama, vLLM) accept any key
        base_url=provider.base_url,
        default_headers=dict(provider.headers) or None,
        timeout=settings.APTIX_LLM_TIMEOUT,
        max_retries=settings.APTIX_LLM_MAX_RETRIES,
    )
