-- The TechEmpower Framework Benchmarks database, for Postgres: the World
-- table of 10,000 rows whose randomNumber is drawn from 1..10000, and the
-- Fortune table with the benchmark's 12 fortunes (the <script> one that a
-- page must escape, the Japanese one that must survive as UTF-8).
--
-- One transaction that can be run again: the tables are dropped first, so
-- a load resets what a run of /updates changed.
--
--   psql "$TFB_DATABASE_URL" -v ON_ERROR_STOP=1 -f schema.sql
--
-- or as one string through libpq's PQexec (bench techempower and the
-- techempower test do that).
--
-- The names are unquoted, so Postgres folds them to world, fortune and
-- randomnumber: a server may write World or world, randomNumber or
-- randomnumber. (TechEmpower's own script also creates quoted copies,
-- "World" and "Fortune", for ORMs that quote; nothing here needs them.)

-- The fortunes hold non-ASCII text: whatever the client's locale, these
-- bytes are UTF-8.
SET client_encoding = 'UTF8';

BEGIN;

DROP TABLE IF EXISTS World;
DROP TABLE IF EXISTS Fortune;

CREATE TABLE World (
  id integer NOT NULL PRIMARY KEY,
  randomNumber integer NOT NULL DEFAULT 0
);

-- random() is in [0, 1), so 1 + floor(random() * 10000) is in 1..10000.
INSERT INTO World (id, randomNumber)
SELECT n, 1 + floor(random() * 10000)::integer
FROM generate_series(1, 10000) AS n;

CREATE TABLE Fortune (
  id integer NOT NULL PRIMARY KEY,
  message varchar(2048) NOT NULL
);

INSERT INTO Fortune (id, message) VALUES
  (1, 'fortune: No such file or directory'),
  (2, 'A computer scientist is someone who fixes things that aren''t broken.'),
  (3, 'After enough decimal places, nobody gives a damn.'),
  (4, 'A bad random number generator: 1, 1, 1, 1, 1, 4.33e+67, 1, 1, 1'),
  (5, 'A computer program does what you tell it to do, not what you want it to do.'),
  (6, 'Emacs is a nice operating system, but I prefer UNIX. — Tom Christaensen'),
  (7, 'Any program that runs right is obsolete.'),
  (8, 'A list is only as strong as its weakest link. — Donald Knuth'),
  (9, 'Feature: A bug with seniority.'),
  (10, 'Computers make very fast, very accurate mistakes.'),
  (11, '<script>alert("This should not be displayed in a browser alert box.");</script>'),
  (12, 'フレームワークのベンチマーク');

COMMIT;

-- Statistics for the planner, so the first queries of a run do not plan
-- against an empty estimate.
ANALYZE World;
ANALYZE Fortune;
