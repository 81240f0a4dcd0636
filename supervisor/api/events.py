"""POST /api/v1/events (contract §1): JSON or NDJSON batches, partial acceptance."""

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import JsonResponse

from supervisor import rate_limit
from supervisor.core.contract.events import read_json
from supervisor.core.ingest.apply import UnreadableLine, do_ingest

from .answers import IngestAnswer, errors
from .scopes import ScopedRouter

router = ScopedRouter(tags=["events"])

JSON_TYPES = {"application/json"}
NDJSON_TYPES = {"application/x-ndjson", "application/ndjson", "application/jsonl"}

EVENTS_BODY = {
    "requestBody": {
        "required": True,
        "content": {
            "application/json": {
                "schema": {
                    "type": "object",
                    "required": ["events"],
                    "properties": {
                        "events": {
                            "type": "array",
                            "maxItems": 1000,
                            # Any item is taken in: one that is not an Event is
                            # rejected in the 200 answer and kept as a dead letter.
                            "items": {"anyOf": [{"$ref": "#/components/schemas/Event"}, {}]},
                        }
                    },
                }
            },
            "application/x-ndjson": {"schema": {"type": "string"}},
        },
    }
}


def error(status: int, message: str) -> JsonResponse:
    return JsonResponse({"error": message}, status=status)


@router.post(
    "/events",
    openapi_extra=EVENTS_BODY,
    summary="Send events",
    response={200: IngestAnswer, **errors(413, 415, 429)},
)
def post_events(request):
    rate = rate_limit.configured("ingest")
    seconds = rate_limit.take("ingest", str(request.source.pk), rate)
    if seconds:
        response = error(
            429,
            f"source {request.source.name!r} sent more than {rate.limit} requests in "
            f"{rate.window:g} s; retry after {seconds} s",
        )
        response["Retry-After"] = str(seconds)
        return response
    content_type = request.content_type.lower()
    if content_type not in JSON_TYPES | NDJSON_TYPES:
        return error(
            415,
            f"content type {content_type or '(none)'!r} is not accepted; "
            "send application/json or application/x-ndjson",
        )
    try:
        body = request.body
    except RequestDataTooBig:
        return error(413, "the body is larger than 1 MiB")
    if len(body) > settings.INGEST_MAX_BYTES:
        return error(413, f"the body is {len(body)} bytes; at most 1 MiB (1048576) per request")
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        return error(400, f"the body is not UTF-8: {exc}")
    events = _json_events(text) if content_type in JSON_TYPES else _ndjson_events(text)
    if isinstance(events, JsonResponse):
        return events
    if len(events) > settings.INGEST_MAX_EVENTS:
        return error(413, f"{len(events)} events; at most 1000 per request")
    result = do_ingest(request.source, events)
    return JsonResponse(result.as_response())


def _json_events(text: str):
    try:
        body = read_json(text)
    except ValueError as exc:  # also a number too long to read, or NaN
        return error(400, f"the body is not valid JSON: {exc}")
    if not isinstance(body, dict):
        return error(
            400, f"the body must be a JSON object with 'events', not {type(body).__name__}"
        )
    if "events" not in body:
        return error(400, "the body has no 'events' key")
    if not isinstance(body["events"], list):
        return error(400, "'events' must be a list")
    return body["events"]


def _ndjson_events(text: str):
    events = []
    # Lines end at "\n" only: str.splitlines() would also cut at U+2028 and others, which
    # JSON strings may hold as they are.
    for number, line in enumerate(text.split("\n"), start=1):
        line = line.removesuffix("\r")
        if not line.strip():
            continue
        try:
            value = read_json(line)
        except ValueError as exc:
            events.append(UnreadableLine(line, f"line {number} is not valid JSON: {exc}"))
            continue
        if not isinstance(value, dict):
            events.append(UnreadableLine(line, f"line {number} is not a JSON object"))
            continue
        events.append(value)
    return events
