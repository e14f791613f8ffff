"""FastAPI reference app measured side by side with edri by `bench compare` (and
`bench wait`, whose /fetch needs httpx).

Run by bench as:
    /usr/bin/python3 -m uvicorn fastapi_app:app --loop uvloop --http httptools ...
with this directory as the working directory. Written the way a FastAPI user
would write it, so the comparison is with idiomatic FastAPI, not a tuned ASGI
app.
"""

import json
import os

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

try:
    import httpx
except ImportError:  # python3-httpx: only /fetch needs it, the other routes run without
    httpx = None

app = FastAPI()

# `bench wait`: what /fetch gets, and one client for every request, so that
# its connections to the upstream are kept as edri's are.
FETCH_URL = os.environ.get("BENCH_FETCH_URL", "")
client = httpx.AsyncClient() if httpx is not None else None


@app.get("/noop")
async def noop():
    return {"ok": True}


@app.post("/echo")
async def echo(request: Request):
    try:
        body = await request.json()
    except json.JSONDecodeError:
        return JSONResponse({"error": "body is not JSON"}, status_code=400)
    return JSONResponse(body)


@app.get("/fetch")
async def fetch():
    if client is None or not FETCH_URL:
        return JSONResponse({"error": "httpx or BENCH_FETCH_URL missing"}, status_code=503)
    try:
        reply = await client.get(FETCH_URL)
    except httpx.TimeoutException as error:
        return JSONResponse({"error": str(error)}, status_code=504)
    except httpx.HTTPError as error:
        return JSONResponse({"error": str(error)}, status_code=502)
    # The keys in the order edri's JSON has them, so both answer the same bytes.
    return {"bytes": len(reply.content), "status": reply.status_code}
