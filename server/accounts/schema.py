"""How the OpenAPI schema describes client token authentication."""

from drf_spectacular.extensions import OpenApiAuthenticationExtension


class ClientTokenScheme(OpenApiAuthenticationExtension):
    target_class = "server.accounts.authentication.ClientTokenAuthentication"
    name = "clientToken"

    def get_security_definition(self, auto_schema):
        return {
            "type": "apiKey",
            "in": "header",
            "name": "Authorization",
            "description": "`Token <key>`, the key from `POST /api/v1/auth/token/`",
        }
