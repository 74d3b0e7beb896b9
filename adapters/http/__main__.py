"""`python -m convlog.http`: print the OpenAPI document (docs/openapi.json is this)."""

import sys

from convlog.http.app import openapi_document

sys.stdout.buffer.write(openapi_document() + b"\n")
