"""The API's JSON body parser (``DEFAULT_PARSER_CLASSES``): DRF's, reading the body with
:mod:`common.boundedjson`, so that no JSON body can nest deep enough to exhaust the stack or carry
NaN, infinities or integers no column holds. A body that cannot be read is a ParseError, which
:mod:`server.api.errors` answers 400 naming the body."""

from __future__ import annotations

import codecs

from rest_framework import exceptions, parsers

from common import boundedjson


class JSONParser(parsers.JSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        # ParseError for a charset that is not text (a helper of DRF's module, missing from its stubs)
        encoding = parsers.get_encoding(parser_context or {})  # type: ignore[attr-defined]
        data = stream.read()
        try:
            text = data if codecs.lookup(encoding).name == "utf-8" else data.decode(encoding)
            return boundedjson.loads(text)
        except UnicodeDecodeError as e:
            raise exceptions.ParseError(f"the body is not {encoding} text: {e}") from None
        except boundedjson.JSONError as e:
            raise exceptions.ParseError(f"the body is not JSON: {e}") from None
