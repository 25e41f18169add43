"""API of accounts: a client token from a username and password."""

from __future__ import annotations

from django.contrib.auth import authenticate
from drf_spectacular.utils import extend_schema
from rest_framework import exceptions, serializers, status
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from server.accounts.models import ClientToken
from server.accounts.throttling import password_check_passed, password_check_wait
from server.api.errors import ApiError


class TokenRequest(serializers.Serializer):
    username = serializers.CharField(max_length=150)
    password = serializers.CharField(max_length=4096, trim_whitespace=False)
    name = serializers.CharField(
        max_length=100, required=False, default="client", help_text="what the token is for (the machine's name, say)"
    )


class TokenResponse(serializers.Serializer):
    token = serializers.CharField(help_text="send as `Authorization: Token <token>`; shown only now")
    name = serializers.CharField()
    username = serializers.CharField()
    created_at = serializers.DateTimeField()


class TokenView(APIView):
    """Exchange a username and password for a new client token. Limited per client address (the
    ``login`` scope) and per address and username tried (the ``login_pair`` rates), on the counters
    the website's login form uses; a right password forgets the pair's failures."""

    authentication_classes: list = []
    permission_classes = [AllowAny]
    throttle_scope = "login"

    @extend_schema(request=TokenRequest, responses={201: TokenResponse})
    def post(self, request):
        data = TokenRequest(data=request.data)
        data.is_valid(raise_exception=True)
        username = data.validated_data["username"]
        wait = password_check_wait(request, username, address=False)
        if wait is not None:
            raise exceptions.Throttled(wait)
        user = authenticate(request, username=username, password=data.validated_data["password"])
        if user is None:
            raise ApiError("wrong username or password", code="bad_credentials", status_code=401)
        password_check_passed(request, username)
        token, key = ClientToken.issue(user, data.validated_data["name"])
        return Response(
            {"token": key, "name": token.name, "username": user.username, "created_at": token.created_at},
            status=status.HTTP_201_CREATED,
        )
