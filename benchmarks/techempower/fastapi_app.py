"""The TechEmpower Framework Benchmarks' seven test types on FastAPI.

The reference `bench techempower` measures edri against, in the shape of
TechEmpower's own FastAPI entry: raw SQL through an asyncpg pool, a Jinja2
template for the fortunes, served by uvicorn with uvloop and httptools:

    TFB_DATABASE_URL=postgresql://user@127.0.0.1:5432/db TFB_POOL_SIZE=16 \\
      python3 -m uvicorn fastapi_app:app --loop uvloop --http httptools --port 8080

The paths are the ones README.md lists (TechEmpower's usual ones):
/json, /plaintext, /db, /queries?queries=N, /fortunes, /updates?queries=N
and /cached-queries?count=N.
"""

import os
import random
from operator import itemgetter

import asyncpg
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, PlainTextResponse
from fastapi.templating import Jinja2Templates

DATABASE_URL = os.environ["TFB_DATABASE_URL"]
# One pool per uvicorn worker. TechEmpower's entry sizes it from the
# cores of a dedicated database host; here the database shares the
# machine, so the size is the caller's to choose.
POOL_SIZE = int(os.environ.get("TFB_POOL_SIZE", "16"))

WORLD_ROWS = 10000
MAX_QUERIES = 500
READ_ROW = "SELECT randomnumber FROM world WHERE id = $1"
WRITE_ROW = "UPDATE world SET randomnumber = $2 WHERE id = $1"
ADDITIONAL_FORTUNE = (0, "Additional fortune added at request time.")

# Jinja2Templates autoescapes .html templates: the <script> fortune is
# sent as text, never as markup.
templates = Jinja2Templates(directory=os.path.join(os.path.dirname(os.path.realpath(__file__)), "templates"))

app = FastAPI()


def clamp_count(value):
    """The rule of every N the tests take: absent or not an integer is 1,
    and the rest is held within 1..500."""
    try:
        count = int(value)
    except (TypeError, ValueError):
        return 1
    return min(max(count, 1), MAX_QUERIES)


def random_ids(count):
    # Distinct ids: an update never writes one row twice in a request, and
    # sorted, concurrent updates take their row locks in the same order and
    # cannot deadlock.
    return sorted(random.sample(range(1, WORLD_ROWS + 1), count))


@app.on_event("startup")
async def open_pool():
    app.state.pool = await asyncpg.create_pool(dsn=DATABASE_URL, min_size=POOL_SIZE, max_size=POOL_SIZE)
    # The cache of the cached-queries test: the whole World table, read
    # once. It is not kept in step with /updates; the test does not ask it
    # to be.
    async with app.state.pool.acquire() as connection:
        rows = await connection.fetch("SELECT id, randomnumber FROM world")
    app.state.cache = {row[0]: {"id": row[0], "randomNumber": row[1]} for row in rows}


@app.on_event("shutdown")
async def close_pool():
    await app.state.pool.close()


@app.get("/json")
async def json_serialization():
    return JSONResponse({"message": "Hello, World!"})


@app.get("/plaintext")
async def plaintext():
    return PlainTextResponse(b"Hello, World!")


@app.get("/db")
async def single_query():
    row_id = random.randint(1, WORLD_ROWS)
    async with app.state.pool.acquire() as connection:
        number = await connection.fetchval(READ_ROW, row_id)
    return JSONResponse({"id": row_id, "randomNumber": number})


@app.get("/queries")
async def multiple_queries(queries=None):
    worlds = []
    async with app.state.pool.acquire() as connection:
        statement = await connection.prepare(READ_ROW)
        for row_id in random_ids(clamp_count(queries)):
            number = await statement.fetchval(row_id)
            worlds.append({"id": row_id, "randomNumber": number})
    return JSONResponse(worlds)


@app.get("/fortunes")
async def fortunes(request: Request):
    async with app.state.pool.acquire() as connection:
        rows = await connection.fetch("SELECT id, message FROM fortune")
    rows = [tuple(row) for row in rows]
    rows.append(ADDITIONAL_FORTUNE)
    rows.sort(key=itemgetter(1))
    return templates.TemplateResponse("fortune.html", {"request": request, "fortunes": rows})


@app.get("/updates")
async def updates(queries=None):
    ids = random_ids(clamp_count(queries))
    worlds = [{"id": row_id, "randomNumber": random.randint(1, WORLD_ROWS)} for row_id in ids]
    async with app.state.pool.acquire() as connection:
        # The test's rule: each row is read before it is written.
        statement = await connection.prepare(READ_ROW)
        for world in worlds:
            await statement.fetchval(world["id"])
        await connection.executemany(WRITE_ROW, [(world["id"], world["randomNumber"]) for world in worlds])
    return JSONResponse(worlds)


@app.get("/cached-queries")
async def cached_queries(count=None):
    cache = app.state.cache
    return JSONResponse([cache[row_id] for row_id in random_ids(clamp_count(count))])
