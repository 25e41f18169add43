"""Contributors and their client tokens: sign-up on the web, a token for the client from a username
and password, ``Authorization: Token ...`` on every API request."""
