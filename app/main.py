"""Entry point for ASGI servers: ``uvicorn --factory app.main:create_app``."""

from app.api.app import create_app

__all__ = ["create_app"]
