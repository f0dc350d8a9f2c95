"""Schemathesis hooks for Meridian's contract run: the run behaves as a
careful client would, so that every failure it reports is Meridian's.

- A client sends a fresh Idempotency-Key for each write it means to make
  once; a key used again with another body is answered 422
  `idempotency_key_reused`, as the contract says. Generated keys repeat
  (hypothesis favours short values, and shrinking re-sends a case with
  another body), so each well-formed generated key gets a unique suffix
  per call. Malformed keys are sent as generated, to be refused with 400.
- A well-formed `x-meridian-timeout-ms` becomes a generous 10000 ms, so
  that any 5xx is a failure: a budget too small for the work (a generated
  "1") is answered 504 by design, which the fault matrix covers. Malformed
  values are sent as generated, to be refused with 400.
- The run must not remove its own credentials or fixtures: deleting the
  seeded admin's membership or revoking the seeded token (ids it can learn
  from list answers) would turn every later call into a 401, and deleting
  the seeded resident would make most later invoices a 422. Such a call is
  pointed at an id that does not exist instead (a 404, which the contract
  allows).
"""

import os
import re
import uuid

import schemathesis

WELL_FORMED_KEY = re.compile(r"^[!-~]{1,255}$")
WELL_FORMED_TIMEOUT = re.compile(r"^[ \t]*[0-9]*[1-9][0-9]*[ \t]*$")
OWN_IDS = {
    "/v1/{tenant}/members/{id}": os.environ.get("MERIDIAN_OWN_MEMBERSHIP", ""),
    "/v1/{tenant}/tokens/{id}": os.environ.get("MERIDIAN_OWN_TOKEN", ""),
    "/v1/{tenant}/residents/{id}": os.environ.get("MERIDIAN_RESIDENT", ""),
}


@schemathesis.hook
def before_call(context, case, kwargs):
    headers = case.headers or {}
    for name in list(headers):
        value = headers[name]
        if name.lower() == "idempotency-key" and isinstance(value, str) and WELL_FORMED_KEY.match(value):
            headers[name] = f"{value[:200]}-{uuid.uuid4()}"
        if name.lower() == "x-meridian-timeout-ms" and isinstance(value, str) and WELL_FORMED_TIMEOUT.match(value):
            headers[name] = "10000"
    own = OWN_IDS.get(case.operation.path)
    if own and case.method.upper() == "DELETE" and str((case.path_parameters or {}).get("id", "")).lower() == own:
        case.path_parameters["id"] = str(uuid.uuid4())
