"""A reviewer's pass/fail label on a task's output, from the eval and compare pages
(docs/dashboard.md "Labelling a task's output").

The form posts here; the label is recorded through the engine call the wire's
`POST /runs/{runId}/annotations` makes (RFC 0056: an annotation on the task's node
of the eval run, never an event of its log), as the signed-in key, and the browser
goes back to the page it came from. The pages show each task's latest label.
"""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import RedirectResponse
from pydantic import ValidationError

from wopeval.api.deps import HostDep
from wopeval.api.ui._render import eval_path
from wopeval.api.ui._route import UiRoute, safe_next
from wopeval.api.ui._security import require_csrf
from wopeval.api.ui.deps import SessionDep
from wopeval.api.ui.eval_page import load_eval
from wopeval.wire.annotations import FAIL, PASS, CreateAnnotationRequest

router = APIRouter(prefix="/ui", route_class=UiRoute, include_in_schema=False)


@router.post("/evals/{runId}/tasks/{taskId}/label")
async def label_task(
    runId: str, taskId: str, request: Request, session: SessionDep, host: HostDep
) -> Response:
    fields = await require_csrf(request, session)
    record = await load_eval(host, session, runId)
    note = fields.get("note", "").strip() or None
    if fields.get("label") not in (PASS, FAIL):
        raise RequestValidationError([{"loc": ("label",), "msg": "pass or fail", "type": "enum"}])
    # The wire's bodies are held to strict JSON (api/request_guard.py); a form is not JSON.
    if note is not None and "\x00" in note:
        raise RequestValidationError([{"loc": ("note",), "msg": "no NUL", "type": "string"}])
    try:
        body = CreateAnnotationRequest.model_validate(
            {
                "signal": {"kind": "label", "label": fields.get("label", "")},
                "target": {"nodeId": taskId},
                "note": note,
            }
        )
    except ValidationError as invalid:
        raise RequestValidationError(invalid.errors()) from None
    await host.engine.annotate(session.principal, record.run_id, body)
    back = fields.get("back")
    return RedirectResponse(safe_next(back) if back else eval_path(record.run_id), 303)
