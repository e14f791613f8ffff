"""FastAPI reference app measured side by side with edri by `bench compare`.

Run by bench as:
    /usr/bin/python3 -m uvicorn fastapi_app:app --loop uvloop --http httptools ...
with this directory as the working directory. Written the way a FastAPI user
would write it, so the comparison is with idiomatic FastAPI, not a tuned ASGI
app.
"""

import json

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

app = FastAPI()


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
