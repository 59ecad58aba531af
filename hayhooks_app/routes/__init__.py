"""
HTTP routes that are not Hayhooks pipeline wrappers, one module per resource: each exposes a
``<resource>_routes(container) -> APIRouter`` that ``hayhooks_app.app`` includes. The routes resolve the
requester (``hayhooks_app.identity``) and call the container's stores and services; they hold no state.
"""
