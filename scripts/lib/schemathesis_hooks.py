"""Schemathesis hooks for scripts/drill-schemathesis: what a schema cannot say about a valid request.

`POST /admin/accounts/{accountId}/grants` refuses an `endsAt` that is not in the future (the server's clock decides):
a well-formed `endsAt` is moved to the far future, so a refusal of a schema-valid grant still means a mismatch.

A grant's `reason` refuses format characters (Unicode Cf); the document's pattern lists those of the Basic
Multilingual Plane, as JSON Schema patterns can write them portably. The few beyond it are left out of generated
reasons here, since Python's Unicode tables (older than Swift's) cannot tell them apart from unassigned code points.

`POST /stripe/webhooks` verifies `Stripe-Signature` (an HMAC of the exact body) before it reads the body, so without a
valid signature every generated event stops at 401 and the intake's parsing is never reached. With
STRIPE_WEBHOOK_SECRET set (`storekeeper dev --fake-stripe` uses `whsec_fake_storekeeper_secret`), every case whose
generated header is well-formed is signed over the bytes actually sent, at the server's own now (a `storekeeper dev`
server reads its dev clock, which the run moves on through `POST /admin/dev/clock`); cases about the header itself
(missing or malformed) are left as generated.
"""

import hashlib
import hmac
import json
import os
import re
import time
import urllib.request

import schemathesis

SECRET = os.environ.get("STRIPE_WEBHOOK_SECRET", "")
WELL_FORMED = re.compile(r"^t=[1-9][0-9]{0,17},v1=[0-9a-f]{64}$")


def server_now(base_url):
    """The dev clock's now (`GET /admin/dev/clock`), else this machine's."""
    request = urllib.request.Request(
        base_url.rstrip("/") + "/admin/dev/clock", headers={"Authorization": "Bearer " + os.environ.get("ADMIN_KEY", "")})
    try:
        with urllib.request.urlopen(request, timeout=5) as answer:
            return int(json.load(answer)["nowMilliseconds"] // 1000)
    except Exception:
        return int(time.time())


RFC3339 = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?([Zz]|[+-][0-9]{2}:[0-9]{2})$")


ASTRAL_FORMAT = re.compile(
    "[\U000110BD\U000110CD\U00013430-\U0001343F\U0001BCA0-\U0001BCA3\U0001D173-\U0001D17A\U000E0001\U000E0020-\U000E007F]")


@schemathesis.hook
def filter_body(context, body):
    operation = context.operation
    if operation is None or operation.path != "/admin/accounts/{accountId}/grants" or not isinstance(body, dict):
        return True
    return not (isinstance(body.get("reason"), str) and ASTRAL_FORMAT.search(body["reason"]))


@schemathesis.hook
def before_call(context, case, kwargs):
    if case.operation.method.upper() != "POST":
        return
    if case.operation.path == "/admin/accounts/{accountId}/grants":
        if isinstance(case.body, dict) and isinstance(case.body.get("endsAt"), str) and RFC3339.match(case.body["endsAt"]):
            case.body["endsAt"] = "9999-12-31T23:59:59Z"
    elif case.operation.path == "/stripe/webhooks":
        sign_stripe_event(case, kwargs)


def sign_stripe_event(case, kwargs):
    if not SECRET:
        return
    header = (case.headers or {}).get("Stripe-Signature")
    if not isinstance(header, str) or not WELL_FORMED.match(header):
        return
    try:
        prepared = case.as_transport_kwargs(base_url="http://storekeeper.invalid")
    except Exception:
        return
    if "json" in prepared:
        try:
            body = json.dumps(prepared["json"], allow_nan=False).encode()
        except ValueError:
            return
    else:
        body = prepared.get("data", b"")
        if isinstance(body, str):
            body = body.encode()
        if not isinstance(body, bytes):
            return
    timestamp = server_now(os.environ.get("STOREKEEPER_URL", "http://127.0.0.1:8080"))
    signature = hmac.new(SECRET.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    case.headers["Stripe-Signature"] = f"t={timestamp},v1={signature}"
    # Send exactly the bytes that were signed.
    kwargs["data"] = body
