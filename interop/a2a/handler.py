"""The SDK's RequestHandler over Aptix's turns (the SDK's JsonRpcDispatcher parses, validates and
answers the JSON-RPC; this says what each method does). Every call is the token's user's: mount.py
authenticated them before the SDK saw the request, and the context builder hands them on.

- message/send (SendMessage): a new turn (a new conversation in the skill the message's metadata names
  — `skill` or `mode` —, else the user's default; or the next turn of its `contextId`), run to its end
  or its pause: a completed task with the answer as an artifact, or `input-required` with what waits.
  `returnImmediately` (0.3: `blocking: false`) answers with the task as soon as it is submitted.
  A message with a `taskId` answers that task's approvals ("approve"/"deny") and resumes it.
- message/stream (SendStreamingMessage): the same as SSE: the task, `working`, each tool the turn calls
  as a `working` status message, the reply's pieces as they come (artifact updates of `answer`), the
  whole answer in their place, the final status.
- tasks/get, tasks/cancel: the user's own turns only; anyone else's id is "task not found".
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING, Any

from a2a.server.context import ServerCallContext
from a2a.server.request_handlers.request_handler import RequestHandler
from a2a.server.routes.common import DefaultServerCallContextBuilder
from a2a.types.a2a_pb2 import (
    AgentCard,
    Artifact,
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    GetExtendedAgentCardRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTaskPushNotificationConfigsResponse,
    ListTasksRequest,
    ListTasksResponse,
    Message,
    Part,
    SendMessageRequest,
    SubscribeToTaskRequest,
    Task,
    TaskArtifactUpdateEvent,
    TaskPushNotificationConfig,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)
from a2a.utils.errors import (
    InvalidParamsError,
    PushNotificationNotSupportedError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from asgiref.sync import sync_to_async
from google.protobuf.json_format import MessageToDict

from agents.models import Execution
from agents.turns import Status
from agents.web.api_support import ApiError
from aptix.bearer import token_modes

from ..progress import Note, Piece, follow_run
from . import card, services, tasks

if TYPE_CHECKING:
    from starlette.requests import Request

    from agents.models import Turn
    from agents.submit import Submitted

SCOPE_USER = "aptix.user"  # the token's user, set by mount.py before the SDK sees the request
SCOPE_REQUEST = "aptix.request"  # the Django request over the same scope (rate limits, the site's origin)
ERROR_NO_TEXT = "The message has no text: send what to ask as a text part."
ERROR_EXECUTION = "'execution' must be \"ask\" or \"agent\"."
ERROR_CONTEXT = "No conversation with this id."


class ContextBuilder(DefaultServerCallContextBuilder):
    """The SDK's call context with the token's user and the Django request in its state."""

    def build(self, request: Request) -> ServerCallContext:
        context = super().build(request)
        if SCOPE_USER not in request.scope:
            # mount.py authenticates every request before the SDK sees it: without a user, nothing is served.
            raise RuntimeError("The A2A endpoint is served through interop.a2a.A2aMount only.")
        context.state[SCOPE_USER] = request.scope[SCOPE_USER]
        context.state[SCOPE_REQUEST] = request.scope[SCOPE_REQUEST]
        return context


def _user(context: ServerCallContext) -> Any:
    return context.state[SCOPE_USER]


def _site(context: ServerCallContext) -> str:
    return services.base_url(context.state[SCOPE_REQUEST])


def _metadata(params: SendMessageRequest) -> dict[str, Any]:
    """The request's and the message's metadata (the message's first)."""
    return {**MessageToDict(params.metadata), **MessageToDict(params.message.metadata)}


def _refused(exc: ApiError) -> InvalidParamsError:
    return InvalidParamsError(exc.message, data={"field": exc.field} if exc.field else None)


class AptixRequestHandler(RequestHandler):
    """Tasks are the user's turns (see the module's docstring)."""

    async def _submit(self, params: SendMessageRequest, context: ServerCallContext) -> tuple[Submitted, list[Turn]]:
        """Start the turn the message asks for, or decide the task it answers: the submitted turn and
        the chain of the task it belongs to so far (the task's earlier turns when it answers one)."""
        user, message = _user(context), params.message
        try:
            if message.task_id:
                chain = await services.chain_of(user=user, task_id=message.task_id)
                if chain is None:
                    raise TaskNotFoundError
                if tasks.effective(chain).is_finished:
                    raise InvalidParamsError(services.ERROR_NOT_WAITING)
                submitted = await services.decide(user=user, chain=chain, approve=tasks.decision_of(message))
                return submitted, chain[:-1]
            text = tasks.text_of(message)
            if not text:
                raise InvalidParamsError(ERROR_NO_TEXT)
            metadata = _metadata(params)
            execution = metadata.get("execution")
            if execution is not None and execution not in Execution.values:
                raise InvalidParamsError(ERROR_EXECUTION)
            skill = metadata.get("skill") or metadata.get("mode")
            submitted = await services.start(
                user=user,
                request=context.state[SCOPE_REQUEST],
                text=text,
                conversation_id=message.context_id or None,
                mode=str(skill) if skill else None,
                execution=execution,
            )
            return submitted, []
        except ApiError as exc:
            if exc.field == "conversationId":
                raise InvalidParamsError(ERROR_CONTEXT) from None
            raise _refused(exc) from None

    async def on_message_send(self, params: SendMessageRequest, context: ServerCallContext) -> Task | Message:
        submitted, before = await self._submit(params, context)
        if params.configuration.return_immediately:
            return tasks.task_of([*before, submitted.turn], _site(context))
        return tasks.task_of([*before, *await services.finish(submitted)], _site(context))

    async def on_message_send_stream(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> AsyncGenerator[Any]:
        submitted, before = await self._submit(params, context)
        site = _site(context)
        first = before[0] if before else submitted.turn
        yield tasks.task_of([*before, submitted.turn], site)

        def update(status: TaskStatus) -> TaskStatusUpdateEvent:
            return TaskStatusUpdateEvent(task_id=first.id, context_id=first.session_id, status=status)

        yield update(TaskStatus(state=TaskState.TASK_STATE_WORKING))

        def piece(artifact: Artifact, *, append: bool, last_chunk: bool) -> TaskArtifactUpdateEvent:
            return TaskArtifactUpdateEvent(
                task_id=first.id, context_id=first.session_id, artifact=artifact, append=append, last_chunk=last_chunk
            )

        chain: list[Turn] = []
        async for progress in follow_run(submitted, services.finish):
            if isinstance(progress, Note):
                yield update(tasks.working(first, progress.text))
            elif isinstance(progress, Piece):
                pieces = Artifact(
                    artifact_id=tasks.answer_id(first.id), name=tasks.ANSWER, parts=[Part(text=progress.text)]
                )
                yield piece(pieces, append=not progress.restart, last_chunk=False)
            elif isinstance(progress, list):
                chain = progress
        last = tasks.effective([*before, *chain])
        if last.status == Status.COMPLETED:  # the whole answer, in place of its pieces
            yield piece(tasks.answer_artifact(last, site, first.id), append=False, last_chunk=True)
        yield update(tasks.status_of(last, site))

    async def on_get_task(self, params: GetTaskRequest, context: ServerCallContext) -> Task | None:
        chain = await services.chain_of(user=_user(context), task_id=params.id)
        return None if chain is None else tasks.task_of(chain, _site(context))

    async def on_cancel_task(self, params: CancelTaskRequest, context: ServerCallContext) -> Task | None:
        user = _user(context)
        chain = await services.chain_of(user=user, task_id=params.id)
        if chain is None:
            return None
        if not await services.cancel(chain=chain):
            raise TaskNotCancelableError(f"The task has already ended ({tasks.effective(chain).status}).")
        return tasks.task_of(await services.chain_of(user=user, task_id=params.id) or chain, _site(context))

    async def on_get_extended_agent_card(
        self, params: GetExtendedAgentCardRequest, context: ServerCallContext
    ) -> AgentCard:
        request = context.state[SCOPE_REQUEST]
        modes = await sync_to_async(services.user_modes)(user=_user(context), limited_to=token_modes(request))
        return card.extended_card(services.request_origin(context.state[SCOPE_REQUEST]), modes)

    async def on_list_tasks(self, params: ListTasksRequest, context: ServerCallContext) -> ListTasksResponse:
        raise UnsupportedOperationError("Listing tasks is not supported: read each task by its id.")

    async def on_subscribe_to_task(
        self, params: SubscribeToTaskRequest, context: ServerCallContext
    ) -> AsyncGenerator[Any]:
        raise UnsupportedOperationError("Subscribing to a task is not supported: read it with tasks/get.")
        yield

    async def on_create_task_push_notification_config(
        self, params: TaskPushNotificationConfig, context: ServerCallContext
    ) -> TaskPushNotificationConfig:
        raise PushNotificationNotSupportedError

    async def on_get_task_push_notification_config(
        self, params: GetTaskPushNotificationConfigRequest, context: ServerCallContext
    ) -> TaskPushNotificationConfig:
        raise PushNotificationNotSupportedError

    async def on_list_task_push_notification_configs(
        self, params: ListTaskPushNotificationConfigsRequest, context: ServerCallContext
    ) -> ListTaskPushNotificationConfigsResponse:
        raise PushNotificationNotSupportedError

    async def on_delete_task_push_notification_config(
        self, params: DeleteTaskPushNotificationConfigRequest, context: ServerCallContext
    ) -> None:
        raise PushNotificationNotSupportedError
