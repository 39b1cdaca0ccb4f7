"""Answering a response model without FastAPI validating it a second time.

An endpoint that returns a pydantic model has FastAPI validate it again against ``response_model`` and encode it
through plain Python values: for a page of 100 tokens that took ten times as long as pydantic writing the model's
JSON itself (bench: describe latency). The models answered here are built by the handler from domain objects,
so validating them again checks nothing; ``model_json`` writes the same bytes FastAPI would (compact separators,
unescaped UTF-8, fields in declaration order: tests/unit/api/test_model_response.py) and skips the rest. The route
still declares ``response_model`` for its OpenAPI schema.
"""

from __future__ import annotations

from fastapi import Response
from pydantic import BaseModel

MEDIA_TYPE = "application/json"


def model_json(model: BaseModel, status_code: int = 200) -> Response:
    return Response(model.model_dump_json().encode(), status_code=status_code, media_type=MEDIA_TYPE)
