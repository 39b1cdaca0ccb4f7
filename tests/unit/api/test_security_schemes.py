"""The authentication schemes written into the OpenAPI document (app/api/security_schemes.py) rather than learnt
from dependencies: every operation of an AuthenticatedRoute requires them, its own ``openapi_extra`` kept, and the
components declare them once; nothing else is documented as authenticated, and no request solves them."""

from __future__ import annotations

from fastapi import APIRouter, FastAPI

from app.api.authenticated_route import AuthenticatedRoute
from app.api.deps import CurrentCaller
from app.api.security_schemes import SCHEMES, install_security_schemes, with_security

REQUIREMENT = [{"httpBasic": []}, {"httpBearer": []}]


def _app() -> FastAPI:
    app = FastAPI()
    router = APIRouter(route_class=AuthenticatedRoute)

    @router.get("/mine")
    def mine(caller: CurrentCaller) -> dict[str, str]:
        return {}

    @router.get("/extra", openapi_extra={"x-kts": True})
    def extra(caller: CurrentCaller) -> dict[str, str]:
        return {}

    @app.get("/open")
    def open_() -> dict[str, str]:
        return {}

    app.include_router(router)
    install_security_schemes(app)
    return app


def test_authenticated_operations_require_either_scheme_and_the_components_declare_them() -> None:
    document = _app().openapi()
    assert document["paths"]["/mine"]["get"]["security"] == REQUIREMENT
    assert document["paths"]["/extra"]["get"]["security"] == REQUIREMENT
    assert document["paths"]["/extra"]["get"]["x-kts"] is True  # the route's own extra kept
    assert "security" not in document["paths"]["/open"]["get"]
    assert document["components"]["securitySchemes"] == {
        "httpBasic": {"type": "http", "scheme": "basic", "description": "A SCRAM user's name and password."},
        "httpBearer": {
            "type": "http",
            "scheme": "bearer",
            "description": "`tokenId:hmac` of a delegation token (the HMAC in base64), or a workload JWT.",
        },
    }


def test_the_document_is_built_once_and_the_schemes_are_copies() -> None:
    app = _app()
    first = app.openapi()
    assert app.openapi() is first
    first["components"]["securitySchemes"]["httpBasic"]["description"] = "changed"
    assert SCHEMES["httpBasic"]["description"] == "A SCRAM user's name and password."


def test_a_route_may_narrow_the_requirement_itself() -> None:
    assert with_security({"security": [{"httpBasic": []}]}) == {"security": [{"httpBasic": []}]}
    assert with_security(None) == {"security": REQUIREMENT}


def test_no_request_solves_a_security_scheme() -> None:
    def mine(caller: CurrentCaller) -> dict[str, str]:
        return {}

    route = AuthenticatedRoute("/mine", mine, methods=["GET"])
    (caller,) = route.dependant.dependencies
    assert caller.dependencies == []  # get_caller alone, no scheme beneath it
