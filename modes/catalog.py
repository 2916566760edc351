"""The mode catalog service (TUL-010 §2): summaries of the active modes for tools and UI.

A full fetch per call is what TUL-010 §4.4 allows, and the catalog is tens of rows: reading it
every time means an admin edit is visible on the very next call, in every process, with no cache
to invalidate.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from asgiref.sync import sync_to_async

from .models import DEFAULT_MODE_KEY, AgentMode


class ModeValidationError(ValueError):
    """A mode key that is not an active catalog entry. The message names the valid keys."""


@dataclass(frozen=True)
class AgentModeSummary:
    id: str
    key: str
    display_name: str
    description: str
    system_prompt_summary: str = ""
    is_default: bool = False
    human_role_hints: list[str] = field(default_factory=list)
    example_utterances: list[str] = field(default_factory=list)

    @classmethod
    def from_model(cls, mode: AgentMode) -> AgentModeSummary:
        return cls(
            id=mode.id,
            key=mode.key,
            display_name=mode.display_name,
            description=mode.description,
            system_prompt_summary=mode.system_prompt_summary,
            is_default=mode.is_default,
            human_role_hints=list(mode.human_role_hints or []),
            example_utterances=list(mode.example_utterances or []),
        )


def normalize_mode_key(mode: object) -> str:
    """Trim and lower-case a requested mode; non-strings normalise to ""."""
    return mode.strip().lower() if isinstance(mode, str) else ""


def active_modes() -> list[AgentMode]:
    return list(AgentMode.objects.filter(is_active=True).order_by("ordering", "display_name"))


def default_mode_key() -> str:
    key = AgentMode.objects.filter(is_default=True).values_list("key", flat=True).first()
    return key or DEFAULT_MODE_KEY


def mode_validate(mode: object) -> AgentMode:
    """Return the active catalog entry for `mode` (normalised) or raise ModeValidationError."""
    key = normalize_mode_key(mode)
    modes = active_modes()
    for candidate in modes:
        if candidate.key == key:
            return candidate
    valid = ", ".join(m.key for m in modes) or "(none: the catalog is empty)"
    shown = mode if isinstance(mode, str) else repr(mode)
    raise ModeValidationError(f"Unknown or inactive mode '{shown}'. Valid modes: {valid}.")


class CatalogService:
    """IAgentModeCatalogService."""

    def get_all_modes_sync(self) -> list[AgentModeSummary]:
        return [AgentModeSummary.from_model(mode) for mode in active_modes()]

    async def get_all_modes(self) -> list[AgentModeSummary]:
        return await sync_to_async(self.get_all_modes_sync, thread_sensitive=True)()


catalog_service = CatalogService()
