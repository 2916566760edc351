"""The agent cards. The public one (`/.well-known/agent-card.json`, no token) names the service only:
what it is, where its JSON-RPC endpoint is (A2A 1.0 and 0.3 at the same URL), that it streams, that
it wants an Aptix API token as a bearer, and that an extended card waits behind that token. The
extended card (GetExtendedAgentCard / agent/getAuthenticatedExtendedCard) adds one skill per mode the
token's user may use in their team: id = the mode's key, its name, description and example requests."""

from __future__ import annotations

import logging
from importlib import metadata
from typing import TYPE_CHECKING, Any

from a2a.types.a2a_pb2 import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    HTTPAuthSecurityScheme,
    SecurityRequirement,
    SecurityScheme,
    StringList,
)
from a2a.utils.constants import PROTOCOL_VERSION_0_3, PROTOCOL_VERSION_1_0, TransportProtocol

if TYPE_CHECKING:
    from modes.models import AgentMode

NAME = "Aptix"
DESCRIPTION = (
    "A team's Aptix workspace as an agent: ask one of the team's curated modes (General, Data Analysis, …) "
    "a question as the token's user. Send an Aptix API token as a bearer; the extended card lists the modes "
    "(skills) the token's user may use."
)
RPC_PATH = "/a2a/"
SCHEME = "bearer"  # the security scheme's name in the card
INPUT_MODES = ["text/plain", "application/json"]  # a message's text; a data part with a decision
OUTPUT_MODES = ["text/markdown", "text/plain"]


class _PublicCardHasNoSkills(logging.Filter):
    """The SDK warns on every card without skills (A2A 1.0 calls the field required). The public card
    has none on purpose, so that warning would be a line per card read saying nothing: dropped; every
    other of the SDK's warnings stays."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "REQUIRED fields missing or empty: skills." not in record.getMessage()


logging.getLogger("a2a.utils.proto_utils").addFilter(_PublicCardHasNoSkills())


def _version() -> str:
    try:
        return metadata.version("aptix")
    except metadata.PackageNotFoundError:  # a checkout that was never installed
        return "0"


def public_card(base_url: str) -> AgentCard:
    """The card anyone may read: the service, not what any user may do with it."""
    url = base_url.rstrip("/") + RPC_PATH
    return AgentCard(
        name=NAME,
        description=DESCRIPTION,
        version=_version(),
        supported_interfaces=[
            AgentInterface(url=url, protocol_binding=TransportProtocol.JSONRPC, protocol_version=version)
            for version in (PROTOCOL_VERSION_1_0, PROTOCOL_VERSION_0_3)
        ],
        capabilities=AgentCapabilities(streaming=True, push_notifications=False, extended_agent_card=True),
        security_schemes={
            SCHEME: SecurityScheme(
                http_auth_security_scheme=HTTPAuthSecurityScheme(
                    scheme="Bearer",
                    bearer_format="Aptix API token",
                    description="An Aptix API token (Settings → API tokens): the agent acts as its user.",
                )
            )
        },
        security_requirements=[SecurityRequirement(schemes={SCHEME: StringList()})],
        default_input_modes=INPUT_MODES,
        default_output_modes=OUTPUT_MODES,
    )


def skill(mode: AgentMode) -> AgentSkill:
    return AgentSkill(
        id=mode.key,
        name=mode.display_name,
        description=mode.description or mode.display_name,
        tags=["mode", *([mode.execution] if mode.execution else [])],
        examples=[str(example) for example in mode.example_utterances or []],
    )


def extended_card(base_url: str, modes: list[AgentMode]) -> AgentCard:
    """The public card with one skill per mode the user may use."""
    card = public_card(base_url)
    card.skills.extend(skill(mode) for mode in modes)
    return card


def card_json(card: AgentCard) -> dict[str, Any]:
    """The card as the SDK serves one (with 0.3's field names added for older clients)."""
    from a2a.server.request_handlers.response_helpers import agent_card_to_dict

    return agent_card_to_dict(card)
